"""What the in-process unit tests share: the fake core in place (fake_core), dsdiag.torch
instrumented, and a world-size-1 Gloo group started in this process, once per test module.

DSDIAG_BINARY names the dsdiag executable; the package (and its real _core, whose fingerprint
functions the fake keeps) is found next to it, as `dsdiag run` finds it."""
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from dsdiag_jobs import package_dir  # noqa: E402

import fake_core  # noqa: E402

os.environ.setdefault("OMP_NUM_THREADS", "1")
# The native DDP hook talks to the real core's C++ probes: the fake has none.
os.environ["DSDIAG_DDP_HOOK"] = "python"
FAKE = fake_core.install(package_dir())

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import dsdiag.torch  # noqa: E402
from dsdiag.torch._runtime import RUNTIME  # noqa: E402

torch.set_num_threads(1)


class OneRankTestCase(unittest.TestCase):
    """A rank of a one-rank job, instrumented with `PROBES` (light); fake_core.CALLS is
    cleared before each test."""

    PROBES = "light"

    @classmethod
    def setUpClass(cls):
        cls.run_dir = tempfile.mkdtemp(prefix="dsdiag-unit-")
        dsdiag.torch.instrument(run_dir=cls.run_dir, probes=cls.PROBES, timeout=60)
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
        assert RUNTIME.on, "the probes did not start on the fake core"

    @classmethod
    def tearDownClass(cls):
        dsdiag.torch.uninstrument()
        dist.destroy_process_group()
        shutil.rmtree(cls.run_dir, ignore_errors=True)

    def setUp(self):
        fake_core.clear()

    def calls(self, call=None, **where):
        return fake_core.calls(call, **where)

    def args(self, call, **where):
        return fake_core.args(call, **where)

    def steps(self):
        """The steps begun since the test started, as begin_step's step numbers."""
        return [a["step"] for a in self.args("begin_step")]
