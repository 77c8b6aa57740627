"""collectives: torch.distributed as the job calls it. init_process_group starts the
rank's probes; new_group numbers the groups; each collective of a whole group (all_reduce,
broadcast, reduce, all_gather(_into_tensor), gather, scatter, reduce_scatter(_tensor),
all_to_all(_single), barrier: _calls.COLLECTIVES) writes a `coll` record and a flight
recorder entry."""

from dsdiag.torch.collectives._calls import install, original, uninstall

__all__ = ["install", "uninstall", "original"]
