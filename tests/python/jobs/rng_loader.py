"""A small DDP job on Gloo (started per rank by `dsdiag run --nproc N`) whose DataLoader
workers (2 per rank) augment each sample with random noise in the dataset's __getitem__,
drawn from the stream AUG names (numpy, torch or random; default numpy). MODE says how the
streams are seeded:
  reseed   torch seeded per rank, but worker_init_fn reseeds NumPy with 1234 + worker_id:
           worker w draws the same noise on every rank
  shared   torch.manual_seed(0) on every rank and nothing else: torch derives every worker's
           seeds (torch, random, NumPy) from the rank's global generator, the same everywhere
  default  torch.manual_seed(0) for the init, then 100 + rank; torch seeds the workers
  seeded   torch seeded per rank; worker_init_fn seeds NumPy and random from
           torch.initial_seed() (the per-worker seed torch chose)
  quiet    as shared, but the dataset draws nothing (no noise): identical, harmless
  rank     torch seeded per rank; worker_init_fn seeds NumPy with 1234 + rank: the ranks
           differ, every worker of a rank draws the same noise
  rank1    as seeded, but rank 1's worker_init_fn seeds NumPy with 1234 + rank
CONTEXT=spawn|fork (default: the platform's) and PERSISTENT=1 set the loader's
multiprocessing_context and persistent_workers; DROPOUT=1 adds a dropout layer (the rank's
torch generator drawn in every forward). EPOCHS (3) passes of 4 steps per rank.
Prints "final loss <rank> <value>" and "batches <rank> <sum>" (what the loader produced).
"""
import os
import random

import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

MODE = os.environ.get("MODE", "default")
AUG = os.environ.get("AUG", "numpy")


class Noisy(Dataset):
    def __init__(self):
        self.x = torch.arange(64 * 16, dtype=torch.float32).reshape(64, 16) / 1024.0

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        x = self.x[i].clone()
        if MODE == "quiet":
            return x
        if AUG == "numpy":
            x += torch.from_numpy(np.random.normal(0.0, 0.1, size=16).astype("float32"))
        elif AUG == "torch":
            x += 0.1 * torch.randn(16)
        else:
            x += 0.1 * random.gauss(0.0, 1.0)
        return x


def reseed_numpy(worker_id):
    np.random.seed(1234 + worker_id)


def seed_with_rank(worker_id):
    np.random.seed(1234 + int(os.environ["RANK"]))


def seed_from_torch(worker_id):
    seed = torch.initial_seed() % 2 ** 32
    np.random.seed(seed)
    random.seed(seed)


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    drop = torch.nn.Dropout(0.1) if os.environ.get("DROPOUT") == "1" else torch.nn.Identity()
    model = DDP(torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU(), drop,
                                    torch.nn.Linear(16, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    if MODE in ("reseed", "default", "seeded", "rank", "rank1"):
        torch.manual_seed(100 + rank)
    dataset = Noisy()
    sampler = DistributedSampler(dataset, seed=0)
    init_fn = {"reseed": reseed_numpy, "seeded": seed_from_torch, "rank": seed_with_rank,
               "rank1": seed_with_rank if rank == 1 else seed_from_torch}.get(MODE)
    context = os.environ.get("CONTEXT") or None
    loader = DataLoader(dataset, batch_size=8, sampler=sampler, num_workers=2,
                        worker_init_fn=init_fn, multiprocessing_context=context,
                        persistent_workers=os.environ.get("PERSISTENT") == "1")
    total = 0.0
    for epoch in range(int(os.environ.get("EPOCHS", "3"))):
        sampler.set_epoch(epoch)
        for x in loader:
            total += float(x.sum())
            y = x.sum(1, keepdim=True)
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
    os.write(1, ("final loss %d %.17g\nbatches %d %.17g\n"
                 % (rank, loss.item(), rank, total)).encode())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
