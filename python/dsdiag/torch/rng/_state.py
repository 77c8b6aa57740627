"""What the RNG probes read of a random generator: (seed, hash of its state), for the torch
CPU and CUDA default generators, NumPy's global RandomState and Python's `random`.

The hash is dsdiag._core's fingerprint (xxHash3, the trainer's) of the state's bytes: the
ByteTensor torch.get_rng_state() returns, read in place; NumPy's and random's state tuples
packed into one buffer first (a few KB, once per observation). Equal hashes on two ranks mean
the two generators will draw the same numbers. NumPy is never imported here: its stream is
read only when the job (or torch) has imported it. `seed` is the generator's initial seed
where it keeps one (torch), else -1 (NumPy and random do not remember theirs).
"""

import ctypes
import random
import struct
import sys
from array import array

from dsdiag import _core

UNKNOWN_SEED = -1


def int64(value):
    """A seed as the record's int64 (torch seeds go up to 2**64 - 1: wrapped, as the trainer
    casts them)."""
    value = int(value) & 0xFFFFFFFFFFFFFFFF
    return value - (1 << 64) if value >= (1 << 63) else value


def hash_bytes(data):
    buf = bytearray(data)
    if not buf:
        return 0
    view = (ctypes.c_char * len(buf)).from_buffer(buf)
    return _core.fingerprint(ctypes.addressof(view), len(buf))


def hash_tensor(t):
    """A contiguous CPU tensor's bytes (a generator state is a ByteTensor)."""
    t = t.contiguous()
    return _core.fingerprint(t.data_ptr(), t.numel() * t.element_size())


def torch_cpu():
    import torch

    return int64(torch.initial_seed()), hash_tensor(torch.get_rng_state())


def torch_cuda(device):
    import torch

    generator = torch.cuda.default_generators[device]
    # get_state() copies the Philox seed and offset to the host: no device sync.
    return int64(generator.initial_seed()), hash_tensor(generator.get_state())


def numpy_global():
    """NumPy's global stream, or None when the process has not imported NumPy."""
    np = sys.modules.get("numpy")
    if np is None:
        return None
    state = np.random.get_state()  # ('MT19937', keys[624], pos, has_gauss, cached_gaussian)
    if not isinstance(state, tuple):  # a global RandomState on another bit generator
        return UNKNOWN_SEED, hash_bytes(repr(state).encode())
    keys = np.ascontiguousarray(state[1])
    tail = struct.pack("<qqd", int(state[2]), int(state[3]), float(state[4]))
    return UNKNOWN_SEED, hash_bytes(keys.tobytes() + tail)


def python_random():
    version, internal, gauss = random.getstate()  # internal: 624 words and the position
    tail = struct.pack("<qd?", version, gauss if gauss is not None else 0.0, gauss is not None)
    return UNKNOWN_SEED, hash_bytes(array("I", internal).tobytes() + tail)
