"""`dsdiag compare DIR` on a directory of PyTorch Flight Recorder dumps alone (issues #26, #32):
real torch jobs without dsdiag (jobs/fr_scenarios.py: Gloo on CPU, 2 to 4 ranks, torch's own
dump bytes, one file per rank), one test per scenario, each asserting that compare names the
rank to blame — the one that skipped a collective (of the same size as its neighbour too),
blocked in Python, issued another size, dtype or op, skipped one in a sub-group, died without
a dump, blocked in a recv never sent, rank 0 among them — with the collective (process group,
sequence number, op) and the Python line that issued it, that no error finding names a
healthy rank, and that a clean job's dumps give no finding. fr_scenarios.TRUTH says what each
job did.

The dumps are the ones a job leaves after the failure — its except handler once the
collective raised, its SIGTERM handler when torchrun stops a stuck rank, none from a crashed
rank (fr_scenarios's `after`) — and the scenarios that take a world size run at 2 and 4 ranks
besides their own 3. The other way dumps are written, while the bad collective is in flight
(as NCCL's watchdog does at a timeout), is checked from the same jobs' dumps checked in
(fixtures/torch_fr/scenarios/in-flight, tests/analyzers/torch_fr_scenarios_test.cc) and from
NCCL's own (fixtures/torch_fr/nccl_stall); DSDIAG_FR_IN_FLIGHT=1 runs those jobs here too
(TorchFrDumpsInFlight, about three minutes more).

Run by ctest once per Python lane (DSDIAG_TEST_PYTHON); DSDIAG_BINARY names the dsdiag
executable. Skips on a lane whose torch has no backend-generic Flight Recorder (Debian's
torch 1.13)."""
import json
import os
import subprocess
import sys
import unittest

from dsdiag_jobs import DSDIAG, JOBS, PYTHON, JobTestCase

sys.path.insert(0, JOBS)
import fr_scenarios  # noqa: E402 - the jobs' folder, just put on the path

TRUTH = fr_scenarios.TRUTH


def has_dump_api():
    try:
        from torch._C._distributed_c10d import _dump_fr_trace  # noqa: F401
    except ImportError:
        return False
    return True


def seqs_in(value):
    """Every `seq` anywhere in a finding's evidence."""
    if isinstance(value, dict):
        found = [value["seq"]] if "seq" in value else []
        for item in value.values():
            found += seqs_in(item)
        return found
    if isinstance(value, list):
        return [seq for item in value for seq in seqs_in(item)]
    return []


NO_DUMP_API = ("this lane's torch has no backend-generic Flight Recorder dump API "
               "(torch._C._distributed_c10d._dump_fr_trace; torch 1.13 has none)")


