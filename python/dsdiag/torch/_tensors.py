"""What the probes read of a tensor: its dtype's short name and a fingerprint of its memory,
read in place by the C++ core (no copy for contiguous CPU tensors)."""

import torch

from dsdiag import _core

_DTYPE_NAMES = {
    torch.float32: "f32",
    torch.float64: "f64",
    torch.float16: "f16",
    torch.bfloat16: "bf16",
    torch.int64: "i64",
    torch.int32: "i32",
    torch.int8: "i8",
    torch.uint8: "u8",
    torch.bool: "bool",
}


def dtype_name(dtype):
    return _DTYPE_NAMES.get(dtype, str(dtype).replace("torch.", ""))


def memory_range(t):
    """(address, nbytes) of a tensor's elements, for the core to hash in place; a CPU copy
    for tensors that are not contiguous CPU tensors (rare: parameters and their gradients
    are contiguous). (0, 0) for None."""
    if t is None:
        return (0, 0)
    if t.device.type != "cpu" or not t.is_contiguous():
        t = t.detach().to("cpu").contiguous()
        _keep_alive.append(t)
    return (t.data_ptr(), t.numel() * t.element_size())


_keep_alive = []  # copies that must outlive one fingerprint call


def fingerprint_each(tensors):
    """One hash per tensor (0 for None)."""
    groups = [[memory_range(t)] for t in tensors]
    try:
        return _core.fingerprint_groups(groups)
    finally:
        del _keep_alive[:]
