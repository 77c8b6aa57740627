"""DDP's Join context for uneven inputs (PyTorch's tutorial, with ZeroRedundancyOptimizer's
join hook) under dsdiag run: the joined ranks' shadow collectives pair with the others' by
design, from other lines, and their shadow steps are no training steps — a clean job is
clean; the same uneven inputs without Join name the rank that finished early."""
import json
import os
import unittest

from dsdiag_jobs import JobTestCase, compare, find, run_job, serious


def marks(run_dir, rank):
    with open(os.path.join(run_dir, "rank-%05d.jsonl" % rank)) as f:
        return [r["name"] for r in map(json.loads, f) if r.get("type") == "mark"]


class Join(JobTestCase):
    def test_uneven_inputs_under_join_are_clean(self):
        out = self.path("join")
        status, stdout, err = run_job(out, "ddp_join.py", nproc=3, timeout=180)
        self.assertEqual(status, 0, err)
        self.assertIn("rank 2 has exhausted all 7 of its inputs", stdout + err)
        findings = compare(out)
        self.assertEqual(serious(findings), set(), findings)
        self.assertIn("ddp-join", marks(out, 0))

    def test_uneven_inputs_without_join_name_the_rank_that_finished_early(self):
        out = self.path("no-join")
        status, _, err = run_job(out, "ddp_join.py", nproc=3, timeout=180,
                                 env={"FAULT": "no-join"})
        self.assertNotEqual(status, 0, err)
        findings = compare(out)
        f = find(findings, "rank-died")
        self.assertIsNotNone(f, findings)
        self.assertEqual(f["ranks"], [0], f)
        self.assertEqual(serious(findings), {"rank-died/error"}, findings)


if __name__ == "__main__":
    unittest.main()
