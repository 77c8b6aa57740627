"""The backward: Tensor.backward() is the `backward` phase of the step (DDP's allreduces
overlap it), and the loss it is called on is the step record's loss."""

import functools
import math

import torch

from dsdiag._core import phase_name
from dsdiag.torch import _device
from dsdiag.torch._runtime import RUNTIME, guard, phase
from dsdiag.torch.steps._optimizer import PATCHES


def install():
    PATCHES.replace(torch.Tensor, "backward", _backward)


@functools.wraps(torch.Tensor.backward)
def _backward(self, *args, **kwargs):
    if not RUNTIME.on:
        return PATCHES["backward"](self, *args, **kwargs)
    _enter(self)
    with phase(phase_name.BACKWARD):
        result = PATCHES["backward"](self, *args, **kwargs)
    _leave()
    return result


@guard("backward")
def _enter(loss):
    RUNTIME.begin_step_if_needed()
    # The loss of a step: a scalar on the CPU costs nothing to read; a device scalar is
    # copied to the host without a sync and read at the step's end (_device.py).
    if loss.numel() != 1:
        return
    if _device.takes([loss]):
        RUNTIME.loss_copy = _device.HostCopy(loss.detach().reshape(1).to(torch.float64))
    else:
        value = float(loss.detach())
        RUNTIME.loss = value if math.isfinite(value) else float("nan")


@guard("backward")
def _leave():
    model = RUNTIME.model
    if model is not None:
        model.after_backward()
