"""steps, in-process, a GAN's loop: a job that builds two optimizers before its loop and
steps both in each iteration makes one step of the two (its own module: which optimizers
make a step is learned from the job's first iteration)."""
import unittest

import loops
from one_rank import OneRankTestCase

import torch


class GanSteps(OneRankTestCase):
    def test_two_optimizers_stepped_per_iteration_are_one_step(self):
        generator, critic = torch.nn.Linear(4, 4), torch.nn.Linear(4, 1)
        g_opt = torch.optim.Adam(generator.parameters(), lr=1e-3)
        c_opt = torch.optim.Adam(critic.parameters(), lr=1e-3)
        for x, _ in loops.loader():
            c_opt.zero_grad()
            critic(generator(x).detach()).mean().backward()
            c_opt.step()
            g_opt.zero_grad()
            (-critic(generator(x)).mean()).backward()
            g_opt.step()
        self.assertEqual(len(self.args("end_step")), 3)
        optimizer_phases = [c for c in self.calls("phase_enter", name="optimizer")]
        self.assertEqual(len(optimizer_phases), 6)


if __name__ == "__main__":
    unittest.main()
