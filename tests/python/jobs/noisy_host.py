"""A clean DDP job (two ranks, Gloo, a small MLP, 40 steps) meant to run on a loaded host.
PIN=1: each rank pins itself to CPU <rank> (so that a load pinned to one CPU falls on one
rank alone). Nothing in it is wrong: whatever dsdiag says of it comes from the host.
Prints "final loss <rank> <value>" at the end."""
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = int(os.environ.get("STEPS", "40"))


def say(text):
    os.write(1, (text + "\n").encode())


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
    for _ in range(STEPS):
        x = torch.randn(256, 256)
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
    say("final loss %d %.17g" % (rank, loss.item()))
    dist.destroy_process_group()
    return model


if __name__ == "__main__":
    MODEL = main()
