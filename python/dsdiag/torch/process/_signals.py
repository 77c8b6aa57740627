"""The job's own SIGTERM / SIGINT handlers, kept and witnessed. The C++ core's StopSignals
(installed when the process group starts) dumps the flight recorder and writes the `signal`
record, then hands the signal on; but a handler the job installs later with signal.signal
replaces it at the OS level (Python's own trampoline takes over), and the stop would leave no
evidence: the trace would end "ok" when the handler calls sys.exit. So signal.signal is
wrapped: a Python handler for SIGTERM / SIGINT is installed inside a recorder that dumps,
writes the `signal` record and then calls it — the job's handler runs as it would have, and
signal.getsignal still returns it."""

import functools
import signal

from dsdiag.torch._runtime import RUNTIME, guard
from dsdiag.torch.process._exit import PATCHES

_WITNESSED = (signal.SIGTERM, signal.SIGINT)


def install():
    PATCHES.replace(signal, "signal", _signal)
    PATCHES.replace(signal, "getsignal", _getsignal)


class Recording(object):
    """The job's handler, after the evidence."""

    def __init__(self, signo, handler):
        self.signo = signo
        self.handler = handler
        functools.update_wrapper(self, handler, updated=())

    def __call__(self, signo, frame):
        _witness(signo)
        return self.handler(signo, frame)


@functools.wraps(signal.signal)
def _signal(signalnum, handler):
    if signalnum in _WITNESSED and callable(handler) and not isinstance(handler, Recording):
        previous = PATCHES["signal"](signalnum, Recording(signalnum, handler))
    else:
        previous = PATCHES["signal"](signalnum, handler)
    return previous.handler if isinstance(previous, Recording) else previous


@functools.wraps(signal.getsignal)
def _getsignal(signalnum):
    current = PATCHES["getsignal"](signalnum)
    return current.handler if isinstance(current, Recording) else current


@guard("signals")
def _witness(signo):
    if RUNTIME.ended:
        return
    name = signal.Signals(signo).name
    RUNTIME.probes.dump(name)
    RUNTIME.session.record_signal(signo)
    # If the handler ends the process (sys.exit), the trace ends as stopped by this signal.
    RUNTIME.stop_signal = (signo, name)
