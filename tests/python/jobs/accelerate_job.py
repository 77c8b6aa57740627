"""A Hugging Face Accelerate job, unchanged by dsdiag: Accelerator(cpu=True) over 2 processes
that `accelerate launch --multi_gpu --num_processes 2` starts (torch's launcher underneath;
on a machine without GPUs Accelerate runs them as MULTI_CPU over Gloo), a model with dropout,
10 steps. FAULT chooses one user mistake:
  (none)     clean: set_seed(0, device_specific=True) (each rank 0 + its index)
  skip       rank 1 skips the `extra` submodule (find_unused_parameters through
             DistributedDataParallelKwargs, as Accelerate's docs say)
  same-seed  set_seed(0) on every rank (device_specific=False): identical dropout masks
"""
import os

import torch
from accelerate import Accelerator, DistributedDataParallelKwargs
from accelerate.utils import set_seed
from torch.utils.data import DataLoader, TensorDataset

FAULT = os.environ.get("FAULT", "")


class Net(torch.nn.Module):
    def __init__(self, rank):
        super().__init__()
        self.rank = rank
        self.body = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(),
                                        torch.nn.Dropout(0.1), torch.nn.Linear(64, 1))
        self.extra = torch.nn.Linear(32, 1)

    def forward(self, x):
        out = self.body(x)
        if not (FAULT == "skip" and self.rank == 1):
            out = out + self.extra(x)
        return out


handlers = [DistributedDataParallelKwargs(find_unused_parameters=(FAULT == "skip"))]
accelerator = Accelerator(cpu=True, kwargs_handlers=handlers)
torch.manual_seed(0)
x = torch.randn(512, 32)
loader = DataLoader(TensorDataset(x, x.sum(1, keepdim=True)), batch_size=16, shuffle=True)
model = Net(accelerator.process_index)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
model, opt, loader = accelerator.prepare(model, opt, loader)
set_seed(0, device_specific=(FAULT != "same-seed"))
for step, (xb, yb) in enumerate(loader):
    if step == 10:
        break
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(xb), yb)
    accelerator.backward(loss)
    opt.step()
accelerator.wait_for_everyone()
