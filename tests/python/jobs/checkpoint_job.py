"""A small DDP job on Gloo that checkpoints, started once per rank by `dsdiag run --nproc N`,
with one user mistake chosen by FAULT (CKPT_DIR: where the checkpoints go):
  (none)    rank 0 saves after step 3 (`if rank == 0:`), a barrier, every rank loads it with
            map_location="cpu" into the DDP model and trains on
  sharded   every rank saves its own ckpt-<rank>.pt, then loads it back
  race      every rank saves the same path after step 3 and 6 (no `if rank == 0:`)
  stale     rank 0 saves after step 3 and after step 6; then rank 1 "resumes" from the
            step-3 file, the others from the step-6 one (a stale `latest`)
  content   the ranks load files of the same step and epoch with different weights (rank 1
            one of its own)
  prefix    rank 0 saves ddp.state_dict() (keys `module.*`); rank 1 loads it into the bare
            model (strict: RuntimeError), the others into the DDP wrapper
  lenient   every rank loads, with strict=False: ddp.state_dict() into the bare model, the
            bare model's state dict into the DDP wrapper (nothing raises, nothing loads), and
            one that lacks a key
  gpu-ckpt  rank 0 saves a checkpoint whose storages say cuda:1 (as one saved on a GPU node);
            rank 0 loads it with map_location="cpu", rank 1 without (RuntimeError here)
The script imports `save` and `load` from torch before dsdiag is told anything: the names
bound so are the wrapped ones. Prints "final loss <rank> <value>".
"""
import os

import torch
import torch.distributed as dist
from torch import load, save
from torch.nn.parallel import DistributedDataParallel as DDP

fault = os.environ.get("FAULT", "")
steps = int(os.environ.get("STEPS", "10"))
ckpt_dir = os.environ["CKPT_DIR"]
dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
torch.set_num_threads(1)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(
            torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))

    def forward(self, x):
        return self.body(x)


def path(name):
    return os.path.join(ckpt_dir, name)


def checkpoint(step):
    return {"model": model.module.state_dict(), "optimizer": opt.state_dict(), "step": step,
            "epoch": 0}


def save_as_gpu_checkpoint(obj, where):
    """What a checkpoint saved on a GPU node holds on a CPU machine: storages tagged cuda:1."""
    registry = torch.serialization._package_registry
    kept = list(registry)
    registry.insert(0, (0, lambda storage: "cuda:1", lambda storage, location: None))
    try:
        save(obj, where)
    finally:
        registry[:] = kept


def after_step(step):
    done = step + 1
    if fault == "race" and done in (3, 6):
        save(checkpoint(done), path("latest.pt"))
    elif fault in ("stale", "content") and done in (3, 6) and rank == 0:
        save(checkpoint(done), path("step-%d.pt" % done))
    elif fault == "sharded" and done == 3:
        save(checkpoint(done), path("ckpt-%d.pt" % rank))
        model.module.load_state_dict(load(path("ckpt-%d.pt" % rank))["model"])
    elif fault == "" and done == 3:
        if rank == 0:
            save(checkpoint(done), path("ckpt.pt"))
        dist.barrier()
        state = load(path("ckpt.pt"), map_location="cpu")
        model.module.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
    elif fault == "prefix" and done == 3:
        if rank == 0:
            save(model.state_dict(), path("ddp.pt"))  # the DDP wrapper's keys: module.*
        dist.barrier()
        state = load(path("ddp.pt"), map_location="cpu")
        if rank == 1:
            model.module.load_state_dict(state)
        else:
            model.load_state_dict(state)
    elif fault == "lenient" and done == 3:
        if rank == 0:
            save(model.state_dict(), path("ddp.pt"))
            save(model.module.state_dict(), path("bare.pt"))
        dist.barrier()
        # module.* into the bare model; bare keys into the wrapper; one key short.
        model.module.load_state_dict(load(path("ddp.pt")), strict=False)
        model.load_state_dict(load(path("bare.pt")), strict=False)
        short = load(path("bare.pt"))
        del short["body.2.bias"]
        model.module.load_state_dict(short, strict=False)
    elif fault == "gpu-ckpt" and done == 3:
        if rank == 0:
            save_as_gpu_checkpoint(checkpoint(done), path("gpu.pt"))
        dist.barrier()
        state = load(path("gpu.pt"), map_location="cpu" if rank == 0 else None)
        model.module.load_state_dict(state["model"])


def resume():
    """The stale and content faults: every rank resumes, rank 1 from another file."""
    dist.barrier()
    if fault == "content" and rank == 1:
        other = Net()
        save({"model": other.state_dict(), "step": 6, "epoch": 0}, path("other-6.pt"))
        name = "other-6.pt"
    elif fault == "stale" and rank == 1:
        name = "step-3.pt"
    else:
        name = "step-6.pt"
    state = load(path(name), map_location="cpu")
    model.module.load_state_dict(state["model"])


model = DDP(Net())
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
torch.manual_seed(1 + rank)
for step in range(steps):
    x = torch.randn(16, 32)
    y = x.sum(1, keepdim=True)
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    after_step(step)
    if fault in ("stale", "content") and step + 1 == 6:
        resume()
os.write(1, ("final loss %d %.17g\n" % (rank, loss.item())).encode())
dist.destroy_process_group()
