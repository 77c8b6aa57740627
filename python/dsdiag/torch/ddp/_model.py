"""The model a job trains, however it is wrapped: its parameter table (the `params`
record), which parameters took part in each backward (`grad` records: missing-grad), and
its parameter fingerprints — `init` when the probe starts, `periodic` after an optimizer
step every N steps and `pre-step` before the next one — which init- and replica-divergence
diff across ranks. Between the optimizer step and the next one nothing should write the
parameters: each one's version counter (bumped by every in-place write) is noted after the
optimizer step and looked at again before the next, and a parameter written in between is a
`params-changed-outside-optimizer` mark (a manual decay, a load on some ranks only), which
names the rank where fingerprints alone cannot (two ranks, and no majority).

Two probes are built on it: DDP's (_comm_hook.py: the table from the wrapped module, the
gradients as DDP syncs them) and, for a model no DDP wraps, the optimizer's (_unwrapped.py:
the table from the optimizers' parameters, named by the modules that own them). One of
them is RUNTIME.model: the trace holds one table.
"""

from dsdiag import _core
from dsdiag.torch._runtime import RUNTIME
from dsdiag.torch._tensors import dtype_name, fingerprint_each
from dsdiag.torch.ddp._buffers import BufferProbe


class ModelProbe(object):
    """The table, the participation hooks and the parameter fingerprints of one model.

    `module` is what other probes know the model by: a checkpoint load into it is followed
    by `resume` fingerprints (dsdiag.torch.checkpoint), its training flag tells a validation
    loop from training (dsdiag.torch.data). The probe, and through it the model and its
    process group, lives until the trace ends: a probe let go of earlier may be freed last
    by a callback on the backend's worker thread, whose process group then joins that very
    thread in its destructor and aborts the process ("Resource deadlock avoided").
    `buffers_of` is the module whose buffers are fingerprinted as
    its forward begins (None: no buffers). `buckets` is the `params` record's gradient-sync
    buckets ([] where nothing syncs the gradients). `hooked_late`: the participation hooks
    went in after this step's backward, so this step's `grad` record is left out."""

    def __init__(self, module, names, params, buckets, buffers_of=None, hooked_late=False):
        self.ddp = module  # the name the other probes read (checkpoint, data)
        self.names = list(names)
        self.params = list(params)
        self.index = {id(p): i for i, p in enumerate(self.params)}
        self.took_part = [False] * len(self.params)
        self.participation_unknown = hooked_late
        self.last_missing = None
        self.params_fingerprinted = False
        self.versions = None  # each parameter's version counter after the last optimizer step
        self.fp_every = 1 if RUNTIME.settings.full else 10
        self.buffers = BufferProbe(buffers_of, self.fp_every) if buffers_of is not None else None
        _core.write_params(
            RUNTIME.session,
            self.names,
            [list(p.shape) for p in self.params],
            [dtype_name(p.dtype) for p in self.params],
            buckets,
            self.buffers.names if self.buffers is not None else [],
        )
        for i, p in enumerate(self.params):
            p.register_hook(self._participation_hook(i))
        self.fingerprint_params("init")

    def _participation_hook(self, i):
        took_part = self.took_part

        def hook(grad):
            took_part[i] = True
            return None

        return hook

    # --- around the optimizer step ---------------------------------------------------

    def before_optimizer_step(self):
        """The backward is over: who took part, the gradients (write_gradients), and the
        parameters again when they were fingerprinted after the last step."""
        self.write_gradients(self.write_participation())
        self.note_writes_since_optimizer_step()
        if self.params_fingerprinted:
            self.fingerprint_params("pre-step")

    def write_participation(self):
        """The `grad` record: the parameters no gradient reached in this backward. Returns
        whether any gradient did."""
        missing = [i for i, part in enumerate(self.took_part) if not part]
        for i in range(len(self.took_part)):
            self.took_part[i] = False
        if self.participation_unknown:
            self.participation_unknown = False
            return True
        changed = missing != self.last_missing
        _core.write_grad(RUNTIME.session, float("nan"), len(missing), missing if changed else None)
        self.last_missing = missing
        return len(missing) < len(self.params)

    def write_gradients(self, computed):
        """The gradients' fingerprints, where something syncs them (DDP's probe);
        `computed`: some gradient reached the parameters in this backward."""

    def note_writes_since_optimizer_step(self):
        """The `params-changed-outside-optimizer` mark: the parameters written in place since
        the last optimizer step (their version counters moved), by index into the table."""
        if self.versions is None:
            return
        now = _versions(self.params)
        changed = [i for i, (a, b) in enumerate(zip(self.versions, now)) if a != b]
        self.versions = None
        if not changed:
            return
        shown = ", ".join(self.names[i] for i in changed[:4])
        more = " (+%d more)" % (len(changed) - 4) if len(changed) > 4 else ""
        RUNTIME.session.mark(
            "params-changed-outside-optimizer",
            "%d of %d parameters were written between two optimizer steps: %s%s" % (
                len(changed), len(self.params), shown, more))

    def after_optimizer_step(self, step):
        self.versions = _versions(self.params)
        self.params_fingerprinted = self.fingerprint_due(step)
        if self.params_fingerprinted:
            self.fingerprint_params("periodic")

    def fingerprint_due(self, step):
        """Whether the parameters are fingerprinted after the optimizer step of `step`:
        every N steps (10 in light mode, every step in full)."""
        return (step + 1) % self.fp_every == 0

    def fingerprint_params(self, why):
        hashes = fingerprint_each([p.detach() for p in self.params])
        _core.write_fingerprints(RUNTIME.session, "param", why, True, hashes)


def _versions(params):
    """Each tensor's version counter: every in-place write bumps it (torch's own check that a
    tensor saved for backward is unchanged reads the same counter)."""
    return [p._version for p in params]
