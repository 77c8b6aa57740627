"""Data that no sampler split, under dsdiag run (Gloo, 2 and 3 ranks): a DataLoader with
shuffle=True and no DistributedSampler, one seed on every rank, feeds every rank the same
batches — shard-overlap names every rank, at step 0, from the `loader` records' batch
fingerprints, and the torch-cpu rng-collision it causes is an info follow-on of it. The
same job with a DistributedSampler and set_epoch() is clean, although its validation loop
gives every rank the same (unshuffled) batches on purpose.

Run by ctest once per Python lane (DSDIAG_TEST_PYTHON); DSDIAG_BINARY names the
dsdiag executable."""
import json
import os
import unittest

from dsdiag_jobs import JobTestCase, compare, find, run_job, serious

JOB = "unsplit_data.py"


def loader_batches(run, rank):
    with open(os.path.join(run, "rank-%05d.jsonl" % rank)) as f:
        records = [json.loads(line) for line in f]
    return [(r["step"], r["batch"]) for r in records if r["type"] == "loader"]


class UnsplitData(JobTestCase):
    def run_ok(self, name, nproc=2, **env):
        status, _, err = run_job(self.path(name), JOB, nproc=nproc, env=env)
        self.assertEqual(status, 0, err)
        return compare(self.path(name))

    def assert_unsplit(self, findings, ranks, steps):
        self.assertEqual(serious(findings), {"shard-overlap/error"}, findings)
        f = find(findings, "shard-overlap")
        self.assertEqual((f["ranks"], f["step"], f["subject"]), (ranks, 0, "data loader"))
        self.assertIn("not split", f["summary"])
        self.assertIn("DistributedSampler", f["hint"])
        self.assertEqual((f["evidence"]["steps_compared"], f["evidence"]["steps_identical"]),
                         (steps, steps))
        # The shuffle's draw from the global generator is the same on every rank: the
        # collision is reported as what it is, a consequence of the same data.
        for rng in [f for f in findings if f["kind"] == "rng-collision"]:
            self.assertEqual(rng["severity"], "info", rng)
            self.assertEqual(rng["evidence"]["follow_on_of"]["kind"], "shard-overlap")

    def test_a_shuffled_loader_without_a_sampler_is_shard_overlap_on_every_rank(self):
        findings = self.run_ok("unsplit")
        self.assert_unsplit(findings, [0, 1], 16)  # 2 epochs of 8 batches, all alike
        self.assertEqual(loader_batches(self.path("unsplit"), 0),
                         loader_batches(self.path("unsplit"), 1))

    def test_three_ranks_without_a_sampler_are_named_together(self):
        self.assert_unsplit(self.run_ok("unsplit3", nproc=3, EPOCHS="1"), [0, 1, 2], 8)

    def test_a_distributed_sampler_with_set_epoch_is_clean(self):
        findings = self.run_ok("split", SAMPLER="distributed")
        self.assertEqual(serious(findings), set(), findings)
        batches = [loader_batches(self.path("split"), rank) for rank in (0, 1)]
        self.assertEqual(len(batches[0]), 8)  # 4 steps an epoch: only training batches
        self.assertFalse(set(b for _, b in batches[0]) & set(b for _, b in batches[1]))


if __name__ == "__main__":
    unittest.main()
