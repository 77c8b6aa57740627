"""Inside a DataLoader worker process: which random streams the worker's dataset draws
from, and their state when the worker began, sent to the rank's main process (_loader
writes the records; a worker writes nothing).

Two picklable callables take the DataLoader's place (set by _loader on the loader, so
they reach the worker by fork, spawn or forkserver alike):
  - WorkerInit, the loader's worker_init_fn: runs the job's own worker_init_fn, then hashes
    the worker's torch, random and NumPy states — what the worker will draw from, after
    torch seeded it (base_seed + worker id; NumPy from the same, torch >= 1.9) and after the
    job's function reseeded whatever it reseeds;
  - CollateProbe, the loader's collate_fn: calls the job's (or torch's default) collate,
    then, for the worker's first REPORT_BATCHES batches, looks again: a stream whose state
    moved since init is one the dataset (or the collate) draws from, and is reported once.
    A stream the worker never draws from is never reported: equal states are then harmless.
A report is one small message on a pipe whose write end is non-blocking: a main process that
stopped reading makes the worker drop the message, never wait. Nothing here raises into the
worker; the job's functions run exactly as without dsdiag.
"""

from dsdiag.torch.rng import _state

REPORT_BATCHES = 4  # batches of a worker looked at for draws; then it is left alone


class _ThisProcess(object):
    worker = None  # this worker process's _WorkerState (None in the rank's main process)


THIS_PROCESS = _ThisProcess()


def _spawning():
    """Pickled for a worker's start (spawn / forkserver), or for anything else (deepcopy,
    a job that pickles its loader: then the pipe stays behind)."""
    try:
        from multiprocessing import context

        return context.get_spawning_popen() is not None
    except Exception:
        return False


class WorkerInit(object):
    """The worker_init_fn dsdiag gives a DataLoader: the job's own, then the RNG report's
    start. `loader` is the loader's number on the rank; `conn` the pipe's write end."""

    def __init__(self, user_fn, conn, loader):
        self.user_fn = user_fn
        self.conn = conn
        self.loader = loader

    def __call__(self, worker_id):
        if self.user_fn is not None:
            self.user_fn(worker_id)
        if self.conn is None:
            return
        try:
            THIS_PROCESS.worker = _WorkerState(self.conn, worker_id)
        except Exception:  # a stream we cannot read: no report from this worker
            THIS_PROCESS.worker = None

    def __getstate__(self):
        state = dict(self.__dict__)
        if not _spawning():
            state["conn"] = None
        return state


class CollateProbe(object):
    """The collate_fn dsdiag gives a DataLoader with workers: the loader's own, then a look
    at the worker's streams (in the worker only, for its first batches)."""

    def __init__(self, collate_fn):
        self.collate_fn = collate_fn

    def __call__(self, batch):
        out = self.collate_fn(batch)
        worker = THIS_PROCESS.worker
        if worker is not None and worker.batches_left > 0:
            worker.look()
        return out


def _states():
    """{stream: (seed, hash)} of the worker's generators."""
    states = {"torch": _state.torch_cpu(), "random": _state.python_random()}
    numpy = _state.numpy_global()
    if numpy is not None:
        states["numpy"] = numpy
    return states


class _WorkerState(object):
    def __init__(self, conn, worker_id):
        self.conn = conn
        self.worker_id = worker_id
        self.init = _states()
        self.reported = set()
        self.batches_left = REPORT_BATCHES

    def look(self):
        self.batches_left -= 1
        try:
            now = _states()
            drew = [(name, seed, h) for name, (seed, h) in sorted(self.init.items())
                    if name not in self.reported and now.get(name, (seed, h))[1] != h]
            if not drew:
                return
            self.reported.update(name for name, _, _ in drew)
            self.conn.send((self.worker_id, drew))  # < PIPE_BUF: one atomic write
        except Exception:  # the pipe is full or gone: the report is lost, the batch is not
            self.batches_left = 0
