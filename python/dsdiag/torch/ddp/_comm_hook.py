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


def uninstall():
    PATCHES.undo()


@functools.wraps(DDP.__init__)
def _ddp_init(self, *args, **kwargs):
    PATCHES["__init__"](self, *args, **kwargs)
    _attach(self)


@guard("ddp")
def _attach(ddp):
    probe = DDPProbe(ddp)
    if RUNTIME.model is None:
        RUNTIME.model = probe
    ddp._dsdiag_probe = probe
    # Our hook, around the default allreduce until the job registers its own.
    PATCHES["register_comm_hook"](ddp, probe, _comm_hook)


def _ddp_forward(self, *args, **kwargs):
    probe = getattr(self, "_dsdiag_probe", None)
    # A forward without autograd (validation under no_grad / inference_mode) is no part of
    # a training step: it opens none and is not the step's forward phase.
    if probe is None or not RUNTIME.on or not torch.is_grad_enabled():
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


def _default_allreduce(probe, bucket):
    """DDP's default: the bucket averaged over the ranks, through the process group's own
    allreduce as DDP's C++ hook calls it — not torch.distributed.all_reduce, whose Python
    checks would run per bucket and which our collective wrapper would record twice.
    Returns the Work's future (its value: a list holding the reduced tensor)."""
    tensor = bucket.buffer().div_(probe.world_size)
    if probe.group_object is not None:
        return probe.group_object.allreduce([tensor]).get_future()
    work = original("all_reduce")(tensor, group=probe.process_group, async_op=True)
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


class DDPProbe(ModelProbe):
    """The probes of one DDP model: the model's (_model.py), with the table from the
    wrapped module, and the gradients as DDP's allreduce leaves them."""

    def __init__(self, ddp):
        self.process_group = getattr(ddp, "process_group", None)
        self.group_object, self.world_size = _group_and_size(self.process_group)
        self.pg = None  # its number in `coll` records, found at the first bucket
        self.user_hook = None
        named = [(n, p) for n, p in ddp.module.named_parameters() if p.requires_grad]
        self.after_sync_hashes = [0] * len(named)
        self.synced = False  # some bucket completed this step (hashed: CPU tensors only)
        self.reduced = False  # some bucket's allreduce began this step (any device)
        self.unsynced_steps = 0  # steps whose gradients DDP never reduced
        self.unsynced_now = False  # this step's
        # DDP broadcast rank 0's parameters in __init__: the `init` fingerprint follows.
        super().__init__(ddp, [n for n, _ in named], [p for _, p in named],
                         [list(range(len(named)))], buffers_of=ddp.module)

    # --- the allreduce ---------------------------------------------------------------

    @guard("ddp-bucket")
    def begin_bucket(self, bucket):
        self.reduced = True
        buffer = bucket.buffer()
        count = buffer.numel()
        RUNTIME.begin_step_if_needed()
        if self.pg is None:
            self.pg = RUNTIME.group_id(self.process_group)
        return RUNTIME.probes.collective(
            self.pg, "allreduce", dtype_name(buffer.dtype), count, count * buffer.element_size(),
            "ddp-bucket-%d" % bucket.index())

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
                self.synced = True
        except Exception as e:
            RUNTIME.switch_off("ddp-after-sync", e)

    # --- around the optimizer step ---------------------------------------------------

    def write_gradients(self, computed):
        """The gradients as synced and as about to be used; a step whose backward computed
        gradients that DDP never reduced is marked (see _note_unsynced)."""
        session = RUNTIME.session
        with RUNTIME.lock:
            synced, after = self.synced, list(self.after_sync_hashes)
            reduced = self.reduced
            self.synced = self.reduced = False
            self.after_sync_hashes = [0] * len(self.params)
        if synced:
            _core.write_fingerprints(session, "grad", "after-sync", True, after)
            now = fingerprint_each([p.grad for p in self.params])
            # Only what was synced this step is compared.
            now = [h if a != 0 else 0 for h, a in zip(now, after)]
            _core.write_fingerprints(session, "grad", "pre-step", True, now)
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

