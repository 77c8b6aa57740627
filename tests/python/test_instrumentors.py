"""dsdiag.torch's hooked areas, each with install() / uninstall(): instrument() puts every
hook in, uninstrument() ends the trace where it stands and takes them all out again, torch
as it was (jobs/instrument_roundtrip.py, one rank, Gloo).

Run by ctest once per Python lane (DSDIAG_TEST_PYTHON)."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from dsdiag_jobs import JOBS, PYTHON, package_dir, read_trace

ALL_HOOKED = {
    "dist.init_process_group", "dist.new_group", "dist.all_reduce",
    "distributed_c10d.all_reduce", "dist.all_to_all_single", "dist.isend",
    "dist.batch_isend_irecv", "Work.wait", "DDP.__init__", "DDP.forward",
    "DDP.register_comm_hook", "Optimizer.__init__", "Tensor.backward", "DataLoader.__init__",
    "DataLoader.__iter__", "DistributedSampler.__iter__", "torch.save",
    "torch.serialization.load", "Module.load_state_dict", "clip_grad.clip_grad_norm_",
    "sys.excepthook", "signal.signal", "GradScaler.scale", "SGD.step",
}


class Instrumentors(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        """One round trip for all the tests: it is one process's whole life."""
        cls.dir = tempfile.mkdtemp(prefix="dsdiag-py-")
        cls.run_dir = run = os.path.join(cls.dir, "roundtrip")
        os.makedirs(run)
        cls.done = subprocess.run([PYTHON, os.path.join(JOBS, "instrument_roundtrip.py"), run],
                                 env=dict(os.environ, PYTHONPATH=package_dir(),
                                          OMP_NUM_THREADS="1"),
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 universal_newlines=True, timeout=120)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def roundtrip(self):
        done = self.done
        self.assertEqual(done.returncode, 0, done.stderr)
        # No area failed to go in (each says so on stderr as "dsdiag: ...").
        self.assertEqual([l for l in done.stderr.splitlines() if l.startswith("dsdiag: ")], [])
        return self.run_dir, json.loads(done.stdout.strip().splitlines()[-1])

    def test_uninstrument_puts_torch_back_as_it_was(self):
        _, got = self.roundtrip()
        # torch 1.13 has no torch.amp.GradScaler (its torch.cuda.amp one is hooked then);
        # everything else is hooked on both lanes.
        hooked = set(got["patched"]) | {"GradScaler.scale"}
        self.assertEqual(hooked, ALL_HOOKED)
        # torch 2.x's init_process_group put its excepthook over dsdiag's: that one stays
        # (excepthook_dsdiag). SGD.step is checked apart (sgd_step): torch wraps it too.
        restored = set(got["restored"]) | {"GradScaler.scale"}
        self.assertEqual(restored - {"sys.excepthook"}, ALL_HOOKED - {"sys.excepthook", "SGD.step"})
        self.assertFalse(got["excepthook_dsdiag"])
        self.assertTrue(got["sgd_step"])
        self.assertEqual(got["areas"], [])
        self.assertFalse(got["on_after"])

    def test_the_trace_ends_at_uninstrument_and_nothing_is_written_after(self):
        run, _ = self.roundtrip()
        records = [json.loads(r) for r in read_trace(os.path.join(run, "rank-00000.jsonl"))]
        self.assertEqual(records[-1]["type"], "end", records[-1])
        self.assertEqual((records[-1]["reason"], records[-1]["status"]), ("ok", 0))
        self.assertEqual([r["step"] for r in records if r["type"] == "step"], [0, 1, 2])
