"""torch's own Flight Recorder beside dsdiag's: when dsdiag writes its flight dump (its
watchdog fired, a stop signal, an uncaught exception), a job that has torch's recorder on
(TORCH_FR_BUFFER_SIZE, or the older TORCH_NCCL_TRACE_BUFFER_SIZE, above 0) gets torch's dump
too, written by torch's dump API (torch._C._distributed_c10d._dump_fr_trace: the pickle torch
writes itself on an NCCL timeout).

Why dsdiag asks: dsdiag's watchdog ends a hung rank within its timeout, before NCCL's own
timeout would have made torch dump, and torch on Gloo dumps on no timeout at all. So without
this a hung job under dsdiag would leave no torch dump. The file goes where torch would put
it, TORCH_FR_DUMP_TEMP_FILE followed by the rank, or into the run dir as
nccl_trace_rank_<R> (torch's own default name) when that is not set. Nothing is recorded
here: the bytes are torch's.
"""

import os

from dsdiag._warn import warn_once


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


def write_dump(run_dir, rank):
    """Writes torch's dump for this rank; a failure warns once and is otherwise harmless."""
    if not enabled():
        return None
    try:
        from torch._C._distributed_c10d import _dump_fr_trace
    except ImportError:  # a torch without a backend-generic dump API (1.13)
        warn_once("torch-fr", "torch has no Flight Recorder dump API here; no torch dump")
        return None
    path = dump_path(run_dir, rank)
    try:
        data = _dump_fr_trace()
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)  # a reader never sees half a dump
        return path
    except Exception as e:
        warn_once("torch-fr", "torch's Flight Recorder dump failed: %r" % (e,))
        return None
