"""The `dsdiag` command of a pip install (and `python -m dsdiag`): execs the torch-free C++
command line the wheel carries (dsdiag/bin/dsdiag). `dsdiag --version` adds which DDP hook
this interpreter's torch gets (dsdiag/_native_hook.py)."""

import os
import subprocess
import sys

BINARY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "dsdiag")


def _ddp_hook_line():
    try:
        import torch
    except ImportError:
        return "DDP hook: none (no torch in %s)" % sys.executable
    from dsdiag import _native_hook

    return "DDP hook for torch %s (%s): %s" % (torch.__version__, sys.executable,
                                               _native_hook.status(torch))


def main():
    if not os.access(BINARY, os.X_OK):
        sys.stderr.write("dsdiag: no command line at %s: this dsdiag package was not installed "
                         "by pip (a source build has it at <build>/dsdiag)\n" % BINARY)
        return 2
    args = sys.argv[1:]
    if args[:1] in (["--version"], ["version"]):
        status = subprocess.call([BINARY] + args)
        sys.stdout.write(_ddp_hook_line() + "\n")
        return status
    os.execv(BINARY, [BINARY] + args)
