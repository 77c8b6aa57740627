"""Device time: how long each phase and each DDP bucket's allreduce took on the device, the
`step` record's `dev` (docs/trace-format.md). On CUDA the host only queues kernels, so the
host's phase times say when the host was done queueing, not when the work ran.

Events come from one pool, created once and reused (_device.new_event: CUDA events with
timing, or HostEvents on the CPU, whose times are host clocks). A phase records one on the
current stream as it begins and one as it ends; a bucket one as DDP hands it to the hook (its
gradients ready on the compute stream) and one in the allreduce future's callback (on the
allreduce's stream, after it). Nothing waits: at each step's end the spans of earlier steps
whose end event completed (query()) are summed, and the oldest step whose spans all did goes
into this step's record — a step late, or later when the device lags.

A bucket's span also carries its collective (`op`) where the backend's future completes once
the work is queued (NCCL): the op's flight entry stays pending until the span's end event is
seen done (complete_ops: each step end, before each flight dump, before the watchdog times an
entry out), so a dump of a job hung on the device names the collective it hangs in.

On when the device path takes the model (its DDP probe turns it on: _comm_hook.DDPProbe).
"""

import threading

from dsdiag.torch import _device

_MAX_OPEN = 4096  # spans kept unresolved at most (a device that never completes them)
COLL = "coll"  # the name of the collectives' sum in `dev` (trace/records/step_record.h)


class _Span(object):
    __slots__ = ("step", "name", "start", "end", "op")

    def __init__(self, step, name, start):
        self.step, self.name, self.start, self.end, self.op = step, name, start, None, None


class DeviceTime(object):
    def __init__(self, device):
        self.device = device
        self.lock = threading.Lock()
        self.free = []  # events ready for reuse
        self.created = 0
        self.done = []  # spans whose end is recorded, unresolved, in order

    def _event(self):
        with self.lock:
            if self.free:
                return self.free.pop()
            self.created += 1
        return _device.new_event(self.device, enable_timing=True)

    def begin(self, step, name):
        event = self._event()
        event.record()
        return _Span(step, name, event)

    def end(self, span, op=None):
        """`op`: the collective (core CollectiveOp) to mark completed on the device once this
        span's end event is done."""
        event = self._event()
        event.record()
        span.end, span.op = event, op
        dropped = None
        with self.lock:
            self.done.append(span)
            if len(self.done) > _MAX_OPEN:
                dropped = self.done.pop(0)
                self.free += [dropped.start, dropped.end]
        if dropped is not None:
            # Its event is no longer asked (a loop whose steps dsdiag does not see resolves
            # none): its collective must not stay pending for the watchdog.
            self._complete(dropped)

    def complete_ops(self):
        """Marks completed on the device each collective whose span's end event is done."""
        for s in self._with_ops():
            if s.end.query():
                self._complete(s)

    def release_ops(self):
        """Device time is failing: every collective still waiting for its event is marked
        completed (nothing can tell any more), so none stays pending for the watchdog."""
        for s in self._with_ops():
            self._complete(s)

    def _with_ops(self):
        with self.lock:
            return [s for s in self.done if s.op is not None]

    def _complete(self, span):
        with self.lock:
            op, span.op = span.op, None
        if op is not None:  # once, whichever thread saw it first
            op.mark_device_completed()

    def phase(self, step, name, inner):
        """`inner` (the session's phase span) with this phase's events around it."""
        return _TimedPhase(self, step, name, inner)

    def take_earlier(self, step):
        """(the step, {name: device ns}) of the oldest step before `step` whose spans all
        completed, or None; their events go back to the pool."""
        with self.lock:
            spans = [s for s in self.done if s.step < step]
        if not spans:
            return None
        # Both ends: a bucket's start and end events lie on different streams.
        waiting = {s.step for s in spans if not (s.end.query() and s.start.query())}
        ready = sorted({s.step for s in spans} - waiting)
        if not ready:
            return None
        oldest = ready[0]
        with self.lock:
            taken = [s for s in self.done if s.step == oldest]
            self.done = [s for s in self.done if s.step != oldest]
        times = {}
        for s in taken:
            self._complete(s)  # its end event is done: queried above
            times[s.name] = times.get(s.name, 0) + int(s.start.elapsed_time(s.end) * 1e6)
        with self.lock:
            for s in taken:
                self.free += [s.start, s.end]
        return oldest, times


class _TimedPhase(object):
    def __init__(self, timer, step, name, inner):
        self.timer, self.step, self.name, self.inner = timer, step, name, inner
        self.span = None

    def __enter__(self):
        self.inner.__enter__()
        try:
            self.span = self.timer.begin(self.step, self.name)
        except Exception as e:  # never into the job's phase
            _failed(e)
        return self

    def __exit__(self, *exc):
        try:
            if self.span is not None:
                self.timer.end(self.span)
        except Exception as e:
            _failed(e)
        return self.inner.__exit__(*exc)


def _failed(error):
    from dsdiag.torch._runtime import RUNTIME

    RUNTIME.device_time_failed(error)
