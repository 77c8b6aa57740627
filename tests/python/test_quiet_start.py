"""Start-up without noise: however a clean 2-rank DDP job is instrumented — `dsdiag run`,
torchrun with `-m dsdiag.torch` (the start-up hook on PYTHONPATH too, as for a cluster), or
the job's own dsdiag.torch.instrument() — dsdiag instruments each rank once and writes
nothing to stderr but `dsdiag run`'s own report. (The start-up hook used to instrument
while dsdiag.torch's own instrument() was importing torch: five "collectives not
instrumented ... circular import" lines per rank.)"""
import glob
import os
import subprocess
import unittest

from dsdiag_jobs import JOBS, JobTestCase, compare, package_dir, run_job, serious
from test_launchers import TORCHRUN_FAILS, torchrun


def dsdiag_lines(stderr):
    """What dsdiag said from within the ranks: its lines, but `dsdiag run`'s own report of
    the run (its start, its end and the next command)."""
    return [line for line in stderr.splitlines() if "dsdiag" in line and
            not line.startswith(("dsdiag run: ", "  next: dsdiag compare "))]


class QuietStart(JobTestCase):
    def check_clean(self, run, stderr):
        self.assertEqual(dsdiag_lines(stderr), [], stderr)
        self.assertEqual(len(glob.glob(run + "/rank-*.jsonl")), 2, stderr)
        findings = compare(run)
        self.assertEqual(serious(findings), set(), findings)

    def torchrun(self, args, env):
        env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=package_dir(), **env)
        done = subprocess.run(torchrun() + ["--standalone", "--nproc_per_node", "2"] + args,
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, timeout=180)
        self.assertEqual(done.returncode, 0, done.stderr)
        return done.stderr

    def test_dsdiag_run_is_quiet(self):
        run = self.path("run")
        status, _, err = run_job(run, "ddp_faults.py", env={"STEPS": "8"})
        self.assertEqual(status, 0, err)
        self.check_clean(run, err)

    @unittest.skipIf(TORCHRUN_FAILS, TORCHRUN_FAILS)
    def test_torchrun_dash_m_dsdiag_torch_is_quiet(self):
        run = self.path("torchrun-m")
        err = self.torchrun(["-m", "dsdiag.torch", os.path.join(JOBS, "ddp_faults.py")],
                            {"DSDIAG_OUT": run, "STEPS": "8"})
        self.check_clean(run, err)

    @unittest.skipIf(TORCHRUN_FAILS, TORCHRUN_FAILS)
    def test_instrument_call_is_quiet(self):
        run = self.path("instrument")
        err = self.torchrun([os.path.join(JOBS, "ddp_instrument_call.py"), run], {})
        self.check_clean(run, err)


if __name__ == "__main__":
    unittest.main()
