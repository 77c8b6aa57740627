"""The modules that own an optimizer's parameters, found without the job's help, and the
names the parameters have in them.

An optimizer holds tensors only, and a Parameter does not point to the module it belongs
to. The job's frames may hold the model under any name, inside a trainer object, or not at
all once a builder function returned, so neither the caller's locals nor an argument can be
relied on. The garbage collector sees every nn.Module alive (a module is a container it
tracks): one pass over its objects finds them all, the top-level ones (no other module's
child) name their parameters as `named_parameters()` and `state_dict()` do. The pass is
linear in the number of live objects and is made once per run, when the first training
step begins.
"""

import gc

import torch

# torch.compile's wrapper holds the model as `_orig_mod`: the names the job knows are inside.
_WRAPPER_PREFIXES = ("_orig_mod.",)


def owners(params):
    """[(module, {id(p): name})] for the top-level modules that own some of `params`, the
    one owning the most first (of two alike, the one owning an earlier parameter: the same
    order on every rank); each parameter in one owner only (the first one listed).
    Parameters no module owns are in none."""
    order = {id(p): i for i, p in enumerate(params)}
    found = []
    for root in _top_level_modules():
        names = _names_in(root, order)
        if names:
            found.append((root, names))
    found.sort(key=lambda owner: (-len(owner[1]), min(order[key] for key in owner[1])))
    claimed = set()
    result = []
    for root, names in found:
        mine = {key: name for key, name in names.items() if key not in claimed}
        if mine:
            claimed.update(mine)
            result.append((root, mine))
    return result


def _top_level_modules():
    """Every live nn.Module that is no other module's child. type() rather than isinstance:
    isinstance asks a proxy object's __class__, which may raise."""
    modules = [o for o in gc.get_objects() if issubclass(type(o), torch.nn.Module)]
    children = set()
    for m in modules:
        for child in getattr(m, "_modules", {}).values():
            if child is not None:
                children.add(id(child))
    return [m for m in modules if id(m) not in children]


def _names_in(root, wanted):
    names = {}
    try:
        for name, p in root.named_parameters():
            if id(p) in wanted and id(p) not in names:
                names[id(p)] = _strip(name)
    except Exception:  # a module half built or broken: it owns nothing here
        return {}
    return names


def _strip(name):
    for prefix in _WRAPPER_PREFIXES:
        while name.startswith(prefix):
            name = name[len(prefix):]
    return name
