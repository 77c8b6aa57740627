"""dsdiag run on training loops written the ways people write them (Gloo, 2 ranks, tens of
steps): a GAN (jobs/gan_job.py: a generator and a discriminator, each in its own DDP with
its own optimizer) counts one step per iteration, however its optimizers step (two per
iteration, a critic schedule, a GradScaler, an optimizer that never steps, with or without a
DataLoader); a clean GAN is clean and its mistakes are named with their rank and step; a
loop fed by two zipped DataLoaders with a validation loop every few steps
(jobs/loops_job.py; under no_grad, in eval mode, or neither) counts the training loop's
steps, epochs, batches and waits alone.

Run by ctest once per Python lane (DSDIAG_TEST_PYTHON); DSDIAG_BINARY names the
dsdiag executable."""
import json
import os
import subprocess
import unittest

from dsdiag_jobs import (DSDIAG, JOBS, PYTHON, JobTestCase, compare, find, lane_needs,
                         read_trace, run_job, serious)

ITERS = 12


def records(out, rank):
    return [json.loads(line) for line in read_trace(os.path.join(out, "rank-%05d.jsonl" % rank))]


def of_type(recs, kind):
    return [r for r in recs if r.get("type") == kind]


def final_losses(out):
    return sorted(l for l in out.splitlines() if l.startswith("final loss"))


class Gan(JobTestCase):
    def run_gan(self, name, extra=(), **env):
        status, out, err = run_job(self.path(name), "gan_job.py", env=env, extra=extra,
                                   timeout=240)
        self.assertEqual(status, 0, err)
        self.assertEqual([l for l in err.splitlines() if l.startswith("dsdiag: ")], [])
        return compare(self.path(name)), out

    def assert_steps(self, name, count=ITERS):
        """`count` steps on each rank, each opened once and closed once; with a loader,
        each holds its batch and both optimizers' steps."""
        for rank in (0, 1):
            recs = records(self.path(name), rank)
            steps = of_type(recs, "step")
            self.assertEqual([s["step"] for s in steps], list(range(count)), rank)
            self.assertEqual(len(of_type(recs, "step_begin")), count, rank)
        return recs

    def test_a_gan_of_n_iterations_is_n_steps_and_clean(self):
        findings, out = self.run_gan("clean")
        self.assertEqual(serious(findings), set(), findings)
        self.assertIsNone(find(findings, "missing-grad", "info"), findings)
        recs = self.assert_steps("clean")
        for s in of_type(recs, "step"):
            self.assertLessEqual({"data", "forward", "backward", "optimizer"}, set(s["phases"]))
            self.assertEqual(s["samples"], 8)
        # One table: both models, each prefixed by its class (the second one numbered).
        [params] = of_type(recs, "params")
        self.assertEqual(len(params["names"]), 8)
        self.assertEqual((params["names"][0], params["names"][4]),
                         ("Sequential.0.weight", "Sequential#2.0.weight"))
        self.assertEqual(params["buckets"], [[0, 1, 2, 3], [4, 5, 6, 7]])
        self.assertEqual(len(of_type(recs, "grad")), ITERS)
        off = subprocess.run([DSDIAG, "run", "--probes", "off", "--nproc", "2", "--out",
                              self.path("off"), "--", PYTHON, os.path.join(JOBS, "gan_job.py")],
                             env=dict(os.environ, OMP_NUM_THREADS="1"), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, universal_newlines=True, timeout=240)
        self.assertRanToItsEnd(off.returncode, off.stderr)
        self.assertEqual(final_losses(out), final_losses(off.stdout))

    def test_without_a_loader_a_critic_schedule_or_a_spare_optimizer_still_one_step_each(self):
        # The generator steps every 3rd iteration; no DataLoader: an iteration without it
        # ends when the discriminator steps again. A third optimizer that never steps is
        # counted out after the first step.
        findings, _ = self.run_gan("critic", LOADER="0", CRITIC="3", SPARE="1")
        self.assertEqual(serious(findings), set(), findings)
        self.assert_steps("critic")

    def test_a_critic_schedule_with_a_loader_is_one_step_per_batch(self):
        findings, _ = self.run_gan("critic-loader", CRITIC="4")
        self.assertEqual(serious(findings), set(), findings)
        recs = self.assert_steps("critic-loader")
        self.assertEqual([l["step"] for l in of_type(recs, "loader")], list(range(ITERS)))

    @lane_needs((2, 3), "torch.amp.GradScaler('cpu') (CPU autocast in fp16)")
    def test_a_gan_with_one_grad_scaler_for_both_optimizers(self):
        findings, _ = self.run_gan("amp", AMP="1")
        self.assertEqual(serious(findings), set(), findings)
        recs = self.assert_steps("amp")
        self.assertEqual(len(of_type(recs, "scaler")), ITERS)

    def test_a_discriminator_gradient_changed_on_rank_1_is_grad_desync_at_its_step(self):
        findings, _ = self.run_gan("d-grad", FAULT="d-grad")
        f = find(findings, "grad-desync")
        self.assertIsNotNone(f, findings)
        self.assertEqual((f["ranks"], f["step"], f["subject"]), ([1], 5, "Sequential#2.0.weight"))
        self.assertEqual(f["evidence"]["basis"], "changed after the sync")
        self.assertEqual({k.split("/")[0] for k in serious(findings)}, {"grad-desync"})

    def test_the_discriminator_step_skipped_on_rank_1_is_named_at_its_step(self):
        # Rank 1 ran the backward (the allreduce matched) and left out optD.step().
        findings, _ = self.run_gan("skip-d", FAULT="skip-d")
        f = find(findings, "replica-divergence")
        self.assertIsNotNone(f, findings)
        self.assertEqual((f["ranks"], f["step"], f["subject"]), ([1], 5, "Sequential#2.0.weight"))
        self.assertEqual(f["evidence"]["basis"], "optimizer step skipped")
        self.assertEqual(f["evidence"]["tensors_differing"], 4)
        self.assertEqual({k.split("/")[0] for k in serious(findings)}, {"replica-divergence"})

    def test_a_generator_parameter_changed_outside_the_optimizer_is_named_at_its_step(self):
        # Every step fingerprinted (--probes full): rank 1 scaled a parameter of G between
        # the discriminator's step and the generator's, at iteration 5.
        findings, _ = self.run_gan("touch-g", extra=("--probes", "full"), FAULT="touch-g")
        f = find(findings, "replica-divergence")
        self.assertIsNotNone(f, findings)
        self.assertEqual((f["ranks"], f["step"], f["subject"]), ([1], 5, "Sequential.0.weight"))
        self.assertEqual(f["evidence"]["basis"], "changed outside the optimizer")


