"""DeviceMesh: each mesh the job builds (init_device_mesh, or DeviceMesh itself) is a `mesh`
record on its ranks — shape, dimension names, the rank's coordinate, the pg of its group
along each dimension — with the `group` records of those groups (_groups). Sub-meshes
(`mesh["dp"]`) and meshes rebuilt with the same layout are recorded once."""

import functools
from typing import Any

from dsdiag.torch._patches import Patches
from dsdiag.torch._runtime import RUNTIME


def install(patches: Patches) -> None:
    try:
        from torch.distributed import device_mesh
    except Exception:  # torch 1.13: no DeviceMesh
        return
    cls = getattr(device_mesh, "DeviceMesh", None)
    if cls is None or not hasattr(cls, "__init__"):
        return
    patches.replace(cls, "__init__", _wrap_init(cls.__init__), key="DeviceMesh.__init__")


def _wrap_init(original: Any) -> Any:
    @functools.wraps(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        _note(self)

    return __init__


def _note(mesh: Any) -> None:
    if not RUNTIME.on:
        return
    try:
        RUNTIME.group_book().declare_mesh(RUNTIME.session, mesh)
    except Exception:  # a mesh with no groups yet (a fake backend): nothing to record
        pass
