"""python3 -m dsdiag.torch.loader_sweep on a user's own dataset: loader-sweep.json as
`dsdiag loader-sweep` writes it (the same reader takes it, `dsdiag report` draws it), the
recommendation, and clear errors for a bad --dataset or flag."""
import json
import os
import subprocess
import unittest

from dsdiag_jobs import DSDIAG, JOBS, PYTHON, JobTestCase, run_job

PACKAGE = os.path.join(os.path.dirname(os.path.abspath(DSDIAG)), "python")


def sweep(*args):
    # 5 ms of decoding per sample: enough for two workers to beat the main thread even on
    # two busy cores.
    env = dict(os.environ, PYTHONPATH=PACKAGE, OMP_NUM_THREADS="1", SAMPLE_MS="5")
    done = subprocess.run([PYTHON, "-m", "dsdiag.torch.loader_sweep"] + list(args), env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=300)
    return done.returncode, done.stdout, done.stderr


class LoaderSweep(JobTestCase):
    def test_a_sweep_of_workers_and_pin_memory_is_written_reported_and_recommends_workers(self):
        # The sweep lands in the run directory of the job it is for.
        out = self.path("run")
        status, _, err = run_job(out, "ddp_faults.py", env={"STEPS": "3"})
        self.assertEqual(status, 0, err)
        status, text, err = sweep("--dataset", os.path.join(JOBS, "sweep_dataset.py:make_dataset"),
                                  "--workers", "0,2", "--batch-size", "8", "--pin-memory",
                                  "no,yes", "--batches", "6", "--repeats", "2", "--out", out)
        self.assertEqual(status, 0, err)
        self.assertIn("pin  persist", text)
        with open(os.path.join(out, "loader-sweep.json")) as f:
            result = json.load(f)
        self.assertEqual(result["schema"], "dsdiag.loader-sweep/1")
        settings = [(p["workers"], p["batch_size"], p["pin_memory"]) for p in result["points"]]
        self.assertEqual(settings, [(0, 8, False), (0, 8, True), (2, 8, False), (2, 8, True)])
        for p in result["points"]:
            self.assertGreater(p["samples_per_s_median"], 0)
            self.assertLessEqual(p["samples_per_s_min"], p["samples_per_s_max"])
            self.assertGreater(p["first_batch_ms"], 0)
            self.assertGreater(p["peak_rss_mb"], 10)
        by_workers = {}
        for p in result["points"]:
            by_workers.setdefault(p["workers"], []).append(p["samples_per_s_median"])
        self.assertGreater(min(by_workers[2]), max(by_workers[0]))
        self.assertEqual(result["recommendation"]["workers"], 2)
        # dsdiag report reads it with the same reader and draws the section.
        report = self.path("report.html")
        done = subprocess.run([DSDIAG, "report", out, "-o", report], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
        with open(report) as f:
            html = f.read()
        self.assertIn("Loader sweep", html, done.stderr)
        self.assertIn("<th>pin_memory</th>", html)

    def test_json_output_and_persistent_workers_only_where_there_are_workers(self):
        status, text, err = sweep("--dataset", os.path.join(JOBS, "sweep_dataset.py:SlowDecode"),
                                  "--workers", "0,1", "--batch-size", "16",
                                  "--persistent-workers", "no,yes", "--batches", "2",
                                  "--repeats", "2", "--format", "json")
        self.assertEqual(status, 0, err)
        result = json.loads(text)
        settings = [(p["workers"], p["persistent_workers"]) for p in result["points"]]
        self.assertEqual(settings, [(0, False), (1, False), (1, True)])

    def test_bad_input_is_a_clear_error(self):
        status, _, err = sweep("--dataset", "no_such_module_here:make")
        self.assertEqual(status, 2)
        self.assertIn("cannot import no_such_module_here", err)
        status, _, err = sweep("--dataset", os.path.join(JOBS, "sweep_dataset.py:nothing"))
        self.assertEqual(status, 2)
        self.assertIn("has no nothing", err)
        status, _, err = sweep("--dataset", os.path.join(JOBS, "sweep_dataset.py:make_dataset"),
                               "--workers", "two")
        self.assertEqual(status, 2)
        self.assertIn("--workers expects a comma-separated list of integers >= 0, got 'two'", err)
        status, _, err = sweep("--dataset", os.path.join(JOBS, "sweep_dataset.py:make_dataset"),
                               "--pin-memory", "maybe")
        self.assertEqual(status, 2)
        self.assertIn("--pin-memory expects a comma-separated list of no/yes", err)


if __name__ == "__main__":
    unittest.main()
