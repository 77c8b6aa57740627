"""torch's own Flight Recorder beside dsdiag's: when dsdiag writes its flight dump (its
watchdog fired, a stop signal, an uncaught exception), a job that has torch's recorder on
(TORCH_FR_BUFFER_SIZE, or the older TORCH_NCCL_TRACE_BUFFER_SIZE, above 0) gets torch's dump
too, written by torch's dump API: _dump_nccl_trace for a job whose default group runs NCCL
(NCCL's recorder, the pickle torch writes itself on an NCCL timeout), _dump_fr_trace for the
backend-generic recorder (Gloo) otherwise.

Why dsdiag asks: dsdiag's watchdog ends a hung rank within its timeout, before NCCL's own
timeout would have made torch dump, and torch on Gloo dumps on no timeout at all. So without
this a hung job under dsdiag would leave no torch dump. The file goes where torch would put
it, TORCH_FR_DUMP_TEMP_FILE followed by the rank, or into the run dir as
nccl_trace_rank_<R> (torch's own default name) when that is not set. A dump torch already
wrote there during this job (NCCL's watchdog on its timeout, TORCH_NCCL_DUMP_ON_TIMEOUT) is
kept: it was taken at the failure, and dsdiag's terminate handler runs after it. Nothing is
recorded here: the bytes are torch's.
"""

import os
import time

from dsdiag._warn import warn_once

STARTED = time.time()  # a dump file older than this is a previous job's, not this one's


def enabled():
    for name in ("TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE"):
        value = os.environ.get(name, "")
        if value:
            try:
                return int(value) > 0
            except ValueError:
                return False
    return False


def dump_path(run_dir, rank):
    prefix = os.environ.get("TORCH_FR_DUMP_TEMP_FILE")
    if not prefix:
        prefix = os.path.join(run_dir or ".", "nccl_trace_rank_")
    return "%s%d" % (prefix, rank)


def _uses_nccl():
    import torch.distributed as dist

    return dist.is_available() and dist.is_initialized() and "nccl" in str(dist.get_backend())


def dump_function():
    """torch's dump API for the recorder this job's collectives went to, or None."""
    from torch._C import _distributed_c10d as c10d

    nccl = getattr(c10d, "_dump_nccl_trace", None)  # CUDA builds only
    if nccl is not None and _uses_nccl():
        return nccl
    return getattr(c10d, "_dump_fr_trace", None)  # None before torch 2.6 (1.13 here)


def written_by_torch(path):
    try:
        return os.path.getmtime(path) >= STARTED
    except OSError:
        return False


def write_dump(run_dir, rank):
    """Writes torch's dump for this rank; a failure warns once and is otherwise harmless."""
    if not enabled():
        return None
    path = dump_path(run_dir, rank)
    if written_by_torch(path):
        return path
    try:
        dump = dump_function()
    except Exception as e:  # a torch without distributed support
        warn_once("torch-fr", "no torch Flight Recorder dump: %r" % (e,))
        return None
    if dump is None:
        warn_once("torch-fr", "torch has no Flight Recorder dump API here; no torch dump")
        return None
    try:
        data = dump()
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)  # a reader never sees half a dump
        return path
    except Exception as e:
        warn_once("torch-fr", "torch's Flight Recorder dump failed: %r" % (e,))
        return None
