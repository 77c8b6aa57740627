"""python -m dsdiag ARGS: the `dsdiag` command (dsdiag/_cli.py)."""

import sys

from dsdiag._cli import main

if __name__ == "__main__":
    sys.exit(main())
