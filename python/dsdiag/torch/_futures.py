"""Callbacks on torch futures that the process can outlive safely.

A callback given to `Future.then` runs on the backend's worker thread (Gloo's, NCCL's), and
that thread also drops its reference to the callback afterwards, taking the GIL to do so.
When the main thread reaches interpreter shutdown first, the worker thread's bid for the GIL
ends the thread (pthread_exit) in the middle of C++ code and the process aborts
("terminate called without an active exception", exit 134): a job that was fine without
dsdiag would fail at its very end. The same holds for the futures `then` creates: each
holds its callback's return value as a Python object, freed under the GIL by whoever drops
the future last — the worker thread, when the parent future's callback list goes.

So every callback we attach carries a token whose release we count, and at exit `drain()`
waits (GIL released, bounded) until the worker threads let go of all of them. That exit
hook is registered here, at the first callback, and never taken out: the callbacks outlive
`uninstrument()` (a worker thread may still hold the last backward's when the hooks go, and
a DDP keeps the comm hook it was given), so the process area's exit handler, which
uninstrument() removes, cannot be the one that waits for them. And the
futures of the last callbacks are kept here (a bounded deque), so that the worker thread's
release of them is never the last one: the main thread frees them, with the GIL.
"""

import atexit
import collections
import threading
import time

# (parent, child) futures of the last callbacks
_RECENT: collections.deque = collections.deque(maxlen=4096)
_NATIVE: list = []  # in_flight() of each C++ hook (dsdiag._ddp_hook_*): its callbacks held


class _LiveCallbacks(object):
    """How many of our callbacks a worker thread still holds; whether drain() waits for
    them at exit."""

    def __init__(self):
        self.lock = threading.Lock()
        self.count = 0
        self.drain_at_exit = False


LIVE = _LiveCallbacks()


class _Token(object):
    """Alive as long as the callback that holds it."""

    def __init__(self):
        with LIVE.lock:
            LIVE.count += 1

    def __del__(self):
        with LIVE.lock:
            LIVE.count -= 1


def _drain_at_exit():
    if not LIVE.drain_at_exit:
        LIVE.drain_at_exit = True
        atexit.register(drain)


def count_native(in_flight):
    """A C++ hook's callbacks, counted by in_flight(), are waited for at exit as ours are:
    the worker thread frees each one's work after it, with Python objects in it."""
    _NATIVE.append(in_flight)
    _drain_at_exit()


def then(future, callback):
    """future.then(callback), counted until the worker thread releases the callback."""
    _drain_at_exit()
    token = _Token()

    def counted(f):
        token  # noqa: B018  held by the closure: released with it, on the worker thread
        return callback(f)

    child = future.then(counted)
    _RECENT.append((future, child))
    return child


def live():
    with LIVE.lock:
        count = LIVE.count
    for in_flight in _NATIVE:
        try:
            count += in_flight()
        except Exception:
            pass
    return count


def drain(timeout_s=2.0, linger_s=0.02):
    """Waits, sleeping (so the worker threads can take the GIL), until no callback of ours
    is held, at most timeout_s; then lingers a little longer, GIL released, for what the
    worker thread releases after ours (a job's own hook's callback, whose future ours hang
    on, goes just after). True when none of ours is held."""
    deadline = time.monotonic() + timeout_s
    while live() > 0:
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.002)
    time.sleep(linger_s)
    return True