@unittest.skipUnless(has_dump_api(), NO_DUMP_API)
class TorchFrDumps(JobTestCase):
    WHEN = "after"  # fr_scenarios.WHENS
    world = None  # the scenario's own world size, unless a test sets it

    def truth(self, name):
        return fr_scenarios.truth_of(name, self.WHEN, self.world)

    def scenario(self, name):
        """Runs the scenario's job into a fresh directory; returns (the directory, compare's
        findings), having checked that every rank that should dump did, and only those."""
        truth = self.truth(name)
        out = self.path("%s-%s-%d" % (name, self.WHEN, truth["world"]))
        command = [PYTHON, os.path.join(JOBS, "fr_scenarios.py"), name, out,
                   "--world", str(truth["world"])] + (["--after"] if self.WHEN == "after" else [])
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, timeout=180,
                              env=dict(os.environ, OMP_NUM_THREADS="1"))
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr[-3000:])
        prefix = truth.get("prefix", fr_scenarios.PREFIX)
        expected = ["%s%d" % (prefix, r) for r in range(truth["world"])
                    if r not in truth.get("absent", [])]
        self.assertEqual(sorted(os.listdir(out)), sorted(expected), done.stdout)
        compared = subprocess.run([DSDIAG, "compare", out, "--format", "json"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  universal_newlines=True, timeout=60)
        self.assertIn(compared.returncode, (0, 1), compared.stderr)
        report = json.loads(compared.stdout)
        self.assertEqual(report["schema"], "dsdiag.findings/1")
        return out, report["findings"]

    def culprit(self, name, findings):
        """The error finding of the scenario's kind, checked: it names exactly the culprits,
        the collective's group and sequence number; and no error finding names a rank that
        did nothing wrong."""
        truth = self.truth(name)
        errors = [f for f in findings if f["severity"] == "error"]
        for f in errors:
            self.assertLessEqual(set(f["ranks"]), set(truth["ranks"]),
                                 "an error names a healthy rank: %s" % json.dumps(f))
        ours = [f for f in errors if f["kind"] == truth["kind"]]
        self.assertEqual(len(ours), 1, json.dumps(findings, indent=1))
        f = ours[0]
        self.assertEqual(f["ranks"], truth["ranks"], f["summary"])
        self.assertIn(truth["seq"], seqs_in(f["evidence"]), json.dumps(f["evidence"]))
        if truth["kind"] != "rank-died":
            self.assertEqual(str(f["evidence"]["group"]), truth["pg"], f["summary"])
            self.assertEqual(f["evidence"]["seq"], truth["seq"], f["summary"])
        return f

    def assert_names_line(self, name, finding):
        """The summary names the Python line that issued the collective."""
        where = "fr_scenarios.py:%d" % fr_scenarios.line_of(self.truth(name)["line"])
        self.assertIn(where, finding["summary"])

    def assert_hang(self, name):
        _, findings = self.scenario(name)
        f = self.culprit(name, findings)
        self.assertEqual(f["evidence"]["op"], self.truth(name)["op"], f["summary"])
        self.assertIn("seq %d" % self.truth(name)["seq"], f["subject"])
        self.assert_names_line(name, f)
        return f

    def assert_mismatch(self, name, findings=None):
        if findings is None:
            _, findings = self.scenario(name)
        f = self.culprit(name, findings)
        self.assertIn(self.truth(name)["op"], f["summary"])
        # Named for a reason, not by rank order: with two ranks, the group's history.
        self.assertEqual(f["evidence"]["basis"], self.truth(name)["basis"], f["summary"])
        self.assert_names_line(name, f)
        return f

    def assert_culprit_went_as_far_as(self, name, finding):
        """The culprit's row says the last collective it completed, one before the stuck one,
        and the Python line that issued it."""
        truth = self.truth(name)
        rows = [r for r in finding["evidence"]["ranks"] if r["rank"] in truth["ranks"]]
        self.assertEqual(len(rows), 1, finding["evidence"])
        last = rows[0]["last_completed"]
        self.assertEqual(last["seq"], truth["seq"] - 1, rows)
        self.assertIn("fr_scenarios.py:%d" % fr_scenarios.line_of(name + "_last"),
                      last["python_where"])

    def test_a_a_rank_that_skips_a_collective_is_the_hang_culprit(self):
        f = self.assert_hang("skip")
        self.assertIn("rank 1", f["summary"])
        self.assert_culprit_went_as_far_as("skip", f)

    def test_b_a_rank_blocked_in_python_is_the_hang_culprit(self):
        self.assert_hang("blocked")

    def test_c_a_size_mismatch_names_the_rank_the_group_history_disowns(self):
        f = self.assert_mismatch("size_mismatch")
        self.assertIn("5", f["summary"])

    def test_d_a_dtype_mismatch_names_the_odd_rank_0_by_the_majority(self):
        f = self.assert_mismatch("dtype_mismatch")
        self.assertIn("Double", f["summary"])

    def test_e_an_op_mismatch_names_the_broadcasting_rank(self):
        f = self.assert_mismatch("op_mismatch")
        self.assertIn("broadcast", f["summary"])

    def test_f_a_hang_inside_a_sub_group_names_its_culprit_and_group(self):
        self.assert_hang("subgroup_hang")

    def test_g_a_rank_that_died_before_dumping_is_named_with_what_its_peers_wait_in(self):
        self.assert_died_named()

    def assert_died_named(self):
        _, findings = self.scenario("died")
        f = self.culprit("died", findings)
        self.assertIn("nccl_trace_rank_%d" % self.truth("died")["ranks"][0], json.dumps(f))
        self.assertIn("seq 3", f["summary"])

    def test_h_rank_0_as_the_culprit_is_named_not_the_healthy_majority(self):
        f = self.assert_hang("rank0_skips")
        self.assertIn("rank 0", f["summary"])
        self.assert_culprit_went_as_far_as("rank0_skips", f)

    def test_i_a_rank_blocked_in_a_recv_never_sent_is_named_where_gloo_shows_it(self):
        """Gloo records no send or recv: no send/recv finding can be made, and the hang names
        rank 1, stuck after its last collective, which it went as far as; its row shows
        nothing pending (the recv it blocks in is not in its dump)."""
        _, findings = self.scenario("recv_unsent")
        self.assertFalse([g for g in findings
                          if (g.get("subject") or "").startswith("send/recv")], findings)
        f = self.culprit("recv_unsent", findings)
        self.assertEqual(f["evidence"]["op"], "all_reduce", f["summary"])
        self.assertIn("seq 6", f["subject"])
        self.assert_names_line("recv_unsent", f)
        self.assert_culprit_went_as_far_as("recv_unsent", f)
        row = [r for r in f["evidence"]["ranks"] if r["rank"] == 1][0]
        self.assertEqual(row["role"], "never joined", row)
        self.assertNotIn("waiting_in", row)

    def test_j_a_rank_that_skips_a_collective_of_the_same_size_is_named_where_it_parted(self):
        self.assert_parted_where_rank_1_skipped()

    def assert_parted_where_rank_1_skipped(self):
        """Nothing fails where rank 1 skips (same op and size): the frames show the streams
        parting at seq 12, rank 1 issuing the gradients' all_reduce where the others issue the
        metrics'; the hang at the streams' end is that parting's follow-on."""
        _, findings = self.scenario("skip_same_size")
        f = self.assert_mismatch("skip_same_size", findings)
        self.assertEqual(f["evidence"]["parted"], "skipped", f["summary"])
        other = "fr_scenarios.py:%d" % fr_scenarios.line_of("skip_same_size_other")
        self.assertIn(other, f["summary"])
        self.assertIn("skipped", f["summary"])
        hangs = [g for g in findings if g["kind"] == "hang"]
        self.assertTrue(all(g["severity"] == "info" for g in hangs), hangs)

    def test_l_a_rank_blocked_in_python_inside_a_sub_group_is_the_hang_culprit(self):
        self.assert_hang("subgroup_blocked")

    def test_m_a_rank_that_died_inside_a_sub_group_is_named_with_what_its_peers_wait_in(self):
        _, findings = self.scenario("subgroup_died")
        f = self.culprit("subgroup_died", findings)
        self.assertIn("group 1 seq 3", f["summary"])

    def test_k_a_clean_jobs_dumps_give_no_finding(self):
        _, findings = self.scenario("clean")
        self.assertEqual([f for f in findings if f["severity"] != "info"], [],
                         json.dumps(findings, indent=1))

    def at_every_world(self, name, test):
        if self.WHEN != "after":
            self.skipTest("the other world sizes run with the dumps written after the failure")
        for world in fr_scenarios.WORLDS[name]:
            with self.subTest(world=world):
                self.world = world
                try:
                    test()
                finally:
                    self.world = None

    def test_n_a_blocked_rank_at_2_and_4_ranks(self):
        self.at_every_world("blocked", lambda: self.assert_hang("blocked"))

    def test_o_a_same_size_skip_at_2_and_4_ranks(self):
        self.at_every_world("skip_same_size", self.assert_parted_where_rank_1_skipped)

    def test_p_a_crashed_rank_at_2_and_4_ranks(self):
        self.at_every_world("died", self.assert_died_named)

@unittest.skipUnless(has_dump_api(), NO_DUMP_API)
@unittest.skipUnless(os.environ.get("DSDIAG_FR_IN_FLIGHT") == "1",
                     "the in-flight dumps are checked from fixtures/torch_fr/scenarios/in-flight"
                     " (DSDIAG_FR_IN_FLIGHT=1 runs their jobs)")
class TorchFrDumpsInFlight(TorchFrDumps):
    """The same scenarios, every rank dumping while the bad collective is pending (a watchdog
    thread of the job asks once a collective has been pending 3 s, as NCCL's does at a
    timeout): there the collective is still in flight; each at its own world size."""
    WHEN = "in-flight"


if __name__ == "__main__":
    unittest.main()
