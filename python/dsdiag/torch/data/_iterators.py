"""DataLoader's iterators and DistributedSampler's draws: the training loop's wait for each batch
(`loader` records, the `data` phase), its epochs, and the shard each rank's sampler draws
(`sampler` records) — what loader-starvation, shard-overlap and epoch-order-repeat read.

Hooks, all at class level so that a job's loaders need no change:
  - DataLoader.__iter__: each pass gets its probe (_loader._Feed), kept on the iterator
    torch returns (the same object: persistent workers keep theirs);
  - _BaseDataLoaderIter.__next__ (private: feature-detected), the base of torch's
    single- and multi-process iterators: each batch is timed. Without it, or for an iterator
    of another class (a DataLoader subclass's own), the pass is wrapped in a thin proxy;
  - DistributedSampler.__iter__ (_sampler): the epoch's index list is kept.
What counts as the training loader, and when an epoch begins, is in _loader.
"""

import functools

from torch.utils.data import DataLoader
from torch.utils.data import dataloader as _dataloader

from dsdiag.torch._patches import Patches
from dsdiag.torch._runtime import RUNTIME
from dsdiag.torch.data import _loader
from dsdiag.torch.rng import _watch

PATCHES = Patches("data")
_FEED = "_dsdiag_feed"


def install():
    PATCHES.replace(DataLoader, "__iter__", _loader_iter)
    base = getattr(_dataloader, "_BaseDataLoaderIter", None)
    if base is not None and "__next__" in vars(base):
        PATCHES.replace(base, "__next__", _wrap_next(base.__next__))
    PATCHES.append(RUNTIME.step_end_hooks, _loader.on_step_end)


@functools.wraps(DataLoader.__iter__)
def _loader_iter(self):
    if not RUNTIME.on:
        return PATCHES["__iter__"](self)
    it = _watch.around_loader_iter(lambda: PATCHES["__iter__"](self))
    feed = _loader.new_feed(self)
    if feed is None:
        return it
    return _attach(it, feed)


def _attach(it, feed):
    next_fn = getattr(type(it), "__next__", None)
    if getattr(next_fn, "_dsdiag_timed", False):
        try:
            vars(it)[_FEED] = feed  # replaces the last pass's on a persistent iterator
            return it
        except TypeError:  # no __dict__
            pass
    return _TimedIter(it, feed)


def _wrap_next(original):
    @functools.wraps(original)
    def __next__(self):
        feed = self.__dict__.get(_FEED) if RUNTIME.on else None
        if feed is None:
            return original(self)
        return _loader.fetch(feed, original, self)

    __next__._dsdiag_timed = True
    return __next__


class _TimedIter(object):
    """The iterator a pass returned, with its __next__ timed; anything else goes to it."""

    __slots__ = ("_it", "_feed")

    def __init__(self, it, feed):
        self._it = it
        self._feed = feed

    def __iter__(self):
        return self

    def __next__(self):
        if not RUNTIME.on:
            return next(self._it)
        return _loader.fetch(self._feed, next, self._it)

    def __len__(self):
        return len(self._it)

    def __getattr__(self, name):
        return getattr(self._it, name)
