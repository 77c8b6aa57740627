"""dsdiag run on AMP DDP jobs (Gloo, 2-3 ranks) with torch's own GradScaler: an overflow on
one rank is scaler-overflow naming it, a scaler whose scale differs on one rank is
scaler-desync naming it, clipping the still scaled gradients is clip-before-unscale; a clean
AMP job gives no finding and the same losses as without dsdiag.

The jobs (jobs/scaler_amp.py) run torch's real scaler: on torch 2.x torch.amp.GradScaler("cpu")
under fp16 CPU autocast, torch's own kernels; on torch 1.13 torch.cuda.amp.GradScaler on the
CPU, with PYTHONOPTIMIZE=1 and two test-only CPU kernels (jobs/scaler_cpu_amp.py). bf16
autocast needs no scaler: a bf16 job records none and gives no finding. Run by ctest once
per Python lane (DSDIAG_TEST_PYTHON); DSDIAG_BINARY names the dsdiag executable."""
import json
import os
import unittest

from dsdiag_jobs import TORCH, JobTestCase, compare, find, run_job, serious


def records(run_dir, rank, kind):
    with open(os.path.join(run_dir, "rank-%05d.jsonl" % rank)) as trace:
        return [r for r in map(json.loads, trace) if r.get("type") == kind]


def lines(out, prefix):
    return sorted(l for l in out.splitlines() if l.startswith(prefix))


