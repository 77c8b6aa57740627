"""A clean FSDP2 job (torch 2.x's `fully_shard`, two ranks, Gloo on CPU, a small MLP with
each Linear and the whole model sharded): every rank holds a shard of each parameter, and
the shards are gathered (all_gather_into_tensor) before each forward and backward and the
gradients reduce-scattered after. SEED=rank: each rank seeds torch with its rank before
building the model (the mistake: every rank keeps its shard of its own random init).
Prints "final loss <rank> <value>" at the end."""
import os

import torch
import torch.distributed as dist

try:
    from torch.distributed.fsdp import fully_shard
except ImportError:  # torch 2.4-2.5 kept it under _composable
    from torch.distributed._composable.fsdp import fully_shard

STEPS = int(os.environ.get("STEPS", "12"))


def say(text):
    os.write(1, (text + "\n").encode())


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.set_num_threads(1)
    torch.manual_seed(rank if os.environ.get("SEED") == "rank" else 0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(),
                                torch.nn.Linear(32, 1))
    for layer in model:
        if isinstance(layer, torch.nn.Linear):
            fully_shard(layer)
    fully_shard(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    torch.manual_seed(1 + rank)
    for _ in range(STEPS):
        x = torch.randn(8, 16)
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
    say("final loss %d %.17g" % (rank, loss.item()))
    dist.destroy_process_group()
    return model


if __name__ == "__main__":
    MODEL = main()
