"""bench/run's Python job: a 2-rank DDP training loop on Gloo whose step takes 10+ ms on
two cores, timed from inside. Rank 0 prints "step_ms_median <ms>": the median wall time of
one iteration (batch, forward, backward with the allreduces, optimizer step) after WARMUP
steps. Run under `dsdiag run --probes off|light|full` by bench/run (py_probe_overhead_*)."""
import os
import statistics
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

steps = int(os.environ.get("STEPS", "80"))
warmup = int(os.environ.get("WARMUP", "10"))
width = int(os.environ.get("WIDTH", "384"))
dist.init_process_group("gloo")
rank = dist.get_rank()
torch.set_num_threads(1)
torch.manual_seed(0)
layers = []
for _ in range(4):
    layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
model = DDP(torch.nn.Sequential(*layers, torch.nn.Linear(width, 1)))
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
torch.manual_seed(1 + rank)
data = [torch.randn(64, width) for _ in range(8)]
times = []
for step in range(steps):
    start = time.perf_counter()
    x = data[step % len(data)]
    opt.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    times.append(time.perf_counter() - start)
if rank == 0:
    print("step_ms_median %.4f" % (statistics.median(times[warmup:]) * 1e3), flush=True)
dist.destroy_process_group()
