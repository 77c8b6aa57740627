"""fsdp: the parameters FSDP2's `fully_shard` takes, fingerprinted whole on each rank before
it shards them (_fully_shard): the `params` table and the `fp` param `init` record that
init-divergence compares, so that ranks that built their model from different seeds are
named although each keeps only its shard afterwards."""

from dsdiag.torch.fsdp._fully_shard import install, uninstall

__all__ = ["install", "uninstall"]
