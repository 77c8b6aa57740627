"""Checkpoint probes: torch.save, torch.load and nn.Module.load_state_dict, as `ckpt` records
(docs/trace-format.md) — what checkpoint-race (several ranks saving one path: the save
without `if rank == 0:`), checkpoint-mismatch (ranks resuming from different checkpoints)
and rank-died (the load that failed, and why) read.

- torch.save / torch.load to or from a path (str, bytes, os.PathLike, or a file object
  opened on a named file): one `ckpt` record, `op` save / load, after the call returns: the
  real path (symlinks resolved: a stale `latest` link shows as the file it named), the
  file's size and content digest (_digest), `ckpt_step` / `epoch` (what the
  checkpoint holds, else dsdiag's step count: _loaded), and for a load its
  map_location. A span record: `ts` is the start of the call, `dur` runs to the record
  (the call, then reading the file back for the digest).
- In-memory file objects (io.BytesIO, ...) are not recorded: they cannot race, and they are
  how jobs hand state between ranks (rank 0 loads and broadcasts), where a load on the
  receivers would be compared with rank 0's file.
- A save or load that raises writes a `mark` record ("checkpoint-save-failed" /
  "checkpoint-load-failed": the path, map_location and the exception), before the `error`
  record the job's death writes. No `ckpt` record: checkpoint-mismatch would compare it.
- load_state_dict: the keys it left missing or unexpected (seen by a load_state_dict post
  hook, so also when strict loading raises): when there are any, one more `ckpt` load
  record, before the exception goes on, with `missing`, `unexpected`, `prefix_stripped`
  (they differ only by DDP's `module.` prefix: _keys) and the path, digest,
  step and map_location of the torch.load its tensors came from ("<state dict>" and 0 when
  none). A load that matched writes nothing more. A load into the DDP model (the wrapper
  or its module) is followed by the parameters' `fp` record, `why` `resume`.

Saves happen between steps (after optimizer.step()): the record is written where it falls,
with the step of the last step record, and opens no step. On the main thread the call is
the `checkpoint` phase. Nested calls (a save inside a wrapped save) are recorded once. The
wrappers go in when torch is imported (`dsdiag run`'s start-up hook), so a script's own
`from torch import save` binds the wrapped function too. The job sees the same return
values and exceptions.
"""

import functools
import os
import threading
import time

import torch

from dsdiag import _core
from dsdiag._core import ckpt_op, fp_why, phase_name
from dsdiag.torch._patches import Patches
from dsdiag.torch._runtime import NO_PHASE, RUNTIME, guard, phase
from dsdiag.torch.checkpoint._digest import file_digest
from dsdiag.torch.checkpoint._keys import capped, differ_only_by_prefix
from dsdiag.torch.checkpoint._loaded import Sources, describe_map_location, position

PATCHES = Patches("checkpoint")
_SOURCES = Sources()
_LOCAL = threading.local()  # .depth: inside one of our wrappers on this thread
UNKNOWN_SOURCE = "<state dict>"
MAX_MESSAGE = 1000


def install():
    if PATCHES:
        return
    _replace("save", _save)
    _replace("load", _load)
    PATCHES.replace(torch.nn.Module, "load_state_dict", _load_state_dict)


def uninstall():
    PATCHES.undo()


def _replace(name, wrapper):
    """torch.save is torch.serialization.save: both names get the wrapper."""
    original = PATCHES.replace(torch, name, wrapper)
    if getattr(torch.serialization, name, None) is original:
        PATCHES.replace(torch.serialization, name, wrapper, key="serialization." + name)


def _recording():
    return RUNTIME.on and getattr(_LOCAL, "depth", 0) == 0


class _Inside(object):
    """Our wrapper is running on this thread: nested wrapped calls go straight through."""

    def __enter__(self):
        _LOCAL.depth = getattr(_LOCAL, "depth", 0) + 1

    def __exit__(self, *exc):
        _LOCAL.depth -= 1
        return False


def _checkpoint_phase():
    # A phase is the main thread's state: a save on a helper thread (async checkpointing)
    # must not change what the training loop is said to be doing.
    if threading.current_thread() is threading.main_thread():
        return phase(phase_name.CHECKPOINT)
    return NO_PHASE


# --- torch.save / torch.load ------------------------------------------------------------


def _save(obj, f, *args, **kwargs):
    if not _recording():
        return PATCHES["save"](obj, f, *args, **kwargs)
    op = _begin(ckpt_op.SAVE, f)
    if op is None:
        return PATCHES["save"](obj, f, *args, **kwargs)
    try:
        with _Inside(), _checkpoint_phase():
            result = PATCHES["save"](obj, f, *args, **kwargs)
    except BaseException as e:
        _failed(op, e)
        raise
    _done(op, obj)
    return result


def _load(f, *args, **kwargs):
    if not _recording():
        return PATCHES["load"](f, *args, **kwargs)
    op = _begin(ckpt_op.LOAD, f, kwargs["map_location"] if "map_location" in kwargs else
                (args[0] if args else None))
    if op is None:
        return PATCHES["load"](f, *args, **kwargs)
    try:
        with _Inside(), _checkpoint_phase():
            result = PATCHES["load"](f, *args, **kwargs)
    except BaseException as e:
        _failed(op, e)
        raise
    _done(op, result)
    return result


