"""The training DataLoader: how long the loop waits for each batch (`loader` records, the
step's `data` phase, the step record's samples), which epoch it is in (RUNTIME.epoch, the
step record's epoch) and, at each epoch's first step, the sampler's shard (_sampler).

Each DataLoader.__iter__ call is one pass (a `_Feed`, kept on the iterator); the iterator's
__next__ is timed. Only the loader feeding training counts:
  - a batch fetched with autograd off (torch.no_grad(), inference_mode) is never counted,
    nor one fetched off the main thread (a background prefetcher) or the fetch that only
    ends a sized pass (StopIteration: it would open the next step);
  - the training loader is the one whose batch was fetched last before an optimizer step
    (found at the first step, found again if the job moves to another loader); a new
    DataLoader over the same dataset object (a loader rebuilt every epoch) is the training
    loader at once;
  - the training loader's batches open the step (begin_step_if_needed before the fetch:
    the wait is inside the step) in the `data` phase, and are written at once. Another
    loader's batches fetched with autograd on are held until the step ends and written
    only if that loader turns out to be the training one (else dropped: a validation pass
    that forgot no_grad); they open no step and no phase — except before the training
    loader is known (the run's first step) while the DDP model is in training mode.
  - a loader zipped with the training loader (an auxiliary stream: one batch of it in
    each step, COMPANION_AFTER steps in a row) feeds training too: from then on its
    fetch opens the step in the `data` phase like the training loader's, and its wait
    is a `loader` record of the step (the step's samples and the epoch stay the training
    loader's). A validation loader gives several batches at once, or none, in a step.
  - the training loader's batch (or a companion's) is the sign of a new iteration: a step
    whose optimizers did not all step is ended before it (dsdiag.torch.steps).
A new pass over the training loader is a new epoch (RUNTIME.epoch + 1), when the previous
pass trained on at least one batch.

`wait` is the time __next__ blocked; `produce` the same when num_workers == 0 (the batch
was made on the main thread), else left out; `samples` the batch's leading dimension;
`batch` a fingerprint of a sample of its bytes (_batch_bytes: what shard-overlap compares
across ranks, to tell a dataset no sampler split).
"""

import threading
import time
import weakref
from collections.abc import Mapping

import torch

from dsdiag import _core
from dsdiag._core import phase_name
from dsdiag.torch.data import _batch_bytes, _sampler
from dsdiag.torch._runtime import RUNTIME, guard, phase
from dsdiag.torch.steps import _optimizer

# What a fetch is, decided before it (_before).
_STEP = 1  # a training batch (or, before the training loader is known, any): in a step
_QUIET = 2  # another loader's batch: timed and held, no step, no phase
_MAX_PENDING = 4096  # held batches: a step has a few; an evaluation-only job, no step end
COMPANION_AFTER = 2  # steps in a row with one batch of a loader: it feeds training too


class _Feed(object):
    """One pass over a DataLoader."""

    __slots__ = ("loader", "dataset", "dataset_id", "sampler", "expected", "yielded", "counted",
                 "epoch", "workers", "fallback_samples", "sampler_written")

    def __init__(self, loader):
        self.loader = weakref.ref(loader)
        self.dataset = _weak(loader.dataset)
        self.dataset_id = id(loader.dataset)
        self.sampler = _sampler.distributed_sampler(loader)
        self.expected = _length(loader)
        self.yielded = 0  # batches the pass returned, counted or not
        self.counted = 0  # of them, trained on
        self.epoch = None  # set when the pass is the training loader's
        self.workers = int(getattr(loader, "num_workers", 0) or 0)
        self.fallback_samples = getattr(loader, "batch_size", None) or 1
        self.sampler_written = False


class _State(object):
    def __init__(self):
        self.train = None  # the training loader's current _Feed
        self.train_fetched = False  # it returned a counted batch in this step
        self.pending = []  # (feed, wait, produce, samples, batch): other loaders' batches this step
        self.main = None  # the main thread's ident
        self.companions = weakref.WeakSet()  # loaders zipped with the training loader
        self.single = {}  # id(loader) -> steps in a row it gave one held batch in


_STATE = _State()


def _weak(obj):
    try:
        return weakref.ref(obj)
    except TypeError:  # a list as dataset: its id alone
        return None


def _same_dataset(feed, loader):
    if feed.dataset is not None:
        return feed.dataset() is loader.dataset
    return feed.dataset_id == id(loader.dataset)


def _length(loader):
    """len(loader) for a map-style dataset (the batches a pass returns), else None: an
    iterable dataset's len() would change its loader (it records the length and warns)."""
    if isinstance(getattr(loader, "dataset", None), torch.utils.data.IterableDataset):
        return None
    try:
        return int(len(loader))
    except Exception:
        return None


