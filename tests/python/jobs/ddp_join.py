"""Uneven inputs under DDP, as PyTorch's Join tutorial ("Distributed Training with Uneven
Inputs Using the Join Context Manager") writes it, with an optimizer step per input: rank r
has 5 + r batches, and `with Join([model, optimizer])` lets the ranks that run out shadow the
others' collectives until every rank is done.

FAULT chooses a bug:
  (none)     clean
  no-join    the same uneven inputs without Join: the rank with more batches waits in a
             gradient allreduce that the others, done, never issue
"""
import os

import torch
import torch.distributed as dist
from torch.distributed.algorithms.join import Join
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn.parallel import DistributedDataParallel as DDP

fault = os.environ.get("FAULT", "")
dist.init_process_group("gloo")
rank = dist.get_rank()
torch.set_num_threads(1)
torch.manual_seed(0)
model = DDP(torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1)))
optimizer = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.SGD, lr=0.01)
torch.manual_seed(1 + rank)
inputs = [torch.randn(4, 8) for _ in range(5 + rank)]


def train():
    for x in inputs:
        optimizer.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        optimizer.step()


if fault == "no-join":
    train()
else:
    with Join([model, optimizer]):
        train()
print("rank %d has exhausted all %d of its inputs" % (rank, len(inputs)), flush=True)
dist.destroy_process_group()
