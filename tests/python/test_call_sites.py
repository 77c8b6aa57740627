"""Where the ranks' collective streams parted, named by the job's own lines
(jobs/skipped_metrics.py: 3 ranks, Gloo, a hand-written loop whose rank 1 skips one metrics
all_reduce of the same size as the gradients' at step 5). Every `coll` record names its call
site, the job's line, by the id of a `site` record written once per line; collective-mismatch
names rank 1, both lines and both steps, though op and size agree everywhere, and whatever
ends the job (the others waiting in a collective rank 1 never issues) is a follow-on of it.

Run by ctest once per Python lane (DSDIAG_TEST_PYTHON)."""
import json
import os

from dsdiag_jobs import JOBS, JobTestCase, compare, find, read_trace, run_job, serious

JOB = "skipped_metrics.py"


def line_of(comment):
    """The job file's line (1-based) that ends with `comment`."""
    with open(os.path.join(JOBS, JOB)) as f:
        for number, text in enumerate(f, 1):
            if text.rstrip().endswith(comment):
                return number
    raise AssertionError("no line ends with %r in %s" % (comment, JOB))


class CallSites(JobTestCase):
    def test_a_skipped_all_reduce_of_the_same_size_is_named_with_both_lines(self):
        grads, metrics = line_of("# the gradients"), line_of("# the metrics")
        run = self.path("skipped")
        status, _, err = run_job(run, JOB, nproc=3, timeout=240, extra=["--timeout", "20"])
        self.assertNotEqual(status, 0, err)  # the others wait in a collective rank 1 never issues

        records = [json.loads(line) for line in read_trace(os.path.join(run, "rank-00000.jsonl"))]
        sites = {r["id"]: r for r in records if r["type"] == "site"}
        said = {(os.path.basename(s["file"]), s["line"], s["fn"]) for s in sites.values()}
        self.assertEqual(said, {(JOB, grads, "train_step"), (JOB, metrics, "train_step")}, sites)
        colls = [r for r in records if r["type"] == "coll"]
        self.assertTrue(colls)
        self.assertTrue(all(r.get("site") in sites for r in colls), colls)

        findings = compare(run)
        self.assertEqual({"collective-mismatch/error"}, set(serious(findings)), findings)
        f = find(findings, "collective-mismatch")
        self.assertEqual((f["ranks"], f["step"]), ([1], 5), f)
        said = ("rank 1 issued the allreduce at %s:%d (step 6) where ranks 0,2 issued the one at "
                "%s:%d (step 5): rank 1 skipped that allreduce" % (JOB, grads, JOB, metrics))
        self.assertIn(said, f["summary"])
        sides = f["evidence"]["parted_at"]["sides"]
        self.assertEqual([(s["ranks"], s["line"]) for s in sides],
                         [([0, 2], metrics), ([1], grads)])
        ends = [g for g in findings if g["kind"] in ("hang", "rank-died")]
        self.assertTrue(ends, findings)  # the others failed when rank 1 ran out and left
        for g in ends:
            self.assertEqual(g["evidence"]["follow_on_of"]["culprits"], [1], g)
            self.assertIn("rank 1 skipped that allreduce", g["summary"], g)

    def test_a_straggler_names_the_line_of_the_collective_the_others_waited_at(self):
        """Rank 0 evaluates alone each step before a barrier: it is the straggler, and its
        evidence names the barrier's line, where the others waited for it."""
        job = "rank0_logging.py"
        with open(os.path.join(JOBS, job)) as f:
            barrier = [n for n, text in enumerate(f, 1)
                       if text.rstrip().endswith("# the barrier everyone waits at")][0]
        run = self.path("rank0-logging")
        status, _, err = run_job(run, job, timeout=180)
        self.assertEqual(status, 0, err)
        f = find(compare(run), "straggler")
        self.assertIsNotNone(f)
        self.assertEqual(f["ranks"], [0], f["summary"])
        row = [r for r in f["evidence"]["ranks"] if r["rank"] == 0][0]
        self.assertEqual(row["late_at"], "%s:%d in <module>" % (job, barrier), row)
        self.assertIn("most behind at the collective of %s:%d" % (job, barrier), f["summary"])

