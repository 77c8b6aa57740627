"""A small GAN on Gloo, started once per rank by `dsdiag run --nproc N`: a generator G and a
discriminator D, each in its own DistributedDataParallel, each with its own optimizer. One
iteration: a batch (from a DataLoader over a DistributedSampler, or drawn in the loop with
LOADER=0), the discriminator's step (real and generated samples, one backward, optD.step())
then the generator's (D's verdict on its samples, one backward through D, optG.step()).
ITERS (default 12) iterations.

FAULT adds one user mistake, on rank 1 at iteration AT (default 5):
  skip-d     rank 1 skips optD.step() at iteration AT, after the backward (its discriminator
             falls behind the others')
  touch-g    rank 1 scales one parameter of G in place after optD.step() (outside any
             optimizer), at iteration AT
  d-grad     rank 1 doubles one gradient of D after the allreduce, before optD.step()
Knobs: AMP=1 (CPU autocast in fp16 with one torch.amp.GradScaler("cpu") stepping both
optimizers; torch 2.x), CRITIC=k (the discriminator steps every iteration, the generator
every k-th: a WGAN's critic schedule), SPARE=1 (a third optimizer is built and never steps).
Prints "final loss <rank> <value>" (the generator's last loss).
"""
import contextlib
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

fault = os.environ.get("FAULT", "")
at = int(os.environ.get("AT", "5"))
iters = int(os.environ.get("ITERS", "12"))
use_loader = os.environ.get("LOADER", "1") == "1"
amp = os.environ.get("AMP") == "1"
critic = int(os.environ.get("CRITIC", "1"))
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
torch.set_num_threads(1)

Z, X = 8, 16
G = DDP(torch.nn.Sequential(torch.nn.Linear(Z, 32), torch.nn.ReLU(), torch.nn.Linear(32, X)))
D = DDP(torch.nn.Sequential(torch.nn.Linear(X, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1)))
opt_g = torch.optim.Adam(G.parameters(), lr=1e-3)
opt_d = torch.optim.Adam(D.parameters(), lr=1e-3)
spare = torch.optim.SGD(torch.nn.Linear(2, 2).parameters(), lr=0.1) \
    if os.environ.get("SPARE") == "1" else None
scaler = torch.amp.GradScaler("cpu") if amp else None

real_data = torch.randn(8 * world * iters, X, generator=torch.Generator().manual_seed(3)) + 2.0
dataset = TensorDataset(real_data)
sampler = DistributedSampler(dataset, seed=0)
loader = DataLoader(dataset, batch_size=8, sampler=sampler)
torch.manual_seed(1 + rank)  # each rank its own noise
bce = torch.nn.functional.binary_cross_entropy_with_logits


def batches():
    if use_loader:
        for (x,) in loader:
            yield x
    else:
        for _ in range(iters):
            yield torch.randn(8, X) + 2.0


def backward_and_step(loss, opt):
    if scaler is None:
        loss.backward()
        opt.step()
    else:
        scaler.scale(loss).backward()
        scaler.step(opt)


def autocast():
    # torch 1.13's CPU autocast refuses fp16 even when disabled: no context at all then.
    return torch.autocast("cpu", dtype=torch.float16) if amp else contextlib.nullcontext()


for i, real in enumerate(batches()):
    ones, zeros = torch.ones(len(real), 1), torch.zeros(len(real), 1)
    # The discriminator: real against generated, one forward and one backward.
    opt_d.zero_grad()
    with autocast():
        fake = G(torch.randn(len(real), Z))
        logits = D(torch.cat([real, fake.detach()]))
        loss_d = bce(logits.float(), torch.cat([ones, zeros]))
    if fault in ("skip-d", "d-grad") and rank == 1 and i == at:
        loss_d.backward()
        if fault == "d-grad":
            with torch.no_grad():
                next(D.parameters()).grad.mul_(2.0)
            opt_d.step()
    else:
        backward_and_step(loss_d, opt_d)
    if fault == "touch-g" and rank == 1 and i == at:
        with torch.no_grad():
            next(G.parameters()).mul_(1.01)
    # The generator: D's verdict on its samples, through D.
    if i % critic == 0:
        opt_g.zero_grad()
        with autocast():
            loss_g = bce(D(fake).float(), ones)
        backward_and_step(loss_g, opt_g)
    if scaler is not None:
        scaler.update()
os.write(1, ("final loss %d %.17g\n" % (rank, loss_g.item())).encode())
dist.destroy_process_group()
