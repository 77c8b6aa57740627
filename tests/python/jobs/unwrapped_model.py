"""A data-parallel job over a DistributedSampler whose model DDP does not keep in sync,
chosen by FAULT:
  no-ddp          no DDP: each rank trains its own replica from the same seed (they drift
                  from the first update)
  seed-per-rank   no DDP, and the model built after torch.manual_seed(rank): the replicas
                  differ before the first update
  no-ddp-autograd no DDP, batches sliced from the dataset by the sampler's indices and
                  torch.autograd.backward(loss): no loader fetch, no Tensor.backward, the
                  step begins at the optimizer step
  ddp-module      DDP built, but the loop calls its inner module (ddp.module(x)): DDP's
                  forward never runs, the gradients are never reduced
  opt-first       the optimizer built on the module before DDP wraps it: clean
  (none)          DDP called as it should be: clean
STEPS optimizer steps (20), 8 samples a batch, the sampler's epoch set every epoch."""
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

fault = os.environ.get("FAULT", "")
steps = int(os.environ.get("STEPS", "20"))
dist.init_process_group("gloo")
rank = dist.get_rank()
torch.set_num_threads(1)

torch.manual_seed(0)
data = TensorDataset(torch.randn(256, 16), torch.randn(256, 1))
torch.manual_seed(rank if fault == "seed-per-rank" else 0)
module = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
if fault == "opt-first":
    opt = torch.optim.SGD(module.parameters(), lr=0.05)
model = module if fault.startswith("no-ddp") or fault == "seed-per-rank" else DDP(module)
if fault != "opt-first":
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
forward = model.module if fault == "ddp-module" else model

sampler = DistributedSampler(data, shuffle=True, seed=0)
loader = DataLoader(data, batch_size=8, sampler=sampler)


def batches():
    if fault != "no-ddp-autograd":
        return loader
    indices = list(sampler)
    return [data[indices[i:i + 8]] for i in range(0, len(indices), 8)]


step, epoch = 0, 0
while step < steps:
    sampler.set_epoch(epoch)
    for x, y in batches():
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(forward(x), y)
        if fault == "no-ddp-autograd":
            torch.autograd.backward(loss)
        else:
            loss.backward()
        opt.step()
        step += 1
        if step == steps:
            break
    epoch += 1
dist.destroy_process_group()
