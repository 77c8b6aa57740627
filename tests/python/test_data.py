"""dsdiag run on real DDP jobs fed by a DataLoader over a DistributedSampler (Gloo, 2-3
ranks, 4 epochs of 6 steps): a slow loader on one rank is loader-starvation naming it; a
sampler seeded per rank, built with rank=0 everywhere or over datasets of different sizes
is shard-overlap; a missing set_epoch() is epoch-order-repeat; clean jobs (no workers, two
persistent workers, a loader rebuilt every epoch, validation passes) give no finding, train
on the same batches as without dsdiag, and their traces carry one `loader` record per step,
the epochs in the step records and one `sampler` record per epoch.

Run by ctest once per Python lane (DSDIAG_TEST_PYTHON); DSDIAG_BINARY names the
dsdiag executable."""
import json
import os
import subprocess
import unittest

from dsdiag_jobs import (DSDIAG, JOBS, PYTHON, JobTestCase, compare, find, read_trace, run_job,
                         serious, timed)

JOB = "data_loader.py"
STEPS_PER_EPOCH, EPOCHS = 6, 4


def records(out, rank):
    # Through the package's reader: trace v3's step arrays come back as v2's objects.
    return [json.loads(line) for line in read_trace(os.path.join(out, "rank-%05d.jsonl" % rank))]


def of_type(recs, kind):
    return [r for r in recs if r["type"] == kind]


