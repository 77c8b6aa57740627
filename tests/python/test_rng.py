"""dsdiag run on real DDP jobs (Gloo, 2 ranks, tens of steps): per-rank random streams that
are identical on every rank are one rng-collision warning naming the stream — the rank's
torch generator (dropout, noise), NumPy's and Python's global streams, DataLoader workers'
streams (2 workers per rank; fork and spawn, persistent or not), and workers of one rank
sharing a stream though the ranks differ (a worker_init_fn seeding with base_seed + rank) —
and the same jobs seeded per rank, or identical but never drawn from in training, give
none.

Run by ctest once per Python lane (DSDIAG_TEST_PYTHON); DSDIAG_BINARY names the
dsdiag executable."""
import glob
import json
import os
import subprocess
import unittest

from dsdiag_jobs import DSDIAG, JOBS, PYTHON, JobTestCase, compare, run_job, serious


def rng_records(out):
    """{rank: [(stream, why, step), ...]} of the run's `rng` records."""
    records = {}
    for path in sorted(glob.glob(os.path.join(out, "rank-*.jsonl"))):
        rank = int(os.path.basename(path)[5:-6])
        with open(path) as f:
            rows = [json.loads(line) for line in f if '"type":"rng"' in line]
        records[rank] = [(r["stream"], r["why"], r["step"]) for r in rows]
    return records


