"""A DDP job as a first DDP script is often written, started once per rank by `dsdiag run
--nproc N`: one seed on every rank, a map-style dataset, and the DataLoader a single-process
script had, with shuffle=True. SAMPLER chooses how the training data is split:
  (unset)      DataLoader(shuffle=True) and no DistributedSampler: every rank draws the same
               permutation of the whole dataset (the mistake)
  distributed  DistributedSampler(shuffle=True) and set_epoch(epoch) (the fix)
After every epoch a small validation loop runs, the same 16 samples on every rank on
purpose (no sampler, no shuffle: the metric is computed alike everywhere), under
model.eval() and torch.no_grad(). EPOCHS (default 2); 128 samples of batch 16: 8 steps per
epoch without a sampler, 4 on each of two ranks with one. Prints "final loss <rank> <value>".
"""
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(42)
torch.set_num_threads(1)

features = torch.randn(128, 20)
targets = (features[:, :5].sum(1, keepdim=True) > 0).float()
train_set = TensorDataset(features, targets)
val_set = TensorDataset(torch.randn(16, 20), torch.ones(16, 1))

if os.environ.get("SAMPLER") == "distributed":
    sampler = DistributedSampler(train_set, shuffle=True)
    train_loader = DataLoader(train_set, batch_size=16, sampler=sampler)
else:
    sampler = None
    train_loader = DataLoader(train_set, batch_size=16, shuffle=True)
val_loader = DataLoader(val_set, batch_size=8)

model = DDP(torch.nn.Sequential(torch.nn.Linear(20, 64), torch.nn.ReLU(),
                                torch.nn.Linear(64, 1)))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
loss_fn = torch.nn.BCEWithLogitsLoss()

for epoch in range(int(os.environ.get("EPOCHS", "2"))):
    if sampler is not None:
        sampler.set_epoch(epoch)
    model.train()
    for x, y in train_loader:
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        val_loss = sum(loss_fn(model(x), y).item() for x, y in val_loader)
os.write(1, ("final loss %d %.17g\n" % (rank, loss.item())).encode())
dist.destroy_process_group()
