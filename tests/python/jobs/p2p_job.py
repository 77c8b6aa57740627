"""Every point-to-point form a job can use, on the default group and on a sub-group of ranks
1 and 2 (where a peer's group rank differs from its global one), between the backward and
the optimizer step of a small DDP loop (Gloo, `dsdiag run --nproc 3`). Per step:

  send / recv     rank 0 sends each other rank 4 values, then receives 5 from each with a
                  recv from any source (whichever comes first; the record names the sender),
                  tag 1 (so that no other message of tag 0 can meet it)
  isend / irecv   a ring: rank i sends 6 values to i+1 and receives from i-1, waiting on both
  batch           batch_isend_irecv: every rank sends every other 7 values and receives as many
  sub-group       ranks 1 and 2 on the sub-group: send/recv (8), isend/irecv (9) and a batch
                  (10 each way), peers given as global ranks

Prints what step 0 sent and received as `p2p <rank> <call> <group> <op> <peer> <count>`, in
the order issued. DSDIAG_TEST_P2P_WRONG=small|large: at step 2 rank 1 sends both its peers
one value fewer / more than they expect in the batch (Gloo: a smaller message leaves the
tail of the receiver's tensor as it was, silently; a larger one aborts the receiver in C++).
Every form runs on torch 1.13's Gloo too."""
import os

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
sub = dist.new_group([1, 2])
wrong = os.environ.get("DSDIAG_TEST_P2P_WRONG")
lines = []


def log(step, call, group, op, peer, count):
    if step == 0:
        lines.append("p2p %d %s %s %s %d %d\n" % (rank, call, group, op, peer, count))


def default_group(step):
    if rank == 0:
        for peer in range(1, world):
            dist.send(torch.full((4,), float(peer)), peer)
            log(step, "send", "default", "send", peer, 4)
        for _ in range(1, world):
            got = torch.empty(5)
            peer = dist.recv(got, tag=1)  # from any source
            log(step, "recv", "default", "recv", peer, 5)
    else:
        dist.recv(torch.empty(4), 0)
        log(step, "recv", "default", "recv", 0, 4)
        dist.send(torch.full((5,), float(rank)), 0, tag=1)
        log(step, "send", "default", "send", 0, 5)
    after, before = (rank + 1) % world, (rank - 1) % world
    requests = [dist.isend(torch.ones(6), after), dist.irecv(torch.empty(6), before)]
    log(step, "isend", "default", "send", after, 6)
    log(step, "irecv", "default", "recv", before, 6)
    for r in requests:
        r.wait()
    ops = []
    for peer in range(world):
        if peer == rank:
            continue
        n = 7
        if wrong and rank == 1 and step == 2:
            n = 6 if wrong == "small" else 8
        ops.append(dist.P2POp(dist.isend, torch.ones(n), peer))
        ops.append(dist.P2POp(dist.irecv, torch.empty(7), peer))
        log(step, "batch_isend_irecv", "default", "send", peer, 7)
        log(step, "batch_isend_irecv", "default", "recv", peer, 7)
    for r in dist.batch_isend_irecv(ops):
        r.wait()


def sub_group(step):
    if rank not in (1, 2):
        return
    peer = 3 - rank
    if rank == 1:
        dist.send(torch.ones(8), peer, group=sub)
        log(step, "send", "sub", "send", peer, 8)
    else:
        dist.recv(torch.empty(8), peer, group=sub)
        log(step, "recv", "sub", "recv", peer, 8)
    requests = [dist.isend(torch.ones(9), peer, group=sub),
                dist.irecv(torch.empty(9), peer, group=sub)]
    log(step, "isend", "sub", "send", peer, 9)
    log(step, "irecv", "sub", "recv", peer, 9)
    for r in requests:
        r.wait()
    ops = [dist.P2POp(dist.isend, torch.ones(10), peer, group=sub),
           dist.P2POp(dist.irecv, torch.empty(10), peer, group=sub)]
    log(step, "batch_isend_irecv", "sub", "send", peer, 10)
    log(step, "batch_isend_irecv", "sub", "recv", peer, 10)
    for r in dist.batch_isend_irecv(ops):
        r.wait()


torch.manual_seed(0)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
torch.manual_seed(1 + rank)  # each rank its own batches
for step in range(4):
    opt.zero_grad()
    model(torch.randn(8, 4)).sum().backward()
    default_group(step)
    sub_group(step)
    opt.step()
os.write(1, "".join(lines).encode())
dist.destroy_process_group()
