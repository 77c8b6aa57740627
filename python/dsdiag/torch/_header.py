"""What goes into every rank's trace header from the Python side: the versions (torch,
CUDA, NCCL, Python), the determinism switches engineers set by folklore, and which probes
this torch allows (recorded, so that a missing finding is not read as a clean bill)."""

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
            versions["nccl"] = ".".join(str(p) for p in nccl) if isinstance(nccl, tuple) else str(nccl)
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


def probe_availability():
    """Which probes can run on this torch: each needs an API some versions lack."""
    import torch.distributed as dist

    have = {
        "ddp_comm_hook": hasattr(torch.nn.parallel.DistributedDataParallel, "register_comm_hook"),
        "default_store": hasattr(dist.distributed_c10d, "_get_default_store"),
        "optimizer_hooks": hasattr(getattr(torch.optim, "optimizer", None),
                                   "register_optimizer_step_pre_hook"),
    }
    return have
