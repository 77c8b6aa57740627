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

Where there is a C++ hook for this torch (dsdiag._ddp_hook_torch<major>_<minor>,
python/torch_ext/: prebuilt by a source build, compiled on first use by a pip install,
dsdiag/_native_hook.py), that one is registered instead: it averages and records the same, with
no Python per bucket (a Python hook costs a 2-rank CPU job ~7% of its step). The job's own
hook, registered later, is then handed to it (Hook.delegate) and runs inside _comm_hook as
on a lane without it.
"""

import functools
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from dsdiag import _core
from dsdiag._core import fp_what, fp_why, phase_name
from dsdiag.torch import _groups, _device, _device_fingerprint, _device_time, _futures
from dsdiag.torch._patches import Patches
from dsdiag.torch._runtime import RUNTIME, Suppress, guard, phase
from dsdiag.torch._tensors import dtype_name, fingerprint_each, fn_of, memory_range
from dsdiag.torch.collectives import original
from dsdiag.torch.ddp import _join
from dsdiag.torch.ddp._model import ModelProbe

PATCHES = Patches("ddp")


def install():
    if PATCHES:
        return
    PATCHES.replace(DDP, "__init__", _ddp_init)
    PATCHES.replace(DDP, "forward", _ddp_forward)
    PATCHES.replace(DDP, "register_comm_hook", _register_comm_hook)
    PATCHES.append(RUNTIME.step_begin_hooks, _publish)
    _join.install(PATCHES)


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
    model.hooks.append(hook)
    # Our hook, around the default allreduce until the job registers its own.
    if not hook.install_native(ddp):
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
    with phase(phase_name.FORWARD):
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
    if probe.native is not None:
        probe.native.delegate(probe, _comm_hook)


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
    span = _begin_device_time() if op is not None else None
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
        if not _end_device_time(span, op):
            op.mark_completed()
        probe.after_sync(bucket, result)
        with RUNTIME.lock:
            RUNTIME.pending_ops.append(op)
        return result

    return _futures.then(future, done)


def _begin_device_time():
    """A bucket's device-time span from the hook's call (its gradients ready on the compute
    stream), where device time is measured (_device_time); None elsewhere."""
    timer = RUNTIME.device_time
    if timer is None:
        return None
    try:
        return timer.begin(RUNTIME.step, _device_time.COLL)
    except Exception as e:
        RUNTIME.device_time_failed(e)
        return None


def _end_device_time(span, op):
    """In the future's callback: after the allreduce, on its stream. True when `op` now
    waits for the span's end event to be marked completed (_device_time): on a device the
    future completes once the allreduce is queued (NCCL), not once it ran."""
    timer = RUNTIME.device_time
    if span is None or timer is None:
        return False
    try:
        timer.end(span, op)
    except Exception as e:
        RUNTIME.device_time_failed(e)
        return False  # completed on the host, as without device time
    op.mark_queued_on_device()
    return True


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
        self.native = None  # the C++ hook's handle, where this torch has one

    def install_native(self, ddp):
        """Registers the C++ hook on this DDP's reducer; False where there is none for this
        torch (or it refuses this DDP: the Python hook then records the same)."""
        native = _native_module()
        if native is None or self.group_object is None or RUNTIME.probes is None:
            return False
        if self.probe.device_path:
            return False  # the C++ hook hashes host memory: the Python one takes the device path
        if self.pg is None:
            self.pg = RUNTIME.group_id(self.process_group)
        try:
            self.native = native.install(ddp.reducer, self.group_object, self.world_size,
                                         self.pg, _core.ddp_hook_api(RUNTIME.probes))
        except Exception as e:
            _warn_native(e)
            return False
        RUNTIME.off_hooks.append(lambda runtime: self.native.stop_recording())
        RUNTIME.pending_writers.append(self.native.write_ended)
        _futures.count_native(self.native.in_flight)
        return True

    @guard("ddp-bucket")
    def begin_bucket(self, bucket):
        if not RUNTIME.joined:  # a joined rank's shadows reduce no gradient of its own
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


_NATIVE: list = []  # [module or None], once looked up


def _native_module():
    """dsdiag._ddp_hook_torch<major>_<minor> for the running torch, or None (also with
    DSDIAG_DDP_HOOK=python: the Python hook, to compare or to step around the C++ one)."""
    if not _NATIVE and os.environ.get("DSDIAG_DDP_HOOK", "") == "python":
        _NATIVE.append(None)
    if not _NATIVE:
        from dsdiag import _native_hook
        from dsdiag._warn import warn_once

        try:  # prebuilt (a source build), or compiled for this torch (a pip install)
            _NATIVE.append(_native_hook.load(torch, lambda m: warn_once(m, m)))
        except ImportError as e:
            _warn_native(e)
            _NATIVE.append(None)
    return _NATIVE[0]


def _warn_native(error):
    from dsdiag._warn import warn_once

    warn_once("ddp-native-hook", "the C++ DDP hook is not used (%r): DDP is hooked in Python, "
              "which records the same at a higher cost" % (error,))


def _replica_ranks(ddp):
    """The ranks whose parameters this DDP keeps equal to this rank's: its process group's,
    when that is a sub-group (tensor parallel x data parallel: DDP over the data-parallel
    group); [] for the default group (every rank)."""
    group = getattr(ddp, "process_group", None)
    if group is None or _groups.is_default_group(group):
        return []
    ranks = _groups.group_ranks(group)
    return [] if len(ranks) == dist.get_world_size() else ranks


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
        self.hooks = []  # the DDPs' DDPHooks
        self.by_impl = None  # {parameter's TensorImpl address: slot}, for the C++ hooks
        named = _trained(ddp)
        # DDP broadcast rank 0's parameters in __init__: the `init` fingerprint follows.
        super().__init__(ddp, [n for n, _ in named], [p for _, p in named],
                         [list(range(len(named)))], buffers_of=ddp.module)
        self.after_sync_hashes = [0] * len(self.params)
        self.after_sync_samples = [0] * len(self.params)
        self.replicas = _replica_ranks(ddp)
        # Light mode hashes a gradient whole once, at the allreduce, and takes that hash
        # again before the optimizer step when the gradient is provably the same tensor,
        # unwritten since the backward (its version counter) and its sample unchanged
        # (a write through .data, which no counter sees): see _pre_step_hashes.
        self.reuse_after_sync = not RUNTIME.settings.full
        self.grad_marks = None  # [(grad, its _version) or None] per slot, after the backward
        # Gradients on a device (or DSDIAG_DEVICE_PATH=force): fingerprinted there, each
        # bucket in its hook's future and the gradients before the step, read at the step's
        # end (_device.py): [(slots, _device_fingerprint.Pending)] after the sync, and
        # [(table indices, Pending)] before the step.
        self.device_path = _device.takes([p for _, p in named])
        self.device_after, self.device_pre = [], []
        if self.device_path and RUNTIME.device_time is None and named:
            RUNTIME.device_time = _device_time.DeviceTime(named[0][1].device)

    def add_ddp(self, ddp):
        """Another DDP model, built before the first step: its parameters join the table
        (one bucket list per DDP)."""
        named = _trained(ddp)
        if not self.add(ddp, [n for n, _ in named], [p for _, p in named],
                        [list(range(len(named)))], buffers_of=ddp.module):
            return False
        with RUNTIME.lock:
            self.after_sync_hashes = [0] * len(self.params)
            self.after_sync_samples = [0] * len(self.params)
            self.by_impl = None
        return True

    def after_backward(self):
        """Each gradient as the backward (and DDP's copy out of its buckets) left it."""
        if self.reuse_after_sync:
            self.grad_marks = [None if g is None else (g, g._version)
                               for g in (p.grad for p in self.params)]

    def _take_native(self):
        """What the C++ hooks saw since the last step: whether a bucket was reduced, and
        each reduced gradient's hash, into after_sync_hashes."""
        reduced = False
        for hook in self.hooks:
            if hook.native is None:
                continue
            reduced = hook.native.take_reduced() or reduced
            hashes = hook.native.take_after_sync()
            if not hashes:
                continue
            if self.by_impl is None:
                self.by_impl = {p._cdata: i for i, p in enumerate(self.params)}
            with RUNTIME.lock:
                for impl, h, sample in hashes:
                    slot = self.by_impl.get(impl)
                    if slot is not None:
                        self.after_sync_hashes[slot] = h
                        self.after_sync_samples[slot] = sample
        if reduced:
            self.reduced = True

    # --- the allreduce ---------------------------------------------------------------

    def after_sync(self, bucket, reduced):
        """In the hook's future (any thread): each parameter's reduced gradient, hashed in
        place in the bucket (not the zeros a joined rank reduces, _join)."""
        if not RUNTIME.on or RUNTIME.joined:
            return
        try:
            params = bucket.parameters()
            if self.device_path:
                self._queue_after_sync(params, reduced)
                return
            if reduced.device.type != "cpu":
                return  # a device bucket of a host-path model: not read here
            base, element = reduced.data_ptr(), reduced.element_size()
            ranges, slots, offset = [], [], 0
            for p in params:
                n = p.numel()
                ranges.append((base + offset * element, n * element))
                slots.append(self.index.get(id(p)))
                offset += n
            hashes = _core.fingerprint_groups([[r] for r in ranges])
            samples = _core.fingerprint_samples(ranges) if self.reuse_after_sync else hashes
            with RUNTIME.lock:
                for slot, h, sample in zip(slots, hashes, samples):
                    if slot is not None:
                        self.after_sync_hashes[slot] = h
                        self.after_sync_samples[slot] = sample
        except Exception as e:
            RUNTIME.switch_off("ddp-after-sync", e)

    def _queue_after_sync(self, params, reduced):
        """The bucket's parameters fingerprinted in place on its device, on the hook's stream:
        queued, read at the step's end (_resolve_device)."""
        pending = _device_fingerprint.queue_bucket(reduced.reshape(-1), [p.numel() for p in params])
        slots = [self.index.get(id(p)) for p in params]
        with RUNTIME.lock:
            self.device_after.append((slots, pending))

    # --- around the optimizer step ---------------------------------------------------

    def take_gradients(self, indices):
        """Before an optimizer steps: its parameters' gradients as the allreduce left them
        and as it is about to use them (only what was synced this step is compared)."""
        if self.device_path:
            grads = [self.params[i].grad for i in indices]
            for group, pending in _device_fingerprint.queue_each(grads):
                self.device_pre.append(([indices[k] for k in group], pending))
            self.device_pre.append(([i for i, g in zip(indices, grads) if g is None], None))
            return
        self._take_native()
        with RUNTIME.lock:
            after = [self.after_sync_hashes[i] for i in indices]
            samples = [self.after_sync_samples[i] for i in indices]
        if not any(after):
            return
        now = self._pre_step_hashes(indices, after, samples)
        if self.step_after is None:
            self.step_after, self.step_pre = [0] * len(self.params), [0] * len(self.params)
        for i, a, h in zip(indices, after, now):
            self.step_after[i], self.step_pre[i] = a, (h if a != 0 else 0)

    def _pre_step_hashes(self, indices, after, samples):
        """The gradients' hashes now, for those the allreduce hashed (after != 0). In light
        mode a gradient that is the tensor the backward left, at the same version, with the
        same sample as at the allreduce, is not hashed again: its after-sync hash is taken.
        A write through .data to a few elements goes unseen there; full mode hashes all."""
        grads = [self.params[i].grad for i in indices]
        now = [0] * len(indices)
        marks = self.grad_marks if self.reuse_after_sync else None
        if marks is not None:
            same = [k for k, (i, g) in enumerate(zip(indices, grads))
                    if after[k] and g is not None and marks[i] is not None
                    and marks[i][0] is g and marks[i][1] == g._version
                    and g.device.type == "cpu" and g.is_contiguous()]
            if same:
                got = _core.fingerprint_samples([memory_range(grads[k]) for k in same])
                for k, sample in zip(same, got):
                    if sample == samples[k]:
                        now[k] = after[k]
        redo = [k for k in range(len(indices)) if after[k] and not now[k]]
        if redo:
            for k, h in zip(redo, fingerprint_each([grads[k] for k in redo])):
                now[k] = h
        return now

    def write_gradients(self, computed):
        """The gradients taken before the step's optimizer steps; a step whose backward
        computed gradients that DDP never reduced is marked (see _note_unsynced)."""
        session = RUNTIME.session
        self._take_native()
        if self.device_path:
            self._resolve_device()
        with RUNTIME.lock:
            reduced = self.reduced
            self.reduced = False
            self.after_sync_hashes = [0] * len(self.params)
            self.after_sync_samples = [0] * len(self.params)
        self.grad_marks = None
        if self.step_after is not None:
            fn = fn_of(self.params)
            _core.write_fingerprints(session, fp_what.GRAD, fp_why.AFTER_SYNC, True,
                                     self.step_after, fn)
            _core.write_fingerprints(session, fp_what.GRAD, fp_why.PRE_STEP, True,
                                     self.step_pre, fn)
            self.step_after = self.step_pre = None
        self.unsynced_now = computed and not reduced
        if self.unsynced_now:
            self._note_unsynced()

    def _resolve_device(self):
        """The step's device fingerprints, read together (one wait: read_all), into
        step_after / step_pre as the host path fills them: for the parameters taken before
        an optimizer step whose bucket was reduced (after-sync hash not 0)."""
        with RUNTIME.lock:
            after, self.device_after = self.device_after, []
        pre, self.device_pre = self.device_pre, []
        queued = [p for _, p in after] + [p for _, p in pre if p is not None]
        got = iter(_device_fingerprint.read_all(queued))
        after_hashes = [0] * len(self.params)
        for slots, _ in after:
            for slot, h in zip(slots, next(got)):
                if slot is not None:
                    after_hashes[slot] = h
        taken = {}
        for indices, pending in pre:
            taken.update(zip(indices, next(got) if pending is not None else [0] * len(indices)))
        if not any(after_hashes[i] for i in taken):
            return
        if self.step_after is None:
            self.step_after, self.step_pre = [0] * len(self.params), [0] * len(self.params)
        for i, h in taken.items():
            a = after_hashes[i]
            self.step_after[i], self.step_pre[i] = a, (h if a != 0 else 0)

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

