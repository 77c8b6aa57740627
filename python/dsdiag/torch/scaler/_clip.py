"""torch.nn.utils.clip_grad_norm_: one `clip` record per call, what clip-before-unscale reads.

The record says whether the gradients clipped were already unscaled (`unscaled`: false when
a GradScaler scaled this iteration's loss and had not yet unscaled these parameters: they
still hold scale x the true gradient), the total norm the clip measured and its max_norm.
Jobs call it as torch.nn.utils.clip_grad_norm_ (or `from torch.nn.utils import ...`, after
dsdiag is in): the function is replaced in torch.nn.utils and in torch.nn.utils.clip_grad,
where it is defined (the deprecated clip_grad_norm calls it from there).

The norm is a device scalar. On the CPU it is read at once (free). On CUDA it is copied to
pinned host memory without blocking, behind an event, and the record is written at the
step's end (before the step record), waiting on that event only: the norm is computed
before the optimizer's kernels, so the wait never holds the GPU back, and the clip itself
stays free of syncs. Other devices: read at the step's end.
"""

import functools

import torch

from dsdiag import _core
from dsdiag.torch._runtime import RUNTIME, guard

_MAX_PENDING = 16  # a job that clips without stepping: written at once past this


class _Clips(object):
    def __init__(self):
        self.pending = []  # [_Clip], this step's, not yet written
        self.last = None  # (norm, unscaled) of the latest clip written, for the scaler record
        # fn(params) -> bool: the clipped parameters' gradients are unscaled (set by
        # _grad_scaler; None, "nothing to unscale", without a scaler).
        self.unscaled_check = None


class _Clip(object):
    def __init__(self, total, max_norm, unscaled):
        self.max_norm = max_norm
        self.unscaled = unscaled
        self.value = None
        self.host = self.event = self.tensor = None
        if total.device.type == "cpu":
            self.value = float(total)
        elif total.device.type == "cuda":
            self.host = torch.empty(total.shape, dtype=total.dtype, pin_memory=True)
            self.host.copy_(total.detach(), non_blocking=True)
            self.event = torch.cuda.Event()
            self.event.record()
        else:
            self.tensor = total.detach()

    def norm(self):
        if self.value is None:
            if self.event is not None:
                self.event.synchronize()
                self.value = float(self.host)
            else:
                self.value = float(self.tensor)
        return self.value


STATE = _Clips()


def install(patches):
    """Into the scaler's patches: clip_grad_norm_ in both modules that hold it."""
    import torch.nn.utils
    import torch.nn.utils.clip_grad as clip_grad

    original = getattr(clip_grad, "clip_grad_norm_", None)
    if original is None:
        original = getattr(torch.nn.utils, "clip_grad_norm_", None)
    if original is None:
        return
    wrapped = _wrap(original)
    for module in (torch.nn.utils, clip_grad):
        if getattr(module, "clip_grad_norm_", None) is original:
            patches.replace(module, "clip_grad_norm_", wrapped, key=(module, "clip_grad_norm_"))
    patches.append(RUNTIME.step_end_hooks, flush)


def _wrap(original):
    @functools.wraps(original)
    def clip_grad_norm_(*args, **kwargs):
        if not RUNTIME.on:
            return original(*args, **kwargs)
        # The parameters as a list: an iterator is read once, here, and clip_grad_norm_
        # gets the same tensors in the same order (it makes a list of them itself).
        if args:
            params = _as_list(args[0])
            args = (params,) + args[1:]
        elif "parameters" in kwargs:
            params = kwargs["parameters"] = _as_list(kwargs["parameters"])
        else:
            return original(*args, **kwargs)  # its own TypeError
        unscaled = _unscaled(params)
        total = original(*args, **kwargs)
        max_norm = args[1] if len(args) > 1 else kwargs.get("max_norm")
        _record(total, max_norm, unscaled)
        return total

    return clip_grad_norm_


def _as_list(parameters):
    if isinstance(parameters, (torch.Tensor, list, tuple)):
        return parameters
    return list(parameters)


@guard("clip")
def _unscaled(params):
    check = STATE.unscaled_check
    if check is None:
        return True
    return bool(check([params] if isinstance(params, torch.Tensor) else params))


@guard("clip")
def _record(total, max_norm, unscaled):
    if unscaled is None or not isinstance(total, torch.Tensor):
        return  # the check failed (and is off): no record rather than a wrong one
    STATE.pending.append(_Clip(total, float(max_norm), unscaled))
    if len(STATE.pending) > _MAX_PENDING:
        flush(RUNTIME)


def flush(runtime):
    """Writes the pending clip records (a step-end hook: before the step record)."""
    if not runtime.on:
        del STATE.pending[:]
        return
    pending, STATE.pending = STATE.pending, []
    for clip in pending:
        norm = clip.norm()
        _core.write_clip(runtime.session, clip.unscaled, norm, clip.max_norm)
        STATE.last = (norm, clip.unscaled)


def take_last():
    """(norm, unscaled) of the latest clip since the last call, writing any pending one
    first (still in the step just ended); None when the job did not clip."""
    if STATE.pending:
        flush(RUNTIME)
    last, STATE.last = STATE.last, None
    return last
