"""collectives: torch.distributed as the job calls it. init_process_group starts the
rank's probes; new_group numbers the groups; all_reduce, broadcast, reduce, all_gather,
reduce_scatter, all_to_all_single and barrier each write a `coll` record and a flight
recorder entry (_calls)."""

from dsdiag.torch.collectives._calls import install, original, uninstall

__all__ = ["install", "uninstall", "original"]
