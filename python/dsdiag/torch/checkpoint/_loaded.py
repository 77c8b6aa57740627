"""What a checkpoint object says about itself, for the `ckpt` records: the training position
it holds (its `step` / `epoch` keys), the map_location it was loaded with, and which load a
state dict handed to load_state_dict came from.

Position: checkpoint-mismatch names the ranks that resumed from an older checkpoint (a lower
`ckpt_step`), so a load's `ckpt_step` is the step the checkpoint says it holds — the first
integer among its top-level keys `step`, `global_step`, `iteration`, `iter`, `num_updates`
(likewise `epoch`) — and, when it says none, the rank's own step count (dsdiag's steps so
far), the same on every rank that loads at the same point.

Sources: load_state_dict(sd) is often given part of a loaded checkpoint (`ckpt["model"]`) or
a dict rebuilt from it (keys renamed). The tensors are the loaded ones either way, so each
load's tensors are remembered by weak reference (never kept alive) for the last few loads,
and a state dict is traced back through its first tensors.
"""

import collections
import numbers
import weakref
from collections.abc import Mapping

import torch

STEP_KEYS = ("step", "global_step", "iteration", "iter", "num_updates")
EPOCH_KEYS = ("epoch",)
LOADS_REMEMBERED = 4
MAX_TENSORS = 200000  # per load: the walk stays bounded for any checkpoint
MAX_DEPTH = 4
PROBE_TENSORS = 8  # tensors of a state dict looked up


def position(obj, default_step, default_epoch):
    """(ckpt_step, epoch) that the checkpoint object holds, else the defaults."""
    if not isinstance(obj, Mapping):
        return default_step, default_epoch
    step = _first_int(obj, STEP_KEYS)
    epoch = _first_int(obj, EPOCH_KEYS)
    return (default_step if step is None else step, default_epoch if epoch is None else epoch)


def _first_int(obj, keys):
    for key in keys:
        try:
            value = obj.get(key)
        except Exception:  # a Mapping with odd keys
            return None
        if isinstance(value, bool):
            continue
        if isinstance(value, numbers.Integral):
            return int(value)
        # A step saved as a tensor: read only from the CPU (no device sync for a probe).
        if (isinstance(value, torch.Tensor) and value.numel() == 1 and value.device.type == "cpu"
                and not value.is_floating_point() and not value.is_complex()):
            return int(value.item())
    return None


def describe_map_location(where):
    """torch.load's map_location as text: "" when none was given (storages go back to the
    device they were saved from), a device as "cuda:1", a dict as "{cuda:1: cuda:0}", a
    callable as "<callable NAME>"."""
    if where is None:
        return ""
    if isinstance(where, (str, torch.device)):
        return str(where)
    if isinstance(where, Mapping):
        return "{%s}" % ", ".join("%s: %s" % (k, v) for k, v in where.items())
    if callable(where):
        name = getattr(where, "__qualname__", None) or type(where).__name__
        return "<callable %s>" % name
    return repr(where)[:200]


class Sources(object):
    """The last few loads' tensors (weakly), to tell which load a state dict came from."""

    def __init__(self):
        self._loads = collections.deque(maxlen=LOADS_REMEMBERED)

    def remember(self, loaded, source):
        refs = {}
        for t in _tensors(loaded):
            refs[id(t)] = weakref.ref(t)
        if refs:
            self._loads.append((source, refs))

    def source_of(self, state_dict):
        """The `source` given to remember() for the load that produced state_dict's tensors,
        or None."""
        if not self._loads or not isinstance(state_dict, Mapping):
            return None
        probed = 0
        for value in state_dict.values():
            if not isinstance(value, torch.Tensor):
                continue
            for source, refs in reversed(self._loads):
                ref = refs.get(id(value))
                if ref is not None and ref() is value:  # the id of a live tensor, not a reuse
                    return source
            probed += 1
            if probed >= PROBE_TENSORS:
                break
        return None


def _tensors(obj):
    """The tensors in a loaded object (dicts, lists, tuples), bounded in depth and count."""
    found = []
    stack = [(obj, 0)]
    while stack and len(found) < MAX_TENSORS:
        item, depth = stack.pop()
        if isinstance(item, torch.Tensor):
            found.append(item)
        elif depth < MAX_DEPTH and isinstance(item, Mapping):
            stack.extend((v, depth + 1) for v in item.values())
        elif depth < MAX_DEPTH and isinstance(item, (list, tuple)):
            stack.extend((v, depth + 1) for v in item)
    return found
