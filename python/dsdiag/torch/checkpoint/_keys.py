"""What load_state_dict did not match, as the `ckpt` load record carries it: the missing and
unexpected keys, and whether they differ only by DDP's `module.` prefix.

The classic mistake: a state dict saved from the DDP wrapper (`ddp.state_dict()`, every key
`module.<name>`) loaded into the bare model, or one saved from the bare model loaded into the
wrapper. Every key is then both missing and unexpected, and strict loading raises a
RuntimeError that lists them all.
"""

PREFIX = "module."
MAX_NAMES = 256  # per list; the record stays small for any model


def differ_only_by_prefix(missing, unexpected):
    """True when every missing key is an unexpected key with `module.` added or removed:
    adding or stripping the prefix is the whole fix."""
    if not missing or not unexpected:
        return False
    present = set(unexpected)
    for key in missing:
        if PREFIX + key in present:
            continue
        if key.startswith(PREFIX) and key[len(PREFIX):] in present:
            continue
        return False
    return True


def capped(names):
    """At most MAX_NAMES names; a longer list ends with one "... N more" entry."""
    names = [str(n) for n in names]
    if len(names) <= MAX_NAMES:
        return names
    return names[:MAX_NAMES - 1] + ["... %d more" % (len(names) - MAX_NAMES + 1)]
