"""A model that no DDP wraps: the parameter table and the fingerprints come from what the job
trains, every optimizer's parameters, named by the modules that own them (_model_owners).

A job with a process group but no DDP (each rank trains its own replica, one of the
commonest data-parallel mistakes) then gets init-divergence when the ranks built different
models and replica-divergence at the step the replicas first differ. The parameters are
fingerprinted after step 0 as well as every N steps: such replicas drift from the first
update. The `params` record has no gradient-sync bucket (`buckets` []), and a `mark`
`model-not-wrapped` says that no DDP covers these parameters.

The probe is built when the first training step begins (or, failing that, at its optimizer
step), from every optimizer built by then: not at the optimizer's construction, since a job
may wrap the model in DDP after building its optimizer, and a DDP probe, when there is one,
is the model's probe (one `params` table per trace). It stands down in a process of one
rank, and where the parameters are sharded by design (FSDP, DTensor, DeepSpeed's ZeRO-3,
Megatron's tensor parallel): replicas are not expected to be equal there.
"""

import weakref

import torch

from dsdiag.torch.ddp import _model_owners
from dsdiag.torch.ddp._model import ModelProbe, module_prefixes
from dsdiag.torch._runtime import RUNTIME, guard



class _Candidates(object):
    """The optimizers built before the model's probe is settled."""

    def __init__(self):
        self.optimizers = []  # weak references to the optimizers built so far, in order
        self.decided = False  # the model's probe is settled: this one, DDP's, or none

    def decide(self):
        self.decided = True
        del self.optimizers[:]


CANDIDATES = _Candidates()


def remember(optimizer):
    """From Optimizer.__init__, probes on or not (a job may build its optimizer before
    init_process_group): a weak reference, nothing else."""
    if not CANDIDATES.decided:
        CANDIDATES.optimizers.append(weakref.ref(optimizer))


def at_step_begin(runtime):
    """A step-begin hook (RUNTIME.step_begin_hooks), run where the step begins: at the
    training loader's fetch or the backward, so the participation hooks go in before it."""
    if not CANDIDATES.decided:
        attach(hooked_late=False)


def at_optimizer_step_first():
    """An optimizer step that begins its step (no loader fetch, no Tensor.backward seen:
    torch.autograd.backward): this step's backward is over, its participation unknown."""
    if not CANDIDATES.decided:
        attach(hooked_late=True)


@guard("unwrapped-model")
def attach(hooked_late):
    if RUNTIME.model is not None:  # DDP's probe covers the model
        CANDIDATES.decide()
        return
    optimizers = [o for o in (ref() for ref in CANDIDATES.optimizers) if o is not None]
    if not optimizers:
        return  # none built yet: asked again at the next step
    CANDIDATES.decide()
    if _world_size() < 2:
        return  # no replicas to compare
    params = _trained_params(optimizers)
    if not params or _sharded(params):
        return
    owners = _model_owners.owners(params)
    owned = _owned(params, owners)
    if owned:
        RUNTIME.model = UnwrappedModelProbe(owned, owners, hooked_late)


def _world_size():
    import torch.distributed as dist

    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def _trained_params(optimizers):
    """Every optimizer's parameters that require grad, once each, in the optimizers' order."""
    params, seen = [], set()
    for optimizer in optimizers:
        for group in optimizer.param_groups:
            for p in group["params"]:
                if isinstance(p, torch.Tensor) and p.requires_grad and id(p) not in seen:
                    seen.add(id(p))
                    params.append(p)
    return params


def _owned(params, owners):
    """The parameters some module owns. Tensors no module owns are left out: an optimizer
    over flat master copies (DeepSpeed's ZeRO-1/2, apex) holds each rank's own partition
    there, which no replica shares."""
    return [p for p in params if any(id(p) in names for _, names in owners)]


def _sharded(params):
    """Parameters that differ across ranks by design: a DTensor (FSDP2, tensor parallel),
    FSDP's flat parameter, DeepSpeed's ZeRO-3 partition, Megatron's tensor-parallel shard."""
    for p in params:
        if type(p).__name__ in ("DTensor", "FlatParameter") or hasattr(p, "placements"):
            return True
        if hasattr(p, "ds_id") or getattr(p, "tensor_model_parallel", False):
            return True
        if hasattr(p, "_fsdp_flattened"):
            return True
    return False


class UnwrappedModelProbe(ModelProbe):
    """The model's probe built on the optimizers' parameters."""

    def __init__(self, params, owners, hooked_late):
        main = owners[0][0]  # what other probes know the model by; its buffers are watched
        super().__init__(main, _names(params, owners), params, [], buffers_of=main,
                         hooked_late=hooked_late)
        self.publish()  # built as the first step begins
        RUNTIME.session.mark(
            "model-not-wrapped",
            "the optimizers' %d parameters (%s) are in no DistributedDataParallel at world size "
            "%d: DDP does not reduce their gradients" % (
                len(params), ", ".join(type(m).__name__ for m, _ in owners), _world_size()))

    def fingerprint_due(self, step):
        """After step 0 too: unwrapped replicas drift from the first update."""
        return step == 0 or super().fingerprint_due(step)


def _names(params, owners):
    """Each parameter's name in its owner; with several owners, prefixed by the owner's class
    (and #2, #3 for a class met again)."""
    prefixes = module_prefixes([module for module, _ in owners])
    names = []
    for p in params:
        for (_, owned), prefix in zip(owners, prefixes):
            if id(p) in owned:
                names.append(prefix + owned[id(p)])
                break
    return names
