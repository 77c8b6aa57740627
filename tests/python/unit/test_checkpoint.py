"""checkpoint, in-process: torch.save and torch.load are `ckpt` records with the file's
bytes and hash (the same file, the same hash) and the step they were taken at, each in the
checkpoint phase."""
import os
import tempfile
import unittest

import loops
from one_rank import OneRankTestCase

import torch


class Checkpoint(OneRankTestCase):
    def setUp(self):
        super().setUp()
        self.dir = tempfile.mkdtemp(prefix="dsdiag-unit-ckpt-")

    def test_a_save_and_its_load_carry_one_hash_and_the_files_size(self):
        model = torch.nn.Linear(4, 2)
        loops.train(model, torch.optim.SGD(model.parameters(), lr=0.1), loops.loader())
        path = os.path.join(self.dir, "model.pt")
        torch.save(model.state_dict(), path)
        model.load_state_dict(torch.load(path))
        save, load = self.args("write_checkpoint")
        self.assertEqual((save["op"], load["op"]), ("save", "load"))
        self.assertEqual(save["path"], path)
        self.assertEqual(save["bytes"], os.path.getsize(path))
        self.assertEqual(save["hash"], load["hash"])
        self.assertEqual(save["ckpt_step"], self.steps()[-1] + 1)
        every = self.calls()
        for i, call in enumerate(every):
            if call.name == "write_checkpoint":  # timed in the phase it closes
                self.assertEqual(every[i - 1], ("phase_exit", {"name": "checkpoint",
                                                               "failed": False}))

    def test_different_contents_have_different_hashes(self):
        a, b = os.path.join(self.dir, "a.pt"), os.path.join(self.dir, "b.pt")
        torch.save({"w": torch.zeros(3)}, a)
        torch.save({"w": torch.ones(3)}, b)
        first, second = self.args("write_checkpoint", op="save")
        self.assertNotEqual(first["hash"], second["hash"])


if __name__ == "__main__":
    unittest.main()
