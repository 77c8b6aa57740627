"""A small DDP job on Gloo fed by a DataLoader over a DistributedSampler, started once per
rank by `dsdiag run --nproc N`, with one user mistake chosen by FAULT:
  slow         rank 1's Dataset sleeps 5 ms per sample (40 ms per batch of 8)
  workers      every rank's Dataset sleeps 5 ms per sample; rank 1 has num_workers=0, the
               others WORKERS (2 unless set)
  seed         DistributedSampler(seed=rank)
  seed-rank2   rank 2 builds its sampler with seed 1, the others with 0
  rank0        every rank passes rank=0 to DistributedSampler
  size         rank 1's dataset has 4 samples fewer (the same 6 batches a pass)
  no-set-epoch sampler.set_epoch(epoch) is never called
Knobs: WORKERS (num_workers, default 0), PERSISTENT=1 (persistent_workers), EPOCHS (4),
SHUFFLE=0 (the training sampler does not shuffle),
VALIDATE (a validation pass after every epoch over a DistributedSampler without
shuffling: 1 = model.eval(), the fetch outside torch.no_grad(), the forward inside it;
sloppy = neither eval() nor no_grad()), REBUILD=1 (a new DataLoader every epoch), HIDDEN
(the model's width, 1024: steps long enough that two loader workers keep up on a shared
two-core host). 96 samples of batch 8: 6 steps per epoch on 2 ranks.
Prints "final loss <rank> <value>" and "seen <rank> <sum of the sample ids trained on>".
"""
import os
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

fault = os.environ.get("FAULT", "")
workers = int(os.environ.get("WORKERS", "0"))
persistent = os.environ.get("PERSISTENT") == "1" and workers > 0
epochs = int(os.environ.get("EPOCHS", "4"))
validate = os.environ.get("VALIDATE", "")
rebuild = os.environ.get("REBUILD") == "1"

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
torch.set_num_threads(1)


class Samples(Dataset):
    """n samples of 64 features, their targets and their ids."""

    def __init__(self, n, sleep_s=0.0):
        g = torch.Generator().manual_seed(7)
        self.x = torch.randn(n, 64, generator=g)
        self.y = self.x[:, :8].sum(1, keepdim=True)
        self.sleep_s = sleep_s

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        if self.sleep_s:
            time.sleep(self.sleep_s)
        return self.x[i], self.y[i], i


size = 96 - (4 if fault == "size" and rank == 1 else 0)
sleep_s = 0.005 if (fault == "slow" and rank == 1) or fault == "workers" else 0.0
if fault == "workers":
    workers = 0 if rank == 1 else (workers or 2)
    persistent = os.environ.get("PERSISTENT") == "1" and workers > 0
train_set = Samples(size, sleep_s)
seed = rank if fault == "seed" else (1 if fault == "seed-rank2" and rank == 2 else 0)
sampler = DistributedSampler(train_set, num_replicas=world, rank=0 if fault == "rank0" else rank,
                             seed=seed, shuffle=os.environ.get("SHUFFLE") != "0")


def train_loader():
    return DataLoader(train_set, batch_size=8, sampler=sampler, num_workers=workers,
                      persistent_workers=persistent)


loader = train_loader()
val_set = Samples(40)
val_loader = DataLoader(val_set, batch_size=8,
                        sampler=DistributedSampler(val_set, shuffle=False))

hidden = int(os.environ.get("HIDDEN", "1024"))
model = DDP(torch.nn.Sequential(torch.nn.Linear(64, hidden), torch.nn.ReLU(),
                                torch.nn.Linear(hidden, hidden), torch.nn.ReLU(),
                                torch.nn.Linear(hidden, 1)))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
seen = 0
for epoch in range(epochs):
    if fault != "no-set-epoch":
        sampler.set_epoch(epoch)
    if rebuild and epoch > 0:
        loader = train_loader()
    model.train()
    for x, y, ids in loader:
        seen += int(ids.sum())
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
    if validate == "1":
        model.eval()
        for x, y, _ in val_loader:
            with torch.no_grad():
                val_loss = torch.nn.functional.mse_loss(model.module(x), y)
    elif validate == "sloppy":  # neither eval() nor no_grad(): a forward, no backward
        for x, y, _ in val_loader:
            val_loss = torch.nn.functional.mse_loss(model.module(x), y)
# One write(2) per line: the ranks share the test's stdout pipe.
os.write(1, ("final loss %d %.17g\nseen %d %d\n" % (rank, loss.item(), rank, seen)).encode())
dist.destroy_process_group()
