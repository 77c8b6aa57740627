"""FSDP2 (`fully_shard`, torch 2.x on CPU with Gloo) under dsdiag run: the job is instrumented
without error, its collectives — the parameter all-gathers and the gradient reduce-scatters —
are recorded on every rank, and a clean job is clean.

Under FSDP there are no replicas: each rank holds a shard of every parameter, different by
design, so no parameter table or fingerprint is taken (dsdiag.torch.ddp._unwrapped skips
DTensor parameters). What must agree across ranks is the sequence of collectives (op, dtype,
count per group and sequence number): collective-mismatch and hang compare those."""
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
        self.assertEqual(status, 0, err)
        # No hooked area failed to go in, no probe switched itself off.
        self.assertEqual([l for l in err.splitlines() if l.startswith("dsdiag: ")], [])
        self.assertEqual(sorted(l.split()[2] for l in out.splitlines()
                                if l.startswith("final loss")), ["0", "1"])
        colls = {}
        for rank in (0, 1):
            records = [json.loads(r) for r in
                       read_trace(os.path.join(run, "rank-%05d.jsonl" % rank))]
            self.assertEqual([r["step"] for r in records if r["type"] == "step"],
                             list(range(8)))
            self.assertEqual([r for r in records if r["type"] == "params"], [])
            colls[rank] = [(r["pg"], r["seq"], r["op"], r["dtype"], r["n"])
                           for r in records if r["type"] == "coll"]
        ops = {op for _, _, op, _, _ in colls[0]}
        self.assertEqual(ops, {"allgather", "reduce_scatter"}, colls[0])
        # Every step gathers each sharded module's parameters and reduce-scatters their
        # gradients, numbered per group as the backend numbers them, alike on both ranks.
        self.assertGreaterEqual(len(colls[0]), 8 * 2)
        self.assertEqual(colls[0], colls[1])
        self.assertEqual([seq for _, seq, _, _, _ in colls[0]], list(range(len(colls[0]))))
        findings = compare(run)
        self.assertEqual(serious(findings), set(), findings)


if __name__ == "__main__":
    unittest.main()
