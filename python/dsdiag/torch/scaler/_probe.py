"""What one GradScaler saw and decided in one iteration, and its `scaler` record.

An iteration runs from the first scale() after an update() to the next update(). The
record is written at update(), once the optimizer step has ended the step record (the
session still stamps it with that step):
  scale       the scale the loss was multiplied by (read before update() changes it);
  inf_global  the scaler's own found-inf flag: under DDP it is computed on the reduced
              gradients, so it is the flag reduced across ranks;
  inf_local   whether this rank's own gradients were non-finite before the allreduce
              (_local.py; the scaler's flag when there is no DDP model);
  skipped     the optimizer step was skipped (found inf; without the scaler's private
              state: its optimizer.step() never ran);
  event       growth / backoff / none: what update() does, from the documented rule
              (found inf: backoff; growth_interval clean steps in a row: growth) and the
              scaler's growth tracker, or, for a scaler whose update() is not torch's or
              without a readable tracker, from the scale read again after update();
  norm, norm_scaled  the total norm the job's own clip_grad_norm_ measured this step
              (unscaled / times the scale); null when the job did not clip (dsdiag does not
              take a gradient norm of its own).

Syncs: the scale, found-inf flag, growth tracker and local flag are read in one transfer,
at the point where GradScaler.step() syncs on found-inf itself (inside step(), right after
its unscale_; or at step() when the job called unscale_ before): no extra stall. Only an
optimizer with its own AMP step (`_step_supports_amp_scaling`, e.g. fused Adam), whose
step() does not sync, is read at update(): one sync per step there.

The private parts (`_scale`, `_growth_tracker`, `_per_optimizer_states[...]
["found_inf_per_device"]`, in torch 1.13 and 2.x alike) are each feature-detected; without
them the public get_scale() and what the step did stand in.
"""

import math

import torch

from dsdiag import _core
from dsdiag.torch import _device
from dsdiag.torch.scaler import _clip, _local
from dsdiag.torch._runtime import RUNTIME, finite_or_nan
from dsdiag.torch.steps import _optimizer

_FLOAT32_MAX = 3.4028234663852886e38


