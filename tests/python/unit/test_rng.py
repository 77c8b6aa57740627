"""rng, in-process: a loop that draws from torch's generator in training (dropout) has that
stream recorded, with the seed the job set and the state's hash, once its use is seen; a
stream the loop never draws from (Python's `random` here) is not recorded."""
import random
import unittest

import loops
from one_rank import OneRankTestCase

import torch


class Rng(OneRankTestCase):
    def test_dropouts_stream_is_recorded_with_the_jobs_seed(self):
        torch.manual_seed(1234)
        random.seed(7)
        model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Dropout(0.5),
                                    torch.nn.Linear(8, 2))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(2):
            loops.train(model, optimizer, loops.loader(batch_size=2))
        records = self.args("write_rng")
        streams = {r["stream"] for r in records}
        self.assertIn("torch-cpu", streams, records)
        self.assertNotIn("random", streams, records)
        first = [r for r in records if r["stream"] == "torch-cpu"][0]
        self.assertEqual(first["seed"], 1234)
        self.assertNotEqual(first["state_hash"], 0)


if __name__ == "__main__":
    unittest.main()
