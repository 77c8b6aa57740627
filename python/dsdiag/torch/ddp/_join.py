"""DDP's Join context (torch.distributed.algorithms.join.Join, PyTorch's way of training on
uneven inputs): a rank that runs out of batches leaves its loop and, in the context's exit,
shadows the others' collectives — the forward's join flag, each gradient bucket's allreduce
(of zeros, through DDP's communication hook), a ZeroRedundancyOptimizer's broadcasts — until
every rank is done. Those shadows are collectives like any (recorded, numbered, paired with
the others' ops; their call sites are the protocol's, _call_site), but they are no training
step of the joined rank: while it shadows, no step opens (RUNTIME.joined) and DDP's hook
takes no gradient fingerprints, so the zeros it reduces are never compared with the others'
gradients. A `ddp-join` mark says when the rank joined."""

import functools
from typing import Any

from dsdiag.torch._patches import Patches
from dsdiag.torch._runtime import RUNTIME

JOINED_MARK = "ddp-join"


def install(patches: Patches) -> None:
    try:
        from torch.distributed.algorithms.join import Join
    except Exception:  # a torch without it
        return
    patches.replace(Join, "__exit__", _wrap_exit(Join.__exit__), key="Join.__exit__")


def _wrap_exit(original: Any) -> Any:
    @functools.wraps(original)
    def __exit__(self: Any, *exc: Any) -> Any:
        if not RUNTIME.on or RUNTIME.joined:
            return original(self, *exc)
        _joined()
        try:
            return original(self, *exc)
        finally:
            RUNTIME.joined = False
            _drop_shadow_fingerprints()

    return __exit__


def _joined() -> None:
    RUNTIME.joined = True
    try:
        RUNTIME.session.mark(
            JOINED_MARK,
            "rank %d joined after %d steps: it shadows the other ranks' collectives until "
            "every rank is done (DDP's Join)" % (RUNTIME.rank, RUNTIME.step))
    except Exception:
        pass


def _drop_shadow_fingerprints() -> None:
    """What DDP's C++ hook hashed of the zeros it reduced while the rank shadowed."""
    model = RUNTIME.model
    for hook in getattr(model, "hooks", ()):
        native = getattr(hook, "native", None)
        if native is None:
            continue
        try:
            native.take_reduced()
            native.take_after_sync()
        except Exception:
            pass
