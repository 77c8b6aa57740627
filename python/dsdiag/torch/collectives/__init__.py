"""collectives: torch.distributed as the job calls it. init_process_group starts the
rank's probes; new_group numbers the groups; each collective of a whole group (all_reduce,
broadcast, reduce, all_gather(_into_tensor), gather, scatter, reduce_scatter(_tensor),
all_to_all(_single), barrier: _calls.COLLECTIVES) writes a `coll` record and a flight
recorder entry; each point-to-point message (send, recv, isend, irecv, batch_isend_irecv's
ops: _p2p) a `p2p` record and an entry of the recorder's p2p list, numbered per pair."""

from dsdiag.torch.collectives._calls import install, original, uninstall

__all__ = ["install", "uninstall", "original"]
