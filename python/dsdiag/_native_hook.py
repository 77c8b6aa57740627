"""DDP's C++ communication hook for the running torch, dsdiag._ddp_hook_torch<major>_<minor>
(python/torch_ext/ddp_comm_hook.cc): where it comes from.

A source build ships it prebuilt beside _core, one per lane (python/CMakeLists.txt). A pip
install ships its source instead (dsdiag/_hook_src) and compiles it here, on first use,
against the headers of the torch that runs, once per torch version, Python ABI and hook
source, into ${XDG_CACHE_HOME:-~/.cache}/dsdiag/ddp-hook/. Ranks starting together take a
file lock: one compiles, the others wait and load its result. Where the headers or a
compiler are missing, the Python hook (dsdiag/torch/ddp/_comm_hook.py) records the same,
and one line says why. Torch is passed in: importing this module imports no torch.
"""

import fcntl
import hashlib
import importlib
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.join(_PACKAGE_DIR, "_hook_src")
_SOURCE = os.path.join("python", "torch_ext", "ddp_comm_hook.cc")
_HEADERS = (os.path.join("python", "core", "ddp_hook_api.h"),)


def module_name(torch):
    """_ddp_hook_torch2_13 for torch 2.13.x: one hook per torch minor version."""
    major, minor = torch.__version__.split("+")[0].split(".")[:2]
    return "_ddp_hook_torch%s_%s" % (major, "".join(c for c in minor if c.isdigit()))


def load(torch, warn):
    """The hook's module for this torch, or None (the Python hook); `warn(message)` says
    once why there is none, or that it is being compiled."""
    name = module_name(torch)
    try:
        return importlib.import_module("dsdiag." + name)  # a source build's prebuilt one
    except ImportError:
        pass
    if not os.path.isdir(SOURCE_DIR):
        return None  # a source build for a lane whose torch has no headers: as before
    missing = _missing(torch)
    if missing:
        warn("DDP is hooked in Python (%s), which records the same at a higher cost" % missing)
        return None
    path = _cached_path(torch)
    if not os.path.exists(path):
        failure = _compile_once(torch, path, warn)
        if failure:
            warn("DDP's C++ hook did not compile for torch %s (%s): DDP is hooked in Python"
                 % (torch.__version__, failure))
            return None
    return _load_from(name, path)


def status(torch):
    """One line for `dsdiag --version`: which hook this torch gets, compiling nothing."""
    name = module_name(torch)
    if importlib.util.find_spec("dsdiag." + name) is not None:
        return "C++ (prebuilt dsdiag.%s)" % name
    if not os.path.isdir(SOURCE_DIR):
        return "Python (this build has no C++ hook for torch %s)" % torch.__version__
    missing = _missing(torch)
    if missing:
        return "Python (%s)" % missing
    path = _cached_path(torch)
    if os.path.exists(path):
        return "C++ (compiled, %s)" % path
    if os.path.exists(path + ".failed"):
        return "Python (the C++ hook did not compile: %s.log)" % path
    return "C++ (compiled on first use into %s)" % os.path.dirname(path)


def _include_dir(torch):
    return os.path.join(os.path.dirname(torch.__file__), "include")


def _compiler():
    return os.environ.get("CXX") or "c++"


def _missing(torch):
    """Why this machine cannot compile the hook for this torch, or None."""
    include = _include_dir(torch)
    if not os.path.exists(os.path.join(include, "torch", "csrc", "distributed", "c10d",
                                       "reducer.hpp")):
        return "torch %s ships no C++ headers in %s" % (torch.__version__, include)
    if not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")):
        return "no Python.h for %s (install its headers, e.g. python3-dev)" % sys.executable
    if shutil.which(_compiler().split()[0]) is None:
        return "no C++ compiler (%s) on PATH" % _compiler()
    return None


def _cached_path(torch):
    """<cache>/dsdiag/ddp-hook/<torch>-<python ABI>-<source hash>/<name><EXT_SUFFIX>."""
    digest = hashlib.sha256()
    for relative in (_SOURCE,) + _HEADERS:
        with open(os.path.join(SOURCE_DIR, relative), "rb") as f:
            digest.update(f.read())
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    key = "torch%s-%s-%s" % (torch.__version__, sys.implementation.cache_tag,
                              digest.hexdigest()[:12])
    return os.path.join(cache, "dsdiag", "ddp-hook", key,
                        module_name(torch) + sysconfig.get_config_var("EXT_SUFFIX"))


def _compile_once(torch, path, warn):
    """Compiles into `path` unless another process did meanwhile; the error, or None."""
    directory = os.path.dirname(path)
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if os.path.exists(path):
            return None
        if os.path.exists(path + ".failed"):
            return "see %s.log" % path
        warn("compiling DDP's C++ hook for torch %s (once; cached in %s)"
             % (torch.__version__, directory))
        partial = "%s.%d.tmp" % (path, os.getpid())
        result = subprocess.run(_command(torch, partial), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT)
        if result.returncode != 0:
            with open(path + ".log", "wb") as log:
                log.write(result.stdout)
            open(path + ".failed", "w").close()
            return "see %s.log" % path
        os.replace(partial, path)  # whole or absent for the ranks that wait
    return None


def _command(torch, output):
    """The compile the source build's CMake does for a lane (python/CMakeLists.txt)."""
    include = _include_dir(torch)
    lib = os.path.join(os.path.dirname(torch.__file__), "lib")
    abi = int(torch._C._GLIBCXX_USE_CXX11_ABI)
    return _compiler().split() + [
        "-O2", "-std=c++17", "-shared", "-fPIC", "-fvisibility=hidden", "-w",
        "-D_GLIBCXX_USE_CXX11_ABI=%d" % abi,
        "-DDSDIAG_TORCH_EXT_NAME=" + module_name(torch),
        "-isystem", include, "-isystem", os.path.join(include, "torch", "csrc", "api", "include"),
        "-isystem", sysconfig.get_paths()["include"], "-I", SOURCE_DIR,
        os.path.join(SOURCE_DIR, _SOURCE),
        "-L", lib, "-ltorch_python", "-ltorch_cpu", "-lc10", "-Wl,-rpath," + lib,
        "-o", output,
    ]


def _load_from(name, path):
    spec = importlib.util.spec_from_file_location("dsdiag." + name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules["dsdiag." + name] = module
    return module
