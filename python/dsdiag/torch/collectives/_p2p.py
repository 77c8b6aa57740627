"""Point-to-point messages: send, recv, isend, irecv and batch_isend_irecv's ops, each a
`p2p` record and an entry of the flight recorder's p2p list (dsdiag._core.PeerOp) with its
group, direction, peer, dtype and count. A message is no collective of its group: it is
numbered per pair (group, peer, direction, tag), so that rank i's k-th send to j meets j's
k-th recv from i, and never takes a number of the group's collective sequence (`coll`
records, DDP's buckets).

Gloo's send and recv requests have no future (Work::getFuture is not implemented, torch 1.13
and 2.x alike) and complete only when the job waits on them, so a request's message is
followed through Work.wait: the entry is "started" while the job waits in it (a hang from
then on) and the record is written once it returns. A request never waited on stays
"issued" in the flight recorder (never a hang) and writes no record."""

import collections
import functools
import threading

import torch
import torch.distributed as dist

from dsdiag.torch._patches import signature_of
from dsdiag.torch._runtime import RUNTIME, Suppress, guard, suppressed
from dsdiag.torch._tensors import dtype_name
from dsdiag.torch.collectives._call_site import site_id

# name -> (direction, blocking): the call and the one message it makes.
CALLS = {
    "send": ("send", True),
    "recv": ("recv", True),
    "isend": ("send", False),
    "irecv": ("recv", False),
}
# Requests waited on later, at most this many at once: a job that drops its requests
# unwaited (an isend whose work it never waits on) loses the oldest ones' records, not memory.
MAX_REQUESTS = 4096


class _Requests(object):
    """The requests of messages not yet waited on: id(work) -> (work, [PeerOp], group). The
    work is held so that its id cannot be taken by another while we keep it."""

    def __init__(self):
        self.lock = threading.Lock()
        self.by_id = collections.OrderedDict()

    def add(self, work, ops, group):
        with self.lock:
            self.by_id[id(work)] = (work, ops, group)
            while len(self.by_id) > MAX_REQUESTS:
                self.by_id.popitem(last=False)

    def take(self, work):
        with self.lock:
            held = self.by_id.get(id(work))
            if held is None or held[0] is not work:
                return None
            del self.by_id[id(work)]
            return held[1:]

    def clear(self):
        with self.lock:
            self.by_id.clear()


REQUESTS = _Requests()


def install(patches, replace):
    """The calls replaced through `replace(name, wrap)` (collectives' _replace_both), and
    Work.wait through `patches`."""
    for name, (direction, blocking) in CALLS.items():
        if getattr(dist, name, None) is not None:
            replace(name, lambda fn, d=direction, b=blocking, n=name: _wrap_call(fn, n, d, b))
    if getattr(dist, "batch_isend_irecv", None) is not None:
        replace("batch_isend_irecv", _wrap_batch)
    work = getattr(dist, "Work", None) or getattr(dist.distributed_c10d, "Work", None)
    if work is not None and getattr(work, "wait", None) is not None:
        patches.replace(work, "wait", _wrap_wait(work.wait), key="Work.wait")
        patches.on_undo(REQUESTS.clear)


def _wrap_call(fn, name, direction, blocking):
    signature = signature_of(fn)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if not RUNTIME.on or suppressed() or signature is None:
            return fn(*args, **kwargs)
        begun = _begin_call(signature, name, direction, args, kwargs)
        ops, group = begun if begun else (None, None)
        if ops and blocking:
            _waiting(ops)
        try:
            with Suppress():
                result = fn(*args, **kwargs)
        except BaseException:
            if ops:
                _done(ops, failed=True)
            raise
        if ops:
            _after_call(ops, group, blocking, result)
        return result

    return wrapper


def _wrap_batch(fn):
    @functools.wraps(fn)
    def batch_isend_irecv(p2p_op_list, *args, **kwargs):
        if not RUNTIME.on or suppressed():
            return fn(p2p_op_list, *args, **kwargs)
        begun = _begin_batch(p2p_op_list)
        ops, group = begun if begun else (None, None)
        try:
            with Suppress():
                works = fn(p2p_op_list, *args, **kwargs)
        except BaseException:
            if ops:
                _done(ops, failed=True)
            raise
        if ops:
            _track_batch(ops, group, works)
        return works

    return batch_isend_irecv


