"""A DDP job on Gloo configured as people configure DDP in torch 2.x, started once per rank
by `dsdiag run --nproc N` (or torchrun). DDP_CONFIG chooses the configuration:
  plain        DistributedDataParallel(model)
  static       static_graph=True
  bucket-view  gradient_as_bucket_view=True
  unused       find_unused_parameters=True
  no-sync      gradient accumulation: ACCUMULATE (default 2) backward passes per optimizer
               step, the first ones under model.no_sync() (the allreduce runs on the last)
  compile      torch.compile(ddp_model) (the "eager" backend: dynamo's DDP optimizer
               splits the graph at bucket boundaries; no C++ compiler is needed)
  closure      opt.step(closure), the closure running zero_grad, forward and backward
               inside the optimizer's step (how Lightning drives every optimizer)
  lbfgs        torch.optim.LBFGS(max_iter=4) with such a closure: up to 4 forward and backward
               passes (and allreduces) inside one optimizer step
FAULT adds one user mistake:
  skip    rank 1 skips the `extra` submodule (with plain/static/bucket-view, DDP needs
          find_unused_parameters or static_graph to let that run; the job sets the first
          unless the configuration is static)
  desync  rank 0 doubles one gradient after the allreduce, at step 5
Prints "final loss <rank> <value>" so that a test can compare losses with and without dsdiag,
and with `compile` "graph breaks <rank> <count>" (Dynamo's own counter): dsdiag must add none.
"""
import contextlib
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

config = os.environ.get("DDP_CONFIG", "plain")
fault = os.environ.get("FAULT", "")
steps = int(os.environ.get("STEPS", "12"))
accumulate = int(os.environ.get("ACCUMULATE", "2")) if config == "no-sync" else 1
dist.init_process_group("gloo")
rank = dist.get_rank()
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


options = {}
if config == "static":
    options["static_graph"] = True
elif config == "bucket-view":
    options["gradient_as_bucket_view"] = True
if config == "unused" or (fault == "skip" and config != "static"):
    options["find_unused_parameters"] = True
model = DDP(Net(), **options)
forward = torch.compile(model, backend="eager") if config == "compile" else model
if config == "lbfgs":
    opt = torch.optim.LBFGS(model.parameters(), lr=0.1, max_iter=4)
else:
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
torch.manual_seed(1 + rank)
for step in range(steps):
    if config in ("closure", "lbfgs"):
        x = torch.randn(16, 32)
        y = x.sum(1, keepdim=True)

        def closure(x=x, y=y):
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(forward(x), y)
            loss.backward()
            return loss

        loss = opt.step(closure)
        continue
    opt.zero_grad()
    for micro in range(accumulate):
        x = torch.randn(16, 32)
        y = x.sum(1, keepdim=True)
        last = micro == accumulate - 1
        with contextlib.nullcontext() if last else model.no_sync():
            loss = torch.nn.functional.mse_loss(forward(x), y)
            loss.backward()
    if fault == "desync" and rank == 0 and step == 5:
        with torch.no_grad():
            model.module.body[0].weight.grad.mul_(2)
    opt.step()
# One write(2) per line: the ranks share the test's stdout pipe.
os.write(1, ("final loss %d %.17g\n" % (rank, loss.item())).encode())
if config == "compile":
    from torch._dynamo.utils import counters

    breaks = sum(counters["graph_break"].values())
    os.write(1, ("graph breaks %d %d\n" % (rank, breaks)).encode())
dist.destroy_process_group()
