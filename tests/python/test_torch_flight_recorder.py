"""torch's own Flight Recorder on beside dsdiag (TORCH_FR_BUFFER_SIZE, dump on timeout on): a
job whose rank 1 blocks at step 5 (jobs/ddp_faults.py) still gives dsdiag's hang finding with
the culprit's Python line; torch's dump is written for every rank (when dsdiag's watchdog
fires it asks torch's dump API: Gloo dumps on no timeout, and dsdiag ends the ranks before
NCCL's timeout would), holds the job's all_reduces with the job's own Python frames, and the
job ends within dsdiag's timeout + 10 s.

Run by ctest once per Python lane (DSDIAG_TEST_PYTHON); DSDIAG_BINARY names the
dsdiag executable."""
import os
import pickle
import time
import unittest

from dsdiag_jobs import JobTestCase, compare, find, run_job, serious


def has_dump_api():
    try:
        from torch._C._distributed_c10d import _dump_fr_trace  # noqa: F401
    except ImportError:
        return False
    return True


@unittest.skipUnless(has_dump_api(), "this lane's torch has no backend-generic Flight Recorder "
                     "(torch._C._distributed_c10d._dump_fr_trace; torch 1.13 has none)")
class TorchFlightRecorderAlongside(JobTestCase):
    def test_a_hang_gives_both_dumps_and_the_hang_finding_within_the_bound(self):
        run = self.path("hang")
        started = time.monotonic()
        status, _, err = run_job(run, "ddp_faults.py", timeout=60, extra=["--timeout", "5"],
                                 env={"FAULT": "hang", "TORCH_FR_BUFFER_SIZE": "200",
                                      "TORCH_NCCL_DUMP_ON_TIMEOUT": "1"})
        elapsed = time.monotonic() - started
        self.assertNotEqual(status, 0)
        self.assertLess(elapsed, 5 + 10, err)
        findings = compare(run)
        self.assertEqual(serious(findings), {"hang/error"}, findings)
        f = find(findings, "hang")
        self.assertEqual((f["ranks"], f["step"]), ([1], 5))
        self.assertIn("ddp_faults.py:", f["evidence"]["culprits"][0]["python_where"])
        for rank in (0, 1):
            path = os.path.join(run, "nccl_trace_rank_%d" % rank)
            self.assertTrue(os.path.exists(path), (path, os.listdir(run), err))
            with open(path, "rb") as dump:
                fr = pickle.load(dump)
            self.assertIn("version", fr)
            reduces = [e for e in fr["entries"] if e["profiling_name"].endswith("all_reduce")]
            self.assertTrue(reduces, fr["entries"][:3])
            # DDP's bucket allreduces, issued from the job's backward.
            self.assertEqual(reduces[0]["process_group"][1], "default_pg")
        self.assertTrue(os.path.exists(os.path.join(run, "flight-rank-00000.json")))

    def test_torch_fr_dump_temp_file_says_where_torch_dumps_go(self):
        run = self.path("prefix")
        prefix = os.path.join(self.dir, "elsewhere_rank_")
        run_job(run, "ddp_faults.py", timeout=60, extra=["--timeout", "5"],
                env={"FAULT": "hang", "TORCH_FR_BUFFER_SIZE": "50",
                     "TORCH_FR_DUMP_TEMP_FILE": prefix})
        self.assertTrue(os.path.exists(prefix + "0"), os.listdir(self.dir))
        self.assertTrue(os.path.exists(prefix + "1"), os.listdir(self.dir))


if __name__ == "__main__":
    unittest.main()
