"""torch.distributed's calls: the probes start when the default process group does
(init_process_group), and every collective the job issues itself becomes a `coll` record
and a flight-recorder entry, numbered per process group as the backend numbers them.
DDP's own gradient allreduces are recorded by its communication hook (dsdiag.torch.ddp).
Point-to-point messages (send, recv, isend, irecv, batch_isend_irecv) are _p2p's: numbered
per pair, never in a group's sequence."""

import functools
import os

import torch
import torch.distributed as dist

from dsdiag.torch import _futures, _groups, _header
from dsdiag.torch.collectives import _mesh, _p2p
from dsdiag.torch.collectives._call_site import site_id
from dsdiag.torch._patches import Patches, signature_of
from dsdiag.torch._runtime import RUNTIME, Suppress, guard, suppressed
from dsdiag.torch._tensors import dtype_name

# name -> (op in the record, the argument whose tensor (or tensors, summed) the record
# counts). A collective of every rank of its group only: a send or recv is not one (its
# sequence is its pair's, not the group's): _p2p records those as `p2p` records.
COLLECTIVES = {
    "all_reduce": ("allreduce", "tensor"),
    "broadcast": ("broadcast", "tensor"),
    "reduce": ("reduce", "tensor"),
    "all_gather": ("allgather", "tensor"),  # what each rank sends
    "all_gather_into_tensor": ("allgather", "input_tensor"),
    "all_gather_single": ("allgather", "input_tensor"),  # torch 2.13's new name of it
    "gather": ("gather", "tensor"),  # what each rank sends to the root
    "scatter": ("scatter", "tensor"),  # what each rank receives from the root
    "reduce_scatter": ("reduce_scatter", "output"),  # what each rank receives
    "reduce_scatter_tensor": ("reduce_scatter", "output"),
    "reduce_scatter_single": ("reduce_scatter", "output"),  # torch 2.13's new name of it
    "all_to_all_single": ("alltoall", "output"),  # what each rank receives, in all
    "all_to_all": ("alltoall", "output_tensor_list"),
    "barrier": ("barrier", None),
}


PATCHES = Patches("collectives")


def install():
    """torch.distributed's functions replaced by ours, in torch.distributed and in
    distributed_c10d where they are defined (a job may call either)."""
    if PATCHES or not dist.is_available():
        return
    _replace_both("init_process_group", _wrap_init_process_group)
    _replace_both("new_group", _wrap_new_group)
    if getattr(dist, "split_group", None) is not None:  # torch 2.6 and later
        _replace_both("split_group", _wrap_new_group)
    _mesh.install(PATCHES)
    for name, (op, tensor_arg) in COLLECTIVES.items():
        if getattr(dist, name, None) is not None:
            _replace_both(name, lambda fn, op=op, arg=tensor_arg: _wrap_collective(fn, op, arg))
    _p2p.install(PATCHES, _replace_both)


def uninstall():
    PATCHES.undo()


def original(name):
    """torch.distributed's own function (dsdiag's hooks call these: nothing recorded twice)."""
    try:
        return PATCHES[name]
    except KeyError:
        return getattr(dist, name)


def _replace_both(name, wrap):
    fn = getattr(dist, name)
    wrapped = wrap(fn)
    PATCHES.replace(dist, name, wrapped)
    if getattr(dist.distributed_c10d, name, None) is fn:
        PATCHES.replace(dist.distributed_c10d, name, wrapped, key="distributed_c10d." + name)


def _wrap_init_process_group(original):
    @functools.wraps(original)
    def init_process_group(*args, **kwargs):
        result = original(*args, **kwargs)
        _start_probes()
        return result

    return init_process_group


def _start_probes():
    try:
        rank = dist.get_rank()
        world = dist.get_world_size()
        local_rank = int(os.environ.get("LOCAL_RANK", rank))
        store = None
        getter = getattr(dist.distributed_c10d, "_get_default_store", None)
        if getter is not None:
            try:
                store = getter()
            except Exception:
                store = None
        RUNTIME.start(rank, world, local_rank, store, _header.describe(dist.get_backend()))
    except Exception as e:
        RUNTIME.switch_off("start", e)


def _wrap_new_group(original):
    """new_group (and split_group): the group's `group` record as it is created, on its
    members (a group is numbered by its identity, _groups)."""

    @functools.wraps(original)
    def new_group(*args, **kwargs):
        group = original(*args, **kwargs)
        try:
            if RUNTIME.on and _groups.is_member(group):
                RUNTIME.group_id(group)
        except Exception:
            pass
        return group

    return new_group


