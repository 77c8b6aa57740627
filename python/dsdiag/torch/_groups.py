"""Process groups by identity: the number a group's `coll`, `p2p` and flight records carry,
and its `group` record (trace v5). A group is numbered from the name torch gives it — the
same on every member: "1", "2", ... from torch's own creation counter, which every rank
advances for every group (new_group is called by all ranks, members or not), or a hash of
its ranks — through _core.group_number, so that two ranks' ops on one group carry one
number and two groups ({0,1} and {2,3}, a data-parallel group each) never share one. The
default group is 0. The `group` record says what the number stands for: the name, torch's
description (`mesh_dp`), the backend, the global ranks and this rank's rank in it; it is
written the first time the rank sees the group (created, or first used), before any record
naming it. A group torch gives no name (a backend object outside torch's registry) keeps a
number of the rank's own, above any torch name's, and no record.

A DeviceMesh is a `mesh` record: its shape, dimension names, this rank's coordinate and
the number of its group along each dimension."""

from typing import Any, Dict, List, Optional, Tuple

import torch.distributed as dist

from dsdiag import _core

# Numbers of groups torch gives no name, counted per rank (never written as a `group`):
# above any torch counter name (9 digits), below the hashed names' 2^30.
_UNNAMED_BASE = 1000000000


class GroupBook(object):
    """The groups this rank has numbered: id(group) -> pg, the group object kept so that
    its id is never reused by another object while the book holds the number."""

    def __init__(self) -> None:
        self._numbers: Dict[int, Tuple[Any, int]] = {}
        self._meshes: set = set()
        self._unnamed = 0  # groups torch gives no name, numbered so far

    def number(self, session: Any, group: Any) -> int:
        """Called for every collective: a group met before (the default one included) costs
        one dict lookup."""
        if group is None:
            return 0
        known = self._numbers.get(id(group))
        if known is not None:
            return known[1]
        pg = 0 if is_default_group(group) else self._declare(session, group)
        self._numbers[id(group)] = (group, pg)
        return pg

    def _declare(self, session: Any, group: Any) -> int:
        name = group_name(group)
        if name is None:
            self._unnamed += 1
            return _UNNAMED_BASE + self._unnamed - 1
        pg = _core.group_number(name, False)
        if session is not None:
            _core.write_group(session, name, group_desc(group), _backend(group),
                              group_ranks(group), _rank_in(group), False)
        return pg

    def declare_mesh(self, session: Any, mesh: Any) -> None:
        """The `mesh` record of a DeviceMesh this rank is on (once per layout)."""
        coord = mesh.get_coordinate()
        if coord is None:  # this rank is not on the mesh
            return
        shape = [int(s) for s in mesh.mesh.shape]
        dims = [str(d) for d in (getattr(mesh, "mesh_dim_names", None) or [])]
        pgs = [self.number(session, mesh.get_group(i)) for i in range(len(shape))]
        layout = (tuple(shape), tuple(dims), tuple(coord), tuple(pgs))
        if layout in self._meshes or session is None:
            return
        self._meshes.add(layout)
        _core.write_mesh(session, shape, dims, [int(c) for c in coord], pgs)


def is_default_group(group: Any) -> bool:
    if group is getattr(dist.group, "WORLD", None):
        return True
    getter = getattr(dist.distributed_c10d, "_get_default_group", None)
    try:
        return getter is not None and group is getter()
    except Exception:
        return False


def is_member(group: Any) -> bool:
    """new_group's result names a group this rank is in (not GroupMember.NON_GROUP_MEMBER)."""
    non_member = getattr(getattr(dist, "GroupMember", None), "NON_GROUP_MEMBER", object())
    return group is not None and group is not non_member


def group_name(group: Any) -> Optional[str]:
    """torch's name of the group: `group_name` (torch 2.x), else its registry's entry."""
    try:
        name = getattr(group, "group_name", None)
        if isinstance(name, str) and name:
            return name
    except Exception:  # torch 2.x raises for a group outside its registry
        pass
    c10d = dist.distributed_c10d
    world = getattr(c10d, "_world", None)
    names = getattr(world, "pg_names", None) if world is not None else None
    if names is None:
        names = getattr(c10d, "_pg_names", None)  # torch 1.13
    try:
        name = names.get(group) if names is not None else None
    except TypeError:
        return None
    return name if isinstance(name, str) and name else None


def group_desc(group: Any) -> str:
    try:
        desc = getattr(group, "group_desc", "")
    except Exception:
        return ""
    return desc if isinstance(desc, str) and desc != "undefined" else ""


def group_ranks(group: Any) -> List[int]:
    """The group's global ranks, in group-rank order."""
    if group is None or is_default_group(group):
        return list(range(dist.get_world_size()))
    ranks = getattr(dist, "get_process_group_ranks", None)  # torch 2.x
    if ranks is not None:
        return [int(r) for r in ranks(group)]
    by_global = dist.distributed_c10d._pg_group_ranks[group]  # torch 1.13: global -> group
    return [g for g, _ in sorted(by_global.items(), key=lambda item: item[1])]


def _backend(group: Any) -> str:
    try:
        return str(dist.get_backend(group))
    except Exception:
        return ""


def _rank_in(group: Any) -> int:
    try:
        return int(dist.get_rank(group))
    except Exception:
        return -1
