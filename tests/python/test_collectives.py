"""Every collective a job issues itself, on the default group and on a sub-group, is a
`coll` record with its op, group, sequence, dtype and count (jobs/collectives_job.py, 2
ranks, Gloo): all_reduce, broadcast, reduce, all_gather(_into_tensor), gather, scatter,
reduce_scatter(_tensor), all_to_all(_single) and barrier. A clean job of them is clean.
A size one rank gets wrong (jobs/collective_size_mismatch.py) is collective-mismatch, though
the receiving rank dies of it in C++ (Gloo's enforce, std::terminate) before it records the
collective: its flight dump, written by the terminate handler, holds the pending entry, and
its death is a follow-on with Gloo's message. An MoE-style all_to_all_single with uneven
split sizes (jobs/alltoall_split_mismatch.py, 3 ranks) records what each rank sends to and
receives from each peer; a clean job of it is clean, and the rank that sends its peers more
than they expect is named, though the receivers are the ones Gloo aborts.

Run by ctest once per Python lane (DSDIAG_TEST_PYTHON)."""
import json
import os
import re

from dsdiag_jobs import JobTestCase, compare, find, read_trace, run_job, serious

OPS = {"all_reduce": "allreduce", "broadcast": "broadcast", "reduce": "reduce",
       "all_gather": "allgather", "all_gather_into_tensor": "allgather", "gather": "gather",
       "scatter": "scatter", "reduce_scatter": "reduce_scatter",
       "reduce_scatter_tensor": "reduce_scatter", "all_to_all_single": "alltoall",
       "all_to_all": "alltoall", "barrier": "barrier"}
GROUPS = {"default": 0, "sub": 1}


