"""A small DDP job on Gloo whose rank 1 dies in native code at step 6, chosen by CRASH:
  segv   an op's backward reads address 0 (ctypes.string_at(0): a buggy extension's kernel);
         with FAULTHANDLER=1 the job turned Python's faulthandler on first
  abort  an op's forward calls C's abort() (a failed CHECK in an extension)
Each step agrees on a stop flag after its forward (an all_reduce on the loop's thread, whose
record light mode holds until the step ends). Started once per rank by `dsdiag run --nproc 2`.
"""
import ctypes
import faulthandler
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

crash = os.environ.get("CRASH", "")
if os.environ.get("FAULTHANDLER") == "1":
    faulthandler.enable()
dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
torch.set_num_threads(1)
CRASH_STEP = 6
state = {"step": 0}


def crashes_now(kind):
    return crash == kind and rank == 1 and state["step"] == CRASH_STEP


class ExtensionOp(torch.autograd.Function):
    """Stands for an op of a C++/CUDA extension: identity, with the bug in native code."""

    @staticmethod
    def forward(ctx, x):
        if crashes_now("abort"):
            ctypes.CDLL(None).abort()
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        if crashes_now("segv"):
            ctypes.string_at(0)
        return grad


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(
            torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))

    def forward(self, x):
        return self.body(ExtensionOp.apply(x))


model = DDP(Net())
opt = torch.optim.SGD(model.parameters(), lr=0.01)
torch.manual_seed(1 + rank)
for step in range(10):
    state["step"] = step
    x = torch.randn(16, 32, requires_grad=True)  # so that the op's backward runs
    y = x.detach().sum(1, keepdim=True)
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    stop = torch.zeros(1)
    dist.all_reduce(stop)
    loss.backward()
    opt.step()
dist.destroy_process_group()
