"""GradScaler and clip_grad_norm_ probes."""


def install():
    pass
