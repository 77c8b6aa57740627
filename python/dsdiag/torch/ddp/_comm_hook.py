"""DistributedDataParallel's probe: the model's probe (_model.py: the parameter table, which
parameters took part in each backward, the parameters every N steps) built on the wrapped
module, the gradients at the allreduce's completion and again before the optimizer uses
them — what missing-grad, grad-desync, init- and replica-divergence diff across ranks — and
DDP's bucket allreduces as `coll` records. A step whose gradients DDP never reduced (its
module called directly) is marked, and the parameters fingerprinted at once after it.

The allreduces are seen through DDP's communication hook: dsdiag registers one that calls
the job's own hook when it registers one (register_comm_hook is wrapped: the job's hook
runs unchanged, inside ours), else the default allreduce (average). The gradient hashes at
the allreduce's completion are taken in the hook's future, from the reduced bucket in place.
"""

import functools

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from dsdiag import _core
from dsdiag.torch import _futures
from dsdiag.torch._patches import Patches
from dsdiag.torch._runtime import RUNTIME, Suppress, guard, phase
from dsdiag.torch._tensors import dtype_name, fingerprint_each
from dsdiag.torch.collectives import original
from dsdiag.torch.ddp._model import ModelProbe

PATCHES = Patches("ddp")


def install():
    if PATCHES:
        return
    PATCHES.replace(DDP, "__init__", _ddp_init)
    PATCHES.replace(DDP, "forward", _ddp_forward)
    PATCHES.replace(DDP, "register_comm_hook", _register_comm_hook)
    PATCHES.append(RUNTIME.step_begin_hooks, _publish)


def uninstall():
    PATCHES.undo()


@functools.wraps(DDP.__init__)
def _ddp_init(self, *args, **kwargs):
    PATCHES["__init__"](self, *args, **kwargs)
    _attach(self)


@guard("ddp")
def _attach(ddp):
    """The model's probe gets this DDP's parameters: the first DDP's builds it, the others
    built before the loop join its table (a GAN's generator and discriminator)."""
    model = RUNTIME.model
    if not (isinstance(model, DDPProbe) and model.add_ddp(ddp)):
        model = DDPProbe(ddp)
        if RUNTIME.model is None:
            RUNTIME.model = model
    hook = DDPHook(ddp, model)
    ddp._dsdiag_probe = hook
    # Our hook, around the default allreduce until the job registers its own.
    PATCHES["register_comm_hook"](ddp, hook, _comm_hook)


def _publish(runtime):
    """A step-begin hook: the model's table is written when the first step begins."""
    if runtime.model is not None:
        runtime.model.publish()


def _ddp_forward(self, *args, **kwargs):
    probe = getattr(self, "_dsdiag_probe", None)
    # A forward without autograd (validation under no_grad / inference_mode) is no part of
    # a training step, nor one outside a step in eval mode, or in a loop whose training
    # loader opens the steps (a validation loop that forgot no_grad): it opens no step.
    if probe is None or not RUNTIME.on or not torch.is_grad_enabled() or \
            (not RUNTIME.in_step and (not self.training or RUNTIME.loader_opens_steps)):
        return PATCHES["forward"](self, *args, **kwargs)
    _before_forward()
    with phase("forward"):
        return PATCHES["forward"](self, *args, **kwargs)


@guard("ddp-forward")
def _before_forward():
    RUNTIME.begin_step_if_needed()


@functools.wraps(DDP.register_comm_hook)
def _register_comm_hook(self, state, hook):
    probe = getattr(self, "_dsdiag_probe", None)
    if probe is None:
        return PATCHES["register_comm_hook"](self, state, hook)
    # DDP takes one hook: ours is in place, the job's runs inside it.
    if probe.user_hook is not None:
        raise RuntimeError("register_comm_hook must be called only once.")
    probe.user_hook = (state, hook)


def _default_allreduce(hook, bucket):
    """DDP's default: the bucket averaged over the ranks, through the process group's own
    allreduce as DDP's C++ hook calls it — not torch.distributed.all_reduce, whose Python
    checks would run per bucket and which our collective wrapper would record twice.
    Returns the Work's future (its value: a list holding the reduced tensor)."""
    tensor = bucket.buffer().div_(hook.world_size)
    if hook.group_object is not None:
        return hook.group_object.allreduce([tensor]).get_future()
    work = original("all_reduce")(tensor, group=hook.process_group, async_op=True)
    return work.get_future()


def _first(f):
    return f.value()[0]


def _whole(f):
    return f.value()


def _comm_hook(probe, bucket):
    """One callback per bucket, on the backend's thread: the reduced tensor taken out of the
    result, the op marked completed, the bucket hashed (after_sync). The future it returns
    is the one DDP waits on."""
    op = probe.begin_bucket(bucket)
    if probe.user_hook is not None:
        state, hook = probe.user_hook
        with Suppress():
            future = hook(state, bucket)
        value = _whole
        if op is None:
            return future
    else:
        future = _default_allreduce(probe, bucket)
        value = _first
        if op is None:
            return _futures.then(future, _first)
    op.started()

    def done(f):
        try:
            result = value(f)
        except Exception:
            op.mark_completed(failed=True)
            with RUNTIME.lock:
                RUNTIME.pending_ops.append(op)
            raise
        op.mark_completed()
        probe.after_sync(bucket, result)
        with RUNTIME.lock:
            RUNTIME.pending_ops.append(op)
        return result

    return _futures.then(future, done)


def _group_and_size(process_group):
    """The process group DDP reduces over, as an object whose allreduce the default hook
    calls (None where it has none, or it cannot be told: torch.distributed.all_reduce then),
    and its size; both are fixed for the DDP's life."""
    group = process_group if process_group is not None else dist.group.WORLD
    world = dist.get_world_size(group)
    try:
        if group is None or group is dist.group.WORLD:
            group = dist.distributed_c10d._get_default_group()
    except Exception:
        return None, world
    return (group if callable(getattr(group, "allreduce", None)) else None), world


