"""NVTX ranges of a PyTorch job under `dsdiag run`, seen as Nsight Systems would see them but
without it: NVTX's injection API loads a recording tool (tests/probes/
nvtx_recorder_injection.cc, named by DSDIAG_NVTX_RECORDER) into every rank, which writes the
"dsdiag" domain's calls to a file per process. NVTX needs no GPU, so this runs on the CPU
lanes: each step is a range, its phases nest inside it, and every collective — DDP's bucket
allreduces, the job's own all_reduce — is a start/end range named as the C++ probes name
theirs ("allreduce seq 9 ddp-bucket-0"), ended when the op completes, on whichever thread."""
import glob
import os
import unittest

from dsdiag_jobs import JobTestCase, run_job

RECORDER = os.environ.get("DSDIAG_NVTX_RECORDER", "")


def events(path):
    with open(path) as f:
        return [line.rstrip("\n").split("\t") for line in f if line.strip()]


@unittest.skipUnless(RECORDER and os.path.exists(RECORDER),
                     "no NVTX recorder (this build has no nvtx3 headers: DSDIAG_HAVE_NVTX off)")
class Nvtx(JobTestCase):
    def test_steps_phases_and_collectives_are_ranges_in_the_dsdiag_domain(self):
        record = self.path("nvtx")
        os.makedirs(record)
        status, _, err = run_job(self.path("run"), "nvtx_ddp.py", env={
            "NVTX_INJECTION64_PATH": RECORDER,
            "DSDIAG_NVTX_RECORD": os.path.join(record, "nvtx-%p.txt")})
        self.assertEqual(status, 0, err)
        files = [f for f in glob.glob(os.path.join(record, "nvtx-*.txt")) if events(f)]
        self.assertEqual(len(files), 2, files)  # one per rank; the launcher makes no NVTX call
        for path in files:
            with self.subTest(rank_file=os.path.basename(path)):
                self.assert_ranges(events(path))

    def assert_ranges(self, seen):
        self.assertTrue(all(e[2] == "dsdiag" for e in seen), seen[:5])
        steps = [e[5] for e in seen if e[0] == "push" and e[3] == "0"]
        self.assertEqual(steps[:4], ["step 0", "step 1", "step 2", "step 3"], steps)
        phases = [e[5] for e in seen if e[0] == "push" and e[3] == "1"]
        self.assertEqual(phases[:3], ["forward", "backward", "optimizer"], phases)
        pushes = sum(e[0] == "push" for e in seen)
        self.assertEqual(pushes, sum(e[0] == "pop" for e in seen), "unbalanced push/pop")
        started = {e[3]: e[5] for e in seen if e[0] == "start"}
        ended = {e[3]: e[4] for e in seen if e[0] == "end"}
        self.assertEqual(started, ended, "every collective's range ends, with its own name")
        names = sorted(started.values())
        self.assertTrue(any(n.startswith("allreduce seq ") and n.endswith(" ddp-bucket-0")
                            for n in names), names)
        self.assertTrue(any(n.startswith("allreduce seq ") and n.endswith(" allreduce")
                            for n in names), names)
        self.assertGreaterEqual(len(names), 8, names)  # 4 steps x (a bucket + the loss)


if __name__ == "__main__":
    unittest.main()
