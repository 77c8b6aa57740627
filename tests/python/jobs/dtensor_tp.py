"""Tensor parallel with DTensor, as PyTorch's tensor-parallel tutorial writes it: a 2 x 2
device mesh ("dp", "tp"), an MLP's first linear column-wise and its second row-wise over
"tp" (parallelize_module), the gradients averaged over "dp" by hand, and a DataLoader whose
DistributedSampler splits the dataset by the mesh's data-parallel coordinate, so that the two
tensor-parallel peers of a replica train on one batch.

FAULT chooses a bug:
  (none)        clean
  global-data   the sampler splits by the global rank (DistributedSampler's default): the
                tensor-parallel peers compute on different batches
"""
import os

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel,
                                               parallelize_module)

fault = os.environ.get("FAULT", "")
steps = int(os.environ.get("STEPS", "8"))
dist.init_process_group("gloo")
torch.set_num_threads(1)
mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
dp_rank, dp_size = mesh.get_local_rank("dp"), mesh.size(0)

torch.manual_seed(0)  # DTensor shards from one full weight: the same seed on every rank
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 16))
model = parallelize_module(model, mesh["tp"], {"0": ColwiseParallel(), "2": RowwiseParallel()})
opt = torch.optim.SGD(model.parameters(), lr=0.05)

dataset = torch.utils.data.TensorDataset(torch.randn(256, 16,
                                                     generator=torch.Generator().manual_seed(5)))
if fault == "global-data":
    sampler = torch.utils.data.DistributedSampler(dataset, seed=1)
else:
    sampler = torch.utils.data.DistributedSampler(dataset, num_replicas=dp_size, rank=dp_rank,
                                                  seed=1)
loader = torch.utils.data.DataLoader(dataset, batch_size=8, sampler=sampler, drop_last=True)
batches = iter(loader)
dp_group = mesh.get_group("dp")
for _ in range(steps):
    (x,) = next(batches)
    opt.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward()
    for p in model.parameters():  # the data-parallel average of each local shard's gradient
        grad = p.grad.to_local() if hasattr(p.grad, "to_local") else p.grad
        dist.all_reduce(grad, group=dp_group)
        grad.div_(dp_size)
    opt.step()
dist.barrier()
dist.destroy_process_group()
