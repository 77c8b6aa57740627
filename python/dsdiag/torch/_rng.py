"""RNG probes: the streams each rank draws from (torch, NumPy, random, loader workers)."""


def install():
    pass
