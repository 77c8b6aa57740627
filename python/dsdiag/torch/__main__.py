"""python3 -m dsdiag.torch SCRIPT [ARGS...]: runs SCRIPT as __main__ with the probes
installed from the environment (DSDIAG_OUT, DSDIAG_PROBES, DSDIAG_TIMEOUT), for launchers
that start each rank themselves: torchrun --nproc_per_node 8 -m dsdiag.torch train.py."""

import runpy
import sys


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        sys.stderr.write("usage: python3 -m dsdiag.torch SCRIPT [ARGS...]\n")
        return 2
    from dsdiag.torch import instrument_from_environment

    instrument_from_environment(force=True)
    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    if script == "-m":  # python3 -m dsdiag.torch -m package.module ARGS
        if len(sys.argv) < 2:
            sys.stderr.write("usage: python3 -m dsdiag.torch -m MODULE [ARGS...]\n")
            return 2
        module = sys.argv[1]
        sys.argv = sys.argv[1:]
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    else:
        runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
