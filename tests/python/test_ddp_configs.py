"""dsdiag run on DDP configured as torch 2.x users configure it (jobs/ddp_configs.py, Gloo,
2 ranks): static_graph, gradient_as_bucket_view, find_unused_parameters, gradient
accumulation under no_sync(), torch.compile(ddp_model) and optimizer.step(closure) (the
backward inside the step, as Lightning runs it). For each, a clean job gives no
warning or error and the same losses as without dsdiag; a submodule skipped on one rank is
missing-grad naming it; a gradient changed after the allreduce is grad-desync naming the rank
and the step (a step is an optimizer step, however many backward passes it holds).

Run by ctest once per Python lane (DSDIAG_TEST_PYTHON); DSDIAG_BINARY names the
dsdiag executable."""
import json
import os
import subprocess
import unittest

from dsdiag_jobs import (DSDIAG, JOBS, PYTHON, TORCH, JobTestCase, compare, find, lane_needs,
                         read_trace, run_job, serious)

JOB = "ddp_configs.py"


def final_losses(out):
    return sorted(l for l in out.splitlines() if l.startswith("final loss"))


def graph_breaks(out):
    return sorted(l for l in out.splitlines() if l.startswith("graph breaks"))


def dynamo_warnings(err):
    """The warnings torch.compile printed, by text (Dynamo names what it could not trace)."""
    return {l.split("UserWarning: ", 1)[1] for l in err.splitlines()
            if "UserWarning: " in l and "_dynamo" in l}


class DdpConfigs(JobTestCase):
    def run_config(self, config, fault="", steps=12):
        name = "%s-%s" % (config, fault or "clean")
        env = {"DDP_CONFIG": config, "FAULT": fault, "STEPS": str(steps)}
        status, out, err = run_job(self.path(name), JOB, env=env, timeout=240)
        self.assertEqual(status, 0, err)
        return self.path(name), out, err

    def check_clean(self, config):
        run, out, err = self.run_config(config)
        # A probe that switched itself off says so once on stderr as "dsdiag: ...".
        self.assertEqual([l for l in err.splitlines() if l.startswith("dsdiag: ")], [])
        findings = compare(run)
        self.assertEqual(serious(findings), set(), findings)
        records = map(json.loads, read_trace(os.path.join(run, "rank-00000.jsonl")))
        steps = [r for r in records if r.get("type") == "step"]
        self.assertEqual(len(steps), 12)
        # The header says which probes this torch allows: all of them on torch 2.x; 1.13
        # has no global optimizer step hooks.
        with open(os.path.join(run, "rank-00000.jsonl")) as trace:
            have = json.loads(trace.readline())["python_probes"]
        expected_off = set() if TORCH >= (2, 0) else {"optimizer_hooks"}
        self.assertEqual({name for name, on in have.items() if not on}, expected_off, have)
        off = subprocess.run([DSDIAG, "run", "--probes", "off", "--nproc", "2", "--out",
                              self.path(config + "-off"), "--", PYTHON, os.path.join(JOBS, JOB)],
                             env=dict(os.environ, DDP_CONFIG=config, STEPS="12",
                                      OMP_NUM_THREADS="1"),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             universal_newlines=True, timeout=240)
        self.assertRanToItsEnd(off.returncode, off.stderr)
        self.assertEqual(final_losses(out), final_losses(off.stdout))
        return out, err, off

    def check_skip(self, config):
        run, _, _ = self.run_config(config, "skip")
        findings = compare(run)
        self.assertEqual(serious(findings), {"missing-grad/error"}, findings)
        f = find(findings, "missing-grad")
        self.assertEqual((f["ranks"], f["subject"], f["step"]), ([1], "extra.weight", 0))

    def check_desync(self, config):
        run, _, _ = self.run_config(config, "desync")
        findings = compare(run)
        self.assertEqual(serious(findings), {"grad-desync/error"}, findings)
        f = find(findings, "grad-desync")
        self.assertEqual((f["ranks"], f["step"], f["subject"]), ([0], 5, "body.0.weight"))

    def test_plain(self):
        self.check_clean("plain")

    def test_static_graph(self):
        self.check_clean("static")
        self.check_skip("static")

    def test_gradient_as_bucket_view(self):
        self.check_clean("bucket-view")
        self.check_desync("bucket-view")

    def test_find_unused_parameters(self):
        self.check_clean("unused")
        self.check_skip("unused")

    def test_no_sync_accumulation_is_one_step_per_optimizer_step(self):
        self.check_clean("no-sync")
        self.check_skip("no-sync")
        self.check_desync("no-sync")

    def test_a_closure_that_runs_the_backward_inside_the_optimizer_step(self):
        self.check_clean("closure")
        self.check_skip("closure")

    @lane_needs((2, 1), "torch.compile")
    def test_torch_compile_of_the_ddp_model(self):
        out, err, off = self.check_clean("compile")
        # dsdiag's hooks stay out of what Dynamo traces: as many graph breaks per rank as
        # without dsdiag, and no Dynamo warning of its own.
        self.assertEqual(len(graph_breaks(out)), 2, out)
        self.assertEqual(graph_breaks(out), graph_breaks(off.stdout))
        self.assertEqual(dynamo_warnings(err) - dynamo_warnings(off.stderr), set(), err)
        self.check_desync("compile")


if __name__ == "__main__":
    unittest.main()
