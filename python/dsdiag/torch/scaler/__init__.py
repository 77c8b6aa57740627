"""scaler: torch's GradScaler classes (scale, unscale_, step, update: the `scaler` record of
every fp16 iteration, what scaler-overflow and scaler-desync read: _grad_scaler, _probe,
_local) and torch.nn.utils.clip_grad_norm_ (the `clip` record, clip-before-unscale: _clip)."""

from dsdiag.torch.scaler._grad_scaler import install, uninstall

__all__ = ["install", "uninstall"]
