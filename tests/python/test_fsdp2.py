"""FSDP2 (`fully_shard`, torch 2.x on CPU with Gloo) under dsdiag run: the job is instrumented
without error, its collectives — the parameter all-gathers and the gradient reduce-scatters —
are recorded on every rank, and a clean job is clean.

Under FSDP there are no replicas once sharded: each rank holds a shard of every parameter,
different by design (dsdiag.torch.ddp._unwrapped skips DTensor parameters). What must agree
is what the ranks built before fully_shard took it — fingerprinted whole on each rank then
(dsdiag.torch.fsdp): a model built after torch.manual_seed(rank) is init-divergence naming
the ranks that are not rank 0 — and the sequence of collectives (op, dtype, count per group
and sequence number): collective-mismatch and hang compare those."""
import unittest

from dsdiag_jobs import JobTestCase, compare, read_trace, run_job, serious



def _has_fsdp2():
    """torch >= 2.4 has fully_shard; Debian's 1.13 has none, and its torch.distributed.fsdp
    does not even import under Python 3.11 (a dataclass with a mutable default)."""
    for module in ("torch.distributed.fsdp", "torch.distributed._composable.fsdp"):
        try:
            if hasattr(__import__(module, fromlist=["fully_shard"]), "fully_shard"):
                return True
        except Exception:
            pass
    return False


HAS_FSDP2 = _has_fsdp2()


@unittest.skipUnless(HAS_FSDP2, "this lane's torch has no FSDP2 (fully_shard, torch >= 2.4)")
class FullyShard(JobTestCase):
    def test_a_clean_fsdp2_job_is_instrumented_recorded_and_clean(self):
        import json
        import os

        run = self.path("fsdp2")
        status, out, err = run_job(run, "fsdp2_job.py", env={"STEPS": "8"})
        self.assertFinishedEveryRank(status, out, err, 2)
        # No hooked area failed to go in, no probe switched itself off.
        self.assertEqual([l for l in err.splitlines() if l.startswith("dsdiag: ")], [])
        self.assertEqual(sorted(l.split()[2] for l in out.splitlines()
                                if l.startswith("final loss")), ["0", "1"])
        colls, inits = {}, {}
        for rank in (0, 1):
            records = [json.loads(r) for r in
                       read_trace(os.path.join(run, "rank-%05d.jsonl" % rank))]
            self.assertEqual([r["step"] for r in records if r["type"] == "step"],
                             list(range(8)))
            tables = [r for r in records if r["type"] == "params"]
            self.assertEqual([t["names"] for t in tables],
                             [["0.weight", "0.bias", "2.weight", "2.bias"]])
            init = [r for r in records if r["type"] == "fp" and r["why"] == "init"]
            self.assertEqual(len(init), 1)
            inits[rank] = init[0]["h"]
            colls[rank] = [(r["pg"], r["seq"], r["op"], r["dtype"], r["n"])
                           for r in records if r["type"] == "coll"]
        self.assertEqual(inits[0], inits[1])  # one seed: the same model on both ranks
        ops = {op for _, _, op, _, _ in colls[0]}
        self.assertEqual(ops, {"allgather", "reduce_scatter"}, colls[0])
        # Every step gathers each sharded module's parameters and reduce-scatters their
        # gradients, numbered per group as the backend numbers them, alike on both ranks.
        self.assertGreaterEqual(len(colls[0]), 8 * 2)
        self.assertEqual(colls[0], colls[1])
        self.assertEqual([seq for _, seq, _, _, _ in colls[0]], list(range(len(colls[0]))))
        findings = compare(run)
        self.assertEqual(serious(findings), set(), findings)

    def test_a_seed_per_rank_before_fully_shard_is_init_divergence(self):
        for nproc, named in ((2, [1]), (3, [1, 2])):
            run = self.path("seed-%d" % nproc)
            status, out, err = run_job(run, "fsdp2_job.py", nproc=nproc,
                                       env={"STEPS": "4", "SEED": "rank"})
            self.assertFinishedEveryRank(status, out, err, nproc)
            findings = compare(run)
            self.assertEqual(serious(findings), {"init-divergence/error"}, findings)
            f = [f for f in findings if f["kind"] == "init-divergence"][0]
            self.assertEqual((f["ranks"], f["step"], f["subject"]), (named, 0, "0.weight"))
            self.assertEqual(f["evidence"]["tensors_differing"], 4)


@unittest.skipUnless(HAS_FSDP2, "this lane's torch has no FSDP2 (fully_shard, torch >= 2.4)")
class FullyShardHook(unittest.TestCase):
    def test_install_wraps_fully_shard_and_uninstall_puts_it_back(self):
        import sys

        from dsdiag_jobs import package_dir

        if package_dir() not in sys.path:
            sys.path.insert(0, package_dir())
        import torch.distributed.fsdp as fsdp
        from dsdiag.torch import fsdp as area

        original = fsdp.fully_shard
        area.install()
        try:
            self.assertIsNot(fsdp.fully_shard, original)
            self.assertIs(fsdp.fully_shard.__wrapped__, original)
            self.assertIs(fsdp.fully_shard.state, original.state)  # contract's attribute
        finally:
            area.uninstall()
        self.assertIs(fsdp.fully_shard, original)
        self.assertFalse([f for f in sys.meta_path if type(f).__module__.startswith("dsdiag")])

    def test_fsdp1_is_wrapped_and_sync_module_states_is_left_alone(self):
        import sys

        from dsdiag_jobs import package_dir

        if package_dir() not in sys.path:
            sys.path.insert(0, package_dir())
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        from dsdiag.torch import fsdp as area
        from dsdiag.torch._patches import signature_of
        from dsdiag.torch.fsdp import _fully_shard

        original = FSDP.__init__
        area.install()
        try:
            self.assertTrue(FSDP.__init__._dsdiag_wrapper)
        finally:
            area.uninstall()
        self.assertIs(FSDP.__init__, original)
        signature, net = signature_of(original), object()
        synced = _fully_shard._syncs_states
        self.assertTrue(synced(signature, None, net, (), {"sync_module_states": True}))
        self.assertFalse(synced(signature, None, net, (), {"device_id": "cpu"}))


class FullyShardedDataParallel(JobTestCase):
    @unittest.skipUnless(HAS_FSDP2, "FSDP1 on CPU: this lane's torch cannot import it")
    def test_a_seed_per_rank_before_fsdp1_is_init_divergence_and_one_seed_is_clean(self):
        for seed, expected in (("rank", {"init-divergence/error"}), ("one", set())):
            run = self.path("fsdp1-" + seed)
            status, out, err = run_job(run, "fsdp1_job.py", env={"SEED": seed})
            self.assertFinishedEveryRank(status, out, err, 2)
            findings = compare(run)
            self.assertEqual(serious(findings), expected, findings)
            if expected:
                f = [f for f in findings if f["kind"] == "init-divergence"][0]
                self.assertEqual((f["ranks"], f["subject"]), ([1], "0.weight"))


if __name__ == "__main__":
    unittest.main()
