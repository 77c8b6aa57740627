"""A DDP loop whose rank 0 writes an evaluation summary every step (a rank-0-only block, 60 ms
of work here), then meets the others at a barrier, as scripts do before the next step: every
other rank waits at that barrier. Gloo on CPU, `dsdiag run --nproc 2`."""
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = DDP(torch.nn.Linear(8, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for _ in range(12):
    optimizer.zero_grad()
    model(torch.randn(4, 8)).sum().backward()
    optimizer.step()
    if rank == 0:
        time.sleep(0.06)  # evaluate and log on rank 0 only
    dist.barrier()  # the barrier everyone waits at
dist.destroy_process_group()
