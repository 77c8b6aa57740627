"""Point-to-point messages (jobs/p2p_job.py, 3 ranks, Gloo, under `dsdiag run`): send, recv
(from a given rank and from any source), isend, irecv and batch_isend_irecv, on the default
group and on a sub-group of ranks 1 and 2, are `p2p` records with their group, direction,
peer (and group peer on the sub-group), dtype, count and the pair's own sequence number —
rank i's k-th send to j meets j's k-th recv from i — and take no number of a group's
collective sequence. A clean job is clean. A rank that sends both its peers a size they do
not expect in a batch is named by collective-mismatch: one value fewer, which Gloo lets pass
in silence (the job exits 0), and one value more, which aborts the receivers in C++ — then
their flight dumps' pending recvs stand for what they expected, and their deaths are
follow-ons. A recv no send ever meets (jobs/p2p_unmatched_recv.py, 2 ranks) times out in its
rank's watchdog, is listed pending in its dump, and makes its rank the culprit of the hang of
the collective the other rank waits in, the finding naming the peer it waited for.

Run by ctest once per Python lane (DSDIAG_TEST_PYTHON)."""
import collections
import json
import os

from dsdiag_jobs import JobTestCase, compare, find, read_trace, run_job, serious

GROUPS = {"default": 0, "sub": 1}


def records(run, rank, kind):
    return [r for r in (json.loads(line) for line in
                        read_trace(os.path.join(run, "rank-%05d.jsonl" % rank)))
            if r["type"] == kind]


def run_files(run):
    """What a failed assertion shows of a run: each file's size and last line (a trace's end
    record, a flight dump's reason)."""
    shown = {}
    for name in sorted(os.listdir(run)):
        with open(os.path.join(run, name), "rb") as f:
            data = f.read()
        shown[name] = (len(data), data.rstrip().splitlines()[-1][:400] if data.strip() else b"")
    return shown


