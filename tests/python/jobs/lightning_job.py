"""A PyTorch Lightning job, unchanged by dsdiag: a LightningModule with dropout, trained by a
Trainer with the "ddp" strategy on 2 CPU processes (Lightning starts the second process
itself, re-running this script), 10 steps. Run as `dsdiag run -- python lightning_job.py`.
FAULT chooses one user mistake:
  (none)     clean: each rank seeds its dropout with torch.manual_seed(1 + rank) in setup()
  skip       rank 1 skips the `extra` submodule (strategy ddp_find_unused_parameters_true)
  same-seed  every rank seeds its dropout identically (seed_everything(0) in setup())
  rank-seed  seed_everything(1 + rank) in setup(): the folk remedy, which also seeds the
             DistributedSampler Lightning adds per rank (PL_GLOBAL_SEED), so the shards
             overlap
"""
import os

import lightning as L
import torch
from torch.utils.data import DataLoader, TensorDataset

FAULT = os.environ.get("FAULT", "")


class Net(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(),
                                        torch.nn.Dropout(0.1), torch.nn.Linear(64, 1))
        self.extra = torch.nn.Linear(32, 1)

    def setup(self, stage):
        if FAULT == "same-seed":
            L.seed_everything(0, verbose=False)
        elif FAULT == "rank-seed":
            L.seed_everything(1 + self.global_rank, verbose=False)
        else:
            torch.manual_seed(1 + self.global_rank)

    def forward(self, x):
        out = self.body(x)
        if not (FAULT == "skip" and self.global_rank == 1):
            out = out + self.extra(x)
        return out

    def training_step(self, batch, _):
        x, y = batch
        return torch.nn.functional.mse_loss(self(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)


if __name__ == "__main__":
    torch.manual_seed(0)
    x = torch.randn(512, 32)
    data = TensorDataset(x, x.sum(1, keepdim=True))
    strategy = "ddp_find_unused_parameters_true" if FAULT == "skip" else "ddp"
    trainer = L.Trainer(accelerator="cpu", devices=2, strategy=strategy, max_steps=10,
                        logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False)
    trainer.fit(Net(), DataLoader(data, batch_size=16))
