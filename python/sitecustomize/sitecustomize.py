"""dsdiag's start-up hook, on PYTHONPATH in every Python process `dsdiag run` starts: when
DSDIAG_OUT is set, the job is instrumented as soon as it imports torch (torch is not
imported here: a process that never uses it pays nothing). Then the sitecustomize this one
hides (the system's) runs as it would have."""

import importlib.abc
import importlib.machinery
import os
import sys


class _AfterTorchImport(importlib.abc.MetaPathFinder):
    """Finds `torch` as the normal finders do, and instruments once it has loaded."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torch":
            return None
        sys.meta_path.remove(self)  # once
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_then_instrument(module):
            exec_module(module)
            try:
                from dsdiag.torch import instrument_from_environment

                instrument_from_environment()
            except Exception as e:  # never stop the job
                sys.stderr.write("dsdiag: not instrumenting this process: %r\n" % (e,))

        spec.loader.exec_module = exec_then_instrument
        return spec


def _run_hidden_sitecustomize():
    here = os.path.dirname(os.path.abspath(__file__))
    for entry in sys.path:
        if not entry or os.path.abspath(entry) == here:
            continue
        candidate = os.path.join(entry, "sitecustomize.py")
        if os.path.isfile(candidate):
            with open(candidate) as f:
                code = compile(f.read(), candidate, "exec")
            exec(code, {"__name__": "sitecustomize", "__file__": candidate})
            return


if os.environ.get("DSDIAG_OUT"):
    sys.meta_path.insert(0, _AfterTorchImport())
try:
    _run_hidden_sitecustomize()
except Exception as e:
    sys.stderr.write("dsdiag: the system's sitecustomize failed: %r\n" % (e,))
