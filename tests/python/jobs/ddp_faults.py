"""A small DDP job on Gloo, started once per rank by `dsdiag run --nproc N` (RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT set), with one user mistake chosen by FAULT:
  skip    rank 1 skips a submodule (find_unused_parameters=True: DDP fills the gradient in)
  desync  rank 0 doubles one gradient after the allreduce, at step 5 (in place: grad.mul_)
  desync-data     the same through .data (which no version counter sees)
  desync-replace  the same by a new tensor (p.grad = p.grad * 2)
  slow    rank 1 computes 30 ms longer every step
  raise   rank 1 raises ValueError at step 7
  hang    rank 1 blocks (a sleep) at step 5, before its forward
  extra   rank 1 issues an all_reduce of its own at step 4 (the others a barrier)
  config  rank 1 turns cudnn.benchmark on (folklore) before the process group starts
  uneven  rank 1 has one batch more than rank 0 (uneven inputs): rank 0 finishes first
Prints "final loss <rank> <value>" so that a test can compare losses with and without dsdiag,
and with PRINT_DDP_HOOK=1 "ddp hook <rank> c++|python": which of dsdiag's DDP hooks ran.
"""
import os
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

fault = os.environ.get("FAULT", "")
steps = int(os.environ.get("STEPS", "20"))
if fault == "config" and os.environ.get("RANK") == "1":
    torch.backends.cudnn.benchmark = True
dist.init_process_group("gloo")
rank = dist.get_rank()
if fault == "uneven" and rank == 1:
    steps += 1
torch.manual_seed(0)
torch.set_num_threads(1)

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(
            torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
        self.extra = torch.nn.Linear(32, 1)
    def forward(self, x):
        out = self.body(x)
        if not (fault == "skip" and rank == 1):
            out = out + self.extra(x)
        return out

model = DDP(Net(), find_unused_parameters=(fault == "skip"))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
torch.manual_seed(1 + rank)
for step in range(steps):
    x = torch.randn(16, 32)
    y = x.sum(1, keepdim=True)
    if fault == "hang" and rank == 1 and step == 5:
        time.sleep(600)
    if fault == "extra" and step == 4:
        if rank == 1:
            dist.all_reduce(torch.ones(3))
        else:
            dist.barrier()
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    if fault == "slow" and rank == 1:
        time.sleep(0.03)
    loss.backward()
    if fault.startswith("desync") and rank == 0 and step == 5:
        weight = model.module.body[0].weight
        with torch.no_grad():
            if fault == "desync":
                weight.grad.mul_(2)
            elif fault == "desync-data":
                weight.grad.data.mul_(2)
            else:
                weight.grad = weight.grad * 2
    if fault == "raise" and rank == 1 and step == 7:
        raise ValueError("bad batch at step 7")
    opt.step()
# One write(2) per line: the ranks share the test's stdout pipe.
if os.environ.get("PRINT_DDP_HOOK"):
    probe = getattr(model, "_dsdiag_probe", None)
    hook = "none" if probe is None else ("c++" if probe.native is not None else "python")
    os.write(1, ("ddp hook %d %s\n" % (rank, hook)).encode())
os.write(1, ("final loss %d %.17g\n" % (rank, loss.item())).encode())
dist.destroy_process_group()