def _wrap_wait(original):
    @functools.wraps(original)
    def wait(self, *args, **kwargs):
        held = REQUESTS.take(self) if REQUESTS.by_id else None
        if not held:
            return original(self, *args, **kwargs)
        ops, group = held
        _waiting(ops)
        try:
            result = original(self, *args, **kwargs)
        except BaseException:
            _done(ops, failed=True, later=True)
            raise
        _resolve_any_source(ops, group, self)
        _done(ops, later=True)
        return result

    return wait


# --- what a call sends or receives ------------------------------------------------------


@guard("p2p")
def _begin_call(signature, name, direction, args, kwargs):
    params = signature.bind_partial(*args, **kwargs).arguments
    group = params.get("group")
    if _not_in_group(group):
        return None  # torch returns without a message
    tensor = params.get("tensor")
    peer_arg = "dst" if direction == "send" else "src"
    peer, group_peer = _peer(group, params.get(peer_arg), params.get("group_" + peer_arg))
    return [_issue(group, direction, peer, group_peer, params.get("tag", 0), tensor, name)], group


@guard("p2p")
def _begin_batch(p2p_op_list):
    if not isinstance(p2p_op_list, (list, tuple)):
        return None
    ops = []
    for p in p2p_op_list:
        direction = _direction_of(getattr(p, "op", None))
        group = getattr(p, "group", None)
        if direction is None or _not_in_group(group):
            return None  # torch refuses the list (or sends nothing): nothing recorded
        peer, group_peer = _peer(group, getattr(p, "peer", None), getattr(p, "group_peer", None))
        ops.append(_issue(group, direction, peer, group_peer, getattr(p, "tag", 0),
                          getattr(p, "tensor", None), "batch_isend_irecv"))
    return ops, (p2p_op_list[0].group if p2p_op_list else None)


def _direction_of(fn):
    name = getattr(fn, "__name__", "")
    return {"isend": "send", "irecv": "recv"}.get(name)


def _issue(group, direction, peer, group_peer, tag, tensor, call):
    dtype, count, nbytes = "", 0, 0
    if isinstance(tensor, torch.Tensor):
        dtype = dtype_name(tensor.dtype)
        count = tensor.numel()
        nbytes = count * tensor.element_size()
    RUNTIME.begin_step_if_needed()
    return RUNTIME.probes.peer_op(RUNTIME.group_id(group), direction, peer, group_peer,
                                  int(tag or 0), dtype, count, nbytes, call, site=site_id())


def _peer(group, rank, group_rank):
    """(global rank, group rank) of a peer given as either; (-1, -1) for any source."""
    if rank is None and group_rank is None:
        return -1, -1
    if group is None or RUNTIME.group_id(group) == 0:
        r = int(rank if rank is not None else group_rank)
        return r, r
    if rank is None:
        return int(dist.get_global_rank(group, group_rank)), int(group_rank)
    return int(rank), int(dist.get_group_rank(group, rank))


def _not_in_group(group):
    check = getattr(dist.distributed_c10d, "_rank_not_in_group", None)
    return group is not None and check is not None and check(group)


# --- completion -------------------------------------------------------------------------


@guard("p2p")
def _after_call(ops, group, blocking, result):
    if blocking:
        (op,) = ops
        if op.peer < 0 and isinstance(result, int) and result >= 0:  # recv: the sender
            op.set_peer(*_peer(group, result, None))  # torch returns its global rank
        _done(ops)
        return
    if result is not None:
        REQUESTS.add(result, ops, group)


@guard("p2p")
def _track_batch(ops, group, works):
    """A request per op (Gloo); a backend that coalesces the batch (NCCL) returns fewer:
    then each request stands for every op of the batch."""
    works = [w for w in (works or []) if w is not None]
    if len(works) == len(ops):
        for work, op in zip(works, ops):
            REQUESTS.add(work, [op], group)
    elif works:
        for work in works:
            REQUESTS.add(work, list(ops), group)


@guard("p2p")
def _resolve_any_source(ops, group, work):
    for op in ops:
        if op.peer >= 0 or not hasattr(work, "_source_rank"):
            continue
        # the sender's rank in the request's group
        op.set_peer(*_peer(group, None, int(work._source_rank())))


@guard("p2p")
def _waiting(ops):
    for op in ops:
        op.waiting()


def _done(ops, failed=False, later=False):
    """Marks the ops completed (or failed) and writes their records: at once on the thread
    that issued a blocking call, at the step's end for requests (waited on anywhere)."""
    try:
        for op in ops:
            if not op.completed:
                op.mark_completed(failed=failed)
        if later:
            with RUNTIME.lock:
                RUNTIME.pending_ops.extend(ops)
        else:
            for op in ops:
                op.write()
    except Exception as e:
        RUNTIME.switch_off("p2p", e)
