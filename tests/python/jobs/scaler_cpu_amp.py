"""Torch 1.13's own torch.cuda.amp.GradScaler, made to run on the CPU for the tests (test
code only: dsdiag never does this).

Debian's torch 1.13 has no CUDA, and its GradScaler disables itself without it. Its code
is plain Python over two CUDA-only kernels, behind a few asserts that the tensors are CUDA
ones. So, with Python's asserts off (python3 -O, or PYTHONOPTIMIZE=1) and three changes,
the real class runs unchanged on CPU tensors:
  - torch.cuda.amp.grad_scaler.amp_definitely_not_available returns False, so that
    GradScaler(enabled=True) stays enabled;
  - torch._amp_foreach_non_finite_check_and_unscale_ and torch._amp_update_scale_ get CPU
    implementations, written here from the kernels' documented contract (torch 2.x ships
    CPU kernels for both, with the same semantics).
"""
import torch
import torch.cuda.amp.grad_scaler as grad_scaler


def _non_finite_check_and_unscale_(grads, found_inf, inv_scale):
    """Multiplies every gradient by inv_scale, in place; sets found_inf to 1.0 when any
    gradient holds an inf or a NaN (and leaves it alone otherwise)."""
    for g in grads:
        if not bool(torch.isfinite(g).all()):
            found_inf.fill_(1.0)
        g.mul_(inv_scale)


def _update_scale_(scale, growth_tracker, found_inf, growth_factor, backoff_factor,
                   growth_interval):
    """Dynamic loss scaling: on found_inf, scale *= backoff_factor and the tracker restarts;
    else the tracker counts one more clean step, and at growth_interval of them in a row
    scale *= growth_factor (kept only when finite) and the tracker restarts."""
    if float(found_inf) > 0:
        scale.mul_(backoff_factor)
        growth_tracker.fill_(0)
        return scale
    successful = int(growth_tracker) + 1
    if successful == growth_interval:
        grown = scale * growth_factor
        if bool(torch.isfinite(grown).all()):
            scale.copy_(grown)
        growth_tracker.fill_(0)
    else:
        growth_tracker.fill_(successful)
    return scale


def enable():
    """Makes torch.cuda.amp.GradScaler work on the CPU; needs python3 -O."""
    if __debug__:
        raise SystemExit("scaler jobs need python3 -O (PYTHONOPTIMIZE=1): the real "
                         "GradScaler asserts its tensors are CUDA ones")
    grad_scaler.amp_definitely_not_available = lambda: False
    torch._amp_foreach_non_finite_check_and_unscale_ = _non_finite_check_and_unscale_
    torch._amp_update_scale_ = _update_scale_
