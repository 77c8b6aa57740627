"""checkpoint: torch.save, torch.load and nn.Module.load_state_dict as `ckpt` records — what
checkpoint-race, checkpoint-mismatch and rank-died read (_save_load; the file's digest:
_digest; what a checkpoint holds: _loaded; state-dict keys: _keys)."""

from dsdiag.torch.checkpoint._save_load import install, uninstall

__all__ = ["install", "uninstall"]
