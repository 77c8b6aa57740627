"""A metric reduced with a size one rank computes differently at step 3 (rank 1: 5 values,
rank 0: 4), between the backward and the optimizer step of a small DDP loop (Gloo, 2 ranks,
`dsdiag run --nproc 2`). Gloo's receiver of the wrong size aborts in C++
(gloo::EnforceNotMet through std::terminate, never through Python)."""
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
torch.manual_seed(1 + rank)
for step in range(6):
    opt.zero_grad()
    model(torch.randn(4, 8)).sum().backward()
    n = 5 if (rank == 1 and step == 3) else 4
    dist.all_reduce(torch.ones(n))
    opt.step()
dist.destroy_process_group()
