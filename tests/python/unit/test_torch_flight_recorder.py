"""torch's own Flight Recorder dump beside dsdiag's, in-process: where torch already wrote
its dump during this job (NCCL's watchdog on its timeout, TORCH_NCCL_DUMP_ON_TIMEOUT), dsdiag
keeps it — it was taken at the failure; dsdiag's terminate handler runs after it — and a file
left by an earlier job is replaced; the dump API is NCCL's for a job on NCCL, the
backend-generic one otherwise (on a GPU, gpu-check's nccl-stall shows the first)."""
import os
import tempfile
import time
import unittest

import one_rank  # noqa: F401  (the package importable, the fake core in place)

import torch

from dsdiag.torch import _torch_flight_recorder as recorder

GENERIC = getattr(torch._C._distributed_c10d, "_dump_fr_trace", None)


class TorchDump(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="dsdiag-unit-fr-")
        self.env = dict(os.environ)
        os.environ["TORCH_FR_BUFFER_SIZE"] = "100"
        os.environ["TORCH_FR_DUMP_TEMP_FILE"] = os.path.join(self.dir, "nccl_trace_rank_")

    def tearDown(self):
        os.environ.clear()
        os.environ.update(self.env)

    def write(self, content, age_s=0.0):
        path = recorder.dump_path("", 0)
        with open(path, "wb") as f:
            f.write(content)
        when = time.time() - age_s
        os.utime(path, (when, when))
        return path

    def test_a_dump_torch_wrote_during_the_job_is_kept(self):
        path = self.write(b"torch's own, at the timeout")
        self.assertEqual(recorder.write_dump("", 0), path)
        with open(path, "rb") as f:
            self.assertEqual(f.read(), b"torch's own, at the timeout")

    @unittest.skipIf(GENERIC is None, "torch has no backend-generic dump API (1.13)")
    def test_a_file_an_earlier_job_left_is_replaced(self):
        age = time.time() - recorder.STARTED + 60  # a minute before this job began
        path = self.write(b"an earlier job's", age_s=age)
        self.assertEqual(recorder.write_dump("", 0), path)
        with open(path, "rb") as f:
            self.assertNotEqual(f.read(), b"an earlier job's")

    def test_without_an_nccl_group_the_dump_is_the_generic_recorders(self):
        self.assertIs(recorder.dump_function(), GENERIC)


if __name__ == "__main__":
    unittest.main()
