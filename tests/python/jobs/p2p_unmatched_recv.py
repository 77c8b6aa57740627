"""A recv no send ever meets: at step 2 rank 1 waits for a message from rank 0 that rank 0
never sends (it goes on to the step's all_reduce), in a small DDP loop (Gloo, `dsdiag run
--nproc 2 --timeout 10`). Rank 1's watchdog times out on the recv, rank 0's on the
all_reduce, and each rank is ended."""
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
torch.manual_seed(1 + rank)
for step in range(4):
    opt.zero_grad()
    model(torch.randn(8, 4)).sum().backward()
    if step == 2 and rank == 1:
        dist.recv(torch.empty(3), 0)
    dist.all_reduce(torch.ones(2))
    opt.step()
dist.destroy_process_group()