class Closures(JobTestCase):
    def test_lbfgs_calling_its_closure_several_times_is_one_step_per_optimizer_step(self):
        status, _, err = run_job(self.path("lbfgs"), "ddp_configs.py", timeout=240,
                                 env={"DDP_CONFIG": "lbfgs", "STEPS": "6"})
        self.assertEqual(status, 0, err)
        findings = compare(self.path("lbfgs"))
        self.assertEqual(serious(findings), set(), findings)
        for rank in (0, 1):
            recs = records(self.path("lbfgs"), rank)
            self.assertEqual([s["step"] for s in of_type(recs, "step")], list(range(6)), rank)
            # Several allreduces a step (each closure call's backward): as many ops per step.
            colls = [c["step"] for c in of_type(recs, "coll") if c["tag"].startswith("ddp-")]
            self.assertGreater(len(colls), 6, rank)
            self.assertEqual(sorted(set(colls)), list(range(6)), rank)


class LoopsWithValidation(JobTestCase):
    """12 steps in 2 epochs of 6; validation after steps 4, 8 and 12."""

    def run_loop(self, name, **env):
        status, out, err = run_job(self.path(name), "loops_job.py", env=env, timeout=240)
        self.assertEqual(status, 0, err)
        return compare(self.path(name)), out

    def assert_training_loop_alone(self, name):
        for rank in (0, 1):
            recs = records(self.path(name), rank)
            steps = of_type(recs, "step")
            self.assertEqual([(s["step"], s["epoch"]) for s in steps],
                             [(i, i // 6) for i in range(12)], rank)
            self.assertEqual(len(of_type(recs, "step_begin")), 12, rank)
            self.assertEqual([s["samples"] for s in steps], [8] * 12, rank)
            for s in steps:
                self.assertIn("data", s["phases"], (rank, s))
            # The training loader's sampler only, once per epoch.
            self.assertEqual([(r["step"], r["epoch"], r["n"]) for r in of_type(recs, "sampler")],
                             [(0, 0, 48), (6, 1, 48)], rank)
            # No validation batch: the zipped loaders' (both, once the first one is seen
            # feeding every step: from step 2).
            self.assertEqual([l["step"] for l in of_type(recs, "loader")],
                             [0, 1] + [s for s in range(2, 12) for _ in (0, 1)], rank)

    def test_validation_under_no_grad_leaves_the_training_loop_alone(self):
        findings, _ = self.run_loop("nograd", VALIDATE="nograd")
        self.assertEqual(serious(findings), set(), findings)
        self.assert_training_loop_alone("nograd")

    def test_validation_in_eval_mode_with_autograd_on_opens_no_step(self):
        findings, _ = self.run_loop("eval", VALIDATE="eval")
        self.assertEqual(serious(findings), set(), findings)
        self.assert_training_loop_alone("eval")

    def test_a_validation_loop_in_training_mode_with_autograd_on_opens_no_step(self):
        findings, _ = self.run_loop("sloppy", VALIDATE="sloppy")
        self.assertEqual(serious(findings), set(), findings)
        self.assert_training_loop_alone("sloppy")

    def test_the_zipped_loader_slow_on_rank_1_is_loader_starvation_naming_it(self):
        findings, _ = self.run_loop("slow", SLOW="1")
        f = find(findings, "loader-starvation", "warning")
        self.assertIsNotNone(f, findings)
        self.assertEqual((f["ranks"], f["subject"]), ([1], "data loader"))
        self.assertEqual(serious(findings), set(), findings)

    def test_a_slow_validation_loader_is_no_loader_starvation(self):
        findings, _ = self.run_loop("vslow", VSLOW="1")
        self.assertIsNone(find(findings, "loader-starvation", "warning"), findings)
        self.assertEqual(serious(findings), set(), findings)
        self.assert_training_loop_alone("vslow")


if __name__ == "__main__":
    unittest.main()
