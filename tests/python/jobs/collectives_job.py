"""Every collective a job can issue itself, on the default group and on a sub-group of all
ranks, between the backward and the optimizer step of a small DDP loop (Gloo, run under
`dsdiag run --nproc 2`). Prints, per rank, the collectives it issued as
`issued <rank> <name> <group> <count>`, where count is what dsdiag's `coll` record should
count: what each rank sends (all_gather, gather), receives (scatter, reduce_scatter,
all_to_all) or holds (all_reduce, broadcast, reduce).

Gloo on torch 1.13 lacks all_gather_into_tensor, reduce_scatter(_tensor) and all_to_all:
they are left out there (`lacks`)."""
import os

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
sub = dist.new_group(list(range(world)))
old_gloo = int(torch.__version__.split(".")[0]) < 2
lacks = {"all_gather_into_tensor", "reduce_scatter", "reduce_scatter_tensor", "all_to_all"}


def calls(group):
    n = 6
    x = torch.full((n,), float(rank + 1))
    yield "all_reduce", n, lambda: dist.all_reduce(x, group=group)
    yield "broadcast", n, lambda: dist.broadcast(x, src=0, group=group)
    yield "reduce", n, lambda: dist.reduce(x, dst=0, group=group)
    yield "all_gather", n, lambda: dist.all_gather([torch.empty(n) for _ in range(world)], x,
                                                   group=group)
    yield "all_gather_into_tensor", n, lambda: dist.all_gather_into_tensor(
        torch.empty(n * world), x, group=group)
    yield "gather", n, lambda: dist.gather(
        x, [torch.empty(n) for _ in range(world)] if rank == 0 else None, dst=0, group=group)
    yield "scatter", n, lambda: dist.scatter(
        torch.empty(n), [torch.ones(n) for _ in range(world)] if rank == 0 else None, src=0,
        group=group)
    yield "reduce_scatter", 2, lambda: dist.reduce_scatter(
        torch.empty(2), [torch.ones(2) for _ in range(world)], group=group)
    yield "reduce_scatter_tensor", 2, lambda: dist.reduce_scatter_tensor(
        torch.empty(2), torch.ones(2 * world), group=group)
    yield "all_to_all_single", 2 * world, lambda: dist.all_to_all_single(
        torch.empty(2 * world), torch.ones(2 * world), group=group)
    yield "all_to_all", 3 * world, lambda: dist.all_to_all(
        [torch.empty(3) for _ in range(world)], [torch.ones(3) for _ in range(world)],
        group=group)
    yield "barrier", 0, lambda: dist.barrier(group=group)


torch.manual_seed(0)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
lines = []
for step in range(2):
    opt.zero_grad()
    model(torch.randn(8, 4)).sum().backward()
    for group, name in ((None, "default"), (sub, "sub")):
        for call, count, run in calls(group):
            if old_gloo and call in lacks:
                continue
            run()
            if step == 0:
                lines.append("issued %d %s %s %d\n" % (rank, call, name, count))
    opt.step()
os.write(1, "".join(lines).encode())
dist.destroy_process_group()
