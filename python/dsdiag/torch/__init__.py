"""dsdiag for PyTorch jobs: hooks torch.distributed, DDP, the optimizers, the data loaders,
the random streams, checkpoints and GradScaler, with no change to the job's script.

    import dsdiag.torch
    dsdiag.torch.instrument(run_dir="runs/r1", probes="light", timeout=300)
    torch.distributed.init_process_group("gloo")   # the probes start here
    ...
    dsdiag.torch.uninstrument()   # optional: the trace ends, torch is as it was

One subpackage per hooked area, each with install() / uninstall() (registered in
_install.AREAS): collectives, ddp, steps, data, rng, checkpoint, scaler, process, compile.

``dsdiag run`` and ``python3 -m dsdiag.torch SCRIPT`` do the same from the environment
(DSDIAG_OUT, DSDIAG_PROBES, DSDIAG_TIMEOUT). Nothing is recorded in Python: every record
goes through the C++ core (dsdiag._core), one trace writer and one flight recorder per rank.
"""

from dsdiag.torch._install import (instrument, instrument_from_environment, instrumented,
                                   uninstrument)

__all__ = ["instrument", "uninstrument", "instrument_from_environment", "instrumented"]
