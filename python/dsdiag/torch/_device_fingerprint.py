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
concatenated. The words get a running sum, and that a running sum of its own (two cumsums,
which widen the words to int64 as they go); the two sums at each part's end are all that
comes back to the host (_device.HostCopy: a [2, k + 1] tensor, in one copy), where each
part's A and B are differences of them (_part_sums). Five kernels and one copy per call
whatever k is: on a GPU the cost of a small reduction is its launches, so the arithmetic on
k numbers is the host's. The indices of the ends live on the device, built once per layout
(a host-to-device copy of pageable memory would wait for the stream). Cost: the two running
sums (16 bytes a word), transiently.
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
    """The tensor's elements' bit patterns as signed integers of the element's width (int64
    words for wider elements): a view, no kernel. cumsum reads them as int64."""
    flat = t.detach().reshape(-1)
    size = flat.element_size()
    word = _WORD_DTYPES.get(min(size, 8), torch.uint8)
    words = flat.view(word) if flat.numel() else flat.new_empty(0, dtype=word)
    if word == torch.uint8 and size == 1 and flat.dtype not in (torch.uint8, torch.bool):
        words = flat.view(torch.int8)  # int8 (and float8): signed as their width
    return words


def _concatenated(words):
    """One vector of several tensors' words. Where their widths differ each is widened to
    int64 first (a kernel each): cat's own promotion would do it too, but only on torches
    that have it."""
    if len(words) == 1:
        return words[0]
    if len({w.dtype for w in words}) > 1:
        words = [w.to(torch.int64) for w in words]
    return torch.cat(words)


class _Layouts(object):
    """Each layout, by (device, lengths): on the device, the index of the last word before
    each part's end (0 where none), the first part's start included; on the host, each
    end's count of words before it."""

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
        last = torch.tensor([max(e - 1, 0) for e in ends], dtype=torch.int64).to(device)
        found = (last, ends)
        with self.lock:
            if len(self.by_key) >= _MAX_LAYOUTS:
                self.by_key.clear()
            self.by_key[key] = found
        return found


LAYOUTS = _Layouts()


class Pending(object):
    """Fingerprints queued on the device: the running sums at the parts' ends on their way
    to the host, and the ends."""

    __slots__ = ("copy", "ends")

    def __init__(self, copy, ends):
        self.copy = copy
        self.ends = ends


def read_all(pendings):
    """The fingerprints of each Pending, as lists: one wait for all (_device.resolve), and
    their sums read from host memory in one piece."""
    if not pendings:
        return []
    hosts = _device.resolve([p.copy for p in pendings])
    c1_all, c2_all = torch.cat(hosts, 1).tolist()
    out, start = [], 0
    for p in pendings:
        end = start + len(p.ends)
        out.append(_part_sums(c1_all[start:end], c2_all[start:end], p.ends))
        start = end
    return out


def _part_sums(c1, c2, ends):
    """Each part's fingerprint from the running sums C1 and C2 at the ends: the sum of
    i * w_i over the first m words is (m + 1) * C1_m - C2_m; a part's A and B are the
    differences at its two ends, its B counted from its own first word (the global one less
    its offset times its A). An end with no word before it reads 0 (its index was clamped)."""
    b_prefix = [(e + 1) * a - b if e else 0 for a, b, e in zip(c1, c2, ends)]
    c1 = [a if e else 0 for a, e in zip(c1, ends)]
    hashes = []
    for j in range(len(ends) - 1):
        a = c1[j + 1] - c1[j]
        b = b_prefix[j + 1] - b_prefix[j] - ends[j] * a
        hashes.append(_mix(a, b, ends[j + 1] - ends[j]))
    return hashes


def queue_words(words, lengths):
    """Queues the fingerprints of consecutive parts of `words` (a vector of signed integers;
    part j has lengths[j] words) and returns their Pending: nothing waits here. On the
    device: C1, the running sum of the words (as int64), C2, the running sum of C1, both
    read at the parts' ends into one [2, k + 1] tensor (index_select: no copy of the running
    sums); the rest is the host's (_part_sums)."""
    last, ends = LAYOUTS.get(words.device, lengths)
    sums = torch.empty((2, len(ends)), dtype=torch.int64, device=words.device)
    if words.numel():
        c1 = words.cumsum(0, dtype=torch.int64)
        torch.index_select(c1, 0, last, out=sums[0])
        torch.index_select(c1.cumsum(0), 0, last, out=sums[1])
    else:
        sums.zero_()
    return Pending(_device.HostCopy(sums), ends)


def queue_bucket(flat, numels):
    """A reduced DDP bucket (a flat tensor of one dtype), parts of numels elements each."""
    per = words_per_element(flat.element_size())
    return queue_words(_words(flat), [n * per for n in numels])


def queue_tensors(tensors):
    """Tensors on one device, concatenated: one Pending for all."""
    words = [_words(t) for t in tensors]
    return queue_words(_concatenated(words), [w.numel() for w in words])


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
