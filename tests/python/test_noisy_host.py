"""Verdicts that survive a noisy host: clean two-rank DDP jobs run while something else takes
the same CPUs, under dsdiag run. Nothing in the jobs is wrong, so no warning or error may
blame a rank for the host's load; where one rank is clearly held back by it, dsdiag says so:
a straggler at info whose cause is `cpu-starved` (its thread waited for a core), not a slower
rank. Beside CPU hogs that oversubscribe the host 2x and 4x, a clean job is no straggler
warning, and a rank slower for a reason of its own (a 3x batch, a sleep) still is, named.

Run by ctest once per Python lane, alone (RUN_SERIAL: the load is the test's own); the named
slow rank and the pinned hog on the torch 2 lane only (cause_split_lane)."""
import os
import subprocess
import sys
import unittest

from dsdiag_jobs import PYTHON, JobTestCase, compare, lane_needs, run_job, serious

# Whether a late rank is named, and for which cause, is the analyzer's reading of the core's
# CPU and run-queue clocks, the same on every lane: those checks run on the torch 2 lane. A
# clean job must blame no rank on every lane (each hooks torch its own way).
cause_split_lane = lane_needs((2, 0), "the cause split is lane-independent; checked on torch 2")

# A CPU hog pinned to one CPU: busy 3 ms, asleep 6 ms, for `seconds` (bounded: it ends by
# itself). It takes about a third of that CPU while it lasts.
HOG = """
import os, sys, time
os.sched_setaffinity(0, {int(sys.argv[1])})
end = time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    busy = time.monotonic() + 0.003
    while time.monotonic() < busy:
        pass
    time.sleep(0.006)
"""

# An unpinned CPU hog: busy for `seconds` (bounded: it ends by itself).
SPIN = """
import sys, time
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    pass
"""


def blamed(findings):
    """The warnings and errors that name a rank for timing (straggler, loader-starvation)."""
    return [f for f in findings if f["severity"] != "info"
            and f["kind"] in ("straggler", "loader-starvation")]


def straggler(findings):
    found = [f for f in findings if f["kind"] == "straggler"]
    return found[0] if found else None


class NoisyHost(JobTestCase):
    def run_beside_hogs(self, name, oversubscription, env=None):
        """The job (two ranks) beside enough hogs that the host's CPUs have `oversubscription`
        busy threads each."""
        count = oversubscription * len(os.sched_getaffinity(0)) - 2
        hogs = [subprocess.Popen([sys.executable, "-c", SPIN, "90"]) for _ in range(count)]
        try:
            status, out, err = run_job(self.path(name), "noisy_host.py",
                                       env=dict(env or {}, STEPS="20"))
        finally:
            for hog in hogs:
                hog.kill()
                hog.wait()
        self.assertEqual(status, 0, err)
        return compare(self.path(name))

    def test_clean_jobs_beside_hogs_at_2x_and_4x_blame_no_rank(self):
        for factor in (2, 4):
            findings = self.run_beside_hogs("clean-%dx" % factor, factor)
            self.assertEqual(serious(findings, timing=True), set(), (factor, findings))
            self.assertEqual(blamed(findings), [], (factor, findings))

    @cause_split_lane
    def test_a_rank_slower_for_its_own_reason_is_named_beside_the_same_hogs(self):
        # Rank 0, whom the host's scheduler favours as often as not: the finding must come
        # from the rank's own work, not from which rank the hogs happen to starve.
        for factor, slow, cause in ((4, "compute", "more-compute"), (2, "sleep", "blocked")):
            findings = self.run_beside_hogs("slow-%s-%dx" % (slow, factor), factor,
                                            env={"SLOW_RANK": "0", "SLOW": slow})
            f = straggler(findings)
            self.assertIsNotNone(f, (factor, slow, findings))
            self.assertIn(f["severity"], ("warning", "error"), f)
            self.assertEqual(f["ranks"], [0], f)
            self.assertEqual(f["evidence"]["cause"], cause, f)
            self.assertTrue(f["evidence"]["ranks"][0]["persistent"], f)

    def run_with_hog(self, name, cpu, env):
        hog = subprocess.Popen([sys.executable, "-c", HOG, str(cpu), "90"])
        try:
            status, out, err = run_job(self.path(name), "noisy_host.py", env=env)
        finally:
            hog.kill()
            hog.wait()
        self.assertEqual(status, 0, err)
        return compare(self.path(name))

    @cause_split_lane
    @unittest.skipUnless(len(os.sched_getaffinity(0)) >= 2, "needs two CPUs to pin two ranks")
    def test_a_rank_sharing_its_cpu_with_another_process_is_contention_not_a_straggler(self):
        findings = self.run_with_hog("pinned", cpu=1, env={"PIN": "1"})
        self.assertEqual(serious(findings, timing=True), set(), findings)
        self.assertEqual(blamed(findings), [], findings)
        stragglers = [f for f in findings if f["kind"] == "straggler"]
        for f in stragglers:  # where the load shows, it is named as the host's
            self.assertEqual(f["severity"], "info", f)
            self.assertEqual(f["evidence"]["cause"], "cpu-starved", f)
            self.assertIn("contention on a shared host", f["summary"])

    def test_two_clean_jobs_sharing_the_host_blame_no_rank(self):
        # Another job on the same CPUs: two clean jobs at once, neither pinned.
        other = subprocess.Popen(
            [sys.executable, "-c", "import sys; sys.path.insert(0, %r); import dsdiag_jobs as j;"
             " s = j.run_job(%r, 'noisy_host.py'); sys.exit(s[0])"
             % (os.path.dirname(os.path.abspath(__file__)), self.path("other"))],
            env=dict(os.environ, DSDIAG_TEST_PYTHON=PYTHON))
        try:
            status, _, err = run_job(self.path("mine"), "noisy_host.py")
        finally:
            other_status = other.wait(timeout=180)
        self.assertEqual(status, 0, err)
        self.assertEqual(other_status, 0)
        for run in ("mine", "other"):
            findings = compare(self.path(run))
            self.assertEqual(serious(findings, timing=True), set(), (run, findings))
            self.assertEqual(blamed(findings), [], (run, findings))


if __name__ == "__main__":
    unittest.main()
