"""Replicas that drift apart without a gradient to blame, and ranks configured apart, in real
DDP jobs under dsdiag run: BatchNorm buffers left unsynced (broadcast_buffers=False), a
manual weight decay on one rank, a determinism switch set on one rank."""
import unittest

from dsdiag_jobs import JobTestCase, compare, find, run_job, serious


class ReplicaDrift(JobTestCase):
    def test_batchnorm_with_broadcast_buffers_is_clean(self):
        status, _, err = run_job(self.path("bn"), "ddp_replicas.py", nproc=3)
        self.assertEqual(status, 0, err)
        self.assertEqual(serious(compare(self.path("bn"))), set())

    def test_unsynced_batchnorm_buffers_are_a_replica_divergence_at_step_1(self):
        status, _, err = run_job(self.path("unsynced"), "ddp_replicas.py", nproc=2,
                                 env={"FAULT": "bn-unsynced"})
        self.assertEqual(status, 0, err)
        findings = compare(self.path("unsynced"))
        self.assertEqual(serious(findings), {"replica-divergence/error"}, findings)
        f = find(findings, "replica-divergence")
        self.assertEqual((f["step"], f["subject"]), (1, "1.running_mean"))
        self.assertEqual(f["evidence"]["what"], "buffer")
        self.assertIn("broadcast_buffers=False", f["hint"])

    def test_a_manual_decay_on_one_rank_names_it(self):
        status, _, err = run_job(self.path("decay"), "ddp_replicas.py", nproc=3,
                                 env={"FAULT": "decay"})
        self.assertEqual(status, 0, err)
        findings = compare(self.path("decay"))
        self.assertEqual(serious(findings), {"replica-divergence/error"}, findings)
        f = find(findings, "replica-divergence")
        self.assertEqual(f["ranks"], [1])
        self.assertEqual(f["subject"], "0.weight")

    def test_a_manual_decay_on_one_of_two_ranks_names_it_though_no_majority_can(self):
        # Two ranks, two replicas: the fingerprints cannot say which is right; the parameters'
        # version counters moved on rank 1 between its optimizer steps.
        status, _, err = run_job(self.path("decay2"), "ddp_replicas.py", nproc=2,
                                 env={"FAULT": "decay"})
        self.assertEqual(status, 0, err)
        findings = compare(self.path("decay2"))
        self.assertEqual(serious(findings), {"replica-divergence/error"}, findings)
        f = find(findings, "replica-divergence")
        self.assertEqual(f["ranks"], [1])
        self.assertEqual(f["evidence"]["basis"], "changed outside the optimizer")
        self.assertEqual(f["evidence"]["changed_before_step"], 4)  # the decay after step 3's

    def test_a_determinism_switch_on_one_rank_is_a_config_mismatch(self):
        status, _, err = run_job(self.path("config"), "ddp_faults.py", env={"FAULT": "config"})
        self.assertEqual(status, 0, err)
        findings = compare(self.path("config"))
        self.assertEqual(serious(findings), {"config-mismatch/warning"}, findings)
        f = find(findings, "config-mismatch", "warning")
        self.assertIn("cudnn_benchmark", f["subject"] + f["summary"])


if __name__ == "__main__":
    unittest.main()
