"""DistributedDataParallel: the model's parameter table, which parameters took part in each
backward, the gradients at the allreduce's completion and again before the optimizer uses
them, the parameters every N steps — what missing-grad, grad-desync, init- and
replica-divergence diff across ranks — and DDP's bucket allreduces as `coll` records.

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
from dsdiag.torch import _dist, _futures
from dsdiag.torch._buffers import BufferProbe
from dsdiag.torch._runtime import RUNTIME, Suppress, guard, phase
from dsdiag.torch._tensors import dtype_name, fingerprint_each

_ORIGINAL = {}


def install():
    if _ORIGINAL:
        return
    _ORIGINAL["__init__"] = DDP.__init__
    DDP.__init__ = _ddp_init
    _ORIGINAL["forward"] = DDP.forward
    DDP.forward = _ddp_forward
    _ORIGINAL["register_comm_hook"] = DDP.register_comm_hook
    DDP.register_comm_hook = _register_comm_hook


@functools.wraps(DDP.__init__)
def _ddp_init(self, *args, **kwargs):
    _ORIGINAL["__init__"](self, *args, **kwargs)
    _attach(self)


@guard("ddp")
def _attach(ddp):
    probe = ModelProbe(ddp)
    if RUNTIME.model is None:
        RUNTIME.model = probe
    ddp._dsdiag_probe = probe
    # Our hook, around the default allreduce until the job registers its own.
    _ORIGINAL["register_comm_hook"](ddp, probe, _comm_hook)


def _ddp_forward(self, *args, **kwargs):
    probe = getattr(self, "_dsdiag_probe", None)
    # A forward without autograd (validation under no_grad / inference_mode) is no part of
    # a training step: it opens none and is not the step's forward phase.
    if probe is None or not RUNTIME.on or not torch.is_grad_enabled():
        return _ORIGINAL["forward"](self, *args, **kwargs)
    _before_forward()
    with phase("forward"):
        return _ORIGINAL["forward"](self, *args, **kwargs)


@guard("ddp-forward")
def _before_forward():
    RUNTIME.begin_step_if_needed()


@functools.wraps(DDP.register_comm_hook)
def _register_comm_hook(self, state, hook):
    probe = getattr(self, "_dsdiag_probe", None)
    if probe is None:
        return _ORIGINAL["register_comm_hook"](self, state, hook)
    # DDP takes one hook: ours is in place, the job's runs inside it.
    if probe.user_hook is not None:
        raise RuntimeError("register_comm_hook must be called only once.")
    probe.user_hook = (state, hook)


def _default_allreduce(process_group, bucket):
    """DDP's default: the bucket averaged over the ranks (the original all_reduce, so that
    our own collective wrapper does not record it twice)."""
    group = process_group if process_group is not None else dist.group.WORLD
    world = dist.get_world_size(group)
    tensor = bucket.buffer().div_(world)
    work = _dist.original("all_reduce")(tensor, group=process_group, async_op=True)
    return _futures.then(work.get_future(), lambda f: f.value()[0])


def _comm_hook(probe, bucket):
    op = probe.begin_bucket(bucket)
    if probe.user_hook is not None:
        state, hook = probe.user_hook
        with Suppress():
            future = hook(state, bucket)
    else:
        future = _default_allreduce(probe.process_group, bucket)
    if op is None:
        return future
    op.started()

    def done(f):
        try:
            result = f.value()
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


class ModelProbe(object):
    """The probes of one DDP model: its parameters, their participation in the backward,
    and the gradient and parameter fingerprints."""

    def __init__(self, ddp):
        self.ddp = ddp
        self.process_group = getattr(ddp, "process_group", None)
        self.user_hook = None
        named = [(n, p) for n, p in ddp.module.named_parameters() if p.requires_grad]
        self.names = [n for n, _ in named]
        self.params = [p for _, p in named]
        self.index = {id(p): i for i, p in enumerate(self.params)}
        self.took_part = [False] * len(self.params)
        self.after_sync_hashes = [0] * len(self.params)
        self.synced = False  # some bucket completed this step
        self.last_missing = None
        self.params_fingerprinted = False
        self.fp_every = 1 if RUNTIME.settings.full else 10
        self.buffers = BufferProbe(ddp.module, self.fp_every)
        session = RUNTIME.session
        _core.write_params(
            session,
            self.names,
            [list(p.shape) for p in self.params],
            [dtype_name(p.dtype) for p in self.params],
            [list(range(len(self.params)))],
            self.buffers.names,
        )
        for i, p in enumerate(self.params):
            p.register_hook(self._participation_hook(i))
        self.fingerprint_params("init")  # DDP broadcast rank 0's parameters in __init__

    def _participation_hook(self, i):
        took_part = self.took_part

        def hook(grad):
            took_part[i] = True
            return None

        return hook

    # --- the allreduce ---------------------------------------------------------------

    @guard("ddp-bucket")
    def begin_bucket(self, bucket):
        buffer = bucket.buffer()
        count = buffer.numel()
        RUNTIME.begin_step_if_needed()
        pg = RUNTIME.group_id(self.process_group)
        return RUNTIME.probes.collective(
            pg, "allreduce", dtype_name(buffer.dtype), count, count * buffer.element_size(),
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

    def before_optimizer_step(self):
        """The backward is over: who took part, the gradients as synced and as about to be
        used, and the parameters again when they were fingerprinted after the last step."""
        session = RUNTIME.session
        missing = [i for i, part in enumerate(self.took_part) if not part]
        changed = missing != self.last_missing
        _core.write_grad(session, float("nan"), len(missing), missing if changed else None)
        self.last_missing = missing
        for i in range(len(self.took_part)):
            self.took_part[i] = False
        with RUNTIME.lock:
            synced, after = self.synced, list(self.after_sync_hashes)
            self.synced = False
            self.after_sync_hashes = [0] * len(self.params)
        if synced:
            _core.write_fingerprints(session, "grad", "after-sync", True, after)
            now = fingerprint_each([p.grad for p in self.params])
            # Only what was synced this step is compared.
            now = [h if a != 0 else 0 for h, a in zip(now, after)]
            _core.write_fingerprints(session, "grad", "pre-step", True, now)
        if self.params_fingerprinted:
            self.fingerprint_params("pre-step")

    def after_optimizer_step(self, step):
        self.params_fingerprinted = (step + 1) % self.fp_every == 0
        if self.params_fingerprinted:
            self.fingerprint_params("periodic")

    def fingerprint_params(self, why):
        hashes = fingerprint_each([p.detach() for p in self.params])
        _core.write_fingerprints(RUNTIME.session, "param", why, True, hashes)
