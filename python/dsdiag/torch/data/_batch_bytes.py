"""A training batch's fingerprint, the `loader` record's `batch`: what shard-overlap compares
across ranks to tell that the ranks train on the same batches (a DataLoader over the whole
dataset on every rank, with one seed: no DistributedSampler split it).

The core hashes a sample of each tensor's bytes in place (probes::SampleFingerprint: 32
chunks of 64 bytes spread over the tensor, ~0.1 us whatever its size), for the first
MAX_TENSORS tensors of the batch (through tuples, lists and dicts, as collate builds them).
Two ranks fed different samples differ in the sampled chunks; the same samples in the same
order give the same fingerprint. Only dense contiguous CPU tensors are read (a loader's
output before the job moves it): a batch made on a device, or strided, is not fingerprinted
(a copy would cost more than the probe is worth), and the record carries no `batch`.
"""

import torch
from collections.abc import Mapping

from dsdiag import _core

MAX_TENSORS = 4  # inputs, targets, a mask or two: enough to tell batches apart
MAX_DEPTH = 4
MAX_ITEMS = 64  # elements of a collection looked at: a list of strings is no tensor


def fingerprint(batch):
    """The batch's fingerprint (an unsigned 64-bit int), 0 when none of its tensors is read."""
    ranges = []
    _collect(batch, 0, ranges)
    return _core.fingerprint_batch(ranges) if ranges else 0


def _collect(item, depth, ranges):
    if len(ranges) >= MAX_TENSORS:
        return
    if isinstance(item, torch.Tensor):
        if (item.device.type == "cpu" and item.layout == torch.strided and item.is_contiguous()
                and item.numel() > 0):
            ranges.append((item.data_ptr(), item.numel() * item.element_size()))
        return
    if depth >= MAX_DEPTH:
        return
    if isinstance(item, Mapping):
        values = item.values()
    elif isinstance(item, (list, tuple)):
        values = item
    else:
        return
    for n, value in enumerate(values):
        if n >= MAX_ITEMS or len(ranges) >= MAX_TENSORS:
            return
        _collect(value, depth + 1, ranges)
