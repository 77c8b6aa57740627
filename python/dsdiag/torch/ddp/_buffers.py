"""The DDP module's buffers (BatchNorm's running statistics, counters), fingerprinted where
DDP has just broadcast rank 0's: a forward pre-hook on the wrapped module runs after DDP's
buffer sync and before the module's own forward. With the default broadcast_buffers=True
every rank then holds the same bytes; with broadcast_buffers=False (or a buffer written on
some ranks only) they drift, and replica-divergence names the first buffer and step where
they differ. `fp` records what "buffer", why "forward", one hash per buffer in the order of
the `params` record's `buffers` names; at steps 0 and 1, then every N steps like the
parameters (10 in light mode, every step in full). With several modules in the model (a
GAN's), each module's buffers are taken as its own forward begins, and the step's record
is written when the step ends."""

from dsdiag import _core
from dsdiag._core import fp_what, fp_why
from dsdiag.torch._runtime import RUNTIME
from dsdiag.torch._tensors import fingerprint_each, fn_of


class BufferProbe(object):
    """The buffers of the model's modules ([(name prefix, module)]), one slice of the
    record's hashes each, taken at each module's first forward of a watched step and
    written when the step ends (write())."""

    def __init__(self, modules, every):
        self.names, self.buffers, self.handles = [], [], []
        for prefix, module in modules:
            named = list(module.named_buffers())
            start = len(self.buffers)
            self.names.extend(prefix + n for n, _ in named)
            self.buffers.extend(b for _, b in named)
            if named:
                hook = self._pre_forward_hook(start, len(self.buffers))
                self.handles.append(module.register_forward_pre_hook(hook))
        self.every = every
        self.last_step = {}  # slice start -> the step it was last taken at
        self.pending = None  # this step's hashes, once a slice was taken

    def _pre_forward_hook(self, start, end):
        def pre_forward(module, inputs):
            if not RUNTIME.on or not RUNTIME.in_step:
                return None
            step = RUNTIME.step
            # Steps 0 and 1 (a drift that starts with training shows at once), then every
            # N; the first forward of the step only (gradient accumulation, a GAN's D).
            if step == self.last_step.get(start) or (step > 1 and step % self.every != 0):
                return None
            self.last_step[start] = step
            try:
                if self.pending is None:
                    self.pending = [0] * len(self.buffers)
                self.pending[start:end] = fingerprint_each(self.buffers[start:end])
            except Exception as e:  # never into the job's forward
                RUNTIME.switch_off("ddp-buffers", e)
            return None

        return pre_forward

    def write(self):
        """At the step's end: the buffers taken in it."""
        if self.pending is not None:
            _core.write_fingerprints(RUNTIME.session, fp_what.BUFFER, fp_why.FORWARD, True,
                                     self.pending, fn_of(self.buffers))
            self.pending = None
