"""What dsdiag must never do to a job, on real DDP jobs under dsdiag run: the job's own
communication hook and SIGTERM handler keep working (and the stop is still witnessed), a run
directory the probes cannot write switches them off with one warning while the job computes
the same, spawned ranks seeded per rank are clean; and a rank-conditional barrier is named."""
import os
import re

from dsdiag_jobs import JobTestCase, compare, find, read_trace, run_job, serious


def losses(out):
    return sorted(re.findall(r"final loss \d+ \S+", out))


def trace_records(path, kind):
    return [line for line in read_trace(path) if '"type":"%s"' % kind in line]


class Harmless(JobTestCase):
    def test_the_jobs_own_comm_hook_runs_every_step_and_the_buckets_are_still_recorded(self):
        status, out, err = run_job(self.path("hook"), "ddp_harmless.py", env={"MODE": "commhook"})
        self.assertEqual(status, 0, err)
        self.assertEqual(sorted(re.findall(r"hook calls \d+ \d+", out)),
                         ["hook calls 0 12", "hook calls 1 12"])
        self.assertEqual(serious(compare(self.path("hook"))), set())
        colls = trace_records(os.path.join(self.path("hook"), "rank-00000.jsonl"), "coll")
        self.assertEqual(sum('"tag":"ddp-bucket-0"' in c for c in colls), 12)
        _, off, err = run_job(self.path("hook-off"), "ddp_harmless.py", env={"MODE": "commhook"},
                              extra=["--probes", "off"])
        self.assertEqual(losses(out), losses(off), err)

    def test_the_jobs_own_sigterm_handler_runs_and_the_stop_is_witnessed(self):
        status, out, err = run_job(self.path("term"), "ddp_harmless.py", env={"MODE": "sigterm"},
                                   extra=["--timeout", "10"])
        self.assertNotEqual(status, 0)
        self.assertIn("handler ran 0", out, err)
        f = find(compare(self.path("term")), "rank-died")
        self.assertIsNotNone(f)
        # Sent between steps 4 and 5 (before step 5's forward opened it).
        self.assertEqual((f["ranks"], f["step"]), ([0], 4))
        self.assertIn("SIGTERM", f["summary"])
        self.assertTrue(os.path.exists(os.path.join(self.path("term"), "flight-rank-00000.json")))

    def test_a_run_dir_the_probes_cannot_write_warns_once_and_the_job_computes_the_same(self):
        blocker = self.path("a-file")
        with open(blocker, "w") as f:
            f.write("not a directory\n")
        # No comm hook of the job's here: torch 1.13 itself can abort at exit when a Python
        # comm hook's futures are released by Gloo after Python shut down (probes off too).
        command_env = {"MODE": ""}
        out_dir = self.path("unwritable")
        # dsdiag run makes its --out; the ranks are pointed below a file instead.
        status, out, err = run_job(out_dir, "ddp_harmless.py", env=command_env,
                                   extra=[], wrap=["env", "DSDIAG_OUT=" + blocker + "/run"])
        self.assertEqual(status, 0, err)
        self.assertEqual(err.count("dsdiag: probes off on rank"), 2, err)
        _, off, _ = run_job(self.path("off"), "ddp_harmless.py", env=command_env,
                            extra=["--probes", "off"])
        self.assertEqual(losses(out), losses(off))

    def test_spawned_ranks_seeded_per_rank_are_clean(self):
        status, _, err = run_job(self.path("spawn"), "ddp_harmless.py", nproc=0,
                                 env={"MODE": "spawn"})
        self.assertEqual(status, 0, err)
        findings = compare(self.path("spawn"))
        self.assertEqual(serious(findings), set(), findings)
        self.assertTrue(os.path.exists(os.path.join(self.path("spawn"), "rank-00001.jsonl")))

    def test_a_rank_that_skips_a_barrier_is_named_by_the_majority(self):
        status, _, _ = run_job(self.path("skip"), "ddp_harmless.py", nproc=3,
                               env={"MODE": "skipcoll"}, timeout=90, extra=["--timeout", "5"])
        self.assertNotEqual(status, 0)
        findings = compare(self.path("skip"))
        kinds = serious(findings)
        self.assertTrue(kinds & {"collective-mismatch/error", "hang/error"}, findings)
        f = find(findings, "collective-mismatch") or find(findings, "hang")
        self.assertEqual(f["ranks"], [1], f)
        self.assertEqual(f["step"], 4)
