"""Checkpoint probes: torch.save / torch.load / load_state_dict."""


def install():
    pass
