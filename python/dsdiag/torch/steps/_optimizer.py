"""The optimizer step: where a training step ends. Before each optimizer steps, the model
probe takes what the backward left for the parameters it trains (the gradients as synced
and as about to be used, the parameters) — with step(closure), when the closure that runs
the backward returns; the step itself is the `optimizer` phase. The step ends after the
optimizer step that completes the loop's iteration (_iteration: with one optimizer, every
optimizer.step(); a GAN's discriminator and generator steps make one step), and the model
probe writes the step's records then. Every optimizer built is remembered: what it trains
is the model the probe watches when no DDP wraps it (dsdiag.torch.ddp._unwrapped).

torch 2.x has global optimizer step hooks (register_optimizer_step_pre_hook); torch 1.13 has
none, so each optimizer class's step is wrapped once, the way its own profiling hook is."""

import functools

import torch

from dsdiag._core import phase_name
from dsdiag.torch._patches import Patches
from dsdiag.torch._runtime import RUNTIME, guard, phase
from dsdiag.torch.ddp import _unwrapped
from dsdiag.torch.steps._iteration import ITERATION

_WRAPPED = "_dsdiag_wrapped"
PATCHES = Patches("steps")  # with the backward's (_backward)


def install():
    PATCHES.replace(torch.optim.Optimizer, "__init__", _optimizer_init)
    PATCHES.append(RUNTIME.step_begin_hooks, _unwrapped.at_step_begin)
    PATCHES.append(RUNTIME.end_hooks, end_open_step)


@functools.wraps(torch.optim.Optimizer.__init__)
def _optimizer_init(self, *args, **kwargs):
    PATCHES["__init__"](self, *args, **kwargs)
    _remember(self)
    cls = type(self)
    step = cls.__dict__.get("step") or cls.step
    if not getattr(step, _WRAPPED, False):
        # Each optimizer class's step, once (undone with the rest: uninstall).
        PATCHES.replace(cls, "step", _wrap_step(step), key=cls)


def _remember(optimizer):
    """What it trains is the model's, when no DDP wraps it (dsdiag.torch.ddp._unwrapped)."""
    try:
        ITERATION.built(optimizer)
        _unwrapped.remember(optimizer)
    except Exception:  # never into the job's constructor
        pass


def _wrap_step(step):
    @functools.wraps(step)
    def wrapped(self, *args, **kwargs):
        local = RUNTIME.local
        if not RUNTIME.on or RUNTIME.joined or getattr(local, "optimizer_step", False):
            # off, a joined rank's shadow step (ZeroRedundancyOptimizer's join hook: no step
            # of its training, ddp/_join.py), or a subclass's step calling super()'s
            return step(self, *args, **kwargs)
        local.optimizer_step = True
        try:
            return _step(self, args, kwargs)
        finally:
            local.optimizer_step = False

    def _step(self, args, kwargs):
        _before_own_step(self)
        args, kwargs, closure_given = _record_after_closure(self, args, kwargs)
        if not closure_given:
            before_step(self)
        with phase(phase_name.OPTIMIZER):
            result = step(self, *args, **kwargs)
        before_step(self)  # a closure the optimizer never called
        RUNS.count += 1
        _after_step(self)
        return result

    setattr(wrapped, _WRAPPED, True)
    return wrapped


def _record_after_closure(optimizer, args, kwargs):
    """optimizer.step(closure): the closure runs the forward and backward inside step()
    (Lightning calls every optimizer so; LBFGS calls it several times), so what the backward
    left is recorded when the closure first returns, before the optimizer uses it. Returns
    the arguments with the closure wrapped, and whether there was one."""
    if args and callable(args[0]):
        return (_after_closure(optimizer, args[0]),) + tuple(args[1:]), kwargs, True
    if callable(kwargs.get("closure")):
        return args, dict(kwargs, closure=_after_closure(optimizer, kwargs["closure"])), True
    return args, kwargs, False


def _after_closure(optimizer, closure):
    @functools.wraps(closure)
    def run_then_record(*args, **kwargs):
        result = closure(*args, **kwargs)
        before_step(optimizer)
        return result

    return run_then_record


class _PreStep(object):
    def __init__(self):
        self.done = set()  # id() of the optimizers whose pre-step records this step has


PRE_STEP = _PreStep()


class _Runs(object):
    count = 0  # optimizer.step() calls that ran (GradScaler tells a skipped one by it)


RUNS = _Runs()


def before_step(optimizer):
    """What the backward left for `optimizer`'s parameters, taken once per step: at its
    step, or earlier when GradScaler.unscale_ is about to change the gradients in place
    (the trainer takes its pre-step fingerprints before unscaling too)."""
    if id(optimizer) not in PRE_STEP.done:
        PRE_STEP.done.add(id(optimizer))
        _before_step(optimizer)


def skipped_step(optimizer):
    """GradScaler skipped optimizer.step() (non-finite gradients): it counts as that
    optimizer's step, with the records written around a step."""
    before_step(optimizer)
    _after_step(optimizer)


@guard("optimizer")
def _before_own_step(optimizer):
    """An optimizer that stepped in the open step steps again: the loop is in its next
    iteration, and the open step ends here (_iteration)."""
    if RUNTIME.in_step and ITERATION.steps_again(optimizer):
        _end_step()


@guard("optimizer")
def _before_step(optimizer):
    if not RUNTIME.in_step:
        _unwrapped.at_optimizer_step_first()
    RUNTIME.begin_step_if_needed()
    RUNTIME.write_pending_ops()
    if RUNTIME.model is not None:
        RUNTIME.model.before_optimizer_step(optimizer)


@guard("optimizer")
def _after_step(optimizer):
    if ITERATION.stepped_now(optimizer):
        _end_step()


@guard("optimizer")
def end_open_step(runtime=None):
    """The loop shows a new iteration (the training loader's next batch) or the trace ends:
    a step some optimizer stepped in is over, though not every member stepped."""
    if RUNTIME.in_step and ITERATION.any_stepped():
        _end_step()


def _end_step():
    RUNTIME.write_pending_ops()
    if RUNTIME.model is not None:
        RUNTIME.model.at_step_end(RUNTIME.step)
    ITERATION.ended()
    PRE_STEP.done.clear()
    RUNTIME.end_step()
