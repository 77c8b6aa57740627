"""What goes into every rank's trace header from the Python side: the versions (torch,
CUDA, NCCL, Python), the determinism switches engineers set by folklore, and which probes
this torch allows (recorded, so that a missing finding is not read as a clean bill)."""

import inspect
import platform
import sys

import torch


def describe(backend):
    versions = {"torch": torch.__version__, "python": platform.python_version()}
    cuda = getattr(torch.version, "cuda", None)
    if cuda:
        versions["cuda"] = cuda
    try:
        if torch.cuda.is_available():
            nccl = torch.cuda.nccl.version()
            versions["nccl"] = (".".join(str(p) for p in nccl) if isinstance(nccl, tuple)
                                else str(nccl))
    except Exception:
        pass
    determinism = {
        "deterministic_algorithms": bool(torch.are_deterministic_algorithms_enabled()),
        "cudnn_deterministic": bool(torch.backends.cudnn.deterministic),
        "cudnn_benchmark": bool(torch.backends.cudnn.benchmark),
        "intra_op_threads": int(torch.get_num_threads()),
    }
    # Compared across ranks by config-mismatch: only what every rank must share (argv is
    # not: old launchers pass --local_rank=N).
    config = {"backend": str(backend)}
    python = {"argv": " ".join(sys.argv), "executable": sys.executable}
    return {
        "versions": versions,
        "config": config,
        "sections": {
            "determinism": determinism,
            "python": python,
            "python_probes": probe_availability(),
        },
    }


def _grad_scaler_state():
    # torch 2.x: torch.amp.GradScaler (torch.cuda.amp's is a subclass, and its module is not
    # loaded until used); torch 1.13: torch.cuda.amp.GradScaler.
    scaler = getattr(getattr(torch, "amp", None), "GradScaler", None)
    if scaler is None:
        try:
            import torch.cuda.amp as cuda_amp  # Python only: nothing of CUDA is initialised
        except ImportError:
            return False
        scaler = getattr(cuda_amp, "GradScaler", None)
    if scaler is None:
        return False
    # A disabled scaler sets none of it: ask the constructor's code which attributes it sets.
    # (torch 2.x: torch.cuda.amp.GradScaler's __init__ calls torch.amp's: the whole MRO.)
    # (dsdiag's own scaler probe wraps __init__ with functools.wraps: look through it.)
    names = set()
    for cls in scaler.__mro__:
        init = cls.__dict__.get("__init__")
        if init is not None:
            init = inspect.unwrap(init)
        names.update(getattr(getattr(init, "__code__", None), "co_names", ()))
    return {"_per_optimizer_states", "_growth_tracker", "_scale"} <= names


def probe_availability():
    """Which probes can run on this torch: each needs an API some versions lack."""
    import torch.distributed as dist

    have = {
        "ddp_comm_hook": hasattr(torch.nn.parallel.DistributedDataParallel, "register_comm_hook"),
        "default_store": hasattr(dist.distributed_c10d, "_get_default_store"),
        # Asked of the module Optimizer lives in: torch 2.x does not bind torch.optim.optimizer
        # as an attribute of torch.optim.
        "optimizer_hooks": hasattr(sys.modules.get(torch.optim.Optimizer.__module__),
                                   "register_optimizer_step_pre_hook"),
        # Batches timed in place (the iterator's __next__), else through a proxy iterator.
        "dataloader_next": "__next__" in vars(getattr(torch.utils.data.dataloader,
                                                      "_BaseDataLoaderIter", object)),
        # Missing / unexpected keys of load_state_dict seen before a strict load raises.
        "checkpoint_keys": hasattr(torch.nn.Module, "register_load_state_dict_post_hook"),
        # GradScaler's own state read (scale, growth tracker, found-inf per device); without
        # it the scaler probe falls back to get_scale() and whether optimizer.step() ran.
        "grad_scaler_state": _grad_scaler_state(),
    }
    return have
