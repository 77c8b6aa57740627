"""A DDP job that instruments itself, as the package's docstring shows a user doing it:
dsdiag.torch.instrument(run_dir=...) before init_process_group, then a plain training loop.
Started once per rank by torchrun (RANK, WORLD_SIZE, ... set); argv[1] is the run directory."""
import sys

import dsdiag.torch

dsdiag.torch.instrument(run_dir=sys.argv[1])

import torch  # noqa: E402  (after instrument(), as the docstring has it)
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

dist.init_process_group("gloo")
torch.manual_seed(0)
model = DDP(torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1)))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
torch.manual_seed(1 + dist.get_rank())
for _ in range(8):
    x = torch.randn(8, 16)
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), x.sum(1, keepdim=True)).backward()
    opt.step()
dist.destroy_process_group()
