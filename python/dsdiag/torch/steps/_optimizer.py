"""The optimizer step: the end of a training step. Before it, the model probe writes what
the backward left (who took part, the gradients as synced and as about to be used) — with
step(closure), when the closure that runs the backward returns; the step itself is the
`optimizer` phase; after it the step record is written. Every optimizer built is
remembered: what it trains is the model the probe watches when no DDP wraps it
(dsdiag.torch.ddp._unwrapped).

torch 2.x has global optimizer step hooks (register_optimizer_step_pre_hook); torch 1.13 has
none, so each optimizer class's step is wrapped once, the way its own profiling hook is."""

import functools

import torch

from dsdiag.torch._patches import Patches
from dsdiag.torch._runtime import RUNTIME, guard, phase
from dsdiag.torch.ddp import _unwrapped

_WRAPPED = "_dsdiag_wrapped"
PATCHES = Patches("steps")  # with the backward's (_backward)


def install():
    PATCHES.replace(torch.optim.Optimizer, "__init__", _optimizer_init)
    PATCHES.append(RUNTIME.step_begin_hooks, _unwrapped.at_step_begin)


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
        _unwrapped.remember(optimizer)
    except Exception:  # never into the job's constructor
        pass


def _wrap_step(step):
    @functools.wraps(step)
    def wrapped(self, *args, **kwargs):
        if not RUNTIME.on:
            return step(self, *args, **kwargs)
        args, kwargs, closure_given = _record_after_closure(args, kwargs)
        if not closure_given:
            before_step_once()
        with phase("optimizer"):
            result = step(self, *args, **kwargs)
        before_step_once()  # a closure the optimizer never called
        _after_step()
        return result

    setattr(wrapped, _WRAPPED, True)
    return wrapped


def _record_after_closure(args, kwargs):
    """optimizer.step(closure): the closure runs the forward and backward inside step()
    (Lightning calls every optimizer so; LBFGS calls it several times), so what the backward
    left is recorded when the closure first returns, before the optimizer uses it. Returns
    the arguments with the closure wrapped, and whether there was one."""
    if args and callable(args[0]):
        return (_after_closure(args[0]),) + tuple(args[1:]), kwargs, True
    if callable(kwargs.get("closure")):
        return args, dict(kwargs, closure=_after_closure(kwargs["closure"])), True
    return args, kwargs, False


def _after_closure(closure):
    @functools.wraps(closure)
    def run_then_record(*args, **kwargs):
        result = closure(*args, **kwargs)
        before_step_once()
        return result

    return run_then_record


class _PreStep(object):
    done = False  # the pre-step records of the current step are written


PRE_STEP = _PreStep()


def before_step_once():
    """What the backward left, recorded once per step: at the optimizer step, or earlier
    when GradScaler.unscale_ is about to change the gradients in place (the trainer takes
    its pre-step fingerprints before unscaling too)."""
    if not PRE_STEP.done:
        PRE_STEP.done = True
        _before_step()


def end_skipped_step():
    """GradScaler skipped optimizer.step() (non-finite gradients): the step ends as if it
    had run, with the records written around a step."""
    before_step_once()
    _after_step()


@guard("optimizer")
def _before_step():
    if not RUNTIME.in_step:
        _unwrapped.at_optimizer_step_first()
    RUNTIME.begin_step_if_needed()
    RUNTIME.write_pending_ops()
    if RUNTIME.model is not None:
        RUNTIME.model.before_optimizer_step()


@guard("optimizer")
def _after_step():
    PRE_STEP.done = False
    if RUNTIME.model is not None:
        RUNTIME.model.after_optimizer_step(RUNTIME.step)
    RUNTIME.end_step()
