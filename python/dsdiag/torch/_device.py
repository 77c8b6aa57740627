"""The device path: small values the probes take of tensors on an accelerator (gradient
fingerprints, the loss, GradScaler's found-inf flag), read on the host without a sync.

A value is computed where its tensor lives, by a kernel queued behind the job's own, and
copied without blocking into host memory (HostCopy: pinned memory and a CUDA event behind the
copy; on the CPU a plain tensor and a HostEvent, below). Nothing waits when it is queued. It is
read when it is needed (resolve()): the probes read theirs at the step's end, after the job's
optimizer step was queued, so the wait (one per step, on the latest event: the events of a
stream complete in order) costs at most the host's lead over the device, never a stall
between the backward's kernels.

DSDIAG_DEVICE_PATH picks who takes it:
  auto   (default) tensors off the CPU (CUDA and other devices); CPU tensors are read in
         place on the host (xxHash3 of their bytes, free to read);
  force  every tensor, CPU ones too: the same code path on any device, which is how the CPU
         tests drive it (tests/python/test_device_path.py).
"""

import os
import threading

import torch

SETTING = "DSDIAG_DEVICE_PATH"
_MODES = ("auto", "force")


class _Mode(object):
    """DSDIAG_DEVICE_PATH, read once (the hooks ask per bucket)."""

    def __init__(self):
        self.value = None

    def forced(self):
        if self.value is None:
            value = os.environ.get(SETTING, "") or "auto"
            self.value = value if value in _MODES else "auto"
        return self.value == "force"


MODE = _Mode()


def takes(tensors):
    """Whether these tensors take the device path: forced, or some of them off the CPU
    (then all of them, so that one record's hashes come from one function)."""
    return MODE.forced() or any(t is not None and t.device.type != "cpu" for t in tensors)


class HostStream(object):
    """What a HostEvent stands in for on a device without events (the CPU): one in-order
    queue, whose work is done once some later event was waited for. It keeps the CPU path's
    waits where the CUDA path has them, so the tests count the same waits."""

    def __init__(self):
        self.lock = threading.Lock()
        self.recorded = 0
        self.done = 0


HOST_STREAM = HostStream()


class HostEvent(object):
    """torch.cuda.Event's interface on the CPU: record(), query(), synchronize() and
    elapsed_time() (milliseconds between two events' host clocks: on the CPU the work is done
    when it is queued, so device time is host time)."""

    def __init__(self, enable_timing=False, stream=HOST_STREAM):
        self.stream = stream
        self.seq = 0
        self.time_ns = 0

    def record(self, stream=None):
        import time

        with self.stream.lock:
            self.stream.recorded += 1
            self.seq = self.stream.recorded
        self.time_ns = time.perf_counter_ns()

    def query(self):
        return self.seq <= self.stream.done

    def synchronize(self):
        with self.stream.lock:
            self.stream.done = max(self.stream.done, self.seq)

    def elapsed_time(self, end):
        return (end.time_ns - self.time_ns) / 1e6


def new_event(device, enable_timing=False):
    """An event on this device's current stream's kind: CUDA's, else a HostEvent."""
    if device.type == "cuda":
        return torch.cuda.Event(enable_timing=enable_timing)
    return HostEvent(enable_timing=enable_timing)


class HostCopy(object):
    """A small device tensor on its way to the host: copied without blocking into pinned
    memory (CUDA) or a plain host tensor (elsewhere), behind an event recorded on the current
    stream. `host` holds the value once the event completed."""

    __slots__ = ("host", "event")

    def __init__(self, value):
        value = value.detach()
        pinned = value.device.type == "cuda"
        self.host = torch.empty(value.shape, dtype=value.dtype, pin_memory=pinned)
        self.host.copy_(value, non_blocking=True)
        self.event = new_event(value.device)
        self.event.record()


class Waits(object):
    """How many times the device path waited (synchronize() on an event): once per step at
    most is its promise; tests read it."""

    def __init__(self):
        self.lock = threading.Lock()
        self.count = 0


WAITS = Waits()


def wait(event):
    with WAITS.lock:
        WAITS.count += 1
    event.synchronize()


def resolve(copies):
    """Waits until every copy's value is on the host: on the latest event first (the others,
    queued before it on the same stream, are then complete), then on any still pending (a
    copy on another stream). Returns the host tensors, in order."""
    pending = [c for c in copies if not c.event.query()]
    if pending:
        wait(pending[-1].event)
        for c in pending[:-1]:
            if not c.event.query():
                wait(c.event)
    return [c.host for c in copies]