def _wrap_collective(fn, op, tensor_arg):
    signature = signature_of(fn)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if not RUNTIME.on or suppressed() or signature is None:
            return fn(*args, **kwargs)
        record = _begin(signature, op, tensor_arg, args, kwargs)
        try:
            with Suppress():
                result = fn(*args, **kwargs)
        except BaseException:
            if record is not None:
                _finish(record, failed=True)
            raise
        if record is not None:
            _after_call(record, result)
        return result

    return wrapper


@guard("collective")
def _begin(signature, op, tensor_arg, args, kwargs):
    bound = signature.bind_partial(*args, **kwargs)
    params = bound.arguments
    given = params.get(tensor_arg) if tensor_arg else None
    tensors = [t for t in (given if isinstance(given, (list, tuple)) else [given])
               if isinstance(t, torch.Tensor)]
    dtype, count, nbytes = "", 0, 0
    if tensors:
        dtype = dtype_name(tensors[0].dtype)
        count = sum(t.numel() for t in tensors)
        nbytes = sum(t.numel() * t.element_size() for t in tensors)
    group = params.get("group")
    pg = RUNTIME.group_id(group)
    RUNTIME.begin_step_if_needed()
    send, recv = _peer_counts(op, params)
    if send:  # an all-to-all: what it sends to and receives from each peer
        record = RUNTIME.probes.collective(pg, op, dtype, count, nbytes, op, send, recv,
                                           _group_peers(group), site=site_id())
    else:
        record = RUNTIME.probes.collective(pg, op, dtype, count, nbytes, op, site=site_id())
    return (record, bool(params.get("async_op", False)))


def _peer_counts(op, params):
    """What an all-to-all sends to and receives from each rank of its group, in elements,
    when that may be uneven: all_to_all_single given split sizes, all_to_all's lists. The
    backend pairs rank i's send to j with j's recv from i; when they differ one rank computed
    its sizes wrong, and only both sides' counts say which (collective-mismatch). Even
    splits (no sizes given) are counted too: one rank may give sizes where another does not.
    ([], []) for every other op."""
    if op != "alltoall":
        return [], []
    if "output_tensor_list" in params:  # all_to_all
        outputs, inputs = params.get("output_tensor_list"), params.get("input_tensor_list")
        if not isinstance(outputs, (list, tuple)) or not isinstance(inputs, (list, tuple)):
            return [], []
        return [t.numel() for t in inputs], [t.numel() for t in outputs]
    output, input_ = params.get("output"), params.get("input")
    out_splits, in_splits = params.get("output_split_sizes"), params.get("input_split_sizes")
    if not isinstance(output, torch.Tensor) or not isinstance(input_, torch.Tensor):
        return [], []
    given = out_splits if out_splits is not None else in_splits
    peers = len(given) if given is not None else _group_size(params.get("group"))
    return _split_counts(input_, in_splits, peers), _split_counts(output, out_splits, peers)


def _split_counts(tensor, splits, peers):
    """Elements per peer of a tensor split along dim 0 (even when no sizes are given)."""
    rows = tensor.shape[0] if tensor.dim() > 0 else 0
    per_row = tensor.numel() // rows if rows else 0
    if splits is None:
        return [rows // peers * per_row] * peers
    return [int(s) * per_row for s in splits]


def _group_size(group):
    return dist.get_world_size(group) if group is not None else dist.get_world_size()


def _group_peers(group):
    """The global rank of each rank of `group`, in group-rank order; [] for the default
    group (its ranks are the global ones)."""
    if group is None or RUNTIME.group_id(group) == 0:
        return []
    return _groups.group_ranks(group)


@guard("collective")
def _after_call(record, result):
    op, async_op = record
    op.started()
    if not async_op or result is None:
        _finish(record)
        return
    # An async op completes when its work does: its future says when, from any thread;
    # the record is written on the main thread at the step's end (_runtime).
    future = result.get_future()

    def done(f):
        try:
            f.value()
            op.mark_completed()
        except Exception:
            op.mark_completed(failed=True)
        with RUNTIME.lock:
            RUNTIME.pending_ops.append(op)

    _futures.then(future, done)


def _finish(record, failed=False):
    op, _ = record
    try:
        op.mark_completed(failed=failed)
        op.write()
    except Exception as e:
        RUNTIME.switch_off("collective", e)
