"""The job's own line that issued a collective or a point-to-point message: the innermost
frame outside torch and dsdiag (file, line, function). The C++ core numbers a line the first
time it is seen (RankProbes.call_site writes its `site` record) and the records name it by
that id; the ids are cached here per code object and line, so a call costs a short walk up
the stack and two dict lookups."""

import os
import sys

import torch

import dsdiag
from dsdiag.torch._runtime import RUNTIME

# Folders whose frames are never the job's: torch's own wrappers, and ours.
_NOT_THE_JOB = tuple(os.path.dirname(os.path.abspath(str(module.__file__))) + os.sep
                     for module in (torch, dsdiag))


class _Sites(object):
    def __init__(self):
        self.probes = None  # the RankProbes the ids below belong to
        self.ids = {}  # (code object, line) -> site id
        self.skipped = {}  # code object -> its frames are torch's or dsdiag's


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
        skipped = SITES.skipped.get(code)
        if skipped is None:
            skipped = SITES.skipped[code] = os.path.abspath(code.co_filename).startswith(
                _NOT_THE_JOB)
        if not skipped:
            break
        frame = frame.f_back
    if frame is None:
        return 0
    key = (code, frame.f_lineno)
    site = SITES.ids.get(key)
    if site is None:
        name = getattr(code, "co_qualname", code.co_name)  # Python 3.11: Trainer.step
        site = SITES.ids[key] = probes.call_site(code.co_filename, frame.f_lineno, name)
    return site
