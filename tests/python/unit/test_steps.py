"""steps, in-process: each optimizer.step() of a one-optimizer loop ends a step, the step
carries the loss the job computed, and its phases come in the loop's order."""
import math
import unittest

import loops
from one_rank import OneRankTestCase

import torch
from torch.nn.parallel import DistributedDataParallel


class Steps(OneRankTestCase):
    def test_each_optimizer_step_ends_a_step_with_the_jobs_loss(self):
        torch.manual_seed(0)
        model = torch.nn.Linear(4, 2)
        losses = loops.train(model, torch.optim.SGD(model.parameters(), lr=0.1), loops.loader())
        self.assertEqual(len(losses), 3)
        begun = self.steps()
        self.assertEqual(begun, list(range(begun[0], begun[0] + 3)))
        ended = self.args("end_step")
        self.assertEqual(len(ended), 3)
        for seen, loss in zip(ended, losses):
            self.assertTrue(math.isclose(seen["loss"], loss, rel_tol=1e-6), (seen, loss))
            self.assertEqual(seen["samples"], 4)

    def test_a_steps_phases_come_in_the_loops_order(self):
        model = DistributedDataParallel(torch.nn.Linear(4, 2))
        loops.train(model, torch.optim.SGD(model.parameters(), lr=0.1), loops.loader(12))
        names = [c.args["name"] for c in self.calls() if c.name == "phase_enter"]
        self.assertEqual(names, ["data", "forward", "backward", "optimizer"])
        exits = [c.args for c in self.calls("phase_exit")]
        self.assertFalse(any(e["failed"] for e in exits), exits)


if __name__ == "__main__":
    unittest.main()
