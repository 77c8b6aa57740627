"""data, in-process: each batch the training loader yields is one `loader` record with its
samples and a fingerprint of its bytes (the same batch, the same fingerprint), and the fetch
is the step's data phase; a DistributedSampler's epoch order is a `sampler` record."""
import unittest

import loops
from one_rank import OneRankTestCase

import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


class Data(OneRankTestCase):
    def epoch(self, loader):
        model = torch.nn.Linear(4, 2)
        loops.train(model, torch.optim.SGD(model.parameters(), lr=0.1), loader)

    def test_each_batch_is_a_loader_record_with_its_samples(self):
        self.epoch(loops.loader(batch_size=5))
        self.assertEqual([a["samples"] for a in self.args("write_loader")], [5, 5, 2])
        self.assertEqual(len(self.calls("phase_enter", name="data")), 3)

    def test_the_same_batches_give_the_same_fingerprints_and_others_differ(self):
        self.epoch(loops.loader())
        first = [a["batch"] for a in self.args("write_loader")]
        self.setUp()
        self.epoch(loops.loader())
        again = [a["batch"] for a in self.args("write_loader")]
        self.assertEqual(first, again)
        self.assertEqual(len(set(first)), 3, first)
        self.assertNotIn(0, first)

    def test_a_validation_pass_over_another_loader_opens_no_step(self):
        self.epoch(loops.loader())
        self.setUp()
        model = torch.nn.Linear(4, 2)
        with torch.no_grad():
            for x, _ in DataLoader(loops.dataset(seed=1), batch_size=4):
                model(x)
        self.assertEqual(self.args("write_loader"), [])
        self.assertEqual(self.steps(), [])

    def test_a_distributed_samplers_epoch_is_one_sampler_record(self):
        data = loops.dataset(samples=10)
        sampler = DistributedSampler(data, num_replicas=1, rank=0, shuffle=True, seed=3)
        sampler.set_epoch(2)
        self.epoch(DataLoader(data, batch_size=5, sampler=sampler))
        [record] = self.args("write_sampler")
        self.assertEqual((record["sampler_epoch"], record["seed"], record["dataset_size"]),
                         (2, 3, 10))
        self.assertEqual(sorted(record["indices"]), list(range(10)))
        self.assertEqual(record["indices"], list(iter(sampler)))


if __name__ == "__main__":
    unittest.main()
