"""An FSDP1 job (FullyShardedDataParallel, two ranks, Gloo on CPU, a small MLP wrapped whole),
as torch's FSDP tutorial writes it. SEED=rank: each rank seeds torch with its rank before
building the model (FSDP1 shards what each rank built; sync_module_states=True would
broadcast rank 0's first, but needs GPU parameters). Prints "final loss <rank> <value>"."""
import os

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.set_num_threads(1)
torch.manual_seed(rank if os.environ.get("SEED") == "rank" else 0)
model = FSDP(torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(),
                                 torch.nn.Linear(32, 1)),
             device_id=torch.device("cpu"))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
torch.manual_seed(1 + rank)
for _ in range(4):
    opt.zero_grad()
    loss = model(torch.randn(8, 16)).pow(2).mean()
    loss.backward()
    opt.step()
os.write(1, ("final loss %d %.17g\n" % (rank, loss.item())).encode())
dist.destroy_process_group()
