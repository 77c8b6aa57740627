"""A DDP job on Gloo whose loop is written the ways people write it, started once per rank
by `dsdiag run --nproc N`: the training batches come from two DataLoaders zipped (inputs and
an auxiliary stream, each over its own DistributedSampler), and every EVERY (default 4)
steps a validation loop runs over a third loader. EPOCHS (default 2) epochs of 6 steps.

VALIDATE says how the validation loop is written:
  nograd   model.eval(), the fetch and the forward under torch.no_grad()
  eval     model.eval(), autograd on (the forward through the DDP model, no backward)
  sloppy   neither eval() nor no_grad(): training mode, autograd on, no backward
  none     no validation loop
AUX=0 trains from the first loader alone. SLOW=<rank> makes that rank's first training
dataset (zipped before the auxiliary one) sleep 5 ms a sample (40 ms a batch): the training
loop starves there; VSLOW=<rank> slows its validation dataset instead (the training loop
does not wait for it, though the other ranks wait for that rank's validation).
Prints "final loss <rank> <value>" and "seen <rank> <sum of the training sample ids>".
"""
import os
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

validate = os.environ.get("VALIDATE", "nograd")
every = int(os.environ.get("EVERY", "4"))
epochs = int(os.environ.get("EPOCHS", "2"))
aux = os.environ.get("AUX", "1") == "1"
dist.init_process_group("gloo")
rank = dist.get_rank()
slow = os.environ.get("SLOW") == str(rank)
vslow = os.environ.get("VSLOW") == str(rank)
torch.manual_seed(0)
torch.set_num_threads(1)


class Samples(Dataset):
    def __init__(self, n, seed, sleep_s=0.0):
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randn(n, 32, generator=g)
        self.sleep_s = sleep_s

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        if self.sleep_s:
            time.sleep(self.sleep_s)
        return self.x[i], i


def loader(dataset, shuffle=True):
    sampler = DistributedSampler(dataset, seed=0, shuffle=shuffle)
    return sampler, DataLoader(dataset, batch_size=8, sampler=sampler)


main_sampler, main_loader = loader(Samples(96, 1, 0.005 if slow else 0.0))
aux_sampler, aux_loader = loader(Samples(96, 2))
_, val_loader = loader(Samples(32, 3, 0.005 if vslow else 0.0), shuffle=False)
model = DDP(torch.nn.Sequential(torch.nn.Linear(32, 256), torch.nn.ReLU(),
                                torch.nn.Linear(256, 1)))
opt = torch.optim.SGD(model.parameters(), lr=0.01)


def run_validation():
    if validate == "none":
        return
    if validate in ("nograd", "eval"):
        model.eval()
    total = 0.0
    if validate == "nograd":
        with torch.no_grad():
            for x, _ in val_loader:
                total += float(model(x).sum())
    else:
        for x, _ in val_loader:
            total += float(model(x).sum().detach())
    model.train()
    return total


seen, step = 0, 0
for epoch in range(epochs):
    main_sampler.set_epoch(epoch)
    aux_sampler.set_epoch(epoch)
    batches = zip(main_loader, aux_loader) if aux else ((b, None) for b in main_loader)
    for (x, ids), extra in batches:
        seen += int(ids.sum())
        target = x[:, :4].sum(1, keepdim=True)
        if extra is not None:
            target = target + 0.1 * extra[0][:, :1]
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), target)
        loss.backward()
        opt.step()
        step += 1
        if step % every == 0:
            run_validation()
os.write(1, ("final loss %d %.17g\nseen %d %d\n" % (rank, loss.item(), rank, seen)).encode())
dist.destroy_process_group()