functools.update_wrapper(_save, torch.save)
functools.update_wrapper(_load, torch.load)


class _Op(object):
    def __init__(self, kind, path, map_location):
        self.kind = kind  # "save", "load"
        self.path = path
        self.map_location = map_location
        self.start = time.monotonic_ns()


@guard("checkpoint")
def _begin(kind, f, map_location=None):
    path = _path_of(f)
    if path is None:
        return None
    return _Op(kind, path, describe_map_location(map_location) if kind == ckpt_op.LOAD else "")


def _path_of(f):
    """The file a save or load goes to, or None for an in-memory file object."""
    if isinstance(f, (str, bytes, os.PathLike)):
        return os.fsdecode(os.fspath(f))
    name = getattr(f, "name", None)  # open(path, "wb"): the file object knows its path
    if isinstance(name, (str, bytes)) and os.path.isfile(name):
        return os.fsdecode(name)
    return None


@guard("checkpoint")
def _done(op, obj):
    path = os.path.realpath(op.path)
    try:
        size, digest = file_digest(path)
    except OSError:  # removed or replaced since the call (another rank's doing): no digest
        size, digest = 0, 0
    ckpt_step, epoch = position(obj, RUNTIME.step, RUNTIME.epoch)
    _core.write_checkpoint(RUNTIME.session, op.kind, path, size, digest, ckpt_step, epoch,
                           time.monotonic_ns() - op.start, op.map_location)
    if op.kind == ckpt_op.LOAD:
        _SOURCES.remember(obj, (path, size, digest, ckpt_step, epoch, op.map_location))


@guard("checkpoint")
def _failed(op, error):
    where = ""
    if op.kind == ckpt_op.LOAD:
        where = ", map_location=%s" % (repr(op.map_location) if op.map_location else "None")
    what = "torch.%s(%r%s)" % (op.kind, op.path, where)
    message = "%s raised %s: %s" % (what, type(error).__name__, error)
    RUNTIME.session.mark("checkpoint-%s-failed" % op.kind, message[:MAX_MESSAGE])


# --- Module.load_state_dict -------------------------------------------------------------


def _load_state_dict(self, state_dict, *args, **kwargs):
    if not _recording():
        return PATCHES["load_state_dict"](self, state_dict, *args, **kwargs)
    watch = _watch(self)
    try:
        with _Inside(), _checkpoint_phase():
            result = PATCHES["load_state_dict"](self, state_dict, *args, **kwargs)
    except BaseException:
        _applied(watch, state_dict, None)
        raise
    finally:
        _unwatch(watch)
    _applied(watch, state_dict, result)
    _fingerprint_model(self)
    return result


functools.update_wrapper(_load_state_dict, torch.nn.Module.load_state_dict)


class _Watch(object):
    """The keys load_state_dict did not match, caught by a post hook on the module: the
    hook runs after every submodule loaded and before strict loading raises."""

    def __init__(self):
        self.start = time.monotonic_ns()
        self.missing = None
        self.unexpected = None
        self.handle = None

    def __call__(self, module, keys):
        self.missing = list(keys.missing_keys)
        self.unexpected = list(keys.unexpected_keys)


@guard("checkpoint")
def _watch(module):
    watch = _Watch()
    register = getattr(module, "register_load_state_dict_post_hook", None)
    if register is None:  # torch < 1.13: only what a lenient load returns is seen
        return watch
    try:
        watch.handle = register(watch)
    except Exception:  # a module that takes no hooks (scripted): the same, for this one
        pass
    return watch


def _unwatch(watch):
    if watch is not None and watch.handle is not None:
        try:
            watch.handle.remove()
        except Exception:
            pass


@guard("checkpoint")
def _applied(watch, state_dict, result):
    if watch is None:
        return
    missing, unexpected = watch.missing, watch.unexpected
    if result is not None and hasattr(result, "missing_keys"):  # what the job got back
        missing, unexpected = list(result.missing_keys), list(result.unexpected_keys)
    if not missing and not unexpected:  # matched (or failed for another reason): nothing
        return
    source = _SOURCES.source_of(state_dict)
    path, size, digest, ckpt_step, epoch, map_location = source or (
        UNKNOWN_SOURCE, 0, 0, RUNTIME.step, RUNTIME.epoch, "")
    _core.write_checkpoint(RUNTIME.session, ckpt_op.LOAD, path, size, digest, ckpt_step, epoch,
                           time.monotonic_ns() - watch.start, map_location,
                           differ_only_by_prefix(missing, unexpected), capped(missing),
                           capped(unexpected))


@guard("checkpoint")
def _fingerprint_model(module):
    """After a load into the DDP model (a wrapper or its module): its parameters as
    loaded, the `fp` param `resume` record checkpoint-mismatch compares across ranks."""
    model = RUNTIME.model
    if model is not None and any(module is m or module is getattr(m, "module", None)
                                 for m in model.modules):
        model.fingerprint_params(fp_why.RESUME)
