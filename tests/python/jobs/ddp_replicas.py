"""A DDP job whose replicas drift apart outside the gradients, chosen by FAULT:
  bn-unsynced   BatchNorm under broadcast_buffers=False: each rank's running statistics
                follow its own batches
  decay         rank 1 applies a manual weight decay of its own after every optimizer step
                from step 3 (the others do not)
  (none)        BatchNorm with the default broadcast_buffers=True: clean
Every rank draws different batches (seeded with its rank)."""
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

fault = os.environ.get("FAULT", "")
steps = int(os.environ.get("STEPS", "12"))
dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
torch.set_num_threads(1)

model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.BatchNorm1d(32), torch.nn.ReLU(),
                            torch.nn.Linear(32, 1))
model = DDP(model, broadcast_buffers=(fault != "bn-unsynced"))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
torch.manual_seed(1 + rank)
for step in range(steps):
    x = torch.randn(8, 16)
    opt.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    if fault == "decay" and rank == 1 and step >= 3:
        with torch.no_grad():
            for p in model.parameters():
                p.mul_(0.999)
dist.destroy_process_group()
