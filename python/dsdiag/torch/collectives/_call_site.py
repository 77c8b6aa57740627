"""The job's own line that issued a collective or a point-to-point message: the innermost
frame outside torch and dsdiag (file, line, function). The C++ core numbers a line the first
time it is seen (RankProbes.call_site writes its `site` record) and the records name it by
that id; the ids are cached here per code object and line, so a call costs a short walk up
the stack and two dict lookups.

A collective that torch's Join protocol issues (torch.distributed.algorithms.join: the
non-joined ranks' flag in DDP's forward, the joined ranks' shadows of it and of the gradient
allreduces in the context's exit) has no site of the job's: the protocol pairs those ops by
design, from different lines on the two sides (DDP's `join()`, PyTorch's tutorial for uneven
inputs), so they carry site 0 (unknown) and are compared by signature only."""

import os
import sys

import torch

import dsdiag
from dsdiag.torch._runtime import RUNTIME

# Folders whose frames are never the job's: torch's own wrappers, and ours.
_NOT_THE_JOB = tuple(os.path.dirname(os.path.abspath(str(module.__file__))) + os.sep
                     for module in (torch, dsdiag))
# torch's Join protocol, whose collectives pair across ranks issued from different lines.
_JOIN_PROTOCOL = os.path.join(os.path.dirname(os.path.abspath(str(torch.__file__))),
                              "distributed", "algorithms", "join.py")
_JOB, _TORCH, _PROTOCOL = 0, 1, 2  # what a code object's frames are


class _Sites(object):
    def __init__(self):
        self.probes = None  # the RankProbes the ids below belong to
        self.ids = {}  # (code object, line) -> site id
        self.kinds = {}  # code object -> _JOB, _TORCH (torch's or dsdiag's) or _PROTOCOL


SITES = _Sites()


def site_id():
    """The id of the job's line issuing the current call; 0 when none is found."""
    probes = RUNTIME.probes
    if probes is None:
        return 0
    if SITES.probes is not probes:  # a new session numbers its sites afresh
        SITES.probes, SITES.ids = probes, {}
    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        kind = SITES.kinds.get(code)
        if kind is None:
            kind = SITES.kinds[code] = _kind_of(code)
        if kind == _JOB:
            break
        if kind == _PROTOCOL:
            return 0
        frame = frame.f_back
    if frame is None:
        return 0
    key = (code, frame.f_lineno)
    site = SITES.ids.get(key)
    if site is None:
        name = getattr(code, "co_qualname", code.co_name)  # Python 3.11: Trainer.step
        site = SITES.ids[key] = probes.call_site(code.co_filename, frame.f_lineno, name)
    return site


def _kind_of(code):
    path = os.path.abspath(code.co_filename)
    if path == _JOIN_PROTOCOL:
        return _PROTOCOL
    return _TORCH if path.startswith(_NOT_THE_JOB) else _JOB
