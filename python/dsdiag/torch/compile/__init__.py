"""compile: keeps dsdiag's code out of what torch.compile traces. A diagnostic tool must not
change the program it watches: no graph break, no Dynamo warning of its own.

Dynamo's skip list (torch._dynamo.trace_rules.add) gets the dsdiag package's folder: a frame
of ours that Dynamo meets first — DDP.forward as we wrap it, the entry of a compiled DDP
model — runs as plain Python, and the frames it calls that are not ours (DDP's forward, the
job's model) are compiled as they would be without dsdiag. Traced instead, our wrapper's
clock reads, its phase span and the step-begin hooks' fingerprints each broke the graph
(5 breaks per rank against 3 on tests/python/jobs/ddp_configs.py).

Dynamo costs seconds to import: it is not imported for a job that never compiles. Where it is
loaded already the folder goes in at once, else when the job first calls torch.compile.
Feature-detected by attribute: a torch without them (1.13) compiles nothing. The folder stays
on the skip list after uninstall(): no frame of dsdiag's is ever the job's to compile."""

import functools
import sys

import torch

from dsdiag._warn import warn_once
from dsdiag.torch._patches import Patches

PATCHES = Patches("compile")


def install():
    if PATCHES or not hasattr(torch, "compile"):
        return
    if "torch._dynamo" in sys.modules:
        _skip_dsdiag()
    PATCHES.replace(torch, "compile", _compile)


def uninstall():
    PATCHES.undo()


def _compile(*args, **kwargs):
    _skip_dsdiag()
    return PATCHES["compile"](*args, **kwargs)


if hasattr(torch, "compile"):
    _compile = functools.wraps(torch.compile)(_compile)


def _skip_dsdiag():
    """Adds the dsdiag package to Dynamo's skip list, once."""
    if getattr(_skip_dsdiag, "done", False):
        return
    _skip_dsdiag.done = True
    try:
        import torch._dynamo.trace_rules as rules

        rules.add("dsdiag")
    except Exception as e:  # never into the job
        warn_once("compile", "torch.compile may trace dsdiag's hooks: %r" % (e,))

