"""Every rank instrumented however the job is launched: torch's own torchrun with
`-m dsdiag.torch`, `dsdiag run -- torchrun ...`, and torch.multiprocessing.spawn under
`dsdiag run` (test_run_ghosts). Each with a submodule skipped on rank 1: missing-grad names
rank 1 and extra.weight, from every rank's trace.

Run by ctest once per Python lane (DSDIAG_TEST_PYTHON); DSDIAG_BINARY names the
dsdiag executable."""
import glob
import os
import subprocess
import unittest

from dsdiag_jobs import DSDIAG, JOBS, PYTHON, JobTestCase, compare, find, package_dir, serious


def torchrun():
    """The lane's own torchrun: the script beside its interpreter, else its module."""
    beside = os.path.join(os.path.dirname(PYTHON), "torchrun")
    return [beside] if os.access(beside, os.X_OK) else [PYTHON, "-m", "torch.distributed.run"]


def torchrun_fails():
    """Why the lane's torchrun cannot start one worker (None when it can). Debian's torch 1.13
    torchrun fails in start_processes before any worker runs ('NoneType' object has no
    attribute 'get'), with or without dsdiag."""
    done = subprocess.run(torchrun() + ["--standalone", "--nproc_per_node", "1", "--no_python",
                                        "true"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=120)
    if done.returncode == 0:
        return None
    last = (done.stderr.strip().splitlines() or ["exit %d" % done.returncode])[-1]
    return "this lane's torchrun starts no worker without dsdiag either: " + last


TORCHRUN_FAILS = torchrun_fails()


@unittest.skipIf(TORCHRUN_FAILS, TORCHRUN_FAILS)
class Launchers(JobTestCase):
    def check_skip_found(self, run):
        self.assertEqual(sorted(os.path.basename(p) for p in glob.glob(run + "/rank-*.jsonl")),
                         ["rank-00000.jsonl", "rank-00001.jsonl"])
        findings = compare(run)
        self.assertEqual(serious(findings), {"missing-grad/error"}, findings)
        f = find(findings, "missing-grad")
        self.assertEqual((f["ranks"], f["subject"], f["step"]), ([1], "extra.weight", 0))

    def test_torchrun_with_dsdiag_torch_as_the_module_instruments_every_rank(self):
        run = self.path("torchrun-m")
        env = dict(os.environ, DSDIAG_OUT=run, FAULT="skip", STEPS="10", OMP_NUM_THREADS="1",
                   PYTHONPATH=package_dir())
        done = subprocess.run(torchrun() + ["--standalone", "--nproc_per_node", "2", "-m",
                                            "dsdiag.torch", os.path.join(JOBS, "ddp_faults.py")],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, timeout=180)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.check_skip_found(run)

    def test_dsdiag_run_around_torchrun_instruments_every_rank(self):
        run = self.path("run-torchrun")
        done = subprocess.run([DSDIAG, "run", "--out", run, "--"] + torchrun() +
                              ["--standalone", "--nproc_per_node", "2",
                               os.path.join(JOBS, "ddp_faults.py")],
                              env=dict(os.environ, FAULT="skip", STEPS="10", OMP_NUM_THREADS="1"),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, timeout=180)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.check_skip_found(run)


if __name__ == "__main__":
    unittest.main()
