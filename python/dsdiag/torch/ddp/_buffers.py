"""The DDP module's buffers (BatchNorm's running statistics, counters), fingerprinted where
DDP has just broadcast rank 0's: a forward pre-hook on the wrapped module runs after DDP's
buffer sync and before the module's own forward. With the default broadcast_buffers=True
every rank then holds the same bytes; with broadcast_buffers=False (or a buffer written on
some ranks only) they drift, and replica-divergence names the first buffer and step where
they differ. `fp` records what "buffer", why "forward", one hash per buffer in the order of
the `params` record's `buffers` names; at steps 0 and 1, then every N steps like the
parameters (10 in light mode, every step in full)."""

from dsdiag import _core
from dsdiag.torch._runtime import RUNTIME
from dsdiag.torch._tensors import fingerprint_each


class BufferProbe(object):
    def __init__(self, module, every):
        named = list(module.named_buffers())
        self.names = [n for n, _ in named]
        self.buffers = [b for _, b in named]
        self.every = every
        self.last_step = -1
        self.handle = module.register_forward_pre_hook(self._pre_forward) if named else None

    def _pre_forward(self, module, inputs):
        if not RUNTIME.on or not RUNTIME.in_step:
            return None
        step = RUNTIME.step
        # Steps 0 and 1 (a drift that starts with training shows at once), then every N;
        # the first forward of the step only (gradient accumulation).
        if step == self.last_step or (step > 1 and step % self.every != 0):
            return None
        self.last_step = step
        try:
            hashes = fingerprint_each(self.buffers)
            _core.write_fingerprints(RUNTIME.session, "buffer", "forward", True, hashes)
        except Exception as e:  # never into the job's forward
            RUNTIME.switch_off("ddp-buffers", e)
        return None
