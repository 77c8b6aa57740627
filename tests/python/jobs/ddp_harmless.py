"""A DDP job that leans on what dsdiag must leave working, chosen by MODE:
  commhook   the job registers its own DDP communication hook (torch's allreduce_hook plus a
             call counter); prints "hook calls <rank> <n>"
  sigterm    the job installs its own SIGTERM handler (prints "handler ran <rank>", exits 3);
             rank 0 sends itself SIGTERM at step 5
  skipcoll   rank 1 skips a barrier the others issue at step 4 (a rank-conditional barrier)
  spawn      ranks started by torch.multiprocessing.spawn, seeded per rank: a clean job
Prints "final loss <rank> <value>" (one write per line) when it gets to the end."""
import os
import signal
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

MODE = os.environ.get("MODE", "")
STEPS = int(os.environ.get("STEPS", "12"))


def say(text):
    os.write(1, (text + "\n").encode())


def train(rank=None, world_size=None, port=None):
    if rank is not None:  # started by spawn
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        dist.init_process_group("gloo", rank=rank, world_size=world_size)
    else:
        dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(),
                                    torch.nn.Linear(32, 1)))
    calls = [0]
    if MODE == "commhook":
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

        def counting_hook(state, bucket):
            calls[0] += 1
            return default_hooks.allreduce_hook(state, bucket)

        model.register_comm_hook(None, counting_hook)
    if MODE == "sigterm":
        def on_term(signo, frame):
            say("handler ran %d" % rank)
            sys.exit(3)

        signal.signal(signal.SIGTERM, on_term)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    torch.manual_seed(1 + rank)
    for step in range(STEPS):
        x = torch.randn(8, 16)
        if MODE == "skipcoll" and step == 4 and rank != 1:
            dist.barrier()
        if MODE == "sigterm" and rank == 0 and step == 5:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1)
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
    if MODE == "commhook":
        say("hook calls %d %d" % (rank, calls[0]))
    say("final loss %d %.17g" % (rank, loss.item()))
    dist.destroy_process_group()
    # Kept past the function: torch 1.13 can deadlock destroying a DDP model that has a
    # Python comm hook while Gloo still holds the hook's futures (seen with dsdiag off too).
    return model


if __name__ == "__main__":
    if MODE == "spawn":
        import socket

        import torch.multiprocessing as mp

        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        free_port = s.getsockname()[1]
        s.close()
        mp.spawn(train, args=(2, free_port), nprocs=2, join=True)
    else:
        MODEL = train()
