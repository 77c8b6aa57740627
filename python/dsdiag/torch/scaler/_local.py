"""Which rank's own gradients overflowed: the `scaler` record's `inf_local`.

Under DDP a GradScaler never sees a rank's own gradients: DDP's allreduce averages them
first, and one rank's inf or NaN becomes every rank's. The scaler's found-inf flag is then
the reduced flag (`inf_global`), the same on every rank, and it cannot say where the
overflow came from. So a hook on each of the DDP model's parameters (a tensor hook runs on
the gradient autograd computed, before DDP copies it into its bucket) takes that gradient's
max-abs, on the gradient's device: one reduction kernel per parameter and backward, no
sync. The scaler probe reads whether they were all finite once per step, in the same
transfer as the scaler's own flag (_probe.py).

The hooks go on only once an enabled GradScaler has scaled a loss: jobs without fp16
scaling pay nothing.
"""

import torch

from dsdiag._warn import warn_once
from dsdiag.torch._runtime import RUNTIME

# At most this many per-backward maxima are kept; more (many backwards between two reads)
# are folded into one (amax keeps inf, and NaN: torch's max reductions propagate it).
_FOLD_AT = 256


def _max_abs(grad):
    norm = getattr(getattr(torch, "linalg", None), "vector_norm", None)
    if norm is not None:
        return norm(grad, float("inf"))  # one kernel; inf and NaN propagate
    return grad.abs().max()


class LocalOverflow(object):
    """The per-parameter hooks on RUNTIME.model's parameters and what they saw since the
    last take()."""

    def __init__(self):
        self.model = None
        self.maxima = []  # 0-dim tensors, one per gradient since the last take()
        self.failed = False

    def attach(self):
        """Hooks the DDP model's parameters, once; nothing without a DDP model."""
        model = RUNTIME.model
        if self.failed or model is None or model is self.model:
            return
        self.model = model
        hook = self._hook
        for p in model.params:
            p.register_hook(hook)

    def _hook(self, grad):
        if not RUNTIME.on or self.failed:
            return None
        try:
            g = grad._values() if grad.is_sparse else grad
            if g.numel() > 0:
                self.maxima.append(_max_abs(g.detach()))
                if len(self.maxima) > _FOLD_AT:
                    self.maxima = [_fold(self.maxima)]
        except Exception as e:  # never into autograd: this check alone goes off
            self.failed = True
            self.maxima = []
            warn_once("scaler-local", "no per-rank overflow origin (inf_local): %r" % (e,))
        return None

    def take(self):
        """A 0-dim bool tensor, on the gradients' device: some gradient of this rank was
        non-finite before the sync. None when the hooks saw nothing (no DDP model, or the
        check is off): inf_local is then the scaler's own flag."""
        maxima, self.maxima = self.maxima, []
        if self.failed or not maxima:
            return None
        return ~torch.isfinite(_fold(maxima))


def _fold(maxima):
    device = maxima[0].device
    return torch.stack([m.to(device=device, dtype=torch.float32) for m in maxima]).amax()


LOCAL = LocalOverflow()
