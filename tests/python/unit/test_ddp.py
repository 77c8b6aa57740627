"""ddp, in-process: a DDP model is one `params` record (names, shapes, dtypes, buckets) and
an `init` fingerprint of each parameter; each step fingerprints each gradient as synced
(after-sync) and as the optimizer is about to use it (pre-step): the same hash when nothing
touched the gradient in between, another when the job changed it (a rescale, a clip), and
the hash is that of the gradient's bytes."""
import unittest

import fake_core
import loops
from one_rank import FAKE, OneRankTestCase

import torch
from torch.nn.parallel import DistributedDataParallel


def byte_hash(tensor):
    t = tensor.detach().contiguous()
    return FAKE.fingerprint(t.data_ptr(), t.numel() * t.element_size())


class Ddp(OneRankTestCase):
    """One DDP model for the module, as a job has: the probe watches the first one built."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        torch.manual_seed(0)
        cls.ddp = DistributedDataParallel(torch.nn.Sequential(torch.nn.Linear(4, 3),
                                                              torch.nn.Linear(3, 2)))
        cls.optimizer = torch.optim.SGD(cls.ddp.parameters(), lr=0.1)
        cls.init = [byte_hash(p) for p in cls.ddp.module.parameters()]
        fake_core.clear()
        loops.train(cls.ddp, cls.optimizer, loops.loader())
        cls.first_epoch = list(fake_core.CALLS)

    def model(self):
        return self.ddp

    def test_the_model_is_one_params_record_and_init_fingerprints(self):
        first_epoch = [c.args for c in self.first_epoch if c.name == "write_params"]
        [record] = first_epoch
        self.assertEqual(record["names"], ["0.weight", "0.bias", "1.weight", "1.bias"])
        self.assertEqual(record["shapes"], [[3, 4], [3], [2, 3], [2]])
        self.assertEqual(sorted(i for bucket in record["buckets"] for i in bucket), [0, 1, 2, 3])
        [fps] = [c.args for c in self.first_epoch if c.name == "write_fingerprints"
                 and c.args["why"] == "init"]
        self.assertEqual(fps["hashes"], self.init)

    def test_an_untouched_gradient_has_one_hash_after_sync_and_before_the_step(self):
        model = self.model()
        seen = []

        def remember(m):
            seen.append([byte_hash(p.grad) for p in m.module.parameters()])

        loops.train(model, self.optimizer, loops.loader(), remember)
        after = self.args("write_fingerprints", what="grad", why="after-sync")
        pre = self.args("write_fingerprints", what="grad", why="pre-step")
        self.assertEqual(len(after), 3)
        self.assertEqual([a["hashes"] for a in after], [p["hashes"] for p in pre])
        self.assertEqual([p["hashes"] for p in pre], seen)

    def test_a_gradient_changed_before_the_step_has_another_pre_step_hash(self):
        model = self.model()

        def rescale_first(m):
            next(m.module.parameters()).grad.mul_(0.5)

        loops.train(model, self.optimizer, loops.loader(),
                    rescale_first)
        after = self.args("write_fingerprints", what="grad", why="after-sync")
        pre = self.args("write_fingerprints", what="grad", why="pre-step")
        for a, p in zip(after, pre):
            self.assertNotEqual(a["hashes"][0], p["hashes"][0])
            self.assertEqual(a["hashes"][1:], p["hashes"][1:])

    def test_each_bucket_is_one_allreduce_per_step(self):
        loops.train(self.model(), self.optimizer, loops.loader())
        [record] = [c.args for c in self.first_epoch if c.name == "write_params"]
        ops = self.args("collective", op="allreduce")
        self.assertEqual(len(ops), 3 * len(record["buckets"]))
        self.assertTrue(all(o["tag"].startswith("ddp-bucket-") for o in ops), ops)
        self.assertEqual(sum(o["count"] for o in ops), 3 * (12 + 3 + 6 + 2))

if __name__ == "__main__":
    unittest.main()
