"""The seed article's first snippet (../shared/seeds/), on CPU and Gloo: ranks started by
torch.multiprocessing.spawn, a model whose second layer rank 1 skips, DDP with
find_unused_parameters=True, and the article's own check — `param.grad is None` — which
prints nothing, because DDP fills the skipped gradient in. dsdiag still names it."""
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP


class DeepSeekModel(torch.nn.Module):
    def __init__(self):
        super(DeepSeekModel, self).__init__()
        self.layer = torch.nn.Linear(10, 10)
        self.refine = torch.nn.Linear(10, 10)

    def forward(self, x, rank):
        out = self.layer(x)
        if rank != 1:  # the rank-dependent branch
            out = self.refine(out)
        return out


def train(rank, world_size, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    torch.manual_seed(0)
    ddp_model = DDP(DeepSeekModel(), find_unused_parameters=True)
    optimizer = torch.optim.SGD(ddp_model.parameters(), lr=0.001)
    for _ in range(6):
        inputs = torch.randn(20, 10)
        labels = torch.randn(20, 10)
        outputs = ddp_model(inputs, rank)
        loss = torch.nn.MSELoss()(outputs, labels)
        optimizer.zero_grad()
        loss.backward()
        for name, param in ddp_model.named_parameters():
            if param.grad is None:
                print(f"Rank {rank}: {name} has no gradient!")
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    mp.spawn(train, args=(2, port), nprocs=2, join=True)
