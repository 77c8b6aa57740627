"""FSDP2's fully_shard (and FSDP1's FullyShardedDataParallel, unless sync_module_states=True
broadcasts rank 0's parameters first), watched: before it shards a module's parameters
(each rank keeps its shard of what it built), their full values are fingerprinted on each
rank. At the first training step the parameters taken are written as the `params` table
(their names in the outermost module sharded, shapes, dtypes; no buckets) and one `fp` param
`init` record (gran param): init-divergence names the ranks whose model differs from rank
0's — per-rank seeds before building the model (`torch.manual_seed(rank)`), which
fully_shard never broadcasts away.

fully_shard lives in torch.distributed.fsdp (torch >= 2.6; torch.distributed._composable.fsdp
in 2.4-2.5), a package `import torch` does not load. The wrapper goes in when that package
has loaded (a finder on sys.meta_path that lets the normal finders load it, then patches;
or at once when it is loaded already), on every torch.distributed module that holds the
function by then, before the job's own `from torch.distributed.fsdp import fully_shard`
binds it. The wrapper keeps the function's attributes (contract's `state`).

Taken per call: the module's parameters not sharded yet (an earlier call on a submodule
sharded its own: fully_shard goes bottom-up), once each, read in place on the host
(_tensors.fingerprint_each; on a device, reduced there). Parameters on the meta device
(deferred init: the values come after sharding) are left out, and so is a process of one
rank, or a job whose DDP probe owns the table.
"""

import functools
import importlib.abc
import importlib.machinery
import sys

import torch

from dsdiag import _core
from dsdiag._core import fp_what, fp_why
from dsdiag._warn import warn_once
from dsdiag.torch._patches import Patches, signature_of
from dsdiag.torch._runtime import RUNTIME, guard
from dsdiag.torch._tensors import dtype_name, fingerprint_each, fn_of
from dsdiag.torch.ddp._model import module_prefixes

PATCHES = Patches("fsdp")
PACKAGES = ("torch.distributed.fsdp", "torch.distributed._composable.fsdp")
_NAME = "fully_shard"


class _Taken(object):
    """What fully_shard was given, until the first step writes it."""

    def __init__(self):
        self.modules = []  # the modules sharded, in call order
        self.entries = []  # (module, name in it, shape, dtype, hash)
        self.ids = set()  # id() of the parameters taken
        self.fn = ""  # the hashes' function (_tensors.fn_of): one per job
        self.written = False


TAKEN = _Taken()


def install():
    if PATCHES:
        return
    PATCHES.append(RUNTIME.step_begin_hooks, _publish)
    if not _patch_loaded():
        finder = _WhenImported()
        sys.meta_path.insert(0, finder)
        PATCHES.on_undo(lambda: finder in sys.meta_path and sys.meta_path.remove(finder))


def uninstall():
    PATCHES.undo()


class _WhenImported(importlib.abc.MetaPathFinder):
    """Finds an FSDP package as the path finder does, and patches once it has loaded."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in PACKAGES:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        exec_module = spec.loader.exec_module

        def exec_then_patch(module):
            exec_module(module)  # the import's own errors are the job's
            _patch_loaded()

        spec.loader.exec_module = exec_then_patch
        return spec


def _patch_loaded():
    """Wraps fully_shard in every loaded torch.distributed module that holds it; True when
    an FSDP package had loaded. At import time, probes on or not (guard() would skip it
    before init_process_group): a failure warns and leaves torch as it was."""
    try:
        return _patch_modules()
    except Exception as e:
        warn_once("fsdp-patch", "fully_shard not instrumented: %r" % (e,))
        return True  # nothing more to wait for


def _patch_modules():
    fsdp1 = getattr(sys.modules.get(PACKAGES[0]), "FullyShardedDataParallel", None)
    if isinstance(fsdp1, type) and not getattr(fsdp1.__init__, "_dsdiag_wrapper", False):
        PATCHES.replace(fsdp1, "__init__", _wrap_fsdp1_init(fsdp1.__init__),
                        key="FullyShardedDataParallel.__init__")
    originals = {}
    for name, module in list(sys.modules.items()):
        if not name.startswith("torch.distributed") or module is None:
            continue
        fn = vars(module).get(_NAME) if hasattr(module, "__dict__") else None
        if fn is None or getattr(fn, "_dsdiag_wrapper", False) or not callable(fn):
            continue
        if getattr(fn, "__module__", "").startswith("torch.distributed"):
            wrapper = originals.get(id(fn))
            if wrapper is None:
                wrapper = originals[id(fn)] = _wrap(fn)
            PATCHES.replace(module, _NAME, wrapper, key=name)
    return any(p in sys.modules for p in PACKAGES)


def _wrap(original):
    @functools.wraps(original)
    def fully_shard(module, *args, **kwargs):
        if RUNTIME.on and not TAKEN.written:
            _take(module)
        return original(module, *args, **kwargs)

    fully_shard._dsdiag_wrapper = True
    return fully_shard


def _wrap_fsdp1_init(original):
    """FSDP1's wrapper: its parameters as built, unless sync_module_states=True (then FSDP
    broadcasts rank 0's before sharding, and what each rank built does not matter)."""
    signature = signature_of(original)

    @functools.wraps(original)
    def __init__(self, module, *args, **kwargs):
        if RUNTIME.on and not TAKEN.written and not _syncs_states(signature, self, module, args,
                                                                  kwargs):
            _take(module)
        return original(self, module, *args, **kwargs)

    __init__._dsdiag_wrapper = True
    return __init__


