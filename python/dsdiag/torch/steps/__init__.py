"""steps: where a training step begins and ends. Tensor.backward() is the step's backward
phase and its loss (_backward); the optimizer steps are its optimizer phase, with what the
backward left taken just before each (_optimizer), and the one that completes the loop's
iteration ends the step (_iteration: every optimizer.step() with one optimizer; a GAN's
discriminator and generator steps together). Every optimizer built is remembered: what it
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
