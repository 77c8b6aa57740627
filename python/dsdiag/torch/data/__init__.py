"""data: DataLoader and DistributedSampler. The training loop's wait for each batch
(`loader` records, the `data` phase) and its epochs (_iterators, _loader); the shard each
rank's sampler draws (`sampler` records, _sampler) — what loader-starvation, shard-overlap
and epoch-order-repeat read."""

from dsdiag.torch.data import _iterators, _sampler


def install():
    if _iterators.PATCHES:
        return
    _iterators.install()
    _sampler.install()


def uninstall():
    _sampler.PATCHES.undo()
    _iterators.PATCHES.undo()
