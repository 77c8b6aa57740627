"""scripts/gpu-check, the first thing to run on a machine with a GPU, on this one: without a
GPU it says so and exits 0; with --dry-run it runs every check on the CPU (Gloo, the device
path forced on CPU tensors), which tests its own plumbing: the jobs, the findings it expects,
torch's Flight Recorder dumps kept as fixtures, the overhead figure, the NVTX recorder, and
its one table."""
import os
import subprocess
import sys
import unittest

from dsdiag_jobs import DSDIAG, PYTHON, TORCH, JobTestCase

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                      "gpu-check")


def gpu_check(*args, timeout=600):
    done = subprocess.run([sys.executable, SCRIPT, "--python", PYTHON, "--dsdiag", DSDIAG]
                          + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=timeout,
                          env=dict(os.environ, OMP_NUM_THREADS="1"))
    return done.returncode, done.stdout, done.stderr


def gpus():
    code = "import torch; print(torch.cuda.device_count() if torch.cuda.is_available() else 0)"
    return int(subprocess.check_output([PYTHON, "-c", code], universal_newlines=True))


class GpuCheck(JobTestCase):
    @unittest.skipIf(gpus() > 0, "this machine has a GPU: gpu-check runs for real here")
    def test_without_a_gpu_it_says_so_and_exits_0(self):
        status, out, err = gpu_check("--out", self.path("none"))
        self.assertEqual(status, 0, err)
        self.assertIn("no CUDA device on this machine", out)
        self.assertFalse(os.path.exists(self.path("none")))

    @unittest.skipUnless(TORCH >= (2, 0), "its hang check reads torch 2.x's Flight Recorder dumps")
    def test_a_dry_run_passes_every_check_on_the_cpu_and_prints_one_table(self):
        out_dir = self.path("dry")
        status, out, err = gpu_check("--dry-run", "--out", out_dir, "--steps", "16")
        self.assertEqual(status, 0, out + err)
        lines = out.splitlines()
        head = [l for l in lines if l.startswith("# check")]
        self.assertEqual(len(head), 1, out)
        for column in ("check", "device", "backend", "expected", "got", "time(s)", "result"):
            self.assertIn(column, head[0])
        rows = {l.split()[0]: l for l in lines if l.startswith("  ")}
        self.assertEqual(sorted(rows), sorted(["clean", "desync", "straggler", "hang", "overhead",
                                               "scaler", "nvtx"]), out)
        self.assertTrue(all(r.rstrip().endswith(" ok") for r in rows.values()), out)
        self.assertIn("grad-desync rank 0 step 5", rows["desync"])
        self.assertIn("hang rank 1 step 5, 2 FR dumps", rows["hang"])
        self.assertIn("scaler-overflow rank 1 step", rows["scaler"])
        self.assertIn("# 7 of 7 checks passed", out)
        # torch's dumps of the hang, kept where a GPU run keeps them: fixtures.
        fixtures = sorted(os.listdir(os.path.join(out_dir, "fixtures")))
        self.assertEqual(fixtures, ["nccl_trace_rank_0", "nccl_trace_rank_1"])


if __name__ == "__main__":
    unittest.main()
