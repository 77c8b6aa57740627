"""Jobs whose ranks differ by design under dsdiag run — a 2-D device mesh as torchtitan
builds one; DTensor tensor parallel as PyTorch's tutorial writes it; tensor parallel x data
parallel written the way Megatron-LM writes it (new_group for each data- and tensor-parallel
group, DDP over the data-parallel one): a clean job is clean (the shards are not replicas,
and two data-parallel groups reducing different sizes are two groups), and a bug in one
data-parallel replica is named inside its replica set only."""
import glob
import json
import os
import subprocess
import unittest

from dsdiag_jobs import PYTHON, JobTestCase, compare, find, run_job, serious


def has_device_mesh():
    probe = "import torch.distributed.device_mesh as m; m.init_device_mesh"
    return subprocess.run([PYTHON, "-c", probe], capture_output=True).returncode == 0


def records_of(run_dir, rank, record_type):
    path = os.path.join(run_dir, "rank-%05d.jsonl" % rank)
    with open(path) as f:
        return [r for r in map(json.loads, f) if r.get("type") == record_type]


class DeviceMesh(JobTestCase):
    def setUp(self):
        super().setUp()
        if not has_device_mesh():
            self.skipTest("this torch has no DeviceMesh (torch 1.13)")

    def test_a_2d_mesh_is_recorded_and_its_groups_reducing_apart_are_clean(self):
        out = self.path("mesh")
        status, _, err = run_job(out, "device_mesh_2d.py", nproc=4, timeout=180)
        self.assertEqual(status, 0, err)
        self.assertEqual(serious(compare(out)), set())
        meshes = {r: records_of(out, r, "mesh") for r in range(4)}
        self.assertEqual([len(m) for m in meshes.values()], [1, 1, 1, 1])
        self.assertEqual(meshes[1][0]["shape"], [2, 2])
        self.assertEqual(meshes[1][0]["dims"], ["dp", "tp"])
        self.assertEqual(meshes[1][0]["coord"], [0, 1])
        # Each rank's data-parallel group is one of two, by its torch name.
        dp = {r: meshes[r][0]["pgs"][0] for r in range(4)}
        self.assertEqual(dp[0], dp[2])
        self.assertEqual(dp[1], dp[3])
        self.assertNotEqual(dp[0], dp[1])
        groups = {g["pg"]: g for g in records_of(out, 1, "group")}
        self.assertEqual(groups[dp[1]]["desc"], "mesh_dp")
        self.assertEqual(groups[dp[1]]["ranks"], [1, 3])

    def test_dtensor_tensor_parallel_is_clean(self):
        out = self.path("dtensor")
        status, _, err = run_job(out, "dtensor_tp.py", nproc=4, timeout=180)
        self.assertEqual(status, 0, err)
        self.assertEqual(serious(compare(out)), set())

    def test_dtensor_peers_fed_by_the_global_rank_are_an_input_divergence(self):
        out = self.path("dtensor-data")
        status, _, err = run_job(out, "dtensor_tp.py", nproc=4, timeout=180,
                                 env={"FAULT": "global-data"})
        self.assertEqual(status, 0, err)
        findings = compare(out)
        self.assertEqual(serious(findings), {"input-divergence/error"}, findings)
        self.assertEqual(sorted(f["evidence"]["peers"] for f in findings
                                if f["kind"] == "input-divergence"), [[0, 1], [2, 3]])


