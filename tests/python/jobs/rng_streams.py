"""A small DDP job on Gloo (started per rank by `dsdiag run --nproc N`) whose ranks draw from
their own global random streams, seeded as MODE says:
  dropout   torch.manual_seed(0) on every rank, the model has dropout (drawn in the forward)
  noise     torch.manual_seed(0) on every rank, noise added to each batch with torch.randn
            before the forward (no dropout)
  host      torch seeded per rank; numpy.random.seed(0) and random.seed(0) on every rank,
            each batch scaled by NumPy noise and a random.random() factor
  clean     dropout, torch noise, NumPy and random noise: torch.manual_seed(0) for the init,
            then every stream seeded with base + rank
  idle      torch, NumPy and random seeded with 0 on every rank, and never drawn from in
            training (no dropout, no noise): identical, but harmless
The data is the same fixed per-rank tensors in every mode (a private generator): only the
streams under test are drawn. Prints "final loss <rank> <value>".
"""
import os
import random

import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

mode = os.environ.get("MODE", "clean")
steps = int(os.environ.get("STEPS", "12"))
dist.init_process_group("gloo")
rank = dist.get_rank()
torch.set_num_threads(1)
torch.manual_seed(0)  # the init: the same on every rank, as it should be
np.random.seed(0 if mode in ("host", "idle") else 100 + rank)
random.seed(0 if mode in ("host", "idle") else 100 + rank)

drop = torch.nn.Dropout(0.2) if mode in ("dropout", "clean") else torch.nn.Identity()
model = DDP(torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), drop,
                                torch.nn.Linear(32, 1)))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
if mode in ("host", "clean"):
    torch.manual_seed(100 + rank)  # the per-rank stream for dropout and noise

data = torch.Generator().manual_seed(1000 + rank)
batches = [torch.randn(8, 16, generator=data) for _ in range(4)]
for step in range(steps):
    x = batches[step % len(batches)].clone()
    if mode in ("noise", "clean"):
        x += 0.1 * torch.randn_like(x)
    if mode in ("host", "clean"):
        x *= torch.from_numpy(np.random.normal(1.0, 0.05, size=(1, 16)).astype("float32"))
        x *= 1.0 + 0.01 * random.random()
    y = x.sum(1, keepdim=True)
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
os.write(1, ("final loss %d %.17g\n" % (rank, loss.item())).encode())
dist.destroy_process_group()
