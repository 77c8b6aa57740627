"""instrument() / uninstrument(): the hooked areas go in, and come out again.

Each area is a subpackage of dsdiag.torch with install() and uninstall(), registered here
and only here, in the order they go in (uninstall: the reverse). The probes themselves
start with the default process group (collectives: init_process_group).
"""

import importlib
import os
from types import ModuleType
from typing import List, Optional

from dsdiag._warn import warn_once
from dsdiag.torch._runtime import RUNTIME
from dsdiag.torch._settings import Settings

# collectives first: the others' hooks call torch.distributed's own functions through it.
# steps before data and rng: the model's probe is settled first at a step's begin.
AREAS = ("collectives", "ddp", "fsdp", "steps", "data", "rng", "checkpoint", "scaler",
         "process", "compile")


class _Installed(object):
    def __init__(self) -> None:
        self.areas: List[ModuleType] = []  # the area modules installed, in order
        # True while instrument() imports the areas: their import of torch runs the start-up
        # hook (sitecustomize), whose instrument() must then leave this one to finish.
        self.installing = False


INSTALLED = _Installed()


def instrument(run_dir: Optional[str] = None, probes: Optional[str] = None,
               timeout: Optional[float] = None) -> None:
    """Instruments this process: call before torch.distributed.init_process_group. The
    arguments default to DSDIAG_OUT, DSDIAG_PROBES (light) and DSDIAG_TIMEOUT (300 s)."""
    if INSTALLED.installing:
        return  # called again from within (torch's first import): once is enough
    RUNTIME.settings = Settings(run_dir, probes, timeout)
    if INSTALLED.areas or RUNTIME.settings.off:
        return
    INSTALLED.installing = True
    try:
        for name in AREAS:
            try:
                area = importlib.import_module("dsdiag.torch." + name)
                area.install()
            except Exception as e:  # a torch without that part: the others still go in
                warn_once("install-" + name, "%s not instrumented: %r" % (name, e))
                continue
            INSTALLED.areas.append(area)
    finally:
        INSTALLED.installing = False


def uninstrument() -> None:
    """Ends this rank's trace where it stands (as a normal end, when the probes had
    started) and takes every hook out: torch as it was."""
    RUNTIME.stop()
    while INSTALLED.areas:
        INSTALLED.areas.pop().uninstall()


def instrument_from_environment(force: bool = False) -> None:
    """What `dsdiag run` does in every Python process it starts: instrument when DSDIAG_OUT
    is set (or `force`)."""
    if not force and not os.environ.get("DSDIAG_OUT"):
        return
    instrument()


def instrumented() -> bool:
    """Whether this rank's probes are on (started with the process group, not off)."""
    return bool(RUNTIME.on)
