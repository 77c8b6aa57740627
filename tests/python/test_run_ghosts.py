"""dsdiag run on real DDP jobs (torch.distributed on Gloo, 2 ranks): each user mistake gives
its finding, naming the rank, the step and the parameter; a clean job gives none; the job
computes the same losses with and without dsdiag.

Run by ctest once per Python lane (DSDIAG_TEST_PYTHON); DSDIAG_BINARY names the
dsdiag executable."""
import json
import os
import shutil
import subprocess
import unittest

from dsdiag_jobs import DSDIAG, JOBS, PYTHON, JobTestCase, compare, find, run_job, serious, timed


def native_hook_built():
    """Whether the build holds a C++ DDP hook for this lane's torch (the package `dsdiag run`
    puts on the job's path: <dsdiag's directory>/python)."""
    package = os.path.join(os.path.dirname(os.path.realpath(shutil.which(DSDIAG) or DSDIAG)),
                           "python")
    code = ("import sys, torch; sys.path.insert(0, %r); from dsdiag.torch.ddp import _comm_hook; "
            "print(_comm_hook._native_module() is not None)" % package)
    done = subprocess.run([PYTHON, "-c", code], stdout=subprocess.PIPE, universal_newlines=True,
                          timeout=120)
    return done.stdout.strip() == "True"


def ddp_evidence(run, rank):
    """What a rank's trace holds of DDP: its bucket allreduces (seq, op, dtype, n, tag) and
    its gradients' hashes at the allreduce and before the optimizer step, per step."""
    colls, hashes = [], {"after-sync": [], "pre-step": []}
    with open(os.path.join(run, "rank-%05d.jsonl" % rank)) as f:
        for line in f:
            r = json.loads(line)
            if r.get("type") == "coll":
                colls.append((r["seq"], r["op"], r["dtype"], r["n"], r["tag"]))
            elif r.get("type") == "fp" and r.get("why") in hashes:
                hashes[r["why"]].append((r["step"], r["h"]))
            elif r.get("type") == "step" and r.get("pre_step_fp") == "grad":
                hashes["pre-step"].append((r["step"], "as after-sync"))
    return dict(hashes, colls=sorted(colls))


