"""A DDP job that starts from pretrained weights (CKPT: a state dict saved with torch.save),
started once per rank by `dsdiag run --nproc N`. LOAD says where the load is:
  rank0-after-wrap  `if rank == 0: model.module.load_state_dict(torch.load(CKPT))` after
                    DDP(...) (the mistake: DDP broadcast rank 0's weights in its constructor,
                    before the load; nothing broadcasts them again)
  before-wrap       every rank loads into the bare model, then DDP(...)
  rank0-before-wrap rank 0 loads into the bare model, then DDP(...) broadcasts its weights
STEPS (default 12) steps of SGD on random data, a different stream per rank.
Prints "final loss <rank> <value>".
"""
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

load = os.environ.get("LOAD", "rank0-after-wrap")
ckpt = os.environ["CKPT"]

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
torch.set_num_threads(1)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU())
        self.head = torch.nn.Linear(64, 1)

    def forward(self, x):
        return self.head(self.encoder(x))


net = Net()
if load == "before-wrap" or (load == "rank0-before-wrap" and rank == 0):
    net.load_state_dict(torch.load(ckpt, map_location="cpu"))
model = DDP(net)
if load == "rank0-after-wrap" and rank == 0:
    model.module.load_state_dict(torch.load(ckpt, map_location="cpu"))

opt = torch.optim.SGD(model.parameters(), lr=0.01)
torch.manual_seed(100 + rank)
for _ in range(int(os.environ.get("STEPS", "12"))):
    x = torch.randn(16, 32)
    y = x.sum(1, keepdim=True)
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
os.write(1, ("final loss %d %.17g\n" % (rank, loss.item())).encode())
dist.destroy_process_group()
