"""device fingerprints (`fp` records with `fn` "dsum"), in-process: what the kernels and the
host's arithmetic give (_device_fingerprint) equals the definition — A = sum of w_i,
B = sum of i * w_i over a tensor's words, mixed with their count — computed here word by word,
for every word width, for several tensors at once, for a DDP bucket's parts (empty ones at
either end too), and for sums that wrap around 2^64."""
import struct
import unittest

import one_rank  # noqa: F401  (the package importable, the fake core in place)

import torch

from dsdiag.torch import _device_fingerprint

# A word per element as _device_fingerprint reads it: signed of the element's width, except
# uint8 and bool (unsigned); elements wider than 8 bytes are several int64 words.
_FORMATS = {1: "b", 2: "h", 4: "i", 8: "q"}


def words_of(t):
    raw = t.detach().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
    width = min(t.element_size(), 8)
    fmt = "B" if t.dtype in (torch.uint8, torch.bool) else _FORMATS[width]
    return struct.unpack("<%d%s" % (len(raw) // width, fmt), raw)


def definition(words):
    a = sum(words)
    b = sum(i * w for i, w in enumerate(words, 1))
    return _device_fingerprint._mix(a, b, len(words))


class DeviceFingerprint(unittest.TestCase):
    def test_each_width_gives_the_definitions_value(self):
        torch.manual_seed(0)
        tensors = [torch.randn(5), torch.randn(3, 4).to(torch.bfloat16),
                   torch.randn(2, 3).to(torch.float16), torch.randn(7).double(),
                   torch.randint(-128, 127, (9,), dtype=torch.int8),
                   torch.randint(0, 255, (6,), dtype=torch.uint8), torch.rand(4) > 0.5,
                   torch.randn(3, dtype=torch.complex128), torch.empty(0)]
        for t in tensors:
            self.assertEqual(_device_fingerprint.fingerprints([t]), [definition(words_of(t))],
                             t.dtype)

    def test_tensors_of_several_widths_at_once_each_get_their_own(self):
        torch.manual_seed(1)
        tensors = [torch.randn(4), None, torch.randn(6).to(torch.bfloat16), torch.empty(0),
                   torch.randn(2).double()]
        expected = [definition(words_of(t)) if t is not None else 0 for t in tensors]
        self.assertEqual(_device_fingerprint.fingerprints(tensors), expected)

    def test_a_buckets_parts_each_get_their_own_empty_ones_too(self):
        torch.manual_seed(2)
        flat = torch.randn(12)
        for numels in ([3, 4, 5], [0, 12], [12, 0], [0, 5, 0, 7, 0], [12]):
            pending = _device_fingerprint.queue_bucket(flat, numels)
            got = _device_fingerprint.read_all([pending])[0]
            parts, start = [], 0
            for n in numels:
                parts.append(definition(words_of(flat[start:start + n])))
                start += n
            self.assertEqual(got, parts, numels)

    def test_sums_that_wrap_around_2_to_the_64_match(self):
        big = torch.tensor([2 ** 62, 2 ** 62 + 7, -(2 ** 63), 2 ** 63 - 1] * 50,
                           dtype=torch.int64)
        self.assertEqual(_device_fingerprint.fingerprints([big]), [definition(words_of(big))])

    def test_one_changed_or_two_swapped_elements_change_it(self):
        t = torch.arange(16, dtype=torch.float32)
        changed, swapped = t.clone(), t.clone()
        changed[5] += 1
        swapped[[3, 9]] = swapped[[9, 3]]
        hashes = _device_fingerprint.fingerprints([t, changed, swapped])
        self.assertEqual(len(set(hashes)), 3, hashes)


if __name__ == "__main__":
    unittest.main()