class PointToPoint(JobTestCase):
    def test_every_form_is_recorded_with_its_peer_and_the_pairs_sequence(self):
        run = self.path("p2p")
        status, out, err = run_job(run, "p2p_job.py", nproc=3, timeout=180)
        self.assertEqual(status, 0, err)
        self.assertEqual(serious(compare(run)), set())
        issued = [line.split() for line in out.splitlines() if line.startswith("p2p ")]
        messages = {}
        for rank in range(3):
            expected = [(GROUPS[g], call, op, int(peer), int(n))
                        for _, r, call, g, op, peer, n in issued if int(r) == rank]
            self.assertGreaterEqual(len(expected), 10 if rank == 0 else 13, out)
            # in the order issued (`ts`: a request's record is written when it is waited on)
            p2p = sorted(records(run, rank, "p2p"), key=lambda r: r["ts"])
            got = [(r["pg"], r["tag"], r["op"], r["peer"], r["n"]) for r in p2p if r["step"] == 0]
            self.assertEqual(got, expected)
            counted = collections.Counter()
            for r in p2p:
                self.assertEqual(r["dtype"], "f32", r)
                self.assertNotIn("failed", r)
                # the sub-group is ranks 1 and 2: a peer's group rank is its global rank - 1
                if r["pg"] == 1:
                    self.assertEqual(r["group_peer"], r["peer"] - 1, r)
                else:
                    self.assertNotIn("group_peer", r)
                # numbered per (group, direction, peer, tag), in the order issued
                pair = (r["pg"], r["op"], r["peer"], r.get("match_tag", 0))
                self.assertEqual(r["seq"], counted[pair], r)
                counted[pair] += 1
                sender, receiver = (rank, r["peer"]) if r["op"] == "send" else (r["peer"], rank)
                key = (r["pg"], sender, receiver, r.get("match_tag", 0), r["seq"])
                messages.setdefault(key, {})[r["op"]] = r["n"]
            # recv from any source, tag 1: the record names the sender it got
            if rank == 0:
                tagged = [r for r in p2p if r.get("match_tag") == 1]
                self.assertEqual(sorted(r["peer"] for r in tagged if r["step"] == 0), [1, 2])
            # the collectives keep their own numbering: every group's seqs run 0, 1, 2, ...
            seqs = collections.defaultdict(list)
            for r in records(run, rank, "coll"):
                seqs[r["pg"]].append(r["seq"])
            for pg, numbers in seqs.items():
                self.assertEqual(sorted(numbers), list(range(len(numbers))), (rank, pg))
        # every send met its recv, with the same count
        for key, sides in messages.items():
            self.assertEqual(set(sides), {"send", "recv"}, key)
            self.assertEqual(sides["send"], sides["recv"], key)

    def test_a_smaller_message_passes_in_silence_and_its_sender_is_named(self):
        run = self.path("p2p-small")
        status, _, err = run_job(run, "p2p_job.py", nproc=3, timeout=180,
                                 env={"DSDIAG_TEST_P2P_WRONG": "small"})
        self.assertEqual(status, 0, err)  # Gloo: the receivers' tensors keep a stale tail
        findings = compare(run)
        self.assertEqual({"collective-mismatch/error"}, serious(findings), findings)
        f = find(findings, "collective-mismatch")
        self.assertEqual((f["ranks"], f["step"]), ([1], 2), f)
        self.assertIn("rank 1 sends f32 n=6 (batch_isend_irecv) to rank 0, which expects "
                      "f32 n=7 (batch_isend_irecv) from it", f["summary"])
        self.assertEqual((f["evidence"]["disagreeing_pairs"], f["evidence"]["source"]),
                         (2, "trace"), f)

    def test_a_larger_message_aborts_its_receivers_and_its_sender_is_named(self):
        run = self.path("p2p-large")
        status, _, err = run_job(run, "p2p_job.py", nproc=3, timeout=180,
                                 env={"DSDIAG_TEST_P2P_WRONG": "large"},
                                 extra=["--timeout", "30"])
        self.assertNotEqual(status, 0, err)
        findings = compare(run)
        self.assertEqual({"collective-mismatch/error"}, serious(findings), findings)
        f = find(findings, "collective-mismatch")
        self.assertEqual((f["ranks"], f["step"]), ([1], 2), f)
        self.assertIn("rank 1 sends f32 n=8 (batch_isend_irecv) to rank", f["summary"])
        self.assertIn("which expects f32 n=7 (batch_isend_irecv) from it", f["summary"])
        # The receivers died of it in Gloo (the launcher may stop the slower one first): their
        # deaths are follow-ons, and a dump holds the recv it was waiting in.
        deaths = [d for d in findings if d["kind"] == "rank-died"]
        self.assertTrue(deaths, findings)
        self.assertEqual({d["severity"] for d in deaths}, {"info"}, deaths)
        pending = []
        for rank in (0, 2):
            path = os.path.join(run, "flight-rank-%05d.json" % rank)
            if os.path.exists(path):
                with open(path) as dump:
                    pending += [e for e in json.load(dump).get("p2p", [])
                                if e["state"] != "completed" and e["op"] == "recv"
                                and e["peer"] == 1]
        self.assertTrue(pending, "no dump holds a pending recv from rank 1")
        self.assertEqual({(e["pg"], e["n"], e["tag"]) for e in pending},
                         {(0, 7, "batch_isend_irecv")}, pending)

    def test_a_recv_no_send_meets_makes_its_rank_the_hangs_culprit_naming_the_peer(self):
        run = self.path("p2p-unmatched")
        status, _, err = run_job(run, "p2p_unmatched_recv.py", timeout=180,
                                 extra=["--timeout", "10"])
        self.assertNotEqual(status, 0, err)
        findings = compare(run)
        hang = find(findings, "hang")
        self.assertIsNotNone(hang, (findings, err, run_files(run)))
        self.assertEqual((hang["ranks"], hang["step"]), ([1], 2), findings)
        self.assertIn("it waited in a recv from rank 0 (pg 0, message 0 of the pair, recv)",
                      hang["summary"])
        self.assertIsNone(find(findings, "collective-mismatch"), findings)
        waiters = [d for d in findings if d["kind"] == "rank-died" and d["ranks"] == [0]]
        self.assertEqual([d["severity"] for d in waiters], ["info"], findings)
        # its watchdog timed out on the message, which its dump lists pending, apart (or,
        # where rank 0's watchdog fired first, the launcher's SIGTERM wrote the dump)
        with open(os.path.join(run, "flight-rank-00001.json")) as f:
            dump = json.load(f)
        self.assertIn(dump["reason"], ("timeout", "SIGTERM"), dump["reason"])
        self.assertFalse([e for e in dump["entries"] if e["state"] != "completed"], dump)
        self.assertEqual([(e["op"], e["peer"], e["seq"], e["state"]) for e in dump["p2p"]
                          if e["state"] != "completed"], [("recv", 0, 0, "started")], dump)
