"""What the probes read of a tensor: its dtype's short name and a fingerprint of its memory,
read in place by the C++ core (no copy for contiguous CPU tensors)."""

import torch

from dsdiag import _core
from dsdiag.torch import _device, _device_fingerprint

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
    """(address, nbytes) of a contiguous CPU tensor's elements, for the core to hash in
    place; a contiguous copy for a strided one (rare: parameters and their gradients are
    contiguous). (0, 0) for None."""
    if t is None:
        return (0, 0)
    if not t.is_contiguous():
        t = t.detach().contiguous()
        _keep_alive.append(t)
    return (t.data_ptr(), t.numel() * t.element_size())


_keep_alive: list = []  # copies that must outlive one fingerprint call


def fingerprint_each(tensors):
    """One hash per tensor (0 for None): CPU tensors hashed in place by the core (xxHash3);
    where the device path takes them (tensors on a device, or DSDIAG_DEVICE_PATH=force:
    _device.takes), all of them reduced where they live (_device_fingerprint), never copied
    whole to the host. fn_of(tensors) names which for the record."""
    if _device.takes(tensors):
        return _device_fingerprint.fingerprints(tensors)
    hashes = [0] * len(tensors)
    on_host = [i for i, t in enumerate(tensors) if t is not None]
    if on_host:
        try:
            host = _core.fingerprint_groups([[memory_range(tensors[i])] for i in on_host])
        finally:
            del _keep_alive[:]
        for i, h in zip(on_host, host):
            hashes[i] = h
    return hashes


DEVICE_SUM = "dsum"  # an `fp` record's `fn` for device fingerprints (trace/records/fp_record.h)


def fn_of(tensors):
    """The `fn` of a record of these tensors' fingerprints: "" (xxHash3) or DEVICE_SUM."""
    return DEVICE_SUM if _device.takes(tensors) else ""