class Collectives(JobTestCase):
    def test_every_collective_is_recorded_with_its_group_and_count(self):
        run = self.path("collectives")
        status, out, err = run_job(run, "collectives_job.py", timeout=180)
        self.assertEqual(status, 0, err)
        self.assertEqual(serious(compare(run)), set())
        issued = [l.split() for l in out.splitlines() if l.startswith("issued ")]
        for rank in (0, 1):
            expected = [(GROUPS[g], OPS[call], int(n)) for _, r, call, g, n in issued
                        if int(r) == rank]
            self.assertGreaterEqual(len(expected), 16, out)  # 8 a group even on torch 1.13
            records = [json.loads(r) for r in
                       read_trace(os.path.join(run, "rank-%05d.jsonl" % rank))]
            colls = [r for r in records if r["type"] == "coll" and r["step"] == 0
                     and not re.match("ddp-bucket", r.get("tag", ""))]
            # In the order issued within each group, numbered per group: the sub-group's
            # from 0 (the default group's also count DDP's constructor broadcast and buckets).
            got = sorted(((r["pg"], r["seq"]), (r["pg"], r["op"], r["n"])) for r in colls)
            in_group_order = sorted(expected, key=lambda e: e[0])  # stable: issue order kept
            self.assertEqual([g for _, g in got], in_group_order, got)
            sub_seqs = [seq for (pg, seq), _ in got if pg == 1]
            self.assertEqual(sub_seqs, list(range(len(sub_seqs))))
            for r in colls:
                self.assertEqual(r["dtype"], "f32" if r["op"] != "barrier" else "", r)

    def test_a_wrong_size_is_a_mismatch_though_the_receiver_died_of_it(self):
        run = self.path("size-mismatch")
        status, _, err = run_job(run, "collective_size_mismatch.py", timeout=180,
                                 extra=["--timeout", "30"])
        self.assertNotEqual(status, 0, err)
        findings = compare(run)
        self.assertEqual({"collective-mismatch/error"}, {k for k in serious(findings)}, findings)
        f = find(findings, "collective-mismatch")
        # No vote at two ranks, but steps 0-2 issued n=4 on both: rank 1 changed its call.
        self.assertEqual((f["ranks"], f["step"]), ([1], 3), f)
        self.assertEqual(f["evidence"]["basis"], "history", f)
        self.assertIn("rank 1 issued allreduce f32 n=5", f["summary"])
        deaths = [d for d in findings if d["kind"] == "rank-died"]
        self.assertTrue(deaths, findings)
        self.assertEqual({d["severity"] for d in deaths}, {"info"}, deaths)
        died = [d for d in deaths if "enforce fail" in d["summary"]]
        self.assertTrue(died, deaths)
        self.assertIn("follow-on of the collective mismatch", died[0]["summary"])

    def test_a_wrong_size_at_3_and_4_ranks_is_a_mismatch_naming_the_odd_rank_and_sizes(self):
        """At more than two ranks Gloo may complete the collective on some ranks (their `coll`
        records say n=4) while the odd rank, and a peer of it, wait in it until the watchdog
        (their dumps' pending entries): every rank counts in the majority, and the hang and
        the deaths that follow are the mismatch's follow-ons."""
        for nproc in (3, 4):
            with self.subTest(nproc=nproc):
                run = self.path("size-mismatch-%d" % nproc)
                status, _, err = run_job(run, "collective_size_mismatch.py", nproc=nproc,
                                         timeout=180, extra=["--timeout", "10"])
                self.assertNotEqual(status, 0, err)
                findings = compare(run)
                self.assertEqual({"collective-mismatch/error"}, set(serious(findings)), findings)
                f = find(findings, "collective-mismatch")
                self.assertEqual((f["ranks"], f["step"]), ([1], 3), f)
                self.assertIn("rank 1 issued allreduce f32 n=5", f["summary"])
                self.assertIn("n=4", f["summary"])

    def test_uneven_all_to_all_splits_are_recorded_per_peer_and_a_clean_job_is_clean(self):
        run = self.path("alltoall-clean")
        status, _, err = run_job(run, "alltoall_split_mismatch.py", nproc=3, timeout=180)
        self.assertEqual(status, 0, err)
        self.assertEqual(serious(compare(run)), set())
        for rank in range(3):
            records = [json.loads(r) for r in
                       read_trace(os.path.join(run, "rank-%05d.jsonl" % rank))]
            a2a = [r for r in records if r["type"] == "coll" and r["op"] == "alltoall"]
            self.assertEqual(len(a2a), 5, a2a)
            # rank i sends i + j + 1 rows of 4 values to rank j, and receives as many
            expected = [4 * (rank + j + 1) for j in range(3)]
            for r in a2a:
                self.assertEqual((r["send"], r["recv"], r["n"]),
                                 (expected, expected, sum(expected)), r)
                self.assertNotIn("peers", r)  # the default group: group ranks are global

    def test_the_rank_whose_split_sizes_its_peers_do_not_expect_is_named(self):
        run = self.path("alltoall-wrong")
        status, _, err = run_job(run, "alltoall_split_mismatch.py", nproc=3, timeout=180,
                                 env={"DSDIAG_TEST_WRONG_SPLITS": "1"},
                                 extra=["--timeout", "30"])
        self.assertNotEqual(status, 0, err)
        findings = compare(run)
        self.assertEqual({"collective-mismatch/error"}, serious(findings), findings)
        f = find(findings, "collective-mismatch")
        self.assertEqual((f["ranks"], f["step"]), ([1], 2), f)
        self.assertIn("rank 1 sends 12 elements to rank 0, which expects 8 from it",
                      f["summary"])
        self.assertEqual(f["evidence"]["disagreeing_pairs"], 2, f)
        # The receivers die of it in Gloo (the launcher may stop the slower one first):
        # follow-ons, the first to die carrying Gloo's message.
        deaths = [d for d in findings if d["kind"] == "rank-died"]
        self.assertEqual({d["severity"] for d in deaths}, {"info"}, deaths)
        aborted = [d for d in deaths if "op.nbytes" in d["evidence"].get("error", "")]
        self.assertTrue(aborted, deaths)
        for d in aborted:
            self.assertIn(d["ranks"][0], (0, 2), d)
            self.assertIn("rank 1 sent sizes its peers did not expect", d["summary"])