class ScalerProbes(JobTestCase):
    def job(self, name, fault, nproc=2, steps=None, real_scaler=True, extra=(), env=None):
        env = dict(env or {}, FAULT=fault)
        if real_scaler and TORCH < (2, 0):
            env["PYTHONOPTIMIZE"] = "1"  # torch 1.13's GradScaler on the CPU (scaler_cpu_amp)
        if steps:
            env["STEPS"] = str(steps)
        status, out, err = run_job(self.path(name), "scaler_amp.py", nproc=nproc, env=env,
                                   extra=extra)
        if "off" in extra:  # the baseline, without dsdiag's probes
            self.assertRanToItsEnd(status, err)
        else:
            self.assertEqual(status, 0, err)
        return out

    def test_a_clean_amp_job_has_no_finding_and_the_same_losses_as_without_dsdiag(self):
        out = self.job("clean", "clean")
        run = self.path("clean")
        self.assertEqual(serious(compare(run)), set())
        for rank in (0, 1):
            scaler = records(run, rank, "scaler")
            self.assertEqual([r["step"] for r in scaler], list(range(40)))
            self.assertFalse(any(r["skipped"] or r["inf_local"] or r["inf_global"]
                                 for r in scaler))
            # growth_interval 10: the scale doubles after steps 9, 19, 29 and 39.
            self.assertEqual([r["step"] for r in scaler if r.get("event") == "growth"],
                             [9, 19, 29, 39])
            self.assertEqual([scaler[s]["scale"] for s in (0, 10, 20, 30)],
                             [65536, 131072, 262144, 524288])
            clips = records(run, rank, "clip")
            self.assertEqual(len(clips), 40)
            self.assertTrue(all(c["unscaled"] and c["max"] == 1 for c in clips))
            # The scaler record's norms are the clip's: unscaled, and times the scale.
            self.assertAlmostEqual(scaler[0]["norm"], clips[0]["norm"])
            self.assertAlmostEqual(scaler[0]["norm_scaled"], clips[0]["norm"] * 65536,
                                   delta=1e-3 * scaler[0]["norm_scaled"])
            # The step's loss is the loss, not the scaled one backward() ran on.
            self.assertLess(records(run, rank, "step")[0]["loss"], 1000)
        self.assertIn("final scale 0 1048576", out)
        off = self.job("off", "clean", extra=["--probes", "off"])
        self.assertEqual(lines(out, "final "), lines(off, "final "))

    def test_a_bf16_job_without_a_scaler_records_none_and_has_no_finding(self):
        self.job("bf16", "clean", steps=10, env={"AMP": "bf16"})
        run = self.path("bf16")
        self.assertEqual(serious(compare(run)), set())
        self.assertEqual(records(run, 0, "scaler"), [])
        self.assertEqual(len(records(run, 1, "step")), 10)

    def test_a_disabled_scaler_is_called_through_and_records_no_scaler(self):
        # torch.cuda.amp.GradScaler() without CUDA disables itself, scale() is a no-op.
        out = self.job("disabled", "disabled", steps=10, real_scaler=False)
        run = self.path("disabled")
        self.assertEqual(serious(compare(run)), set())
        self.assertEqual(records(run, 0, "scaler"), [])
        self.assertEqual(len(records(run, 0, "step")), 10)
        clips = records(run, 0, "clip")
        self.assertEqual(len(clips), 10)
        self.assertTrue(all(c["unscaled"] for c in clips))
        self.assertIn("final scale 0 1", out)

    def test_an_overflow_on_one_rank_is_scaler_overflow_naming_that_rank(self):
        # Rank 1's batch holds an inf at steps 5, 9 (calibration: info), 25 (warning) and
        # 30-34 (5 in a row: the scale collapses, error). DDP's allreduce gives every rank
        # the NaN gradients: every rank skips, rank 1 is where they came from.
        self.job("overflow", "overflow")
        findings = compare(self.path("overflow"))
        self.assertEqual(serious(findings), {"scaler-overflow/error", "scaler-overflow/warning"},
                         findings)
        expected = {"info": (5, [5, 9]), "warning": (25, [25]), "error": (30, [30, 31, 32, 33, 34])}
        for severity, (step, steps) in expected.items():
            f = find(findings, "scaler-overflow", severity)
            self.assertIsNotNone(f, (severity, findings))
            self.assertEqual((f["ranks"], f["step"], f["subject"]), ([1], step, "loss scale"))
            self.assertEqual(f["evidence"]["steps"], steps)
            self.assertEqual(f["evidence"]["ranks_with_inf"], [1])
            self.assertEqual(f["evidence"]["ranks_skipped"], [0, 1])
        # The skipped steps still end their step record, once each.
        self.assertEqual([r["step"] for r in records(self.path("overflow"), 0, "step")],
                         list(range(40)))

    def test_a_job_scaler_subclass_without_private_state_is_still_seen_once_per_step(self):
        # The job's subclass calls super().step() / super().update(): one record per step.
        # Without the private state: skipped = its optimizer.step() did not run, the event
        # from the scale read again after update().
        self.job("public", "overflow", steps=30,
                 env={"OVERFLOW_STEPS": "25", "SCALER": "subclass", "PUBLIC_ONLY": "1"})
        run = self.path("public")
        findings = compare(run)
        self.assertEqual(serious(findings), {"scaler-overflow/warning"}, findings)
        f = find(findings, "scaler-overflow", "warning")
        self.assertEqual((f["ranks"], f["step"]), ([1], 25))
        for rank in (0, 1):
            scaler = records(run, rank, "scaler")
            self.assertEqual([r["step"] for r in scaler], list(range(30)))
            self.assertEqual([r["step"] for r in scaler if r["skipped"]], [25])
            self.assertEqual([(r["step"], r["event"]) for r in scaler if "event" in r],
                             [(25, "backoff")])
            self.assertEqual((scaler[25]["scale"], scaler[26]["scale"]), (65536, 32768))
            self.assertEqual(scaler[25]["inf_local"], rank == 1)

    def test_a_scaler_started_at_another_scale_on_one_rank_is_scaler_desync(self):
        self.job("init", "desync-init", nproc=3, steps=10)
        findings = compare(self.path("init"))
        f = find(findings, "scaler-desync")
        self.assertIsNotNone(f, findings)
        self.assertEqual((f["ranks"], f["step"], f["subject"]), ([1], 0, "loss scale"))
        self.assertEqual(f["evidence"]["differs"], "scale")
        self.assertEqual(f["evidence"]["steps_disagreeing"], 10)
        # The gradients, unscaled by another scale on rank 1, differ there too (the
        # pre-step fingerprint is taken after unscale_).
        self.assertLessEqual(serious(findings), {"scaler-desync/error", "grad-desync/error"})

    def test_a_scaler_state_restored_on_one_rank_is_scaler_desync_from_that_step(self):
        # Rank 1 reloads the scaler state of step 0 after step 11; the others' scale has
        # grown twice by then (growth_interval 5).
        self.job("load", "desync-load", nproc=3, steps=16)
        findings = compare(self.path("load"))
        f = find(findings, "scaler-desync")
        self.assertIsNotNone(f, findings)
        self.assertEqual((f["ranks"], f["step"], f["subject"]), ([1], 12, "loss scale"))
        scales = {g["scale"] for g in f["evidence"]["groups"]}
        self.assertEqual(scales, {65536, 262144})
        self.assertLessEqual(serious(findings), {"scaler-desync/error", "grad-desync/error"})

    def test_clipping_before_unscale_is_clip_before_unscale(self):
        self.job("clip", "clip-before", steps=10)
        findings = compare(self.path("clip"))
        self.assertEqual(serious(findings), {"clip-before-unscale/error"}, findings)
        f = find(findings, "clip-before-unscale")
        self.assertEqual((f["ranks"], f["step"], f["subject"]), ([0, 1], 0, "clip_grad_norm"))
        self.assertEqual(f["evidence"]["scale"], 65536)
        self.assertEqual(f["evidence"]["steps_clipped"], 20)  # every (rank, step)
        self.assertAlmostEqual(f["evidence"]["unscaled_norm"] * 65536, f["evidence"]["norm"],
                               delta=1e-6 * f["evidence"]["norm"])


if __name__ == "__main__":
    unittest.main()
