"""ddp: DistributedDataParallel and the model it trains. DDP's constructor builds the
model's probe (the parameter table, who took part in each backward, the parameters every N
steps: _model) and registers dsdiag's communication hook around the job's own (_comm_hook:
the gradients as reduced, DDP's bucket allreduces as `coll` records). A model no DDP wraps
is found through its optimizer (_unwrapped, _model_owners)."""

from dsdiag.torch.ddp._comm_hook import install, uninstall

__all__ = ["install", "uninstall"]
