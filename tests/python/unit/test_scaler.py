"""scaler, in-process: each GradScaler iteration is one `scaler` record with the scale it
ran at; an iteration whose gradients overflow is recorded as found-inf and skipped, and the
next runs at half the scale (torch 2.x: GradScaler on CPU; torch 1.13's needs CUDA)."""
import unittest

import loops
from one_rank import OneRankTestCase

import torch

HAS_CPU_SCALER = hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler")


@unittest.skipUnless(HAS_CPU_SCALER, "torch %s has no GradScaler on CPU" % torch.__version__)
class Scaler(OneRankTestCase):
    def iterate(self, overflow_at=None, iterations=4):
        model = torch.nn.Linear(4, 2)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)
        batches = loops.loader(batch_size=3)
        for i, (x, y) in zip(range(iterations), batches):
            optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            if i == overflow_at:
                loss = loss * float("inf")
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        return self.args("write_scaler")

    def test_each_iteration_is_one_record_at_its_scale(self):
        records = self.iterate()
        self.assertEqual(len(records), 4)
        self.assertEqual([r["scale"] for r in records], [1024.0] * 4)
        self.assertFalse(any(r["inf_local"] or r["skipped"] for r in records), records)

    def test_an_overflow_is_found_skipped_and_halves_the_scale(self):
        records = self.iterate(overflow_at=1)
        self.assertEqual([(r["inf_local"], r["skipped"]) for r in records],
                         [(False, False), (True, True), (False, False), (False, False)])
        self.assertEqual([r["scale"] for r in records], [1024.0, 1024.0, 512.0, 512.0])


if __name__ == "__main__":
    unittest.main()
