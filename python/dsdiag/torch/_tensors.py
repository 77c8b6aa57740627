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
    """One hash per tensor (0 for None): CPU tensors hashed in place by the core; tensors on
    a device (CUDA) reduced there (device_fingerprints), never copied whole to the host."""
    hashes = [0] * len(tensors)
    on_host = [i for i, t in enumerate(tensors) if t is not None and t.device.type == "cpu"]
    on_device = [i for i, t in enumerate(tensors) if t is not None and t.device.type != "cpu"]
    if on_host:
        try:
            host = _core.fingerprint_groups([[memory_range(tensors[i])] for i in on_host])
        finally:
            del _keep_alive[:]
        for i, h in zip(on_host, host):
            hashes[i] = h
    if on_device:
        for i, h in zip(on_device, device_fingerprints([tensors[i] for i in on_device])):
            hashes[i] = h
    return hashes


_WORD_DTYPES = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
_MASK64 = (1 << 64) - 1


def device_fingerprints(tensors):
    """A 64-bit fingerprint per tensor computed where the tensor lives: its elements' bits as
    integers, summed and summed squared (int64, wrapping), for all tensors at once and brought
    to the host in one transfer — one sync per call, no host copy of the tensors. Weaker than
    the core's xxHash (blind to a permutation of the elements), which is enough to tell
    replicas that must be bit-identical apart. Works on any device (tested on CPU)."""
    sums = []
    for t in tensors:
        word = _WORD_DTYPES.get(t.element_size(), torch.uint8)
        words = t.detach().reshape(-1).view(word).to(torch.int64)
        sums.append(torch.stack([words.sum(), (words * words).sum(),
                                 torch.tensor(t.numel(), device=words.device)]))
    if not sums:
        return []
    values = torch.stack(sums).to("cpu").tolist()
    return [_mix(a, b, n) for a, b, n in values]


def _mix(a, b, n):
    """Three integers into one nonzero 64-bit value (0 means 'no tensor')."""
    h = 0x9E3779B97F4A7C15
    for v in (a, b, n):
        h = ((h ^ (v & _MASK64)) * 0xBF58476D1CE4E5B9) & _MASK64
        h ^= h >> 31
    return h or 1
