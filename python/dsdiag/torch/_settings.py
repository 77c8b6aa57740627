"""What the job asked of dsdiag: the run dir, the probe mode, the collective watchdog's
timeout — from instrument(...) or from the environment `dsdiag run` sets."""

import os
from typing import Optional


class Settings(object):
    def __init__(self, run_dir: Optional[str] = None, probes: Optional[str] = None,
                 timeout: Optional[float] = None) -> None:
        self.run_dir = run_dir if run_dir is not None else os.environ.get("DSDIAG_OUT", "")
        self.probes = probes if probes is not None else os.environ.get("DSDIAG_PROBES", "light")
        if timeout is None:
            text = os.environ.get("DSDIAG_TIMEOUT", "")
            timeout = float(text) if text else 300.0
        self.timeout = float(timeout)
        if self.probes not in ("off", "light", "full"):
            raise ValueError("dsdiag: probes=%r: expected off, light or full" % (self.probes,))

    @property
    def off(self) -> bool:
        return self.probes == "off"

    @property
    def full(self) -> bool:
        return self.probes == "full"
