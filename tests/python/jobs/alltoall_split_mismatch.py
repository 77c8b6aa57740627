"""An MoE-style token exchange: each step every rank sends rank j `i + j + 1` rows of 4
values with all_to_all_single and split sizes, and receives `j + i + 1` rows from rank j —
uneven, but every pair agrees (run under `dsdiag run --nproc 3`, Gloo). With
DSDIAG_TEST_WRONG_SPLITS=1, rank 1 computes its send sizes one row too large for every peer
at step 2 (a capacity clamp applied on the receivers only): the receivers abort in Gloo's
C++ (gloo::EnforceNotMet through std::terminate). A small DDP model trains around it."""
import os

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
wrong = os.environ.get("DSDIAG_TEST_WRONG_SPLITS") == "1"
torch.manual_seed(0)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
torch.manual_seed(1 + rank)
for step in range(5):
    opt.zero_grad()
    send = [rank + j + 1 for j in range(world)]
    recv = [j + rank + 1 for j in range(world)]
    if wrong and rank == 1 and step == 2:
        send = [s + (1 if j != rank else 0) for j, s in enumerate(send)]
    tokens = torch.randn(sum(send), 4)
    routed = torch.empty(sum(recv), 4)
    dist.all_to_all_single(routed, tokens, output_split_sizes=recv, input_split_sizes=send)
    model(routed).sum().backward()
    opt.step()
dist.destroy_process_group()
