"""How a rank's trace ends: an exception nobody caught becomes an `error` record and the
`end` record (reason "error", with the exception's type and message) before Python prints
it; a normal exit writes the `end` record "ok". SIGTERM / SIGINT are the C++ core's
(StopSignals: dump, signal and end records; the job's own handlers still run), or, for a
handler the job installs later, _signals': then the exit ends the trace as stopped by it."""

import atexit
import sys
import traceback

from dsdiag._core import end_reason, flight_dump_reason
from dsdiag.torch._patches import Patches
from dsdiag.torch._runtime import RUNTIME

PATCHES = Patches("process")  # with the signals' (_signals)


def install():
    PATCHES.replace(sys, "excepthook", _excepthook)
    atexit.register(_at_exit)
    PATCHES.on_undo(lambda: atexit.unregister(_at_exit))


def _excepthook(kind, value, tb):
    try:
        if RUNTIME.on and not RUNTIME.ended:
            message = "%s: %s" % (kind.__name__, value)
            frames = traceback.extract_tb(tb)
            where = "%s:%d" % (frames[-1].filename, frames[-1].lineno) if frames else "python"
            RUNTIME.session.record_error(where, message)
            RUNTIME.probes.dump(flight_dump_reason.ERROR)
            RUNTIME.end(end_reason.ERROR, 1, message)
    except Exception:
        pass
    PATCHES["excepthook"](kind, value, tb)


def _at_exit():
    # The worker threads let go of our future callbacks in _futures' own exit hook, which
    # atexit runs before this one (registered at the first callback, after this).
    try:
        if RUNTIME.on and not RUNTIME.ended:
            RUNTIME.write_pending_ops()
            if RUNTIME.stop_signal:  # the job's handler exited on it (_signals)
                signo, name = RUNTIME.stop_signal
                RUNTIME.end(end_reason.SIGNAL, 128 + signo, name)
            else:
                RUNTIME.end(end_reason.OK, 0)
    except Exception:
        pass
