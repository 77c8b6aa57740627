"""DataLoader workers' random streams: DataLoader.__init__ is wrapped (the original runs
first, unchanged) so that a loader with workers gets dsdiag's worker_init_fn and collate_fn
around its own (_worker), and a pipe on which its workers report the streams their
dataset draws from. The rank's main process reads the pipes at each step's begin and end
and writes the records.

Why: torch seeds each worker's torch, random and NumPy streams from a base seed it draws
from the rank's global torch generator at every pass (torch >= 1.9 seeds NumPy too; before,
forked workers all inherited one NumPy state). Streams then collide across ranks when
  - the job seeds torch identically on every rank (the same base seed everywhere: worker w of
    every rank draws the same augmentations), or
  - its worker_init_fn reseeds from something that ignores the rank (np.random.seed(seed +
    worker_id)).
Records: `rng`, stream `loader-worker-torch` / `loader-worker-numpy` / `loader-worker-random`,
why `loader-<L>/worker-<w>` (L: the loader's number among this rank's loaders with workers,
in creation order; w: the worker id), `seed` torch.initial_seed() in the worker (-1 for numpy
and random), `h` the stream's state right after the worker's init. One record per worker and
stream the worker drew from, per pass (non-persistent workers are new at each pass), so the
n-th record of a `why` is that worker's n-th pass on every rank; reports arrive in any order,
the `why` keeps them apart. A pipe rather than a multiprocessing queue: no lock to pickle, so
it works whichever start method the loader ends up using, and a worker never waits on it.
"""

import functools
import os
import weakref

from dsdiag import _core
from dsdiag._warn import warn_once
from dsdiag.torch._patches import Patches
from dsdiag.torch._runtime import RUNTIME
from dsdiag.torch.rng import _worker

PATCHES = Patches("rng")


class _Loaders(object):
    def __init__(self):
        self.probes = []  # _LoaderProbe, in creation order
        self.count = 0  # loaders with workers built on this rank


LOADERS = _Loaders()


def install():
    from torch.utils.data import DataLoader

    PATCHES.replace(DataLoader, "__init__", _wrap_init(DataLoader.__init__))


def _wrap_init(original):
    @functools.wraps(original)
    def __init__(self, *args, **kwargs):
        original(self, *args, **kwargs)
        _attach(self)

    return __init__


def _attach(loader):
    # Not guard(): a loader is often built before init_process_group, probes not yet on.
    settings = RUNTIME.settings
    if settings is None or settings.off or _worker.THIS_PROCESS.worker is not None:
        return
    try:
        if int(getattr(loader, "num_workers", 0) or 0) <= 0:
            return
        # A loader built from another one's attributes (worker_init_fn=old.worker_init_fn)
        # gets the job's own functions back, and a pipe of its own.
        init_fn, collate_fn = loader.worker_init_fn, loader.collate_fn
        if isinstance(init_fn, _worker.WorkerInit):
            init_fn = init_fn.user_fn
        if isinstance(collate_fn, _worker.CollateProbe):
            collate_fn = collate_fn.collate_fn
        probe = _LoaderProbe(LOADERS.count)
        loader.worker_init_fn = _worker.WorkerInit(init_fn, probe.writer, probe.index)
        loader.collate_fn = _worker.CollateProbe(collate_fn)
        LOADERS.count += 1
        LOADERS.probes.append(probe)
        weakref.finalize(loader, probe.loader_gone)
    except Exception as e:
        warn_once("rng-loader", "DataLoader workers' RNG probe off: %r" % (e,))


class _LoaderProbe(object):
    """One loader's pipe: its workers write, the rank's main thread reads."""

    def __init__(self, index):
        import multiprocessing

        self.index = index
        self.reader, self.writer = multiprocessing.Pipe(duplex=False)
        os.set_blocking(self.writer.fileno(), False)  # a full pipe drops, never blocks
        self.gone = False

    def loader_gone(self):
        self.gone = True  # read once more, then closed, at the next step hook

    def drain(self, session):
        while self.reader.poll(0):
            worker_id, drew = self.reader.recv()
            why = "loader-%d/worker-%d" % (self.index, worker_id)
            for stream, seed, state_hash in drew:
                _core.write_rng(session, "loader-worker-" + stream, why, seed, state_hash)

    def close(self):
        self.reader.close()
        self.writer.close()


def drain(runtime):
    """Step hook (begin and end): the workers' reports so far, as records."""
    if not LOADERS.probes:
        return
    for probe in list(LOADERS.probes):
        try:
            probe.drain(runtime.session)
        except (EOFError, OSError) as e:
            warn_once("rng-loader-read", "a DataLoader's RNG reports were lost: %r" % (e,))
            probe.gone = True
        if probe.gone:
            LOADERS.probes.remove(probe)
            probe.close()