class DataProbes(JobTestCase):
    def run_ok(self, name, nproc=2, **env):
        status, out, err = run_job(self.path(name), JOB, nproc=nproc, env=env)
        self.assertEqual(status, 0, err)
        return compare(self.path(name)), out

    def assert_clean(self, findings):
        self.assertEqual(serious(findings), set(), findings)
        self.assertIsNone(find(findings, "loader-starvation", "warning"), findings)

    def assert_epochs_and_records(self, out, ranks=(0, 1)):
        """Steps 6e..6e+5 are epoch e; one loader record of 8 samples per step; one sampler
        record per epoch, at its first step, with the epoch set_epoch() gave."""
        expected_epochs = [s // STEPS_PER_EPOCH for s in range(STEPS_PER_EPOCH * EPOCHS)]
        for rank in ranks:
            recs = records(out, rank)
            steps = of_type(recs, "step")
            self.assertEqual([s["epoch"] for s in steps], expected_epochs, rank)
            self.assertEqual([s["samples"] for s in steps], [8] * len(steps), rank)
            self.assertIn("data", steps[1]["phases"])
            loaders = of_type(recs, "loader")
            self.assertEqual([l["step"] for l in loaders], [s["step"] for s in steps], rank)
            samplers = of_type(recs, "sampler")
            self.assertEqual([(r["step"], r["epoch"], r["sampler_epoch"], r["n"], r["size"])
                              for r in samplers],
                             [(STEPS_PER_EPOCH * e, e, e, 48, 96) for e in range(EPOCHS)], rank)

    # --- clean jobs --------------------------------------------------------------------

    def test_a_clean_job_without_workers_has_no_finding_and_trains_on_the_same_batches(self):
        findings, out = self.run_ok("clean", VALIDATE="1")
        self.assert_clean(findings)
        self.assert_epochs_and_records(self.path("clean"))
        for rank in (0, 1):
            for l in of_type(records(self.path("clean"), rank), "loader"):
                self.assertEqual(l["produce"], l["wait"])  # made on the main thread
        off = subprocess.run([DSDIAG, "run", "--probes", "off", "--nproc", "2", "--out",
                              self.path("off"), "--", PYTHON, os.path.join(JOBS, JOB)],
                             env=dict(os.environ, OMP_NUM_THREADS="1", VALIDATE="1"),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             universal_newlines=True, timeout=120)
        self.assertRanToItsEnd(off.returncode, off.stderr)
        self.assertEqual(sorted(out.splitlines()), sorted(off.stdout.splitlines()))
        self.assertEqual(len(out.splitlines()), 4)

    def test_a_clean_job_with_two_persistent_workers_has_no_finding(self):
        findings, _ = self.run_ok("persistent", WORKERS="2", PERSISTENT="1")
        self.assert_clean(findings)
        self.assert_epochs_and_records(self.path("persistent"))
        loaders = of_type(records(self.path("persistent"), 0), "loader")
        self.assertNotIn("produce", loaders[0])  # made by a worker: not visible

    def test_a_loader_rebuilt_every_epoch_and_a_sloppy_validation_pass_count_right(self):
        # Two workers, a new DataLoader each epoch, a validation pass in training mode
        # with autograd on: only the training batches count, the epochs still advance.
        findings, _ = self.run_ok("rebuild", WORKERS="2", REBUILD="1", VALIDATE="sloppy")
        self.assert_clean(findings)
        self.assert_epochs_and_records(self.path("rebuild"))

    def test_an_unshuffled_sampler_is_described_once_and_repeats_nothing(self):
        # Without shuffling every epoch has the same order by design: one record, in the
        # first epoch, and no epoch-order-repeat (set_epoch is called or not: no matter).
        findings, _ = self.run_ok("unshuffled", SHUFFLE="0", FAULT="no-set-epoch")
        self.assert_clean(findings)
        samplers = of_type(records(self.path("unshuffled"), 1), "sampler")
        self.assertEqual([(r["step"], r["epoch"], r["n"]) for r in samplers], [(0, 0, 48)])

    # --- loader-starvation ---------------------------------------------------------------

    @timed
    def test_a_slow_dataset_on_rank_1_is_loader_starvation_naming_it(self):
        findings, _ = self.run_ok("slow", FAULT="slow")
        self.assertEqual(serious(findings), set(), findings)
        f = find(findings, "loader-starvation", "warning")
        self.assertIsNotNone(f, findings)
        self.assertEqual((f["ranks"], f["step"], f["subject"]), ([1], 0, "data loader"))
        self.assertGreater(f["evidence"]["ranks"][0]["wait_ms"], 30)  # 40 ms a batch
        self.assertEqual(f["evidence"]["ranks"][0]["rank"], 1)
        # The others wait for it in the allreduce: no one else is blamed for it.
        for s in [f for f in findings if f["kind"] == "straggler"]:
            self.assertEqual(s["ranks"], [1], s)
        self.assertLessEqual({k.split("/")[0] for k in serious(findings, timing=True)},
                             {"loader-starvation", "straggler"})

    @timed
    def test_one_rank_without_workers_over_a_slow_dataset_is_loader_starvation(self):
        findings, _ = self.run_ok("workers", nproc=3, FAULT="workers")
        f = find(findings, "loader-starvation", "warning")
        self.assertIsNotNone(f, findings)
        self.assertEqual((f["ranks"], f["subject"]), ([1], "data loader"))
        self.assertEqual(serious(findings), set(), findings)

    # --- shard-overlap -----------------------------------------------------------------

    def assert_overlap(self, findings, ranks, basis):
        self.assertEqual(serious(findings), {"shard-overlap/error", "shard-overlap/warning"},
                         findings)
        f = find(findings, "shard-overlap")
        self.assertEqual((f["ranks"], f["step"], f["subject"]), (ranks, 0, "sampler"))
        self.assertEqual(f["evidence"]["basis"], basis)
        self.assertEqual(f["evidence"]["epochs_affected"], EPOCHS)
        return f

    def test_a_sampler_seeded_with_the_rank_is_shard_overlap(self):
        findings, _ = self.run_ok("seed", FAULT="seed")
        f = self.assert_overlap(findings, [0, 1], "no majority")  # two ranks: no vote
        self.assertEqual(f["evidence"]["seeds"], {"0": 0, "1": 1})

    def test_one_rank_of_three_with_another_seed_is_named(self):
        findings, _ = self.run_ok("seed3", nproc=3, FAULT="seed-rank2")
        f = self.assert_overlap(findings, [2], "majority")
        self.assertEqual(f["evidence"]["seeds"], {"0": 0, "1": 0, "2": 1})

    def test_every_rank_passing_rank_0_is_shard_overlap(self):
        findings, _ = self.run_ok("rank0", FAULT="rank0")
        f = self.assert_overlap(findings, [0, 1], "shared shard")
        self.assertEqual(f["evidence"]["overlap"], 48)  # the whole shard, twice

    def test_datasets_of_different_sizes_are_shard_overlap(self):
        findings, _ = self.run_ok("size", FAULT="size")
        f = self.assert_overlap(findings, [0, 1], "shared shard")
        self.assertEqual(f["evidence"]["dataset_size"], 96)

    # --- epoch-order-repeat --------------------------------------------------------------

    def test_a_missing_set_epoch_is_epoch_order_repeat(self):
        findings, _ = self.run_ok("no-set-epoch", FAULT="no-set-epoch")
        self.assertEqual(serious(findings), {"epoch-order-repeat/warning"}, findings)
        f = find(findings, "epoch-order-repeat", "warning")
        self.assertEqual((f["ranks"], f["step"], f["subject"]), ([0, 1], 6, "sampler"))
        self.assertEqual((f["evidence"]["epoch"], f["evidence"]["sampler_epoch"],
                          f["evidence"]["epochs_repeated"]), (1, 0, 3))
        steps = of_type(records(self.path("no-set-epoch"), 0), "step")
        self.assertEqual(steps[-1]["epoch"], EPOCHS - 1)


if __name__ == "__main__":
    unittest.main()
