"""DataLoader and DistributedSampler probes (loader waits, sampler shards and epochs)."""


def install():
    pass
