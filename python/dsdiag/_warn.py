"""One warning per problem, on stderr, then silence: a probe that fails switches itself off
and the job runs on (dsdiag never raises into the user's code)."""

import sys
from typing import Set

_said: Set[str] = set()


def warn_once(key: str, message: str) -> None:
    if key in _said:
        return
    _said.add(key)
    try:
        sys.stderr.write("dsdiag: %s\n" % message)
        sys.stderr.flush()
    except Exception:  # stderr closed: nothing more to do
        pass
