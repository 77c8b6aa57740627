"""A DDP job written as the DDP tutorial writes one (a model, DDP with a small bucket_cap_mb so
that its gradients sync in several buckets, SGD, mse loss), run by the device-path tests with
DSDIAG_DEVICE_PATH=force or without it, and by scripts/gpu-check on a GPU: DEVICE=cuda puts
rank r on GPU r % count, over BACKEND (default nccl on CUDA, gloo on the CPU). FAULT:
  clean   none
  desync  rank 0 doubles one gradient after the allreduce, at step 5 (grad.mul_)
  slow    rank 1 takes 60 ms longer each step (host time: a slow input pipeline)
  hang    rank 1 blocks (a sleep) at step 5, before its forward
  device-stall  (CUDA only) rank 0 queues, at step 5 before its backward, a kernel that spins
          for STALL_S seconds (default 120): its bucket all_reduces wait on the device while
          the host waits in loss.item(), as behind a kernel that never ends
PG_TIMEOUT_S, when set, is the process group's timeout (init_process_group(timeout=...)).
Prints "step_ms <rank> <median ms of a step>" at the end.
With COUNT_SYNCS=1 the job counts, per step, what the probes did that can wait for a device:
dsdiag's own waits (_device.WAITS) and the calls from dsdiag's code of Tensor.item /
.tolist / .cpu, torch.cuda.synchronize and torch.cuda.Event.synchronize (a shim around
each), and prints "syncs <rank> <waits per step...>" and "calls <rank> <calls per step...>".
Prints "loss <rank> <step> <value>" per step (the job's own reading, after the step).
"""
import datetime
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

fault = os.environ.get("FAULT", "clean")
steps = int(os.environ.get("STEPS", "12"))
count = os.environ.get("COUNT_SYNCS") == "1"


class Calls(object):
    n = 0


def _from_dsdiag():
    caller = sys._getframe(2).f_code.co_filename
    return os.sep + "dsdiag" + os.sep in caller


def _counting(owner, name):
    original = getattr(owner, name)

    def counted(*args, **kwargs):
        if _from_dsdiag():
            Calls.n += 1
        return original(*args, **kwargs)

    setattr(owner, name, counted)


if count:
    for owner, name in ((torch.Tensor, "item"), (torch.Tensor, "tolist"), (torch.Tensor, "cpu"),
                        (torch.cuda, "synchronize"), (torch.cuda.Event, "synchronize")):
        _counting(owner, name)

device = torch.device(os.environ.get("DEVICE", "cpu"))
if device.type == "cuda":
    local = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device("cuda", local % torch.cuda.device_count())
    torch.cuda.set_device(device)
if fault == "device-stall" and device.type != "cuda":
    raise SystemExit("device_path: FAULT=device-stall needs DEVICE=cuda")
group_options = {}
if os.environ.get("PG_TIMEOUT_S"):
    group_options["timeout"] = datetime.timedelta(seconds=float(os.environ["PG_TIMEOUT_S"]))
dist.init_process_group(os.environ.get("BACKEND") or ("nccl" if device.type == "cuda" else "gloo"),
                        **group_options)
rank = dist.get_rank()
torch.manual_seed(0)
torch.set_num_threads(1)
# DDP's first bucket holds 1 MB, the others bucket_cap_mb: 256 KB weights, each its own bucket.
layers = [torch.nn.Linear(32, 256), torch.nn.ReLU()]
for _ in range(6):
    layers += [torch.nn.Linear(256, 256), torch.nn.ReLU()]
model = DDP(torch.nn.Sequential(*layers, torch.nn.Linear(256, 1)).to(device), bucket_cap_mb=0.1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
torch.manual_seed(1 + rank)
waits, calls, step_ms = [], [], []
for step in range(steps):
    start = time.perf_counter()
    if count:
        from dsdiag.torch import _device

        before = (_device.WAITS.count, Calls.n)
    if fault == "hang" and rank == 1 and step == 5:
        time.sleep(600)
    x = torch.randn(16, 32).to(device)
    y = x.sum(1, keepdim=True)
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    if fault == "slow" and rank == 1:
        time.sleep(0.06)
    if fault == "device-stall" and rank == 0 and step == 5:
        # torch.cuda._sleep spins for a number of GPU clock cycles; a generous 2 GHz per second.
        torch.cuda._sleep(int(float(os.environ.get("STALL_S", "120")) * 2e9))
    loss.backward()
    if fault == "desync" and rank == 0 and step == 5:
        with torch.no_grad():
            model.module[0].weight.grad.mul_(2)
    opt.step()
    if count:
        waits.append(_device.WAITS.count - before[0])
        calls.append(Calls.n - before[1])
    os.write(1, ("loss %d %d %r\n" % (rank, step, loss.item())).encode())
    step_ms.append((time.perf_counter() - start) * 1e3)
os.write(1, ("step_ms %d %.3f\n" % (rank, sorted(step_ms)[len(step_ms) // 2])).encode())
if count:
    os.write(1, ("syncs %d %s\n" % (rank, " ".join(map(str, waits)))).encode())
    os.write(1, ("calls %d %s\n" % (rank, " ".join(map(str, calls)))).encode())
