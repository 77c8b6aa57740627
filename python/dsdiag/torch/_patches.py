"""What an instrumentor changed in torch (or the interpreter), so that uninstall() puts it back.

Every hooked area (collectives, ddp, steps, data, rng, checkpoint, scaler, process) owns
one Patches. Its install() replaces attributes through it — a function of a module, a
method of a class — and adds its step hooks, atexit handlers and the like through it; its
uninstall() undoes them all, newest first. Undoing never raises into the job: an attribute
somebody else replaced after us is theirs now and is left as it is.
"""

import inspect

from dsdiag._warn import warn_once

_INHERITED = object()  # the attribute came from a base class: undoing deletes ours


class Patches(object):
    def __init__(self, area):
        self.area = area
        self._originals = {}  # key -> the attribute as it was before our replacement
        self._undo = []  # callables, in the order the changes were made

    def __bool__(self):
        """Something is installed."""
        return bool(self._undo)

    def __getitem__(self, key):
        """The original that replace(..., key) saved (the name by default)."""
        return self._originals[key]

    def replace(self, owner, name, replacement, key=None):
        """owner.name = replacement; returns what was there."""
        original = getattr(owner, name)
        before = vars(owner).get(name, _INHERITED)
        setattr(owner, name, replacement)
        self._originals.setdefault(key if key is not None else name, original)

        def restore():
            if vars(owner).get(name) is not replacement:
                return  # replaced again since, by the job or a library: theirs now
            if before is _INHERITED:
                delattr(owner, name)
            else:
                setattr(owner, name, before)

        self._undo.append(restore)
        return original

    def append(self, hooks, hook):
        """hooks.append(hook) (a list the runtime calls, for instance), removed on undo."""
        hooks.append(hook)
        self.on_undo(lambda: hook in hooks and hooks.remove(hook))

    def on_undo(self, fn):
        """fn() runs when the patches are undone (atexit.unregister, a handle's remove)."""
        self._undo.append(fn)

    def undo(self):
        while self._undo:
            fn = self._undo.pop()
            try:
                fn()
            except Exception as e:  # never into the job
                warn_once("uninstall-" + self.area, "uninstalling %s: %r" % (self.area, e))
        self._originals.clear()


def signature_of(fn):
    """fn's signature, for a wrapper that reads its arguments by name; None where inspect
    cannot read one (some builtins): the wrapper then passes the call through unrecorded."""
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        return None