def _syncs_states(signature, *call):
    self, module, args, kwargs = call
    if signature is None:
        return True  # unknown: leave it alone
    try:
        bound = signature.bind(self, module, *args, **kwargs)
        return bool(bound.arguments.get("sync_module_states", False))
    except Exception:  # the call will raise (the job's own error), or an odd flag value
        return True


@guard("fsdp")
def _take(module):
    if not _distributed():
        return
    modules = list(module) if isinstance(module, (list, tuple)) else [module]
    for m in modules:
        if not isinstance(m, torch.nn.Module):
            continue
        params = []
        for name, p in m.named_parameters():
            if id(p) in TAKEN.ids or _sharded(p) or p.device.type == "meta":
                continue
            TAKEN.ids.add(id(p))
            params.append((name, p))
        hashes = fingerprint_each([p.detach() for _, p in params])
        TAKEN.fn = TAKEN.fn or fn_of([p for _, p in params])
        TAKEN.modules.append(m)
        for (name, p), h in zip(params, hashes):
            TAKEN.entries.append((m, name, list(p.shape), dtype_name(p.dtype), h))


def _distributed():
    import torch.distributed as dist

    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def _sharded(p):
    """A DTensor (FSDP2's shard) or FSDP1's flat parameter: sharded by an earlier call."""
    return (type(p).__name__ in ("DTensor", "FlatParameter") or hasattr(p, "placements")
            or hasattr(p, "_fsdp_flattened"))


@guard("fsdp")
def _publish(runtime):
    """A step-begin hook: the table and the init fingerprints, once."""
    if TAKEN.written or not TAKEN.entries:
        return
    TAKEN.written = True
    entries, TAKEN.entries, TAKEN.ids = TAKEN.entries, [], set()
    prefix = _prefixes(TAKEN.modules)
    TAKEN.modules = []
    if runtime.model is not None:  # a DDP (or unwrapped) probe wrote its own table
        return
    _core.write_params(runtime.session, [prefix.get(id(m), "") + name for m, name, _, _, _ in
                                         entries],
                       [shape for _, _, shape, _, _ in entries],
                       [dtype for _, _, _, dtype, _ in entries], [])
    _core.write_fingerprints(runtime.session, fp_what.PARAM, fp_why.INIT, True,
                             [h for _, _, _, _, h in entries], TAKEN.fn)


def _prefixes(modules):
    """id(module) -> its name's prefix in the outermost modules sharded ("0.", "layers.1."),
    as state_dict names it; the outermost are told apart by class when there are several."""
    inside = set()
    for m in modules:
        for _, sub in m.named_modules():
            if sub is not m:
                inside.add(id(sub))
    roots = []
    for m in modules:
        if id(m) not in inside and all(m is not r for r in roots):
            roots.append(m)
    prefix = {}
    for root, root_prefix in zip(roots, module_prefixes(roots)):
        for name, sub in root.named_modules():
            prefix.setdefault(id(sub), root_prefix + (name + "." if name else ""))
    return prefix
