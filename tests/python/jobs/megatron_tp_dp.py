"""Tensor parallel x data parallel, written the way Megatron-LM writes it by hand: the
data-parallel groups and then the tensor-parallel groups made with new_group on every rank
(each rank keeps the ones it is in), a column-parallel then a row-parallel linear whose
forward and backward all-reduce over the tensor-parallel group, a LayerNorm replicated on
every rank, and DDP over the data-parallel group only. The tensor-parallel peers of one
replica compute on the same batch: a DataLoader whose DistributedSampler splits the dataset
by the data-parallel rank, as Megatron's data samplers do; each shard is built
from a seed of its tensor-parallel rank, so the two ranks of a data-parallel group hold the
same shard and the two shards differ by design. Every 4 steps each rank gathers its shard's
row norms over its data-parallel group: a column shard of rank 0 has another size than one
of rank 1 (an uneven split, as a vocabulary split is), so the two data-parallel groups
gather different sizes. WORLD 4, TP 2 (ranks 0,1 and 2,3 are tensor-parallel peers).

FAULT chooses a bug:
  (none)         clean
  scale-grads    global rank 3 scales its gradients by 0.5 after backward, before the
                 optimizer step (one data-parallel replica clipping or scaling alone)
  global-data    the sampler splits the dataset by the global rank (DistributedSampler's
                 default): the tensor-parallel peers are fed different batches
  group-order    global rank ODD_RANK (default 0) creates the tensor-parallel groups before
                 the data-parallel ones (the others the other way round): torch numbers
                 groups by the order each rank creates them, so its groups are wired to the
                 wrong peers
"""
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

fault = os.environ.get("FAULT", "")
steps = int(os.environ.get("STEPS", "12"))
TP = 2
HIDDEN, FFN = 16, 48

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
dp_size = world // TP
tp_rank, dp_rank = rank % TP, rank // TP



def data_parallel_groups():
    """The data-parallel groups: the ranks with one tensor-parallel rank."""
    mine = None
    for i in range(TP):
        ranks = list(range(i, world, TP))
        group = dist.new_group(ranks)
        if rank in ranks:
            mine = group
    return mine


def tensor_parallel_groups():
    """The tensor-parallel groups: consecutive ranks."""
    mine = None
    for i in range(dp_size):
        ranks = list(range(i * TP, (i + 1) * TP))
        group = dist.new_group(ranks)
        if rank in ranks:
            mine = group
    return mine


if fault == "group-order" and rank == int(os.environ.get("ODD_RANK", "0")):
    tp_group = tensor_parallel_groups()
    dp_group = data_parallel_groups()
else:
    dp_group = data_parallel_groups()
    tp_group = tensor_parallel_groups()


class _CopyToTP(torch.autograd.Function):
    """Identity forward, all-reduce of the input's gradient over the tensor-parallel group."""

    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, grad):
        grad = grad.clone()
        dist.all_reduce(grad, group=tp_group)
        return grad


class _ReduceFromTP(torch.autograd.Function):
    """All-reduce of the partial outputs over the tensor-parallel group."""

    @staticmethod
    def forward(ctx, x):
        x = x.clone()
        dist.all_reduce(x, group=tp_group)
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad


class ColumnParallelLinear(torch.nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        # An uneven split (a vocabulary's): rank 0 holds a third, rank 1 the rest.
        local = out_features // 3 if tp_rank == 0 else out_features - out_features // 3
        self.weight = torch.nn.Parameter(torch.randn(local, in_features) * 0.1)
        self.bias = torch.nn.Parameter(torch.zeros(local))

    def forward(self, x):
        return torch.nn.functional.linear(_CopyToTP.apply(x), self.weight, self.bias)


class RowParallelLinear(torch.nn.Module):
    def __init__(self, in_local, out_features):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(out_features, in_local) * 0.1)
        self.bias = torch.nn.Parameter(torch.zeros(out_features))  # added once, after the sum

    def forward(self, x):
        return _ReduceFromTP.apply(torch.nn.functional.linear(x, self.weight)) + self.bias


class ParallelMLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.LayerNorm(HIDDEN)  # replicated on every rank
        self.fc1 = ColumnParallelLinear(HIDDEN, FFN)
        self.fc2 = RowParallelLinear(self.fc1.weight.shape[0], HIDDEN)

    def forward(self, x):
        return x + self.fc2(torch.relu(self.fc1(self.norm(x))))


torch.manual_seed(1000 + tp_rank)  # a shard's seed: its tensor-parallel rank
model = DDP(ParallelMLP(), process_group=dp_group)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
dataset = torch.utils.data.TensorDataset(torch.randn(512, HIDDEN,
                                                     generator=torch.Generator().manual_seed(7)))
if fault == "global-data":
    sampler = torch.utils.data.DistributedSampler(dataset, seed=3)
else:
    sampler = torch.utils.data.DistributedSampler(dataset, num_replicas=dp_size, rank=dp_rank,
                                                  seed=3)
loader = torch.utils.data.DataLoader(dataset, batch_size=8, sampler=sampler, drop_last=True)
batches = iter(loader)
for step in range(steps):
    (x,) = next(batches)
    opt.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward()
    if fault == "scale-grads" and rank == 3:
        for p in model.parameters():
            p.grad.mul_(0.5)
    opt.step()
    if step % 4 == 3:  # the shard's row norms, gathered over the data-parallel group
        norms = model.module.fc1.weight.detach().norm(dim=1)
        gathered = [torch.empty_like(norms) for _ in range(dp_size)]
        dist.all_gather(gathered, norms, group=dp_group)
dist.barrier()
dist.destroy_process_group()
