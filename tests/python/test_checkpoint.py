"""Checkpoints in real DDP jobs under dsdiag run (jobs/checkpoint_job.py, Gloo): every rank
saving one path is a checkpoint-race, ranks resuming from different files a
checkpoint-mismatch, a load_state_dict that trips over DDP's `module.` prefix or a
map_location the rank cannot honour is a rank-died whose trace holds the load; the right way
(rank 0 saves, a barrier, every rank loads) and per-rank files are clean, and the job
computes the same losses with and without dsdiag."""
import json
import os
import subprocess
import unittest

from dsdiag_jobs import DSDIAG, JOBS, PYTHON, JobTestCase, compare, find, run_job, serious

JOB = "checkpoint_job.py"


class Checkpoints(JobTestCase):
    def run_checkpoint_job(self, name, fault="", nproc=2, expect_status=0):
        out, ckpt = self.path(name), self.path(name + "-ckpt")
        os.makedirs(ckpt)
        status, stdout, err = run_job(out, JOB, nproc=nproc,
                                      env={"FAULT": fault, "CKPT_DIR": ckpt})
        if expect_status == 0:
            self.assertEqual(status, 0, err)
        else:
            self.assertNotEqual(status, 0, err)
        return out, ckpt, stdout

    def records(self, out, rank, kind):
        with open(os.path.join(out, "rank-%05d.jsonl" % rank)) as trace:
            lines = [json.loads(line) for line in trace if line.strip()]
        return [r for r in lines if r["type"] == kind], lines

    # --- clean -------------------------------------------------------------------------

    def test_rank_0_saves_then_every_rank_loads_is_clean_and_computes_the_same(self):
        out, ckpt, stdout = self.run_checkpoint_job("clean")
        self.assertEqual(serious(compare(out)), set())
        path = os.path.realpath(os.path.join(ckpt, "ckpt.pt"))
        saves = [r for r in self.records(out, 0, "ckpt")[0] if r["op"] == "save"]
        self.assertEqual([(r["path"], r["ckpt_step"]) for r in saves], [(path, 3)])
        self.assertEqual(saves[0]["bytes"], os.path.getsize(path))
        for rank in (0, 1):
            loads = [r for r in self.records(out, rank, "ckpt")[0] if r["op"] == "load"]
            self.assertEqual(len(loads), 1, loads)
            self.assertEqual((loads[0]["path"], loads[0]["map_location"], loads[0]["h"]),
                             (path, "cpu", saves[0]["h"]))
        # The same job without the probes: the same losses.
        off = subprocess.run([DSDIAG, "run", "--probes", "off", "--nproc", "2", "--out",
                              self.path("off"), "--", PYTHON, os.path.join(JOBS, JOB)],
                             env=dict(os.environ, OMP_NUM_THREADS="1",
                                      CKPT_DIR=self.path("clean-ckpt")),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             universal_newlines=True, timeout=120)
        self.assertRanToItsEnd(off.returncode, off.stderr)
        def losses(text):
            return sorted(line for line in text.splitlines() if line.startswith("final loss"))

        self.assertEqual(len(losses(stdout)), 2)
        self.assertEqual(losses(stdout), losses(off.stdout))

    def test_per_rank_files_saved_and_loaded_back_are_clean(self):
        out, _, _ = self.run_checkpoint_job("sharded", "sharded")
        self.assertEqual(serious(compare(out)), set())
        paths = {r["path"] for rank in (0, 1) for r in self.records(out, rank, "ckpt")[0]}
        self.assertEqual({os.path.basename(p) for p in paths}, {"ckpt-0.pt", "ckpt-1.pt"})

    # --- checkpoint-race ---------------------------------------------------------------

    def test_every_rank_saving_one_path_is_a_checkpoint_race(self):
        out, ckpt, _ = self.run_checkpoint_job("race", "race")
        findings = compare(out)
        self.assertEqual(serious(findings), {"checkpoint-race/error"}, findings)
        f = find(findings, "checkpoint-race")
        path = os.path.realpath(os.path.join(ckpt, "latest.pt"))
        self.assertEqual((f["ranks"], f["subject"], f["step"]), ([0, 1], path, 2))
        self.assertEqual(f["evidence"]["ckpt_step"], 3)
        self.assertEqual(f["evidence"]["paths_raced"], 1)
        self.assertEqual(sorted(op["rank"] for op in f["evidence"]["operations"]),
                         [0, 0, 1, 1])

    # --- checkpoint-mismatch -----------------------------------------------------------

    def test_a_rank_resuming_from_an_older_file_is_named(self):
        out, ckpt, _ = self.run_checkpoint_job("stale", "stale")
        findings = compare(out)
        self.assertEqual(serious(findings), {"checkpoint-mismatch/error"}, findings)
        f = find(findings, "checkpoint-mismatch")
        self.assertEqual((f["ranks"], f["step"]), ([1], 6))
        self.assertEqual(f["subject"], os.path.realpath(os.path.join(ckpt, "step-3.pt")))
        self.assertEqual(f["evidence"]["basis"], "older checkpoint")
        self.assertTrue(f["evidence"]["params_differ_after_load"])

    def test_a_rank_loading_other_weights_of_the_same_step_is_named_by_the_majority(self):
        out, ckpt, _ = self.run_checkpoint_job("content", "content", nproc=3)
        findings = compare(out)
        self.assertEqual(serious(findings), {"checkpoint-mismatch/error"}, findings)
        f = find(findings, "checkpoint-mismatch")
        self.assertEqual((f["ranks"], f["step"]), ([1], 6))
        self.assertEqual(f["subject"], os.path.realpath(os.path.join(ckpt, "other-6.pt")))
        self.assertEqual(f["evidence"]["basis"], "majority")
        self.assertIn("different content", f["summary"])

    # --- load errors: rank-died, with the load in the trace ------------------------------

    def test_the_module_prefix_mistake_is_rank_died_with_the_keys_in_the_trace(self):
        out, ckpt, _ = self.run_checkpoint_job("prefix", "prefix", expect_status=1)
        findings = compare(out)
        self.assertEqual(serious(findings), {"rank-died/error"}, findings)
        f = find(findings, "rank-died")
        self.assertEqual((f["ranks"], f["step"]), ([1], 3))
        self.assertIn("RuntimeError: Error(s) in loading state_dict for Net", f["summary"])
        self.assertIn("Missing key(s) in state_dict", f["evidence"]["error"])
        ckpts, lines = self.records(out, 1, "ckpt")
        path = os.path.realpath(os.path.join(ckpt, "ddp.pt"))
        applied = ckpts[-1]
        self.assertEqual((applied["op"], applied["path"], applied["map_location"]),
                         ("load", path, "cpu"))
        self.assertTrue(applied["prefix_stripped"])
        self.assertEqual(applied["missing"][0], "body.0.weight")
        self.assertEqual(applied["unexpected"][0], "module.body.0.weight")
        # Before the error the job's death writes.
        kinds = [r["type"] for r in lines]
        self.assertLess(lines.index(applied), kinds.index("error"))

    def test_strict_false_loads_record_what_was_left_out(self):
        out, _, _ = self.run_checkpoint_job("lenient", "lenient")
        self.assertEqual(serious(compare(out)), set())
        applied = [r for r in self.records(out, 1, "ckpt")[0] if r["missing"] or r["unexpected"]]
        self.assertEqual([(r["prefix_stripped"], r["missing"][0]) for r in applied],
                         [(True, "body.0.weight"), (True, "module.body.0.weight"),
                          (False, "body.2.bias")])
        self.assertEqual(applied[2]["unexpected"], [])

    def test_a_map_location_the_rank_cannot_honour_is_rank_died_with_the_load_marked(self):
        out, ckpt, _ = self.run_checkpoint_job("gpu", "gpu-ckpt", expect_status=1)
        findings = compare(out)
        self.assertEqual(serious(findings), {"rank-died/error"}, findings)
        f = find(findings, "rank-died")
        self.assertEqual((f["ranks"], f["step"]), ([1], 3))
        self.assertIn("Attempting to deserialize object on a CUDA device", f["summary"])
        marks, lines = self.records(out, 1, "mark")
        mark = [m for m in marks if m["name"] == "checkpoint-load-failed"]
        self.assertEqual(len(mark), 1, marks)
        self.assertIn(os.path.join(ckpt, "gpu.pt"), mark[0]["message"])
        self.assertIn("map_location=None", mark[0]["message"])
        self.assertIn("RuntimeError: Attempting to deserialize", mark[0]["message"])
        kinds = [r["type"] for r in lines]
        self.assertLess(lines.index(mark[0]), kinds.index("error"))
        # The failed load is no `ckpt` load (checkpoint-mismatch would compare it): rank 0's
        # load, with map_location="cpu", is the only one.
        loads = [r for rank in (0, 1) for r in self.records(out, rank, "ckpt")[0]
                 if r["op"] == "load"]
        self.assertEqual([r["map_location"] for r in loads], ["cpu"])


