"""The rank's probes while the job runs: started when the default process group is, fed by
the hooked areas (collectives, ddp, steps, process, ...), ended at exit. One instance per
process, RUNTIME.

A step is one iteration of the training loop: it begins at the first batch, forward (or
backward) after the last step and ends when the iteration's last optimizer.step() returns
(dsdiag.torch.steps._iteration: each optimizer.step() where the loop has one optimizer).
Every hook goes through guard(): a probe that raises warns once and switches the probes
off; the job goes on as if dsdiag were not there.
"""

import functools
import math
import os
import sys
import threading
import time

from dsdiag._warn import warn_once
from dsdiag.torch import _torch_flight_recorder  # now: its STARTED is this job's start


class Runtime(object):
    def __init__(self):
        self.settings = None  # Settings, once instrument() ran
        self.probes = None  # dsdiag._core.RankProbes, once the process group started
        self.session = None
        self.rank = None  # the global rank, once the process group started
        self.on = False
        self.step = 0
        self.in_step = False
        # Inside DDP's Join context's exit, shadowing the others' collectives (ddp/_join.py):
        # no step opens, no gradient is fingerprinted.
        self.joined = False
        self.epoch = 0
        self.loss = float("nan")
        self.loss_copy = None  # _device.HostCopy of a device loss, read at the step's end
        self.device_time = None  # _device_time.DeviceTime, where the device path measures it
        self.samples = 0
        self.lock = threading.RLock()
        self.local = threading.local()  # .suppress: inside our own comm hook / wrapper
        self.groups = None  # _groups.GroupBook: the pg numbers in `coll` records, once used
        self.model = None  # the model's ModelProbe (dsdiag.torch.ddp), the first one built
        # The training DataLoader is known (dsdiag.torch.data): its batch opens each step,
        # a forward outside a step (a validation loop) opens none.
        self.loader_opens_steps = False
        self.pending_ops = []  # CollectiveOps completed off the main thread, to write
        # Called with write_pending_ops: C++ hooks holding ops of their own to write.
        self.pending_writers = []
        # Called as fn(runtime) when the probes switch off, or stop (uninstrument()).
        self.off_hooks = []
        self.ended = False
        self.stop_signal = None  # (signo, name) once the job's own handler got a stop signal
        # Probes that write records inside every step (_data, _rng, ...): called right after
        # the step record begins, and right before it ends, as fn(runtime).
        self.step_begin_hooks = []
        self.step_end_hooks = []
        # Called as fn(runtime) before the trace ends normally (a step left open by a loop
        # whose last iteration did not step every optimizer is ended there).
        self.end_hooks = []

    # --- life -----------------------------------------------------------------------

    def start(self, rank, world_size, local_rank, store, header):
        """Starts the C++ probes for this rank; on failure warns and stays off."""
        if self.probes is not None or self.settings is None or self.settings.off:
            return
        from dsdiag import _core

        config = {
            "mode": self.settings.probes,
            "run_dir": self.settings.run_dir,
            "rank": rank,
            "world_size": world_size,
            "local_rank": local_rank,
            "collective_timeout_s": self.settings.timeout,
            # A hung collective ends the rank (and the launcher the job) within the
            # timeout, instead of Gloo's 30 minutes.
            "end_on_collective_timeout": True,
            # A C++ exception nobody catches (Gloo's enforce on a worker thread: a size
            # mismatch) ends the process in std::terminate, never in Python's excepthook:
            # the error, the flight dump and the end record are written there.
            "record_terminate": True,
            "header_config": header.get("config", {}),
            "versions": header.get("versions", {}),
            "sections": header.get("sections", {}),
        }
        run_id = os.environ.get("DSDIAG_RUN_ID")
        if run_id:
            config["run_id"] = run_id
        try:
            self.probes = _core.RankProbes.start(config, store)
        except Exception as e:  # unwritable run dir, store failure: the job goes on
            warn_once("start", "probes off on rank %d: %s" % (rank, e))
            return
        self.session = self.probes.session
        self.rank = rank
        self.on = self.session.on
        try:
            self.probes.set_stack_provider(self._at_flight_dump)
            self.probes.set_refresher(self._complete_device_ops)
        except Exception as e:
            warn_once("stacks", "no Python stacks in flight dumps: %r" % (e,))

    def _complete_device_ops(self):
        """What the core asks before a flight dump and before its watchdog times an entry out:
        the collectives queued on a device that are done there, marked completed."""
        timer = self.device_time
        if timer is None:
            return
        try:
            timer.complete_ops()
        except Exception as e:  # never into the core's dump or watchdog
            self.device_time_failed(e)

    def _at_flight_dump(self):
        """What the core asks for when it writes this rank's flight dump: every thread's
        Python stack; torch's own Flight Recorder dump is written beside it when the job has
        torch's recorder on (_torch_flight_recorder)."""
        stacks = python_stacks()
        _torch_flight_recorder.write_dump(self.probes.run_dir, self.rank)
        return stacks

    def end(self, reason, status, detail=""):
        if not self.on or self.ended:
            return
        from dsdiag._core import end_reason  # here: dsdiag.torch imports without the core

        if reason == end_reason.OK:
            self._run_hooks(self.end_hooks)
        self.ended = True
        self._stop_off_hooks()
        self.session.end(reason, status, detail)
        try:
            self.probes.set_stack_provider(None)  # no Python to ask once it shuts down
            self.probes.set_refresher(None)
        except Exception:
            pass

    def stop(self) -> None:
        """uninstrument(): the trace ends here, as a normal end. The model's probe is kept
        (ModelProbe says why: freed now, it could be freed last on a worker thread)."""
        if self.on and not self.ended:
            from dsdiag._core import end_reason

            self.write_pending_ops()
            self.end(end_reason.OK, 0)
        self.on = False
        self.in_step = False
        self._stop_off_hooks()

    def _stop_off_hooks(self):
        hooks, self.off_hooks = self.off_hooks, []
        for hook in hooks:
            try:
                hook(self)
            except Exception:
                pass

    def _run_hooks(self, hooks):
        for hook in hooks:
            try:
                hook(self)
            except Exception as e:  # one probe's failure switches the probes off
                self.switch_off(getattr(hook, "__name__", "step hook"), e)
                return

    def switch_off(self, where, error):
        warn_once(where, "probe %s failed and is off for the rest of the run: %r" % (where, error))
        self.on = False
        self._stop_off_hooks()

    # --- steps ----------------------------------------------------------------------

    def begin_step_if_needed(self):
        if self.on and not self.in_step and not self.joined:
            self.in_step = True
            self.samples = 0
            self.session.begin_step(self.step, self.epoch)
            self._run_hooks(self.step_begin_hooks)

    def end_step(self):
        if not self.on or not self.in_step:
            return
        self._run_hooks(self.step_end_hooks)
        self.in_step = False
        self._read_loss_copy()
        device_step, device = self._earlier_device_times()
        self.session.end_step(loss=self.loss, samples=self.samples, device_step=device_step,
                              device=device)
        self.step += 1
        self.loss = float("nan")

    def _earlier_device_times(self):
        """(step, [(name, ns)]) of an earlier step's device times, or (-1, []): a step late."""
        timer = self.device_time
        if timer is None:
            return -1, []
        try:
            timer.complete_ops()
            taken = timer.take_earlier(self.step)
        except Exception as e:
            self.device_time_failed(e)
            return -1, []
        return (taken[0], sorted(taken[1].items())) if taken else (-1, [])

    def device_time_failed(self, error):
        """Device time off for the rest of the run; the other probes go on."""
        timer, self.device_time = self.device_time, None
        if timer is not None:
            try:
                timer.release_ops()
            except Exception:
                pass  # the error is the one warned of below
        warn_once("device-time", "device time is off for the rest of the run: %r" % (error,))

    def _read_loss_copy(self):
        """A device loss, copied at the backward: read now (after the gradients' wait, its
        event is usually complete already)."""
        copy, self.loss_copy = self.loss_copy, None
        if copy is None:
            return
        from dsdiag.torch import _device

        try:
            self.loss = finite_or_nan(float(_device.resolve([copy])[0][0]))
        except Exception as e:
            self.switch_off("loss", e)

    def group_id(self, group):
        """The number of a process group in `coll` records, by its identity (_groups): 0
        for the default group; the first time a group is seen its `group` record is
        written."""
        return self.group_book().number(self.session if self.on else None, group)

    def group_book(self):
        """The rank's _groups.GroupBook, made at its first use."""
        if self.groups is None:
            from dsdiag.torch import _groups  # here: _runtime imports without torch.distributed

            self.groups = _groups.GroupBook()
        return self.groups

    def write_pending_ops(self):
        with self.lock:
            ops, self.pending_ops = self.pending_ops, []
        for op in ops:
            op.write()
        for write in self.pending_writers:
            write()