class DsdiagRunGhosts(JobTestCase):
    def test_a_clean_job_has_no_finding_and_the_same_losses_as_without_dsdiag(self):
        status, out, err = run_job(self.path("clean"), "ddp_faults.py")
        self.assertEqual(status, 0, err)
        self.assertEqual(serious(compare(self.path("clean"))), set())
        with_dsdiag = sorted(l for l in out.splitlines() if l.startswith("final loss"))
        self.assertEqual(len(with_dsdiag), 2)
        # The same job without dsdiag's probes (--probes off: the launcher alone).
        off = subprocess.run([DSDIAG, "run", "--probes", "off", "--nproc", "2", "--out",
                              self.path("off"), "--", PYTHON, os.path.join(JOBS, "ddp_faults.py")],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             universal_newlines=True, timeout=120)
        self.assertRanToItsEnd(off.returncode, off.stderr)
        without = sorted(l for l in off.stdout.splitlines() if l.startswith("final loss"))
        self.assertEqual(with_dsdiag, without)

    def test_a_skipped_submodule_is_missing_grad_even_with_find_unused_parameters(self):
        status, _, err = run_job(self.path("skip"), "ddp_faults.py", env={"FAULT": "skip"})
        self.assertEqual(status, 0, err)
        findings = compare(self.path("skip"))
        self.assertEqual(serious(findings), {"missing-grad/error"}, findings)
        f = find(findings, "missing-grad")
        self.assertEqual(f["ranks"], [1])
        self.assertEqual(f["subject"], "extra.weight")
        self.assertEqual(f["step"], 0)

    def test_a_gradient_changed_after_the_allreduce_names_that_rank_at_two_ranks(self):
        # Light mode hashes a gradient whole at the allreduce and again before the step only
        # when it may have changed: each way of changing it must still be seen.
        for fault in ("desync", "desync-data", "desync-replace"):
            with self.subTest(fault=fault):
                status, _, err = run_job(self.path(fault), "ddp_faults.py", env={"FAULT": fault})
                self.assertEqual(status, 0, err)
                findings = compare(self.path(fault))
                self.assertEqual(serious(findings), {"grad-desync/error"}, findings)
                f = find(findings, "grad-desync")
                self.assertEqual((f["ranks"], f["step"], f["subject"]), ([0], 5, "body.0.weight"))
                self.assertIsNotNone(find(findings, "replica-divergence", "info"))

    def test_the_cpp_ddp_hook_records_what_the_python_hook_records(self):
        # Where the build has a C++ DDP hook for this lane's torch (torch 2.13's wheel), it is
        # the one used; DSDIAG_DDP_HOOK=python takes the Python one. Both write the same
        # bucket allreduces and the same gradient hashes at the allreduce and before the step.
        traces = {}
        for hook in ("default", "python"):
            env = {"PRINT_DDP_HOOK": "1", "STEPS": "8"}
            if hook == "python":
                env["DSDIAG_DDP_HOOK"] = "python"
            status, out, err = run_job(self.path(hook), "ddp_faults.py", env=env)
            self.assertEqual(status, 0, err)
            self.assertNotIn("C++ DDP hook is not used", err)
            used = {l.split()[3] for l in out.splitlines() if l.startswith("ddp hook")}
            traces[hook] = (used, [ddp_evidence(self.path(hook), r) for r in (0, 1)])
        if not native_hook_built():
            self.skipTest("no C++ DDP hook for this lane's torch (%s): the Python one ran"
                          % traces["default"][0])
        self.assertEqual(traces["default"][0], {"c++"})
        self.assertEqual(traces["python"][0], {"python"})
        for rank in (0, 1):
            default, python = traces["default"][1][rank], traces["python"][1][rank]
            self.assertEqual(default, python, "rank %d" % rank)
            self.assertEqual(len(default["after-sync"]), 8)

    @timed
    def test_a_rank_that_computes_slower_is_a_straggler(self):
        status, _, err = run_job(self.path("slow"), "ddp_faults.py",
                                 env={"FAULT": "slow", "STEPS": "15"})
        self.assertEqual(status, 0, err)
        findings = compare(self.path("slow"))
        stragglers = [f for f in findings if f["kind"] == "straggler"]
        self.assertEqual(len(stragglers), 1, findings)
        self.assertEqual(stragglers[0]["ranks"], [1])

    def test_an_exception_on_one_rank_is_one_error_with_its_type_and_message(self):
        status, _, _ = run_job(self.path("raise"), "ddp_faults.py", env={"FAULT": "raise"})
        self.assertNotEqual(status, 0)
        findings = compare(self.path("raise"))
        self.assertEqual(serious(findings), {"rank-died/error"}, findings)
        f = find(findings, "rank-died")
        self.assertEqual(f["ranks"], [1])
        self.assertIn("ValueError: bad batch at step 7", f["summary"])

    @timed
    def test_a_rank_that_blocks_is_the_hang_with_its_python_line(self):
        status, _, _ = run_job(self.path("hang"), "ddp_faults.py", env={"FAULT": "hang"},
                               timeout=60, extra=["--timeout", "5"])
        self.assertNotEqual(status, 0)
        findings = compare(self.path("hang"))
        self.assertEqual(serious(findings), {"hang/error"}, findings)
        f = find(findings, "hang")
        self.assertEqual((f["ranks"], f["step"]), ([1], 5))
        culprit = f["evidence"]["culprits"][0]
        self.assertTrue(culprit["python_where"].endswith("in <module>"), culprit)
        self.assertIn("ddp_faults.py:", culprit["python_where"])
        with open(os.path.join(JOBS, "ddp_faults.py")) as job:
            lines = job.read().splitlines()
        self.assertIn("time.sleep", lines[
            int(culprit["python_where"].split("ddp_faults.py:")[1].split(" ")[0]) - 1])

    def test_a_rank_that_issues_another_collective_is_the_mismatch(self):
        status, _, _ = run_job(self.path("extra"), "ddp_faults.py", nproc=3,
                               env={"FAULT": "extra", "STEPS": "8"}, timeout=60,
                               extra=["--timeout", "5"])
        self.assertNotEqual(status, 0)
        findings = compare(self.path("extra"))
        self.assertEqual(serious(findings), {"collective-mismatch/error"}, findings)
        f = find(findings, "collective-mismatch")
        self.assertEqual((f["ranks"], f["step"], f["subject"]), ([1], 4, "pg 0 seq 4"))

    def test_a_rank_with_more_batches_loses_its_peer_and_the_one_that_finished_is_named(self):
        status, _, _ = run_job(self.path("uneven"), "ddp_faults.py", env={"FAULT": "uneven"},
                               timeout=60, extra=["--timeout", "10"])
        self.assertEqual(status, 1)  # rank 1's error; no abort at exit
        findings = compare(self.path("uneven"))
        self.assertEqual(serious(findings), {"rank-died/error"}, findings)
        f = find(findings, "rank-died")
        self.assertEqual((f["ranks"], f["step"]), ([0], 20))
        self.assertIn("uneven inputs", f["summary"])

    def test_spawned_ranks_are_instrumented_and_the_seed_check_misses_what_dsdiag_names(self):
        status, out, err = run_job(self.path("spawn"), "seed_spawn.py", nproc=0)
        self.assertEqual(status, 0, err)
        self.assertNotIn("has no gradient", out)  # the folk remedy sees nothing
        findings = compare(self.path("spawn"))
        f = find(findings, "missing-grad")
        self.assertIsNotNone(f, findings)
        self.assertEqual(f["ranks"], [1])
        self.assertEqual(f["subject"], "refine.weight")


if __name__ == "__main__":
    unittest.main()