class PretrainedWeights(JobTestCase):
    """jobs/load_pretrained.py: weights loaded on rank 0 only after DDP(...) are a
    checkpoint-mismatch naming rank 0 at step 0, at 2 and 3 ranks (the drift it causes is a
    follow-on); loaded on every rank, or on rank 0, before the wrap, they are clean."""

    def run_load(self, name, load, nproc=2):
        import torch

        ckpt = self.path(name + ".pt")
        torch.manual_seed(7)  # "pretrained": not what the job's own seed builds
        net = torch.nn.Module()
        net.encoder = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU())
        net.head = torch.nn.Linear(64, 1)
        torch.save(net.state_dict(), ckpt)
        out = self.path(name)
        status, _, err = run_job(out, "load_pretrained.py", nproc=nproc,
                                 env={"LOAD": load, "CKPT": ckpt})
        self.assertEqual(status, 0, err)
        return compare(out), os.path.realpath(ckpt)

    def assert_named(self, findings, ckpt, others):
        self.assertEqual(serious(findings), {"checkpoint-mismatch/error"}, findings)
        f = find(findings, "checkpoint-mismatch")
        self.assertEqual((f["ranks"], f["step"], f["subject"]), ([0], 0, ckpt))
        self.assertEqual(f["evidence"]["basis"], "loaded on these ranks only")
        self.assertEqual(f["evidence"]["not_loaded"], others)
        for d in [d for d in findings if d["kind"] == "replica-divergence"]:
            self.assertEqual(d["evidence"]["follow_on_of"]["kind"], "checkpoint-mismatch")

    def test_a_load_on_rank_0_after_the_wrap_names_rank_0_at_step_0(self):
        findings, ckpt = self.run_load("after", "rank0-after-wrap")
        self.assert_named(findings, ckpt, [1])

    def test_a_load_on_rank_0_of_three_after_the_wrap_names_rank_0(self):
        findings, ckpt = self.run_load("after3", "rank0-after-wrap", nproc=3)
        self.assert_named(findings, ckpt, [1, 2])

    def test_a_load_before_the_wrap_is_clean(self):
        for load in ("before-wrap", "rank0-before-wrap"):
            findings, _ = self.run_load(load, load)
            self.assertEqual(serious(findings), set(), (load, findings))


if __name__ == "__main__":
    unittest.main()
