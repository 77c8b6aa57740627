"""GradScaler probes: the `scaler` record of every fp16 iteration (scaler-overflow,
scaler-desync), and the `clip` records (clip-before-unscale, _clip.py).

The GradScaler classes torch has (torch.cuda.amp.GradScaler; torch.amp.GradScaler and
torch.cpu.amp.GradScaler in torch 2.x) get their public methods wrapped — scale, unscale_,
step, update — and their __init__, which wraps the same methods of any subclass when one
is created (FSDP's ShardedGradScaler, a job's own). Only the outermost call of a method
on a scaler is seen (a subclass's step() calling super().step() is one step). What each
call tells the scaler's probe (_probe.py): scale(), a loss was scaled this
iteration; unscale_(optimizer), these parameters' gradients are unscaled; step(), whether
the optimizer stepped; update(), the end of the iteration, where the record is written.

A skipped step: GradScaler.step() does not call optimizer.step(), so the optimizer probe
never sees it; it counts as that optimizer's step here, as the optimizer probe counts one
(dsdiag.torch.steps: the step ends when every optimizer of the iteration has stepped).

A disabled scaler (enabled=False, or torch 1.13's without CUDA) is called through: nothing
is scaled, nothing is recorded.
"""

import functools
import importlib
import weakref

from dsdiag.torch._patches import Patches
from dsdiag.torch._runtime import RUNTIME, guard
from dsdiag.torch.scaler import _clip
from dsdiag.torch.scaler._probe import ScalerProbe
from dsdiag.torch.steps import _optimizer

_METHODS = ("scale", "unscale_", "step", "update")
_WRAPPED = "_dsdiag_wrapped"
_BASES: list = []  # torch's GradScaler classes, while installed
PATCHES = Patches("scaler")
# scaler -> ScalerProbe (no attribute on the job's object)
_PROBES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
# scaler -> names of its methods running now
_ACTIVE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

_MODULES = ("torch.cuda.amp", "torch.cuda.amp.grad_scaler", "torch.amp", "torch.amp.grad_scaler",
            "torch.cpu.amp", "torch.cpu.amp.grad_scaler")


def install():
    if PATCHES:
        return
    for name in _MODULES:
        try:
            cls = getattr(importlib.import_module(name), "GradScaler", None)
        except Exception:  # not in this torch
            continue
        if isinstance(cls, type) and cls not in _BASES:
            _BASES.append(cls)
    PATCHES.on_undo(lambda: _BASES.clear())
    for cls in _BASES:
        _wrap_class(cls)
    _clip.install(PATCHES)
    _clip.STATE.unscaled_check = _clip_sees_unscaled
    PATCHES.on_undo(lambda: setattr(_clip.STATE, "unscaled_check", None))


def uninstall():
    PATCHES.undo()


def _wrap_class(cls):
    for name in _METHODS + ("__init__",):
        fn = cls.__dict__.get(name)
        if fn is None or getattr(fn, _WRAPPED, False) or not callable(fn):
            continue
        wrapped = _wrap_init(fn) if name == "__init__" else _wrap_method(name, fn)
        setattr(wrapped, _WRAPPED, True)
        PATCHES.replace(cls, name, wrapped, key=(cls, name))


def _wrap_init(init):
    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
        try:  # a subclass's own methods (once per class)
            for klass in type(self).__mro__:
                if klass not in _BASES and issubclass(klass, tuple(_BASES)):
                    _wrap_class(klass)
        except Exception:
            pass

    return __init__


def _wrap_method(name, original):
    before, after = _HOOKS[name]
    # torch's own update() follows the documented rule the probe predicts the event from.
    stock = (getattr(original, "__module__", None) or "").startswith("torch.")

    @functools.wraps(original)
    def wrapper(self, *args, **kwargs):
        if not RUNTIME.on:
            return original(self, *args, **kwargs)
        probe = _enter(self, name)
        if probe is None:
            return original(self, *args, **kwargs)
        try:
            context = before(probe, self, args, kwargs)
            result = original(self, *args, **kwargs)
        finally:
            _leave(self, probe, name)
        after(probe, self, args, kwargs, context, stock)
        return result

    return wrapper


@guard("scaler")
def _enter(scaler, name):
    """The scaler's probe for an outermost call of `name` on an enabled scaler, else None."""
    enabled = getattr(scaler, "is_enabled", None)
    if not callable(enabled) or not enabled():
        return None
    active = _ACTIVE.setdefault(scaler, set())
    if name in active:
        return None
    active.add(name)
    probe = _PROBES.get(scaler)
    if probe is None:
        probe = _PROBES[scaler] = ScalerProbe()
    return probe


def _leave(scaler, probe, name):
    _ACTIVE.get(scaler, set()).discard(name)
    if name == "step":
        probe.inside_step = False


def _argument(args, kwargs, name):
    return args[0] if args else kwargs.get(name)


# --- what each method tells the probe (before, after) --------------------------------------


def _nothing(probe, scaler, args, kwargs):
    return None


@guard("scaler")
def _after_scale(probe, scaler, args, kwargs, context, stock):
    probe.after_scale(_argument(args, kwargs, "outputs"))


@guard("scaler")
def _before_unscale(probe, scaler, args, kwargs):
    # The gradients as the backward left them, before unscale_ divides them in place.
    optimizer = _argument(args, kwargs, "optimizer")
    if optimizer is not None:
        _optimizer.before_step(optimizer)
    return None


@guard("scaler")
def _after_unscale(probe, scaler, args, kwargs, context, stock):
    probe.after_unscale(scaler, _argument(args, kwargs, "optimizer"))


@guard("scaler")
def _before_step(probe, scaler, args, kwargs):
    return probe.before_step(scaler, _argument(args, kwargs, "optimizer"))


@guard("scaler")
def _after_step(probe, scaler, args, kwargs, step_before, stock):
    if step_before is None:
        return
    optimizer = _argument(args, kwargs, "optimizer")
    ran = probe.after_step(optimizer, step_before)
    if not ran and RUNTIME.in_step:
        # Skipped: optimizer.step() never ran, its probe did not see it. It counts as that
        # optimizer's step, with the records written around a step.
        _optimizer.skipped_step(optimizer)


@guard("scaler")
def _before_update(probe, scaler, args, kwargs):
    probe.before_update(scaler)
    return _argument(args, kwargs, "new_scale")


@guard("scaler")
def _after_update(probe, scaler, args, kwargs, new_scale, stock):
    probe.after_update(scaler, new_scale, stock)


_HOOKS = {
    "scale": (_nothing, _after_scale),
    "unscale_": (_before_unscale, _after_unscale),
    "step": (_before_step, _after_step),
    "update": (_before_update, _after_update),
}


def _clip_sees_unscaled(params):
    """For _clip: False when a scaler scaled this iteration's loss and some clipped
    parameter with a gradient is not among those it unscaled since."""
    scaled = [p for p in list(_PROBES.values()) if p.scaled]
    if not scaled:
        return True
    for param in params:
        if getattr(param, "grad", None) is None:
            continue
        if not any(id(param) in probe.unscaled_params for probe in scaled):
            return False
    return True