class ScalerProbe(object):
    def __init__(self):
        self.inside_step = False  # within the scaler's step(): reading there costs nothing
        self.reset()

    def reset(self):
        self.scaled = False  # a loss was scaled since the last update()
        self.loss = None  # float, the last loss scaled, when a CPU scalar
        self.loss_copy = None  # its _device.HostCopy, when the device path takes it
        self.unscaled_params = set()  # id() of the parameters unscale_ went over
        self.scale = None  # float, this iteration's scale
        self.tracker = None  # int, the growth tracker before update()
        self.local_inf = None  # bool, this rank's own gradients overflowed
        self.found = {}  # id(optimizer) -> bool, its found-inf flag, once read
        self.ran_step = {}  # id(optimizer) -> its optimizer.step() ran

    # --- the scaler's calls ----------------------------------------------------------

    def after_scale(self, outputs):
        self.scaled = True
        # The step record's loss is the scalar backward() ran on: here the scaled loss. A
        # CPU scalar's own value is free to read, and replaces it at step() (a device
        # loss is copied without a sync and read at the step's end: steps/_backward.py).
        if isinstance(outputs, torch.Tensor) and outputs.numel() == 1:
            if _device.takes([outputs]):
                self.loss_copy = _device.HostCopy(outputs.detach().reshape(1).to(torch.float64))
            else:
                self.loss = float(outputs.detach())
        _local.LOCAL.attach()

    def after_unscale(self, scaler, optimizer):
        for group in optimizer.param_groups:
            for p in group["params"]:
                self.unscaled_params.add(id(p))
        if self.inside_step:
            self.read(scaler, [id(optimizer)])

    def before_step(self, scaler, optimizer):
        self.inside_step = True
        if self.loss is not None:
            RUNTIME.loss = finite_or_nan(self.loss)
        if self.loss_copy is not None:
            RUNTIME.loss_copy = self.loss_copy
        # The job called unscale_ itself: step() syncs on these flags next. Otherwise the
        # read waits for step()'s own unscale_ (after_unscale): reading the scale before
        # it would stall before the unscaling kernels are even queued.
        if _found_inf(scaler, id(optimizer)):
            self.read(scaler, [id(optimizer)])
        return _optimizer.RUNS.count

    def after_step(self, optimizer, runs_before):
        """Whether optimizer.step() ran inside the scaler's step()."""
        self.inside_step = False
        ran = _optimizer.RUNS.count != runs_before
        self.ran_step[id(optimizer)] = ran
        return ran

    def before_update(self, scaler):
        states = _optimizer_states(scaler)
        self.read(scaler, list(states) if states is not None else [])

    def after_update(self, scaler, new_scale, stock_update):
        """Writes this iteration's record and starts the next iteration."""
        inf_global = any(self.found.values()) if self.found else None
        skipped = self.skipped()
        if inf_global is None:
            inf_global = skipped  # the scaler skips exactly when it found inf
        inf_local = self.local_inf if self.local_inf is not None else inf_global
        event = self.event(scaler, new_scale, stock_update, inf_global)
        norm, norm_scaled = _clip_norms(self.scale)
        _core.write_scaler(RUNTIME.session, self.scale, bool(inf_local), bool(inf_global),
                           bool(skipped), event, norm_scaled, norm)
        self.reset()

    # --- what the record says -----------------------------------------------------------

    def skipped(self):
        """Some optimizer's step was skipped this iteration: its found-inf flag was set
        (the scaler's rule), or, where the flag could not be read, its step never ran."""
        for key, ran in self.ran_step.items():
            found = self.found.get(key)
            if found or (found is None and not ran):
                return True
        return False

    def event(self, scaler, new_scale, stock_update, inf_global):
        if new_scale is not None:
            return _compare(self.scale, _value(new_scale))
        if stock_update and self.tracker is not None:
            if inf_global:
                return "backoff"
            interval = _call(scaler, "get_growth_interval")
            if interval is not None and self.tracker + 1 >= interval:
                factor = _call(scaler, "get_growth_factor") or 2.0
                # torch keeps the scale (float32) when the grown one would overflow.
                return "growth" if self.scale * factor <= _FLOAT32_MAX else None
            return None
        return _compare(self.scale, _public_scale(scaler))  # a sync, for a custom update()

    # --- one transfer per iteration -----------------------------------------------------

    def read(self, scaler, optimizer_ids):
        """Reads, in one device-to-host transfer, what is not read yet of: the scale, the
        growth tracker, this rank's local flag and the found-inf flags of these optimizers
        that unscale_ (or the step) produced."""
        values, fill = [], []

        def want(tensor, setter):
            values.append(tensor.detach().reshape(-1)[:1])
            fill.append(setter)

        if self.scale is None:
            scale = _private_tensor(scaler, "_scale")
            if scale is not None:
                want(scale, lambda v: setattr(self, "scale", v))
            else:  # the public getter: its own sync, here where the step syncs anyway
                self.scale = _public_scale(scaler)
        if self.tracker is None:
            tracker = _private_tensor(scaler, "_growth_tracker")
            if tracker is not None:
                want(tracker, lambda v: setattr(self, "tracker", int(v)))
        for key in optimizer_ids:
            if key in self.found:
                continue
            flags = _found_inf(scaler, key)
            if flags:
                for flag in flags:
                    want(flag, _accumulate(self.found, key))
                self.found.setdefault(key, False)
        local = _local.LOCAL.take()
        if local is not None:
            want(local, lambda v: setattr(self, "local_inf", bool(v) or bool(self.local_inf)))
        if not values:
            return
        device = values[0].device
        flat = torch.cat([v.to(device=device, dtype=torch.float32, non_blocking=True)
                          for v in values])
        if _device.takes([flat]):  # through the device path: pinned copy, one counted wait
            host = _device.resolve([_device.HostCopy(flat)])[0].tolist()
        else:
            host = flat.tolist()
        for setter, value in zip(fill, host):
            setter(value)


# --- the scaler's state, private parts feature-detected -----------------------------------


def _private_tensor(scaler, name):
    t = getattr(scaler, name, None)
    return t if isinstance(t, torch.Tensor) and t.numel() >= 1 else None


def _optimizer_states(scaler):
    states = getattr(scaler, "_per_optimizer_states", None)
    return states if isinstance(states, dict) else None


def _found_inf(scaler, optimizer_id):
    """The found-inf tensors (one per device) unscale_ left for this optimizer, or None."""
    states = _optimizer_states(scaler)
    if states is None:
        return None
    state = dict.get(states, optimizer_id)  # not the defaultdict's []: adds no entry
    per_device = state.get("found_inf_per_device") if isinstance(state, dict) else None
    if not isinstance(per_device, dict):
        return None
    return [t for t in per_device.values() if isinstance(t, torch.Tensor)]


def _accumulate(found, key):
    def setter(value):
        found[key] = bool(found.get(key)) or value != 0

    return setter


def _public_scale(scaler):
    value = _call(scaler, "get_scale")
    return float(value) if value is not None else float("nan")


def _call(scaler, name):
    fn = getattr(scaler, name, None)
    return fn() if callable(fn) else None


def _value(x):
    return float(x.detach().reshape(-1)[0]) if isinstance(x, torch.Tensor) else float(x)


def _compare(before, after):
    if before is None or not (math.isfinite(before) and math.isfinite(after)):
        return None
    return "growth" if after > before else "backoff" if after < before else None


def _clip_norms(scale):
    """(norm, norm_scaled) from the job's last clip this iteration; NaN (null) without."""
    last = _clip.take_last()
    if last is None or not scale:
        return float("nan"), float("nan")
    norm, unscaled = last
    return (norm, norm * scale) if unscaled else (norm / scale, norm)
