"""instrument(): the hooks go in, the probes start with the default process group."""

import os

from dsdiag.torch._runtime import RUNTIME
from dsdiag.torch._settings import Settings

_INSTALLED = [False]


def instrument(run_dir=None, probes=None, timeout=None):
    """Instruments this process: call before torch.distributed.init_process_group. The
    arguments default to DSDIAG_OUT, DSDIAG_PROBES (light) and DSDIAG_TIMEOUT (300 s)."""
    RUNTIME.settings = Settings(run_dir, probes, timeout)
    if _INSTALLED[0] or RUNTIME.settings.off:
        return
    _INSTALLED[0] = True
    from dsdiag.torch import (_autograd, _checkpoint, _data, _ddp, _dist, _exit, _optim, _rng,
                              _scaler, _signals)

    _dist.install()
    _ddp.install()
    _optim.install()
    _autograd.install()
    _data.install()
    _rng.install()
    _checkpoint.install()
    _scaler.install()
    _signals.install()
    _exit.install()


def instrument_from_environment(force=False):
    """What `dsdiag run` does in every Python process it starts: instrument when DSDIAG_OUT
    is set (or `force`)."""
    if not force and not os.environ.get("DSDIAG_OUT"):
        return
    instrument()


def instrumented():
    return RUNTIME.on
