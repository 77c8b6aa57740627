"""steps: where a training step begins and ends. Tensor.backward() is the step's backward
phase and its loss (_backward); the optimizer step ends the step, with what the backward
left recorded just before it (_optimizer). Every optimizer built is remembered: what it
trains is the model when no DDP wraps it (dsdiag.torch.ddp._unwrapped)."""

from dsdiag.torch.steps import _backward, _optimizer
from dsdiag.torch.steps._optimizer import PATCHES


def install():
    if PATCHES:
        return
    _optimizer.install()
    _backward.install()


def uninstall():
    PATCHES.undo()
