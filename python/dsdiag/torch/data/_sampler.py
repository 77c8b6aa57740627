"""DistributedSampler: the shard a rank draws for an epoch, as the `sampler` record that
shard-overlap (the ranks' shards must partition the dataset) and epoch-order-repeat (the
order must change from epoch to epoch: set_epoch) compare.

DistributedSampler.__iter__ builds the epoch's index list and returns iter(list). The
wrapper keeps a reference to that very list (read back from the list iterator, which is
returned untouched: the job iterates the same object) with the sampler's epoch, seed and
dataset size, until the training loader's probe writes it at the first step of the epoch
(_loader.py: only the training loader's sampler is written, never a validation one).
No per-sample Python work: the list is the sampler's own; hashing and the membership bitmap
are done in C++ by the writer.

Only samplers that run DistributedSampler's own __iter__ are recorded (a subclass that
overrides it yields an order we do not see). A sampler without shuffling repeats its order
by design: its draw is written again only when it differs from the last one written, so
that an unshuffled loader is not taken for a missing set_epoch().
"""

import functools
import weakref

from torch.utils.data.distributed import DistributedSampler

from dsdiag import _core
from dsdiag.torch._patches import Patches
from dsdiag.torch._runtime import RUNTIME, guard

PATCHES = Patches("data.sampler")

_MAX_DRAWS = 16  # validation samplers' draws are never taken: keep a few
_LIST_ITERATOR: type = type(iter([]))


class _Draws(object):
    def __init__(self):
        self.latest = {}  # id(sampler) -> _Draw: the latest epoch each sampler drew, until written
        self.last_unshuffled = None  # the last unshuffled _Draw written


DRAWS = _Draws()


class _Draw(object):
    __slots__ = ("ref", "indices", "sampler_epoch", "seed", "size", "shuffle")


def install():
    PATCHES.replace(DistributedSampler, "__iter__", _sampler_iter)


@functools.wraps(DistributedSampler.__iter__)
def _sampler_iter(self):
    it = PATCHES["__iter__"](self)
    if RUNTIME.on and type(it) is _LIST_ITERATOR and type(self).__iter__ is _sampler_iter:
        _keep(self, it)
    return it


@guard("sampler")
def _keep(sampler, it):
    # A fresh list iterator pickles as (iter, (the list,), 0): the list itself, no copy.
    reduced = it.__reduce__()
    if len(reduced) < 3 or reduced[2] != 0 or not isinstance(reduced[1][0], list):
        return
    draw = _Draw()
    try:
        draw.ref = weakref.ref(sampler)
    except TypeError:  # a subclass with __slots__: the id alone
        draw.ref = None
    draw.indices = reduced[1][0]
    draw.sampler_epoch = int(sampler.epoch)
    draw.seed = _int64(sampler.seed)
    draw.size = len(sampler.dataset)
    draw.shuffle = bool(getattr(sampler, "shuffle", True))
    DRAWS.latest.pop(id(sampler), None)
    DRAWS.latest[id(sampler)] = draw
    while len(DRAWS.latest) > _MAX_DRAWS:
        del DRAWS.latest[next(iter(DRAWS.latest))]


def _int64(value):
    """The seed as the record's int64 (torch seeds go up to 2**64 - 1: wrapped)."""
    value = int(value) & 0xFFFFFFFFFFFFFFFF
    return value - (1 << 64) if value >= (1 << 63) else value


def distributed_sampler(loader):
    """The DistributedSampler a DataLoader draws its indices from, or None."""
    batch_sampler = getattr(loader, "batch_sampler", None)
    for s in (getattr(batch_sampler, "sampler", None), getattr(loader, "sampler", None)):
        if isinstance(s, DistributedSampler):
            return s
    return None


def write_draw(sampler, epoch):
    """Writes the `sampler` record of the epoch `sampler` last drew, as training epoch
    `epoch` (once: the draw is consumed). Called with a step open."""
    draw = DRAWS.latest.pop(id(sampler), None)
    if draw is None or (draw.ref is not None and draw.ref() is not sampler):
        return
    if not draw.shuffle:
        last = DRAWS.last_unshuffled
        if last is not None and last.size == draw.size and last.indices == draw.indices:
            return  # the same shard again, by design
        DRAWS.last_unshuffled = draw
    _core.write_sampler(RUNTIME.session, epoch, draw.sampler_epoch, draw.seed, draw.indices,
                        draw.size)
