"""The rank's own random streams in training: torch's default CPU generator (`torch-cpu`),
the CUDA default generator of the current device (`torch-cuda:<i>`, when the job has
initialised CUDA), NumPy's global stream (`numpy`, when NumPy is loaded) and Python's
`random` (`random`). Each is hashed at the begin and end of the first WINDOW steps.

A Python job's global torch generator serves two purposes: model init, where every rank
sharing one seed is right (DDP broadcasts rank 0's parameters anyway), and dropout or noise,
where it is a bug. The two look alike at seeding time, so the probe does not record at
seeding: it records a stream once the training loop is seen drawing from it, and the
analyzer compares those records. Hence the names: `cpu`, `cuda:<i>` are the trainer's init
generators, shared by design and skipped by the analyzer; `torch-cpu`, `torch-cuda:<i>` are
compared.

A stream "draws in training" when, within the watched steps, its state moved
  - inside a step (begin -> end: dropout in the forward, noise added after the batch was
    fetched — the data phase is inside the step), or
  - between two steps in two consecutive gaps (noise drawn before the forward, every step).
A single move between two steps is not use: a DataLoader draws its workers' base seed from
the global generator once per pass (at iter(), outside any step), which is harmless for the
main stream; the workers' own streams are probed themselves (_loader). Nor is that draw
when the loop makes its iterator inside a step (Lightning's data fetcher does, at the first
batch): DataLoader.__iter__ tells the watch (around_loader_iter), which moves the stream's
observed state along with the draw. A gap in which
RUNTIME.epoch changed is not counted either, for the same reason. A stream that never moves
draws nothing, and identical states are then harmless: it is never recorded.

Records: `rng` with why `first-use`, at the step that proved the use (its end for a move
inside the step, its begin for moves between steps), `h` = the state then, `seed` =
torch.initial_seed() (-1 for numpy and random); then why `epoch` at the first step of every
later epoch. Every rank running the same loop writes the same sequence, which is what the
analyzer's n-th record comparison needs.
"""

import sys

from dsdiag import _core
from dsdiag._warn import warn_once
from dsdiag.torch.rng import _state

WINDOW = 8  # steps watched for a first use; then a stream never seen drawing is left alone


class _Stream(object):
    __slots__ = ("name", "read", "begin", "end", "end_epoch", "moved_between", "in_use",
                 "epoch", "dead")

    def __init__(self, name, read):
        self.name = name
        self.read = read  # () -> (seed, hash)
        self.begin = None  # hash at the current step's begin
        self.end = None  # hash at the last step's end, and the epoch then
        self.end_epoch = None
        self.moved_between = False  # the last gap between two steps moved the state
        self.in_use = False  # recorded: the loop draws from it
        self.epoch = None  # the epoch of the last record
        self.dead = False


def _streams():
    """The streams this process has, decided once, at the first step (CUDA is initialised by
    then when the job uses it; never initialised here)."""
    streams = [_Stream("torch-cpu", _state.torch_cpu)]
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    try:
        if cuda is not None and cuda.is_initialized():
            device = cuda.current_device()
            streams.append(_Stream("torch-cuda:%d" % device,
                                   lambda: _state.torch_cuda(device)))
    except Exception as e:
        warn_once("rng-cuda", "no CUDA RNG probe: %r" % (e,))
    if sys.modules.get("numpy") is not None:
        streams.append(_Stream("numpy", _state.numpy_global))
    streams.append(_Stream("random", _state.python_random))
    return streams


class Watch(object):
    def __init__(self):
        self.streams = None

    def loader_iter_drew(self, before, after):
        """DataLoader.__iter__ moved torch-cpu from `before` to `after` (its base seed): the
        observed begin / end states follow, so that the draw is no use."""
        for s in self.streams or ():
            if s.name != "torch-cpu" or s.in_use or s.dead:
                continue
            if s.begin == before:
                s.begin = after
            if s.end == before:
                s.end = after

    def on_step_begin(self, runtime):
        if self.streams is None:
            self.streams = _streams()
        for s in self.streams:
            if s.dead:
                continue
            if s.in_use:
                if runtime.epoch != s.epoch:
                    self._write(runtime, s, "epoch", _read(s))
                continue
            if runtime.step >= WINDOW:
                s.begin = None
                continue
            seed_hash = _read(s)
            if seed_hash is None:
                continue
            moved = (s.end is not None and seed_hash[1] != s.end
                     and s.end_epoch == runtime.epoch)
            if moved and s.moved_between:
                self._write(runtime, s, "first-use", seed_hash)
                continue
            s.moved_between = moved
            s.begin = seed_hash[1]

    def on_step_end(self, runtime):
        for s in self.streams or ():
            if s.dead or s.in_use or s.begin is None:
                continue
            seed_hash = _read(s)
            if seed_hash is None:
                continue
            if seed_hash[1] != s.begin:
                self._write(runtime, s, "first-use", seed_hash)
                continue
            s.end, s.end_epoch = seed_hash[1], runtime.epoch

    @staticmethod
    def _write(runtime, s, why, seed_hash):
        if seed_hash is None:
            return
        s.in_use = True
        s.epoch = runtime.epoch
        seed, state_hash = seed_hash
        _core.write_rng(runtime.session, s.name, why, seed, state_hash)


class _Installed(object):
    watch = None  # the process's Watch, once dsdiag.torch.rng installed it


INSTALLED = _Installed()


def around_loader_iter(make_iterator):
    """make_iterator() (DataLoader.__iter__), with its draw from torch-cpu forgiven."""
    watch = INSTALLED.watch
    before = _torch_cpu_hash() if watch is not None and watch.streams is not None else None
    it = make_iterator()  # the job's own call: whatever it raises is the job's
    if before is not None:
        after = _torch_cpu_hash()
        if after is not None and after != before:
            watch.loader_iter_drew(before, after)
    return it


def _torch_cpu_hash():
    try:
        return _state.torch_cpu()[1]
    except Exception as e:  # the watch reads it too, and switches itself off there
        warn_once("rng-loader-iter", "torch-cpu not read around DataLoader.__iter__: %r" % (e,))
        return None


def _read(s):
    """(seed, hash), or None when this stream cannot be read (then it is off for good)."""
    try:
        return s.read()
    except Exception as e:
        s.dead = True
        warn_once("rng-" + s.name, "RNG probe of %s off: %r" % (s.name, e))
        return None
