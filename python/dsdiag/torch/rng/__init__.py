"""rng: the random streams each rank draws from in training — what rng-collision
compares across ranks (the same state on two ranks: the same dropout masks, noise and
augmentations, a smaller effective batch).

  - the rank's own streams (torch's default generators, NumPy's and Python's global ones):
    hashed at the begin and end of the first steps, recorded once the loop is seen drawing
    from them, then at each epoch's start (_watch);
  - DataLoader workers' streams: DataLoader.__init__ is wrapped so that each worker reports
    which streams its dataset draws from and their state after its init (_worker), and
    the main process writes them (_loader).
Both run from the runtime's step hooks; nothing is hashed per sample or per batch in the
main process, and a job that seeds per rank pays a few hashes of a few KB per step during
the first steps only.
"""

from dsdiag.torch._runtime import RUNTIME
from dsdiag.torch.rng import _loader, _watch
from dsdiag.torch.rng._loader import PATCHES


def install():
    if PATCHES:
        return
    _loader.install()
    watch = _watch.Watch()
    _watch.INSTALLED.watch = watch
    PATCHES.on_undo(lambda: setattr(_watch.INSTALLED, "watch", None))

    def rng_step_begin(runtime):
        watch.on_step_begin(runtime)
        _loader.drain(runtime)

    def rng_step_end(runtime):
        watch.on_step_end(runtime)
        _loader.drain(runtime)

    PATCHES.append(RUNTIME.step_begin_hooks, rng_step_begin)
    PATCHES.append(RUNTIME.step_end_hooks, rng_step_end)


def uninstall():
    PATCHES.undo()
