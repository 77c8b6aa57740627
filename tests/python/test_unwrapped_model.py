"""The model however it is wrapped, in real 2-rank jobs under dsdiag run: without DDP the
parameter table and the fingerprints come from the optimizer's parameters, named by the
module that owns them (replicas that drift are replica-divergence from step 0, models built
from per-rank seeds init-divergence); a DDP whose inner module is called directly is named
at the step its gradients first went unreduced; a clean DDP job keeps one table per rank;
one process without DDP gets nothing."""
import glob
import json
import os
import sys
import unittest

from dsdiag_jobs import JobTestCase, compare, find, package_dir, read_trace, run_job, serious


def records(run, kind):
    """{rank: [records of `kind`]} of every rank's trace in `run`."""
    by_rank = {}
    for path in sorted(glob.glob(os.path.join(run, "rank-*.jsonl"))):
        rank = int(os.path.basename(path)[len("rank-"):-len(".jsonl")])
        by_rank[rank] = [r for r in map(json.loads, read_trace(path)) if r.get("type") == kind]
    return by_rank


def marks(run, name):
    return {rank: [m for m in ms if m.get("name") == name]
            for rank, ms in records(run, "mark").items()}


class UnwrappedModel(JobTestCase):
    def job(self, name, fault, nproc=2):
        run = self.path(name)
        status, _, err = run_job(run, "unwrapped_model.py", nproc=nproc, env={"FAULT": fault})
        self.assertEqual(status, 0, err)
        # A probe that switched itself off says so once on stderr as "dsdiag: ...".
        self.assertEqual([l for l in err.splitlines() if l.startswith("dsdiag: ")], [])
        return run, compare(run)

    def test_no_ddp_replicas_drift_from_step_0(self):
        run, findings = self.job("no-ddp", "no-ddp")
        self.assertEqual(serious(findings), {"replica-divergence/error"}, findings)
        f = find(findings, "replica-divergence")
        self.assertEqual((f["step"], f["ranks"]), (0, [0, 1]), f)
        self.assertEqual(f["evidence"]["what"], "param")
        self.assertIn(f["subject"], ("0.weight", "0.bias", "2.weight", "2.bias"))
        self.assertIn("4 of 4 parameters differ", f["summary"])
        tables = records(run, "params")
        for rank in (0, 1):
            self.assertEqual(len(tables[rank]), 1, tables)
            self.assertEqual(tables[rank][0]["names"], ["0.weight", "0.bias", "2.weight",
                                                       "2.bias"])
            self.assertEqual(tables[rank][0]["buckets"], [])  # nothing syncs the gradients
            self.assertEqual(len(marks(run, "model-not-wrapped")[rank]), 1)

    def test_a_step_that_begins_at_the_optimizer_step_is_seen_from_step_0(self):
        # No loader fetch, no Tensor.backward: the probe starts after step 0's backward, so
        # step 0 has no `grad` record (who took part is unknown), the later ones have one.
        run, findings = self.job("autograd", "no-ddp-autograd")
        self.assertEqual(serious(findings), {"replica-divergence/error"}, findings)
        self.assertEqual(find(findings, "replica-divergence")["step"], 0)
        for rank, grads in records(run, "grad").items():
            self.assertEqual(grads[0]["step"], 1, rank)
            self.assertEqual({g["n_missing"] for g in grads}, {0}, rank)

    def test_no_ddp_with_a_seed_per_rank_is_an_init_divergence(self):
        _, findings = self.job("seeds", "seed-per-rank")
        self.assertEqual(serious(findings), {"init-divergence/error"}, findings)
        f = find(findings, "init-divergence")
        self.assertEqual((f["step"], f["ranks"]), (0, [1]), f)
        self.assertIn("did not get rank 0's parameters", f["summary"])

    def test_ddp_whose_inner_module_is_called_is_a_replica_divergence_at_step_0(self):
        run, findings = self.job("ddp-module", "ddp-module")
        self.assertEqual(serious(findings), {"replica-divergence/error"}, findings)
        f = find(findings, "replica-divergence")
        self.assertEqual((f["step"], f["ranks"]), (0, [0, 1]), f)
        for rank, ms in marks(run, "ddp-grads-not-reduced").items():
            self.assertEqual([m["step"] for m in ms], [0], rank)
        for rank, tables in records(run, "params").items():
            self.assertEqual(len(tables), 1, rank)
            self.assertEqual(len(tables[0]["buckets"]), 1, rank)

    def test_clean_ddp_is_clean_with_one_table_per_rank(self):
        for fault in ("", "opt-first"):
            run, findings = self.job("clean-" + (fault or "ddp"), fault)
            self.assertEqual(serious(findings), set(), (fault, findings))
            for rank, tables in records(run, "params").items():
                self.assertEqual(len(tables), 1, (fault, rank))
                self.assertEqual(len(tables[0]["buckets"]), 1, (fault, rank))
            self.assertEqual(marks(run, "model-not-wrapped"), {0: [], 1: []}, fault)
            self.assertEqual(marks(run, "ddp-grads-not-reduced"), {0: [], 1: []}, fault)

    def test_one_process_without_ddp_gets_nothing(self):
        run, findings = self.job("single", "no-ddp", nproc=1)
        self.assertEqual(serious(findings), set(), findings)
        self.assertEqual(records(run, "params"), {0: []})


class Owners(unittest.TestCase):
    """The names the optimizer path gives parameters, from the modules that own them."""

    def setUp(self):
        package = package_dir()
        if package not in sys.path:
            sys.path.insert(0, package)

    def names(self, params):
        """The names of the parameters some module owns (the others are left out)."""
        from dsdiag.torch.ddp import _model_owners, _unwrapped
        owners = _model_owners.owners(params)
        return _unwrapped._names(_unwrapped._owned(params, owners), owners)

    def test_one_module_names_them_as_state_dict_does(self):
        import torch
        model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Sequential(
            torch.nn.Linear(2, 1)))
        self.assertEqual(self.names(list(model.parameters())),
                         ["0.weight", "0.bias", "1.0.weight", "1.0.bias"])

    def test_several_modules_are_told_apart_by_class(self):
        import torch
        a, b = torch.nn.Linear(2, 2), torch.nn.Linear(2, 1)
        loose = torch.nn.Parameter(torch.zeros(3))
        self.assertEqual(self.names([a.weight, b.weight, loose]),
                         ["Linear.weight", "Linear#2.weight"])

    def test_a_submodule_is_named_inside_its_top_level_module(self):
        import torch
        model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU(), torch.nn.Linear(2, 1))
        self.assertEqual(self.names(list(model[2].parameters())), ["2.weight", "2.bias"])


if __name__ == "__main__":
    unittest.main()
