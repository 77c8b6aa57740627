"""A clean DDP job (two ranks, Gloo, a small MLP, 40 steps) meant to run on a loaded host.
PIN=1: each rank pins itself to CPU <rank> (so that a load pinned to one CPU falls on one
rank alone). Nothing in it is wrong: whatever dsdiag says of it comes from the host.
SLOW_RANK=<r> makes one rank truly slower, for a reason of its own: SLOW=compute (default)
it trains on batches three times as large as the others' (uneven shards, longer sequences),
SLOW=sleep its data loader waits for each batch as long as the rank's last step took (a slow
disk; a share of the step, so that it stands out on any torch and any load).
Prints "final loss <rank> <value>" at the end."""
import os
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = int(os.environ.get("STEPS", "40"))
SLOW_RANK = int(os.environ.get("SLOW_RANK", "-1"))
SLOW = os.environ.get("SLOW", "compute")


def say(text):
    os.write(1, (text + "\n").encode())


class Batches(torch.utils.data.Dataset):
    """STEPS random batches of `size` samples, read from a slow disk if `slow`."""

    def __init__(self, size, slow):
        self.size, self.slow = size, slow
        self.last = None  # when the last batch was handed over

    def __len__(self):
        return STEPS

    def __getitem__(self, i):
        if self.slow:
            now = time.monotonic()
            time.sleep(max(0.03, now - self.last) if self.last is not None else 0.03)
            self.last = time.monotonic()
        return torch.randn(self.size, 256)


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    if os.environ.get("PIN") == "1":
        os.sched_setaffinity(0, {rank % os.cpu_count()})
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(),
                                    torch.nn.Linear(512, 512), torch.nn.ReLU(),
                                    torch.nn.Linear(512, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.001)
    torch.manual_seed(1 + rank)
    batch = 768 if rank == SLOW_RANK and SLOW == "compute" else 256
    loader = torch.utils.data.DataLoader(Batches(batch, rank == SLOW_RANK and SLOW == "sleep"),
                                         batch_size=None)
    for x in loader:
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
    say("final loss %d %.17g" % (rank, loss.item()))
    dist.destroy_process_group()
    return model


if __name__ == "__main__":
    MODEL = main()