class DDPHook(object):
    """The communication hook's state for one DDP: its process group, the job's own hook,
    and the model's probe its gradients go to."""

    def __init__(self, ddp, probe):
        self.process_group = getattr(ddp, "process_group", None)
        self.group_object, self.world_size = _group_and_size(self.process_group)
        self.pg = None  # its number in `coll` records, found at the first bucket
        self.user_hook = None
        self.probe = probe

    @guard("ddp-bucket")
    def begin_bucket(self, bucket):
        self.probe.reduced = True
        buffer = bucket.buffer()
        count = buffer.numel()
        RUNTIME.begin_step_if_needed()
        if self.pg is None:
            self.pg = RUNTIME.group_id(self.process_group)
        return RUNTIME.probes.collective(
            self.pg, "allreduce", dtype_name(buffer.dtype), count, count * buffer.element_size(),
            "ddp-bucket-%d" % bucket.index())

    def after_sync(self, bucket, reduced):
        self.probe.after_sync(bucket, reduced)


def _trained(ddp):
    return [(n, p) for n, p in ddp.module.named_parameters() if p.requires_grad]


class DDPProbe(ModelProbe):
    """The probes of the DDP models: the model's (_model.py), with the table from the
    wrapped modules, and the gradients as DDP's allreduces leave them."""

    def __init__(self, ddp):
        self.after_sync_hashes = []
        self.reduced = False  # some bucket's allreduce began this step (any device)
        self.unsynced_steps = 0  # steps whose gradients DDP never reduced
        self.unsynced_now = False  # this step's
        self.step_after = self.step_pre = None  # this step's gradient hashes, once taken
        named = _trained(ddp)
        # DDP broadcast rank 0's parameters in __init__: the `init` fingerprint follows.
        super().__init__(ddp, [n for n, _ in named], [p for _, p in named],
                         [list(range(len(named)))], buffers_of=ddp.module)
        self.after_sync_hashes = [0] * len(self.params)

    def add_ddp(self, ddp):
        """Another DDP model, built before the first step: its parameters join the table
        (one bucket list per DDP)."""
        named = _trained(ddp)
        if not self.add(ddp, [n for n, _ in named], [p for _, p in named],
                        [list(range(len(named)))], buffers_of=ddp.module):
            return False
        with RUNTIME.lock:
            self.after_sync_hashes = [0] * len(self.params)
        return True

    # --- the allreduce ---------------------------------------------------------------

    def after_sync(self, bucket, reduced):
        """In the hook's future (any thread): each parameter's reduced gradient, hashed in
        place in the bucket."""
        if not RUNTIME.on:
            return
        try:
            params = bucket.parameters()
            if reduced.device.type != "cpu":
                return  # device memory is not read here; the pre-step hash still is
            base, element = reduced.data_ptr(), reduced.element_size()
            groups, slots, offset = [], [], 0
            for p in params:
                n = p.numel()
                groups.append([(base + offset * element, n * element)])
                slots.append(self.index.get(id(p)))
                offset += n
            hashes = _core.fingerprint_groups(groups)
            with RUNTIME.lock:
                for slot, h in zip(slots, hashes):
                    if slot is not None:
                        self.after_sync_hashes[slot] = h
        except Exception as e:
            RUNTIME.switch_off("ddp-after-sync", e)

    # --- around the optimizer step ---------------------------------------------------

    def take_gradients(self, indices):
        """Before an optimizer steps: its parameters' gradients as the allreduce left them
        and as it is about to use them (only what was synced this step is compared)."""
        with RUNTIME.lock:
            after = [self.after_sync_hashes[i] for i in indices]
        if not any(after):
            return
        now = fingerprint_each([self.params[i].grad for i in indices])
        if self.step_after is None:
            self.step_after, self.step_pre = [0] * len(self.params), [0] * len(self.params)
        for i, a, h in zip(indices, after, now):
            self.step_after[i], self.step_pre[i] = a, (h if a != 0 else 0)

    def write_gradients(self, computed):
        """The gradients taken before the step's optimizer steps; a step whose backward
        computed gradients that DDP never reduced is marked (see _note_unsynced)."""
        session = RUNTIME.session
        with RUNTIME.lock:
            reduced = self.reduced
            self.reduced = False
            self.after_sync_hashes = [0] * len(self.params)
        if self.step_after is not None:
            _core.write_fingerprints(session, "grad", "after-sync", True, self.step_after)
            _core.write_fingerprints(session, "grad", "pre-step", True, self.step_pre)
            self.step_after = self.step_pre = None
        self.unsynced_now = computed and not reduced
        if self.unsynced_now:
            self._note_unsynced()

    def _note_unsynced(self):
        """The wrapped module called directly (ddp.module(x): DDP's forward, which arms its
        reducer, never runs) or optimizer.step() inside no_sync(): every rank steps on its
        own gradients and the replicas drift. The first such step is marked, and the
        parameters are fingerprinted after it (fingerprint_due), so that replica-divergence
        names the step where they first differ, not up to N steps later."""
        self.unsynced_steps += 1
        if self.unsynced_steps == 1:
            RUNTIME.session.mark(
                "ddp-grads-not-reduced",
                "step %d: the backward computed gradients and DDP reduced none of them "
                "(its module called directly, or optimizer.step() inside no_sync())"
                % RUNTIME.step)

    def fingerprint_due(self, step):
        first_unsynced = self.unsynced_now and self.unsynced_steps == 1
        return first_unsynced or super().fingerprint_due(step)