class RngCollision(JobTestCase):
    def run_rng(self, name, job, **env):
        status, out, err = run_job(self.path(name), job, env=env)
        self.assertEqual(status, 0, err)
        return compare(self.path(name)), out

    def collisions(self, findings):
        return sorted((f for f in findings if f["kind"] == "rng-collision"),
                      key=lambda f: f["subject"])

    def assert_one_collision(self, findings, subject, step, why):
        self.assertEqual(serious(findings), {"rng-collision/warning"}, findings)
        [f] = self.collisions(findings)
        self.assertEqual((f["subject"], f["ranks"], f["step"]), (subject, [0, 1], step))
        self.assertEqual(f["evidence"]["why"], why)
        self.assertEqual(len(f["evidence"]["groups"]), 1)
        return f

    # --- the rank's own streams --------------------------------------------------------

    def test_the_same_torch_seed_with_dropout_is_torch_cpu_at_the_first_step(self):
        findings, _ = self.run_rng("dropout", "rng_streams.py", MODE="dropout")
        f = self.assert_one_collision(findings, "torch-cpu", 0, "first-use")
        self.assertEqual(f["evidence"]["groups"][0]["seed"], 0)

    def test_noise_drawn_before_each_forward_with_the_same_seed_is_torch_cpu(self):
        # Drawn between steps: the use is proved by two consecutive gaps (steps 0-1, 1-2).
        findings, _ = self.run_rng("noise", "rng_streams.py", MODE="noise")
        self.assert_one_collision(findings, "torch-cpu", 2, "first-use")

    def test_numpy_and_random_seeded_alike_on_every_rank_are_two_collisions(self):
        findings, _ = self.run_rng("host", "rng_streams.py", MODE="host")
        self.assertEqual(serious(findings), {"rng-collision/warning"}, findings)
        found = [(f["subject"], f["ranks"], f["step"]) for f in self.collisions(findings)]
        self.assertEqual(found, [("numpy", [0, 1], 2), ("random", [0, 1], 2)])

    def test_streams_seeded_per_rank_are_clean_though_recorded(self):
        findings, _ = self.run_rng("clean", "rng_streams.py", MODE="clean")
        self.assertEqual(serious(findings), set(), findings)
        for rank, rows in rng_records(self.path("clean")).items():
            self.assertEqual(sorted(s for s, _, _ in rows), ["numpy", "random", "torch-cpu"],
                             (rank, rows))

    def test_identical_streams_never_drawn_in_training_are_not_recorded(self):
        findings, _ = self.run_rng("idle", "rng_streams.py", MODE="idle")
        self.assertEqual(serious(findings), set(), findings)
        self.assertEqual(rng_records(self.path("idle")), {0: [], 1: []})

    # --- DataLoader workers ------------------------------------------------------------

    def test_a_worker_init_fn_reseeding_numpy_without_the_rank_is_a_worker_collision(self):
        findings, _ = self.run_rng("reseed", "rng_loader.py", MODE="reseed")
        self.assert_one_collision(findings, "loader-worker-numpy", 0, "loader-0/worker-0")
        # One record per worker and pass (3 passes, non-persistent workers), on each rank.
        for rank, rows in rng_records(self.path("reseed")).items():
            whys = sorted(w for s, w, _ in rows if s == "loader-worker-numpy")
            self.assertEqual(whys, ["loader-0/worker-0"] * 3 + ["loader-0/worker-1"] * 3, rank)

    def test_the_same_torch_seed_on_every_rank_gives_persistent_workers_one_stream(self):
        # The workers' seeds come from the rank's global generator: alike everywhere. The
        # global generator itself is drawn only at each pass's start: not reported.
        findings, _ = self.run_rng("shared", "rng_loader.py", MODE="shared", AUG="torch",
                                   PERSISTENT="1")
        self.assert_one_collision(findings, "loader-worker-torch", 0, "loader-0/worker-0")

    def test_spawned_workers_are_probed_and_the_job_computes_the_same(self):
        env = {"MODE": "reseed", "CONTEXT": "spawn", "PERSISTENT": "1"}
        findings, out = self.run_rng("spawn", "rng_loader.py", **env)
        self.assert_one_collision(findings, "loader-worker-numpy", 0, "loader-0/worker-0")
        off = subprocess.run(
            [DSDIAG, "run", "--probes", "off", "--nproc", "2", "--out", self.path("off"), "--",
             PYTHON, os.path.join(JOBS, "rng_loader.py")],
            env=dict(os.environ, OMP_NUM_THREADS="1", **env), stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, universal_newlines=True, timeout=120)
        self.assertRanToItsEnd(off.returncode, off.stderr)
        self.assertEqual(sorted(out.splitlines()), sorted(off.stdout.splitlines()))
        self.assertEqual(len(out.splitlines()), 4)

    def test_workers_seeded_by_torch_from_a_per_rank_seed_are_clean(self):
        findings, _ = self.run_rng("default", "rng_loader.py", MODE="default", DROPOUT="1")
        self.assertEqual(serious(findings), set(), findings)
        rows = rng_records(self.path("default"))
        self.assertEqual(len([r for r in rows[1] if r[0] == "loader-worker-numpy"]), 6)
        # The rank's dropout stream: at its first use, then at each later epoch's first step.
        for rank in (0, 1):
            self.assertEqual([r for r in rows[rank] if r[0] == "torch-cpu"],
                             [("torch-cpu", "first-use", 0), ("torch-cpu", "epoch", 4),
                              ("torch-cpu", "epoch", 8)], rank)

    def test_a_worker_init_fn_seeding_from_torch_initial_seed_is_clean(self):
        findings, _ = self.run_rng("seeded", "rng_loader.py", MODE="seeded", AUG="random")
        self.assertEqual(serious(findings), set(), findings)
        rows = rng_records(self.path("seeded"))
        self.assertEqual(len([r for r in rows[0] if r[0] == "loader-worker-random"]), 6)

    def assert_workers_collide(self, findings, ranks):
        """One rng-collision within ranks: NumPy's stream shared by workers 0 and 1 of
        loader 0 on each of `ranks`, from their first pass (step 0)."""
        self.assertEqual(serious(findings), {"rng-collision/warning"}, findings)
        [f] = self.collisions(findings)
        self.assertEqual((f["subject"], f["ranks"], f["step"]), ("loader-worker-numpy", ranks, 0))
        self.assertEqual(f["evidence"]["scope"], "workers of one rank")
        for rank, entry in zip(ranks, f["evidence"]["ranks"]):
            self.assertEqual((entry["rank"], entry["loader"], entry["occurrence"]),
                             (rank, "loader-0", 0))
            self.assertEqual([g["workers"] for g in entry["groups"]], [[0, 1]])
        return f

    def test_workers_seeded_with_the_rank_alone_collide_within_each_rank(self):
        # base_seed + rank: the ranks differ from each other, the workers of a rank do not.
        findings, _ = self.run_rng("rank", "rng_loader.py", MODE="rank")
        f = self.assert_workers_collide(findings, [0, 1])
        self.assertIn("on ranks 0,1 (rank 0: workers 0,1 of loader-0)", f["summary"])

    def test_one_rank_seeding_its_workers_alike_is_named_alone(self):
        findings, _ = self.run_rng("rank1", "rng_loader.py", MODE="rank1", PERSISTENT="1")
        f = self.assert_workers_collide(findings, [1])
        self.assertIn("workers 0,1 of loader-0 on rank 1", f["summary"])

    def test_workers_that_draw_nothing_are_not_recorded(self):
        # Also the rank's torch generator, the same on both ranks: the loader draws the
        # workers' base seed from it once per pass only, which is not use.
        findings, _ = self.run_rng("quiet", "rng_loader.py", MODE="quiet")
        self.assertEqual(serious(findings), set(), findings)
        self.assertEqual(rng_records(self.path("quiet")), {0: [], 1: []})


if __name__ == "__main__":
    unittest.main()
