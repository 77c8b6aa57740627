"""RNG probes: the random streams each rank draws from in training — what rng-collision
compares across ranks (the same state on two ranks: the same dropout masks, noise and
augmentations, a smaller effective batch).

  - the rank's own streams (torch's default generators, NumPy's and Python's global ones):
    hashed at the begin and end of the first steps, recorded once the loop is seen drawing
    from them, then at each epoch's start (_rng_watch);
  - DataLoader workers' streams: DataLoader.__init__ is wrapped so that each worker reports
    which streams its dataset draws from and their state after its init (_rng_worker), and
    the main process writes them (_rng_loader).
Both run from the runtime's step hooks; nothing is hashed per sample or per batch in the
main process, and a job that seeds per rank pays a few hashes of a few KB per step during
the first steps only.
"""

from dsdiag.torch import _rng_loader, _rng_watch
from dsdiag.torch._runtime import RUNTIME

_INSTALLED = [False]


def install():
    if _INSTALLED[0]:
        return
    _INSTALLED[0] = True
    _rng_loader.install()
    watch = _rng_watch.Watch()
    _rng_watch.WATCH.append(watch)

    def rng_step_begin(runtime):
        watch.on_step_begin(runtime)
        _rng_loader.drain(runtime)

    def rng_step_end(runtime):
        watch.on_step_end(runtime)
        _rng_loader.drain(runtime)

    RUNTIME.step_begin_hooks.append(rng_step_begin)
    RUNTIME.step_end_hooks.append(rng_step_end)