class TensorTimesDataParallel(JobTestCase):
    def test_a_clean_megatron_style_job_has_no_warning_or_error(self):
        out = self.path("clean")
        status, _, err = run_job(out, "megatron_tp_dp.py", nproc=4, timeout=180)
        self.assertEqual(status, 0, err)
        findings = compare(out)
        self.assertEqual(serious(findings), set(), findings)

    def test_groups_are_recorded_by_identity(self):
        out = self.path("groups")
        status, _, err = run_job(out, "megatron_tp_dp.py", nproc=4, timeout=180,
                                 env={"STEPS": "4"})
        self.assertEqual(status, 0, err)
        self.assertEqual(len(glob.glob(os.path.join(out, "rank-*.jsonl"))), 4)
        # torch names the groups 1, 2 (data parallel) and 3, 4 (tensor parallel) on every
        # rank; each rank records the two it is in, by that name.
        by_rank = {r: {g["pg"]: g for g in records_of(out, r, "group")} for r in range(4)}
        self.assertEqual(sorted(by_rank[0]), [1, 3])
        self.assertEqual(sorted(by_rank[3]), [2, 4])
        self.assertEqual(by_rank[1][2]["ranks"], [1, 3])
        self.assertEqual(by_rank[2][4]["ranks"], [2, 3])
        self.assertEqual(by_rank[3][2]["group_rank"], 1)
        self.assertEqual(records_of(out, 1, "params")[0]["replicas"], [1, 3])
        # The data-parallel gathers of the two groups carry their own numbers.
        gathers = {r: {c["pg"] for c in records_of(out, r, "coll") if c["op"] == "allgather"}
                   for r in range(4)}
        self.assertEqual(gathers, {0: {1}, 1: {2}, 2: {1}, 3: {2}})

    def test_one_replica_scaling_its_gradients_alone_is_named_in_its_set(self):
        out = self.path("scale")
        status, _, err = run_job(out, "megatron_tp_dp.py", nproc=4, timeout=180,
                                 env={"FAULT": "scale-grads"})
        self.assertEqual(status, 0, err)
        findings = compare(out)
        self.assertEqual(serious(findings), {"grad-desync/error"}, findings)
        f = find(findings, "grad-desync")
        self.assertEqual(f["ranks"], [3], f)
        self.assertEqual(f["step"], 0)
        self.assertEqual(f["evidence"]["basis"], "changed after the sync")
        self.assertEqual(f["evidence"]["replicas"], [1, 3])

    def test_tensor_parallel_peers_fed_by_the_global_rank_are_an_input_divergence(self):
        out = self.path("data")
        status, _, err = run_job(out, "megatron_tp_dp.py", nproc=4, timeout=180,
                                 env={"FAULT": "global-data"})
        self.assertEqual(status, 0, err)
        findings = compare(out)
        self.assertEqual(serious(findings), {"input-divergence/error"}, findings)
        named = sorted(f["evidence"]["peers"] for f in findings
                       if f["kind"] == "input-divergence")
        self.assertEqual(named, [[0, 1], [2, 3]])
        f = find(findings, "input-divergence")
        self.assertEqual((f["ranks"], f["step"]), ([0, 1], 0), f)
        self.assertEqual(f["evidence"]["steps_differing"], f["evidence"]["steps_compared"])

    def test_groups_created_in_another_order_on_one_rank_name_it(self):
        # Rank 0 creates the tensor-parallel groups first: torch's group 1 is ranks 0,1 on
        # rank 0 and ranks 0,2 on rank 2, and the job hangs at its first collectives.
        out = self.path("order")
        status, _, err = run_job(out, "megatron_tp_dp.py", nproc=4, timeout=180,
                                 env={"FAULT": "group-order"}, extra=("--timeout", "10"))
        self.assertNotEqual(status, 0, err)
        findings = compare(out)
        self.assertEqual(serious(findings), {"collective-mismatch/error"}, findings)
        f = find(findings, "collective-mismatch")
        self.assertEqual((f["ranks"], f["subject"]), ([0], "process groups"), f)
        self.assertEqual(f["evidence"]["basis"], "group creation order")
        self.assertEqual(sorted(g["pg"] for g in f["evidence"]["groups"]), [1, 3])
        self.assertIn("group 1 is ranks 0,1 on rank 0 but ranks 0,2 on rank 2", f["summary"])


if __name__ == "__main__":
    unittest.main()
