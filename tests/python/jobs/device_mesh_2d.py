"""A 2 x 2 device mesh as torchtitan builds one (init_device_mesh with named dimensions),
each rank reducing over both of its dimension groups every step: over "dp" a tensor whose
size is its "tp" coordinate's (the shards of a row-parallel bias are of two sizes), over "tp"
a fixed one. The two data-parallel groups reduce different sizes by design: clean."""
import os

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh

steps = int(os.environ.get("STEPS", "6"))
dist.init_process_group("gloo")
torch.set_num_threads(1)
mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
for _ in range(steps):
    shard = torch.ones(4 + 3 * mesh.get_local_rank("tp"))
    dist.all_reduce(shard, group=mesh.get_group("dp"))
    dist.all_reduce(torch.ones(3), group=mesh.get_group("tp"))
dist.barrier()
dist.destroy_process_group()
