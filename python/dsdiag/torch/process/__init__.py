"""process: how the rank's trace ends. An exception nobody caught, a normal exit (_exit),
a stop signal the job handles itself (_signals); SIGTERM and SIGINT without a handler of
the job's are the C++ core's."""

from dsdiag.torch.process import _exit, _signals
from dsdiag.torch.process._exit import PATCHES


def install():
    if PATCHES:
        return
    _exit.install()
    _signals.install()


def uninstall():
    PATCHES.undo()
