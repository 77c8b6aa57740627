"""An fp16 AMP DDP job on Gloo with torch's own GradScaler, started once per rank by
`dsdiag run --nproc N`. On torch 2.x it is torch.amp.GradScaler("cpu") under
torch.autocast("cpu", dtype=torch.float16), torch's own kernels throughout; on torch 1.13,
which has neither, torch.cuda.amp.GradScaler run on the CPU by scaler_cpu_amp (start it with
PYTHONOPTIMIZE=1). AMP=bf16 runs bf16 autocast with no scaler at all (what bf16 needs).
The loop is the one torch's AMP recipe gives:

    scaler.scale(loss).backward(); scaler.unscale_(opt); clip_grad_norm_(...);
    scaler.step(opt); scaler.update()

with one user mistake chosen by FAULT:
  clean        none (growth_interval 10: the scale grows every 10 steps)
  overflow     rank 1's batch holds an inf at OVERFLOW_STEPS (default 5,9,25,30-34): its
               gradients are NaN, DDP's allreduce spreads them, every rank skips
  desync-init  rank 1's scaler starts at 2^15, the others' at 2^16
  desync-load  rank 1 restores the scaler state saved at step 0 after step 11 (growth
               every 5 steps: the others' scale has grown by then)
  clip-before  clip_grad_norm_ on the still scaled gradients (no unscale_ first)
  disabled     torch.cuda.amp.GradScaler on a machine without CUDA (it disables itself:
               a no-op)
DEVICE=cuda (torch 2.x): the same job as the AMP recipe writes it on a GPU — the model and
each batch on GPU r % count, torch.amp.GradScaler("cuda") under torch.autocast("cuda"),
BACKEND (default nccl) — as scripts/gpu-check's `scaler` row runs it.
SCALER=subclass: the job's own GradScaler subclass, whose step() and update() call super();
with PUBLIC_ONLY=1 dsdiag's probe is made blind to the scaler's private state (what a torch
without _scale / _growth_tracker / _per_optimizer_states would give).
Prints "final loss <rank> <value>" and "final scale <rank> <value>".
"""
import contextlib
import os
import warnings

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

fault = os.environ.get("FAULT", "clean")
amp = os.environ.get("AMP", "fp16")
steps = int(os.environ.get("STEPS", "40"))
overflow_steps = {int(s) for s in os.environ.get("OVERFLOW_STEPS", "5,9,25,30,31,32,33,34")
                  .split(",")}
# torch 2.x: the device-generic scaler and CPU autocast in fp16, with their CPU kernels.
CPU_SCALER = hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler")
device = torch.device(os.environ.get("DEVICE", "cpu"))
if device.type == "cuda":
    local = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device("cuda", local % torch.cuda.device_count())
    torch.cuda.set_device(device)
if fault == "disabled" or (amp == "bf16" and not CPU_SCALER):
    warnings.simplefilter("ignore")  # torch.cuda.amp.GradScaler's deprecation, no CUDA
    Base = torch.cuda.amp.GradScaler
elif CPU_SCALER:
    Base = torch.amp.GradScaler
else:
    import scaler_cpu_amp

    scaler_cpu_amp.enable()
    Base = torch.cuda.amp.GradScaler


def autocast():
    """CPU autocast in bf16 (torch 1.10 and later), or in fp16 (torch 2.x, with its scaler)."""
    if amp == "bf16":
        return torch.autocast(device.type, dtype=torch.bfloat16)
    if CPU_SCALER and fault != "disabled":
        return torch.autocast(device.type, dtype=torch.float16)
    return contextlib.nullcontext()


dist.init_process_group(os.environ.get("BACKEND") or ("nccl" if device.type == "cuda" else "gloo"))
rank = dist.get_rank()
torch.manual_seed(0)
torch.set_num_threads(1)

model = DDP(torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(),
                                torch.nn.Linear(64, 1)).to(device))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
init_scale = 2.0 ** 15 if (fault == "desync-init" and rank == 1) else 2.0 ** 16
growth_interval = {"clean": 10, "desync-load": 5}.get(fault, 2000)


class JobScaler(Base):
    def step(self, optimizer, *args, **kwargs):
        return super().step(optimizer, *args, **kwargs)

    def update(self, new_scale=None):
        super().update(new_scale)


if os.environ.get("PUBLIC_ONLY"):
    import dsdiag.torch.scaler._probe as probe  # test only: hide the private state

    probe._private_tensor = lambda scaler, name: None
    probe._found_inf = lambda scaler, optimizer_id: None
cls = JobScaler if os.environ.get("SCALER") == "subclass" else Base
scaler_device = (device.type,) if Base is not torch.cuda.amp.GradScaler else ()
scaler = cls(*scaler_device, init_scale=init_scale, growth_interval=growth_interval,
             enabled=amp != "bf16")
saved = scaler.state_dict()
torch.manual_seed(1 + rank)
for step in range(steps):
    x = torch.randn(16, 32).to(device)  # drawn on the CPU: the same batches on any device
    y = x.sum(1, keepdim=True)
    if fault == "overflow" and rank == 1 and step in overflow_steps:
        x[0, 0] = float("inf")  # one bad sample on rank 1
    opt.zero_grad()
    with autocast():
        # Kept small, as a real fp16 job's loss is: scaled by up to 2^20 at the last growth,
        # its fp16 gradients stay finite (a real overflow is the fault's, not the scale's).
        loss = 1e-3 * torch.nn.functional.mse_loss(model(x).float(), y)
    scaler.scale(loss).backward()
    if fault != "clip-before":
        scaler.unscale_(opt)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(opt)
    scaler.update()
    if fault == "desync-load" and rank == 1 and step == 11:
        scaler.load_state_dict(saved)
# One write(2) per line: the ranks share the test's stdout pipe.
os.write(1, ("final loss %d %.17g\n" % (rank, loss.item())).encode())
os.write(1, ("final scale %d %.17g\n" % (rank, scaler.get_scale())).encode())
dist.destroy_process_group()