RUNTIME = Runtime()


def _after_fork_in_child():
    """A forked child (a DataLoader worker, a subprocess of the job) is not the rank: its
    hooks stay quiet. The C++ probes it inherited have no threads in it and are never touched
    (such children leave through os._exit, without running destructors)."""
    RUNTIME.on = False
    RUNTIME.in_step = False


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def guard(where):
    """Decorator for probe code: never raise into the job. The first failure of `where`
    warns on stderr and turns the probes off. The time spent in the outermost guarded call
    is the probes' own (the step record's probe_ns, as the C++ probes count theirs): added
    to the session less what the C++ core counted inside it, so nothing is counted twice."""

    def wrap(fn):
        @functools.wraps(fn)
        def guarded(*args, **kwargs):
            if not RUNTIME.on:
                return None
            local = RUNTIME.local
            if getattr(local, "timing", False):
                return _call_guarded(where, fn, args, kwargs)
            session = RUNTIME.session
            local.timing = True
            core_before, start = session.probe_ns, time.perf_counter_ns()
            try:
                return _call_guarded(where, fn, args, kwargs)
            finally:
                local.timing = False
                _add_python_time(session, time.perf_counter_ns() - start, core_before)

        return guarded

    return wrap


def _call_guarded(where, fn, args, kwargs):
    try:
        return fn(*args, **kwargs)
    except Exception as e:  # a probe's bug or a torch without some API
        RUNTIME.switch_off(where, e)
        return None


