"""The model a job trains, however it is wrapped: its parameter table (the `params`
record), which parameters took part in each backward (`grad` records: missing-grad), and
its parameter fingerprints — `init` when the probe starts, `periodic` after a step every N
steps and `pre-step` before the next one's optimizer steps — which init- and
replica-divergence diff across ranks. A step may hold several optimizers' steps (a GAN's):
each one's parameters are taken just before it steps, and the step's records are written
when it ends. Between one step's end and an optimizer's next step nothing should write that
optimizer's parameters: each parameter's version counter (bumped by every in-place write) is
noted at the step's end and looked at again just before its optimizer steps, and a parameter
written in between is a `params-changed-outside-optimizer` mark (a manual decay, a load on
some ranks only), which names the rank where fingerprints alone cannot (two ranks, and no
majority; light mode's fingerprints every 10 steps).

Two probes are built on it: DDP's (_comm_hook.py: the table from the wrapped module, the
gradients as DDP syncs them) and, for a model no DDP wraps, the optimizer's (_unwrapped.py:
the table from the optimizers' parameters, named by the modules that own them). One of
them is RUNTIME.model: the trace holds one table.
"""

from torch.nn.parallel import DistributedDataParallel

from dsdiag import _core
from dsdiag._core import fp_what, fp_why
from dsdiag.torch._runtime import RUNTIME
from dsdiag.torch._tensors import dtype_name, fingerprint_each, fn_of
from dsdiag.torch.ddp._buffers import BufferProbe


