"""The device fingerprint: `fp` records with `fn` "dsum" (docs/trace-format.md, `fp`).

A reduction on the device cannot be the host's xxHash3 of the bytes, so it is a function of
its own. For a tensor of n elements whose bit patterns, read as signed integers of the
element's width (int8/16/32/64; wider elements as several int64 words), are w_1 .. w_n:
    A = sum of w_i,   B = sum of i * w_i        (int64, wrapping: mod 2^64)
and the fingerprint is a 64-bit mix of (A, B, n), never 0 (0 means "no tensor"). One element
changed changes A; elements swapped or changed in compensating pairs change B: two replicas
that differ anywhere differ here unless the differences cancel in both sums at once.

Several tensors are fingerprinted with one fixed set of kernels, however many there are: DDP's
reduced bucket in place (its parameters lie end to end in it), or a list of gradients
concatenated. The words get a running sum, and that a running sum of its own (two cumsums);
each tensor's sums are differences of them at its ends (queue_words), its own B the global one
less (its offset) * A. Two int64 per tensor come back to the host
(_device.HostCopy): the bucket's or the list's [2, k] in one copy. The indices of the ends
live on the device, built once per layout (a host-to-device copy of pageable memory would
wait for the stream). Cost: the int64 words and their two running sums (24 bytes a word),
transiently.
"""

import threading

import torch

from dsdiag.torch import _device

_WORD_DTYPES = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
_MASK64 = (1 << 64) - 1
_MAX_LAYOUTS = 256  # the ends of that many layouts (DDP buckets, gradient lists) kept


def words_per_element(dtype_size):
    return max(1, dtype_size // 8)


def _words(t):
    """The tensor's elements' bit patterns as one int64 vector (a view, then one cast)."""
    flat = t.detach().reshape(-1)
    size = flat.element_size()
    word = _WORD_DTYPES.get(min(size, 8), torch.uint8)
    words = flat.view(word) if flat.numel() else flat.new_empty(0, dtype=word)
    if word == torch.uint8 and size == 1 and flat.dtype not in (torch.uint8, torch.bool):
        words = flat.view(torch.int8)  # int8 (and float8): signed as their width
    return words.to(torch.int64)


class _Layouts(object):
    """Each layout's device tensors, by (device, lengths): the index of the last word before
    each part's end (0 where none), whether there is one (0 or 1), and each end's count of
    words before it, for the first part's start too; the parts' offsets."""

    def __init__(self):
        self.lock = threading.Lock()
        self.by_key = {}

    def get(self, device, lengths):
        key = (str(device), tuple(lengths))
        with self.lock:
            found = self.by_key.get(key)
        if found is not None:
            return found
        ends, offset = [0], 0
        for n in lengths:
            offset += n
            ends.append(offset)
        def as_device(values):
            return torch.tensor(values, dtype=torch.int64).to(device)

        found = (as_device([max(e - 1, 0) for e in ends]), as_device([int(e > 0) for e in ends]),
                 as_device(ends), as_device(ends[:-1]))
        with self.lock:
            if len(self.by_key) >= _MAX_LAYOUTS:
                self.by_key.clear()
            self.by_key[key] = found
        return found


LAYOUTS = _Layouts()


class Pending(object):
    """Fingerprints queued on the device: their sums on their way to the host."""

    __slots__ = ("copy", "lengths")

    def __init__(self, copy, lengths):
        self.copy = copy
        self.lengths = lengths


def read_all(pendings):
    """The fingerprints of each Pending, as lists: one wait for all (_device.resolve), and
    their sums read from host memory in one piece."""
    if not pendings:
        return []
    hosts = _device.resolve([p.copy for p in pendings])
    a_all, b_all = torch.cat(hosts, 1).tolist()
    out, start = [], 0
    for p in pendings:
        end = start + len(p.lengths)
        out.append([_mix(a, b, n) for a, b, n in zip(a_all[start:end], b_all[start:end],
                                                    p.lengths)])
        start = end
    return out


def queue_words(words, lengths):
    """Queues the fingerprints of consecutive parts of `words` (an int64 vector; part j has
    lengths[j] words) and returns their Pending: nothing waits here.

    With C1 the running sum of w and C2 the running sum of C1 (C1_0 = C2_0 = 0), the sum of
    i * w_i over the first m words is (m + 1) * C1_m - C2_m: two cumsums, no position vector,
    and reads at the parts' ends only (index_select: no copy of the running sums)."""
    last, present, ends, offsets = LAYOUTS.get(words.device, lengths)
    if words.numel():
        first = words.cumsum(0)
        c1 = first.index_select(0, last) * present
        c2 = first.cumsum(0).index_select(0, last) * present
    else:
        c1 = c2 = torch.zeros_like(ends)
    b_prefix = (ends + 1) * c1 - c2
    a = c1[1:] - c1[:-1]
    # Each part's B from its own first word: the global one less its offset times its A.
    b = b_prefix[1:] - b_prefix[:-1] - offsets * a
    return Pending(_device.HostCopy(torch.stack([a, b])), list(lengths))


def queue_bucket(flat, numels):
    """A reduced DDP bucket (a flat tensor of one dtype), parts of numels elements each."""
    per = words_per_element(flat.element_size())
    return queue_words(_words(flat), [n * per for n in numels])


def queue_tensors(tensors):
    """Tensors on one device, concatenated: one Pending for all."""
    words = [_words(t) for t in tensors]
    return queue_words(torch.cat(words) if len(words) > 1 else words[0],
                       [w.numel() for w in words])


def queue_each(tensors):
    """The tensors (None skipped) queued by device: [(their indices in `tensors`, Pending)]."""
    groups = {}
    for i, t in enumerate(tensors):
        if t is not None:
            groups.setdefault(t.device, []).append(i)
    return [(indices, queue_tensors([tensors[i] for i in indices]))
            for indices in groups.values()]


def fingerprints(tensors):
    """The device fingerprint of each tensor (0 for None), one wait per call: tensors grouped
    by device, queued, then read together."""
    hashes = [0] * len(tensors)
    queued = queue_each(tensors)
    for (indices, _), got in zip(queued, read_all([p for _, p in queued])):
        for i, h in zip(indices, got):
            hashes[i] = h
    return hashes


def _mix(a, b, n):
    """Three integers into one nonzero 64-bit value (0 means 'no tensor')."""
    h = 0x9E3779B97F4A7C15
    for v in (a, b, n):
        h = ((h ^ (v & _MASK64)) * 0xBF58476D1CE4E5B9) & _MASK64
        h ^= h >> 31
    return h or 1