def _add_python_time(session, elapsed_ns, core_before):
    try:
        session.add_probe_time(max(0, elapsed_ns - (session.probe_ns - core_before)))
    except Exception:
        pass


class _NoPhase(object):
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


NO_PHASE = _NoPhase()


def phase(name):
    """`with phase("forward"):` — the session's phase span, or nothing when the probes are
    off or fail (never an exception into the job)."""
    if not RUNTIME.on:
        return NO_PHASE
    try:
        span = RUNTIME.session.phase(name)
        timer = RUNTIME.device_time
        return span if timer is None else timer.phase(RUNTIME.step, name, span)
    except Exception as e:
        RUNTIME.switch_off("phase", e)
        return NO_PHASE


def suppressed():
    return getattr(RUNTIME.local, "suppress", 0) > 0


class Suppress(object):
    """Inside our own hooks: the collectives they issue are not recorded twice."""

    def __enter__(self):
        RUNTIME.local.suppress = getattr(RUNTIME.local, "suppress", 0) + 1

    def __exit__(self, *exc):
        RUNTIME.local.suppress -= 1
        return False


def finite_or_nan(x):
    return x if isinstance(x, float) and math.isfinite(x) else float("nan")


def python_stacks():
    """Every thread's Python stack, for the flight dump: [(name, ["file:line in func", ...])],
    outermost frame first, at most 40 frames each (the innermost kept). A hook of ours at the
    top of a stack (Work.wait's, waiting on a message) is left out: the innermost frame is
    then the job's or torch's, where the thread waits."""
    import traceback

    names = {t.ident: t.name for t in threading.enumerate()}
    me = threading.get_ident()  # the core's thread asking: not the job's
    ours = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the dsdiag package
    stacks = []
    for ident, frame in sys._current_frames().items():
        if ident == me:
            continue
        summary = traceback.extract_stack(frame)
        while len(summary) > 1 and os.path.abspath(summary[-1].filename).startswith(ours + os.sep):
            summary.pop()
        frames = ["%s:%d in %s" % (f.filename, f.lineno, f.name) for f in summary][-40:]
        stacks.append((names.get(ident, "thread %d" % ident), frames))
    stacks.sort(key=lambda s: (s[0] != "MainThread", s[0]))
    return stacks