@guard("loader")
def new_feed(loader):
    """A new pass over `loader` (DataLoader.__iter__ returned): its _Feed, a new epoch when
    it is the training loader's."""
    if _STATE.main is None:
        _STATE.main = threading.main_thread().ident
    feed = _Feed(loader)
    train = _STATE.train
    if train is not None and (train.loader() is loader or _same_dataset(train, loader)):
        _make_training(feed)
    return feed


def _make_training(feed):
    previous = _STATE.train
    if previous is not None and previous.counted > 0:
        RUNTIME.epoch += 1
    feed.epoch = RUNTIME.epoch
    _STATE.train = feed
    RUNTIME.loader_opens_steps = True


def fetch(feed, next_fn, it):
    """next_fn(it), timed when it is a training batch."""
    how = _before(feed)
    if how is None:
        batch = next_fn(it)
        feed.yielded += 1
        return batch
    start = time.perf_counter_ns()
    if how == _STEP:
        with phase(phase_name.DATA):
            batch = next_fn(it)
    else:
        batch = next_fn(it)
    wait = time.perf_counter_ns() - start
    feed.yielded += 1
    _after(feed, batch, wait, how)
    return batch


@guard("loader")
def _before(feed):
    if not torch.is_grad_enabled() or threading.get_ident() != _STATE.main:
        return None
    if feed.expected is not None and feed.yielded >= feed.expected:
        if feed.yielded == feed.expected:
            return None  # the fetch that ends the pass
        feed.expected = None  # len() was wrong (a repeating sampler): unknown from now
    if feed is not _STATE.train and (_STATE.train is not None or _model_in_eval()) \
            and not _companion(feed):
        return _QUIET  # another loader: it opens no step (validation, a loader rebuilt)
    _optimizer.end_open_step()
    RUNTIME.begin_step_if_needed()
    return _STEP


def _companion(feed):
    loader = feed.loader()
    return loader is not None and loader in _STATE.companions


def _model_in_eval():
    model = RUNTIME.model
    return model is not None and not model.training


@guard("loader")
def _after(feed, batch, wait, how):
    samples = _samples(batch, feed.fallback_samples)
    produce = wait if feed.workers == 0 else -1
    if feed is _STATE.train and how == _STEP:
        _write(feed, wait, produce, samples, _batch_bytes.fingerprint(batch))
        _STATE.train_fetched = True
    elif how == _STEP and _STATE.train is not None:  # a companion: its wait, no samples
        _core.write_loader(RUNTIME.session, wait, produce, samples)
    else:
        pending = _STATE.pending
        pending.append((feed, wait, produce, samples, _batch_bytes.fingerprint(batch)))
        if len(pending) > _MAX_PENDING:  # loaders iterated with no optimizer step at all
            del pending[:_MAX_PENDING // 2]


def _write(feed, wait, produce, samples, batch):
    if not feed.sampler_written:
        feed.sampler_written = True  # drawn by now: at __iter__ (workers) or this fetch
        if feed.sampler is not None:
            _sampler.write_draw(feed.sampler, feed.epoch)
    _core.write_loader(RUNTIME.session, wait, produce, samples, batch)
    RUNTIME.samples += samples
    feed.counted += 1


def on_step_end(runtime):
    """Before the step record: when the training loader did not feed this step, the loader
    fetched last did — it is the training loader now, its held batches are written."""
    pending, _STATE.pending = _STATE.pending, []
    fetched, _STATE.train_fetched = _STATE.train_fetched, False
    _find_companions(pending)
    if fetched or not pending:
        return
    feed = pending[-1][0]
    if feed.loader() is None:
        return
    _make_training(feed)
    for f, wait, produce, samples, batch in pending:
        if f is feed:
            _write(feed, wait, produce, samples, batch)


def _find_companions(pending):
    """A loader that gave one held batch in each of COMPANION_AFTER steps in a row is
    zipped with the training loader: a companion from the next step on."""
    loaders, counts = {}, {}
    for feed, _, _, _, _ in pending:
        loader = feed.loader()
        if loader is not None and feed is not _STATE.train:
            loaders[id(loader)] = loader
            counts[id(loader)] = counts.get(id(loader), 0) + 1
    single = {key: _STATE.single.get(key, 0) + 1 for key, n in counts.items() if n == 1}
    for key, steps in single.items():
        if steps >= COMPANION_AFTER:
            _STATE.companions.add(loaders[key])
    _STATE.single = single


def _samples(batch, fallback):
    """The batch's sample count: the leading dimension of its first tensor (through tuples,
    lists and mappings), the length of a collated list of non-tensors, else `fallback` (the
    loader's batch_size)."""
    for _ in range(4):
        if isinstance(batch, torch.Tensor):
            return int(batch.shape[0]) if batch.dim() > 0 else 1
        if isinstance(batch, Mapping):
            batch = next(iter(batch.values()), None)
        elif isinstance(batch, (list, tuple)) and batch:
            if not isinstance(batch[0], (torch.Tensor, Mapping, list, tuple)):
                return len(batch)
            batch = batch[0]
        else:
            break
    return fallback
