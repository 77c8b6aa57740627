"""Training frameworks' own launchers, scripts unchanged, under `dsdiag run -- <the
framework's launch command>`: PyTorch Lightning (a Trainer with the "ddp" strategy on CPU,
which starts its second process itself) and Hugging Face Accelerate (`accelerate launch
--multi_gpu --num_processes 2`, run by Accelerate as MULTI_CPU on this machine), both pinned
in python/requirements-torch2.txt. For each: a clean job gives no warning or error, a module
skipped on rank 1 is missing-grad naming it, the same seed on every rank is rng-collision;
Lightning's seed_everything(seed + rank) is shard-overlap (it seeds the sampler too).

Run by ctest once per Python lane (DSDIAG_TEST_PYTHON); the frameworks are in the torch-2
lane only. DSDIAG_BINARY names the dsdiag executable."""
import importlib.util
import os
import subprocess
import unittest

from dsdiag_jobs import DSDIAG, JOBS, LANE, PYTHON, JobTestCase, compare, find, serious


def has(module):
    return importlib.util.find_spec(module) is not None


class Frameworks(JobTestCase):
    def run_under_dsdiag(self, name, command, fault):
        run = self.path(name)
        done = subprocess.run([DSDIAG, "run", "--out", run, "--"] + command,
                              env=dict(os.environ, FAULT=fault, OMP_NUM_THREADS="1"),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, timeout=240)
        self.assertEqual(done.returncode, 0, done.stderr[-3000:])
        self.assertEqual(sorted(f for f in os.listdir(run) if f.startswith("rank-")),
                         ["rank-00000.jsonl", "rank-00001.jsonl"])
        return compare(run)

    def check(self, name, command):
        findings = self.run_under_dsdiag(name + "-clean", command, "")
        self.assertEqual(serious(findings), set(), findings)
        findings = self.run_under_dsdiag(name + "-skip", command, "skip")
        self.assertEqual(serious(findings), {"missing-grad/error"}, findings)
        f = find(findings, "missing-grad")
        self.assertEqual((f["ranks"], f["subject"], f["step"]), ([1], "extra.weight", 0))
        findings = self.run_under_dsdiag(name + "-seed", command, "same-seed")
        self.assertEqual(serious(findings), {"rng-collision/warning"}, findings)
        # Dropout draws from torch's generator (seed_everything seeds NumPy's and random's
        # too, each its own finding when the loop draws from it).
        self.assertIn("torch-cpu", [f["subject"] for f in findings
                                    if f["kind"] == "rng-collision"], findings)

    @unittest.skipUnless(has("lightning"), "lane %s has no lightning" % LANE)
    def test_lightning_ddp_strategy(self):
        command = [PYTHON, os.path.join(JOBS, "lightning_job.py")]
        self.check("lightning", command)
        # seed_everything(seed + rank) seeds Lightning's DistributedSampler per rank too.
        findings = self.run_under_dsdiag("lightning-rank-seed", command, "rank-seed")
        self.assertIn("shard-overlap/error", serious(findings), findings)

    @unittest.skipUnless(has("accelerate"), "lane %s has no accelerate" % LANE)
    def test_accelerate_launch(self):
        accelerate = os.path.join(os.path.dirname(PYTHON), "accelerate")
        self.check("accelerate", [accelerate, "launch", "--multi_gpu", "--num_processes", "2",
                                  "--num_machines", "1", "--mixed_precision", "no",
                                  "--dynamo_backend", "no",
                                  os.path.join(JOBS, "accelerate_job.py")])


if __name__ == "__main__":
    unittest.main()
