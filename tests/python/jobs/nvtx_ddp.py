"""A DDP training loop as the tutorial writes it, plus the step's loss averaged over the ranks
for logging (a job's own all_reduce): what an Nsight Systems timeline of a PyTorch job shows
of dsdiag's NVTX ranges (tests/python/test_nvtx.py). Gloo on CPU: NVTX needs no GPU."""
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = DDP(torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1)))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
torch.manual_seed(rank)
for _ in range(4):
    inputs, targets = torch.randn(4, 8), torch.randn(4, 1)
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(inputs), targets)
    loss.backward()
    optimizer.step()
    logged = loss.detach().clone()
    dist.all_reduce(logged)
dist.destroy_process_group()