class ModelProbe(object):
    """The table, the participation hooks and the parameter fingerprints of the model: one
    module, or several trained together (a GAN's generator and discriminator, each in its
    own DDP: add()), as one `params` table, each module's names prefixed by its class.

    `ddp` (the first module) and `modules` are what other probes know the model by: a
    checkpoint load into one is followed by `resume` fingerprints
    (dsdiag.torch.checkpoint), their training flags tell a validation loop from training
    (dsdiag.torch.data). The probe, and through it the model and its process group, lives
    until the trace ends: a probe let go of earlier may be freed last by a callback on the
    backend's worker thread, whose process group then joins that very thread in its
    destructor and aborts the process ("Resource deadlock avoided"). `buffers_of` is the
    module whose buffers are fingerprinted as its forward begins (None: no buffers).
    `buckets` is the `params` record's gradient-sync buckets ([] where nothing syncs the
    gradients). `hooked_late`: the participation hooks went in after this step's backward,
    so this step's `grad` record is left out.

    The table is written when the first step begins (publish()), so that every module
    built before the loop is in it; the `init` fingerprints are taken as each module is
    added (for DDP: right after its broadcast of rank 0's parameters)."""

    def __init__(self, module, names, params, buckets, buffers_of=None, hooked_late=False):
        self.ddp = module
        self.modules = []
        self.module_names = []  # each module's own parameter names, until publish()
        self.names, self.params, self.buckets = [], [], []
        self.buffer_modules = []  # (module index, module whose buffers are watched)
        self.init_hashes = []
        self.index = {}
        self.took_part = []
        self.published = False
        self.participation_unknown = hooked_late
        self.last_missing = None
        self.params_fingerprinted = False
        self.pre_step_params = None  # this step's parameter hashes before their optimizer's step
        self.trained = {}  # id(optimizer) -> (its parameter count, table indices)
        self.taken = set()  # table indices taken before an optimizer step in this step
        self.versions = None  # each parameter's version counter at the last step's end
        self.fp_every = 1 if RUNTIME.settings.full else 10
        self.buffers = None
        # The global ranks that must hold these same parameters (the `params` record's
        # `replicas`: DDP's process group when it is a sub-group); []: every rank.
        self.replicas = []
        self.add(module, names, params, buckets, buffers_of)

    def add(self, module, names, params, buckets, buffers_of=None):
        """Another module trained with the first ones; False once the table is written."""
        if self.published:
            return False
        offset = len(self.params)
        self.modules.append(module)
        self.module_names.append(list(names))
        params = list(params)
        self.params.extend(params)
        self.buckets.extend([offset + i for i in bucket] for bucket in buckets)
        if buffers_of is not None:
            self.buffer_modules.append((len(self.modules) - 1, buffers_of))
        for i, p in enumerate(params, offset):
            self.index[id(p)] = i
            self.took_part.append(False)
            p.register_hook(self._participation_hook(i))
        self.init_hashes.extend(fingerprint_each([p.detach() for p in params]))
        return True

    @property
    def training(self):
        """Some module of the model is in training mode."""
        return any(m.training for m in self.modules)

    def publish(self):
        """The `params` record and the `init` fingerprints, once."""
        if self.published:
            return
        self.published = True
        prefixes = module_prefixes(self.modules)
        names = [prefix + name for prefix, own in zip(prefixes, self.module_names) for name in own]
        self.names = names
        if self.buffer_modules:
            self.buffers = BufferProbe([(prefixes[i], m) for i, m in self.buffer_modules],
                                       self.fp_every)
        _core.write_params(
            RUNTIME.session,
            names,
            [list(p.shape) for p in self.params],
            [dtype_name(p.dtype) for p in self.params],
            self.buckets,
            self.buffers.names if self.buffers is not None else [],
            self.replicas,
        )
        _core.write_fingerprints(RUNTIME.session, fp_what.PARAM, fp_why.INIT, True,
                                 self.init_hashes, fn_of(self.params))
        self.init_hashes = None

    def _participation_hook(self, i):
        took_part = self.took_part

        def hook(grad):
            took_part[i] = True
            return None

        return hook

    def after_backward(self):
        """A backward returned (Tensor.backward): DDP's probe marks the gradients it left."""

    # --- around the optimizer steps ----------------------------------------------------

    def before_optimizer_step(self, optimizer):
        """`optimizer` is about to step: what the backward left for the parameters it
        trains (take_gradients) and, when the parameters were fingerprinted after the last
        step, those parameters again. Taken now, written at the step's end (at_step_end):
        a step may hold several optimizers' steps (a GAN's), each over its own parameters."""
        # An optimizer over copies of the parameters (fp32 master weights) trains none of
        # the table's: what it steps from is then the model's gradients not taken yet.
        trained = self.trained_by(optimizer)
        indices = trained or [i for i in range(len(self.params)) if i not in self.taken]
        if not indices:
            return
        # Master copies written back into the model's parameters every step are no writes
        # outside the optimizer: only the parameters an optimizer trains itself are looked at.
        self.note_writes_outside_optimizer([i for i in trained if i not in self.taken])
        self.taken.update(indices)
        self.take_gradients(indices)
        if self.params_fingerprinted:
            if self.pre_step_params is None:
                self.pre_step_params = [0] * len(self.params)
            hashes = fingerprint_each([self.params[i].detach() for i in indices])
            for i, h in zip(indices, hashes):
                self.pre_step_params[i] = h

    def trained_by(self, optimizer):
        """The table indices of the parameters `optimizer` trains (cached per optimizer,
        again when its parameter groups grow)."""
        groups = optimizer.param_groups
        count = sum(len(g["params"]) for g in groups)
        cached = self.trained.get(id(optimizer))
        if cached is None or cached[0] != count:
            index = self.index
            indices = sorted({index[id(p)] for g in groups for p in g["params"] if id(p) in index})
            cached = self.trained[id(optimizer)] = (count, indices)
        return cached[1]

    def at_step_end(self, step):
        """The step's records: who took part in its backward passes, the gradients and
        parameters taken before each optimizer step, then the parameters after them every
        N steps."""
        self.taken.clear()
        self.write_gradients(self.write_participation())
        if self.buffers is not None:
            self.buffers.write()
        if self.pre_step_params is not None:
            _core.write_fingerprints(RUNTIME.session, fp_what.PARAM, fp_why.PRE_STEP, True,
                                     self.pre_step_params, fn_of(self.params))
            self.pre_step_params = None
        self.params_fingerprinted = self.fingerprint_due(step)
        if self.params_fingerprinted:
            self.fingerprint_params(fp_why.PERIODIC)
        self.versions = _versions(self.params)

    def note_writes_outside_optimizer(self, indices):
        """The `params-changed-outside-optimizer` mark: of these parameters (an optimizer's,
        about to step), those written in place since the last step's end (their version
        counters moved)."""
        if self.versions is None or not indices:
            return
        changed = [i for i in indices if self.params[i]._version != self.versions[i]]
        if not changed:
            return
        self.publish()
        shown = ", ".join(self.names[i] for i in changed[:4])
        more = " (+%d more)" % (len(changed) - 4) if len(changed) > 4 else ""
        RUNTIME.session.mark(
            "params-changed-outside-optimizer",
            "%d of %d parameters were written between two optimizer steps: %s%s" % (
                len(changed), len(self.params), shown, more))

    def write_participation(self):
        """The `grad` record: the parameters no gradient reached in this step's backward
        passes. Returns whether any gradient did."""
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

    def take_gradients(self, indices):
        """The gradients of these parameters as synced and as about to be used, where
        something syncs them (DDP's probe)."""

    def write_gradients(self, computed):
        """The gradients taken this step, where something syncs them (DDP's probe);
        `computed`: some gradient reached the parameters in this step."""

    def fingerprint_due(self, step):
        """Whether the parameters are fingerprinted after the optimizer step of `step`:
        every N steps (10 in light mode, every step in full)."""
        return (step + 1) % self.fp_every == 0

    def fingerprint_params(self, why):
        self.publish()
        hashes = fingerprint_each([p.detach() for p in self.params])
        _core.write_fingerprints(RUNTIME.session, fp_what.PARAM, why, True, hashes,
                                 fn_of(self.params))


def module_prefixes(modules):
    """The prefix of each module's parameter names in one table: none for a single module,
    else its class name (and #2, #3 for a class met again) and a dot."""
    if len(modules) == 1:
        return [""]
    prefixes, counts = [], {}
    for module in modules:
        if isinstance(module, DistributedDataParallel):
            module = module.module  # the class the job wrote
        cls = type(module).__name__
        counts[cls] = counts.get(cls, 0) + 1
        prefixes.append(cls + ("" if counts[cls] == 1 else "#%d" % counts[cls]) + ".")
    return prefixes


def _versions(params):
    """Each tensor's version counter: every in-place write bumps it (torch's own check that a
    tensor saved for backward is unchanged reads the same counter)."""
    return [p._version for p in params]
