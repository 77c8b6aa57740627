"""`dsdiag timeline -o FILE.pftrace` read back with Perfetto's own protos.

The trace is decoded with `perfetto_trace_pb2` from the `perfetto` wheel (what Perfetto's
Python API reads traces with), then checked the way trace_processor imports it: each packet
sequence's interned names defined before use and dropped where the sequence clears its
state, every event on a described track, events sorted by time (ties in file order) so
that each SLICE_END closes the slice begun last on its track, and an END's annotations
joined to the slice it closes. The slices, instants and counters that come out must be the
JSON timeline's, event for event, on the same run.

    python perfetto_decode_test.py DSDIAG_BINARY

Exits 77 (a skip to ctest) when the perfetto wheel or protobuf is not installed
(scripts/setup puts both in the torch-2 venv).
"""

from __future__ import annotations

import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest
from dataclasses import dataclass, field

try:
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
except ImportError as e:  # pragma: no cover - depends on the environment
    print(f"skipped: the perfetto wheel's protos do not import ({e})")
    sys.exit(77)

DSDIAG = ""  # set from argv

SEQ_INCREMENTAL_STATE_CLEARED = 1
SLICE_BEGIN, SLICE_END, INSTANT, COUNTER = 1, 2, 3, 4


@dataclass
class Track:
    name: str
    parent: int
    counter: bool


@dataclass
class Slice:
    track: int
    name: str
    category: str
    ts: int
    dur: int = -1
    args: dict = field(default_factory=dict)


@dataclass
class Decoded:
    tracks: dict[int, Track] = field(default_factory=dict)
    slices: list[Slice] = field(default_factory=list)
    instants: list[Slice] = field(default_factory=list)
    counters: list[tuple[int, int, float]] = field(default_factory=list)  # track, ts, value

    def rank_of(self, uuid: int) -> str:
        """The top-level track's name above `uuid`."""
        while self.tracks[uuid].parent:
            uuid = self.tracks[uuid].parent
        return self.tracks[uuid].name

    def path(self, uuid: int) -> str:
        t = self.tracks[uuid]
        return f"{self.rank_of(uuid)}/{t.name}" if t.parent else t.name


def annotation_value(a):
    for kind in ("int_value", "uint_value", "double_value", "bool_value", "string_value"):
        if a.HasField(kind):
            return getattr(a, kind)
    raise AssertionError(f"annotation without a value: {a}")


def decode(path: str) -> Decoded:
    """The trace as trace_processor would import it; AssertionError where it would not."""
    trace = pb.Trace()
    with open(path, "rb") as f:
        trace.ParseFromString(f.read())
    out = Decoded()
    interned: dict[int, dict[str, dict[int, str]]] = collections.defaultdict(dict)
    events = []  # (ts, file order, sequence, TrackEvent, its names resolved)
    for order, packet in enumerate(trace.packet):
        seq = packet.trusted_packet_sequence_id
        if packet.sequence_flags & SEQ_INCREMENTAL_STATE_CLEARED:
            interned[seq] = {}
        if packet.HasField("interned_data"):
            for kind in ("event_categories", "event_names", "debug_annotation_names"):
                table = interned[seq].setdefault(kind, {})
                for entry in getattr(packet.interned_data, kind):
                    table[entry.iid] = entry.name
        if packet.HasField("track_descriptor"):
            d = packet.track_descriptor
            assert d.uuid not in out.tracks, f"track {d.uuid} described twice"
            out.tracks[d.uuid] = Track(d.name, d.parent_uuid, d.HasField("counter"))
        if not packet.HasField("track_event"):
            continue
        e = packet.track_event

        names = interned[seq]

        def lookup(kind: str, iid: int, names=names, seq=seq, order=order) -> str:
            table = names.get(kind, {})
            assert iid in table, (
                f"packet {order}: {kind} iid {iid} used before sequence {seq} defines it")
            return table[iid]

        name = e.name if e.HasField("name") else ""
        if e.name_iid:
            name = lookup("event_names", e.name_iid)
        cats = list(e.categories) + [lookup("event_categories", i) for i in e.category_iids]
        args = {}
        for a in e.debug_annotations:
            key = a.name if a.HasField("name") else lookup("debug_annotation_names", a.name_iid)
            args[key] = annotation_value(a)
        assert packet.HasField("timestamp"), f"packet {order}: an event without a timestamp"
        events.append((packet.timestamp, order, e, name, ",".join(cats), args))
    events.sort(key=lambda x: (x[0], x[1]))  # stable: ties in file order
    open_slices: dict[int, list[Slice]] = collections.defaultdict(list)
    for ts, order, e, name, cat, args in events:
        assert e.track_uuid in out.tracks, f"packet {order}: track {e.track_uuid} undescribed"
        if e.type == SLICE_BEGIN:
            open_slices[e.track_uuid].append(Slice(e.track_uuid, name, cat, ts, args=args))
        elif e.type == SLICE_END:
            stack = open_slices[e.track_uuid]
            assert stack, f"packet {order}: an END on {out.path(e.track_uuid)} closes nothing"
            s = stack.pop()
            s.dur = ts - s.ts
            s.args.update(args)
            out.slices.append(s)
        elif e.type == INSTANT:
            out.instants.append(Slice(e.track_uuid, name, cat, ts, 0, args))
        elif e.type == COUNTER:
            assert out.tracks[e.track_uuid].counter, f"packet {order}: a counter on a slice track"
            out.counters.append((e.track_uuid, ts, e.double_counter_value))
    unclosed = [s for stack in open_slices.values() for s in stack]
    assert not unclosed, f"slices never closed: {unclosed[:3]}"
    return out


def json_time(t_ns: int, origin: int) -> int:
    """The JSON timeline's time for `t_ns` (timeline/chrome_trace_writer.h): ns from its
    origin, on a 125 ns grid."""
    return (t_ns - origin + 62) // 125 * 125


def group_of_lane(track_name: str) -> str:
    """A Flight Recorder timeline's process group, from its track or lane ("<group>, lane 2")."""
    return re.sub(r", lane [0-9]+$", "", track_name)


def dsdiag(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([DSDIAG, *args], capture_output=True, text=True, check=False)


class PerfettoTimeline(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="dsdiag-pftrace-")
        self.addCleanup(self.tmp.cleanup)

    def synth(self, name: str, *args: str) -> str:
        run = os.path.join(self.tmp.name, name)
        r = dsdiag("synth", *args, "--out", run)
        self.assertEqual(r.returncode, 0, r.stderr)
        return run

    def draw(self, run: str, out: str, *extra: str) -> None:
        r = dsdiag("timeline", run, "-o", out, *extra)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "")

    def draw_both(self, run: str, out: str):
        """`run` drawn as out.pftrace and out.json: the decoded trace, the JSON's events, its
        origin, and its names by (pid, tid, "process_name" | "thread_name")."""
        self.draw(run, out + ".pftrace")
        self.draw(run, out + ".json")
        with open(out + ".json", encoding="utf-8") as f:
            doc = json.load(f)
        names = {(e["pid"], e.get("tid", 0), e["name"]): e["args"]["name"]
                 for e in doc["traceEvents"]
                 if e["ph"] == "M" and e["name"] in ("process_name", "thread_name")}
        origin = doc["otherData"]["origin_unix_ns"]
        return decode(out + ".pftrace"), doc["traceEvents"], origin, names

    def test_clean_run_has_every_rank_thread_span_and_counter(self):
        run = self.synth("clean", "--ranks", "4", "--steps", "6")
        out = run + ".pftrace"
        self.draw(run, out)
        with open(out, "rb") as f:
            self.assertNotEqual(f.read(1), b"{", "a .pftrace is protobuf, not JSON")
        t = decode(out)
        roots = sorted(tr.name for tr in t.tracks.values() if not tr.parent)
        self.assertEqual(roots, [f"rank {r} (synth-host-0)" for r in range(4)])
        by_rank = collections.defaultdict(list)
        for s in t.slices:
            by_rank[t.rank_of(s.track)].append(s)
        for rank in range(4):
            slices = by_rank[f"rank {rank} (synth-host-0)"]
            steps = [s for s in slices if s.category == "step"]
            self.assertEqual([s.name for s in steps], [f"step {i}" for i in range(6)])
            self.assertTrue(all(t.tracks[s.track].name == "main" for s in steps))
            self.assertTrue(all(s.args["step"] == i for i, s in enumerate(steps)))
            self.assertEqual(sum(s.category == "phase" for s in slices), 6 * 5)
            colls = [s for s in slices if s.category == "coll"]
            self.assertTrue(colls)
            for c in colls:
                for key in ("pg", "seq", "op", "n", "bytes", "step", "wait", "last", "ranks"):
                    self.assertIn(key, c.args, c)
                self.assertTrue(0 <= c.args["wait"] <= c.dur, c)
                self.assertEqual(c.args["ranks"], 4)
                self.assertTrue(t.tracks[c.track].name.startswith("collectives"))
            ends = [i for i in t.instants if t.rank_of(i.track) == f"rank {rank} (synth-host-0)"]
            self.assertIn("end: ok", [i.name for i in ends])
        counters = {t.tracks[c[0]].name for c in t.counters}
        self.assertEqual(counters, {"grad norm", "loss", "lr", "samples/s", "collectives ms",
                                    "collective wait ms"})

    def test_same_events_as_the_json_timeline(self):
        """Event for event, the JSON's: spans, instants, counters, at the same times (the
        JSON's rounded to its grid) with the same args."""
        run = self.synth("straggler", "--ranks", "3", "--steps", "5", "--inject",
                         "straggler:rank=1,ms=30")
        t, events, origin, names = self.draw_both(run, run)

        def ns(us: float) -> int:
            return round(us * 1000)

        def grid(t_ns: int) -> int:
            return json_time(t_ns, origin)

        json_spans: collections.Counter = collections.Counter()
        json_counters: collections.Counter = collections.Counter()
        json_instants: collections.Counter = collections.Counter()
        for e in events:
            if e.get("cat") == "finding" or e["ph"] == "M":
                continue
            process = names[(e["pid"], 0, "process_name")]
            if e["ph"] == "X":
                thread = names[(e["pid"], e["tid"], "thread_name")]
                args = {k: v for k, v in e["args"].items() if v is not None}
                json_spans[(process, thread, e["name"], ns(e["ts"]), round(e["dur"] * 1000),
                            json.dumps(args, sort_keys=True))] += 1
            elif e["ph"] == "C":
                for value in e["args"].values():
                    json_counters[(process, e["name"], ns(e["ts"]), round(value, 9))] += 1
            elif e["ph"] == "i":
                json_instants[(process, e["name"], ns(e["ts"]))] += 1
        pf_spans = collections.Counter(
            (t.rank_of(s.track), t.tracks[s.track].name, s.name, grid(s.ts),
             grid(s.ts + s.dur) - grid(s.ts), json.dumps(s.args, sort_keys=True))
            for s in t.slices)
        pf_counters = collections.Counter(
            (t.rank_of(c[0]), t.tracks[c[0]].name, grid(c[1]), round(c[2], 9))
            for c in t.counters)
        pf_instants = collections.Counter(
            (t.rank_of(i.track), i.name, grid(i.ts)) for i in t.instants if i.category != "finding")
        self.assertGreater(sum(pf_spans.values()), 100)
        self.assertEqual(pf_spans, json_spans)
        self.assertEqual(pf_counters, json_counters)
        self.assertEqual(pf_instants, json_instants)

    def test_every_finding_of_compare_is_an_instant(self):
        for inject in ("crash:rank=2,step=3", "hang:rank=1,step=2"):
            with self.subTest(inject=inject):
                run = self.synth(inject.split(":")[0], "--ranks", "4", "--steps", "6",
                                 "--inject", inject)
                compare = dsdiag("compare", "--format", "json", run)
                self.assertNotEqual(compare.returncode, 2, compare.stderr)
                expected = sorted((f["kind"], f["severity"], f["summary"])
                                  for f in json.loads(compare.stdout)["findings"])
                self.assertTrue(expected, "compare found nothing to draw")
                self.draw(run, run + ".pftrace")
                t = decode(run + ".pftrace")
                drawn = sorted((i.args["kind"], i.args["severity"], i.args["summary"])
                               for i in t.instants if i.category == "finding")
                self.assertEqual(drawn, expected)
                for i in t.instants:
                    if i.category == "finding":
                        self.assertEqual(t.tracks[i.track].name, "findings")

    def test_collectives_back_to_back_close_their_own_slices(self):
        """A collective that starts as the one before it ends: the first's SLICE_END is
        written last, so sharing a track, it would close the second slice instead."""
        run = os.path.join(self.tmp.name, "back-to-back")
        os.makedirs(run)
        t0, wall, dur = 1_000_000_000, 1_767_000_000_000_000_000, 5_000_000
        for rank in range(2):
            header = {"type": "header", "ts": t0, "step": 0, "schema": "dsdiag.trace/1",
                      "run_id": "back-to-back", "rank": rank, "world_size": 2,
                      "local_rank": rank, "host": "h", "pid": 100 + rank,
                      "clock": {"mono": t0, "wall": wall, "offset": 0, "offset_err": 0}}
            records = [header, {"type": "step_begin", "ts": t0, "step": 0}]
            for seq in range(3):  # each starts when the one before it ends
                records.append({"type": "coll", "ts": t0 + seq * dur, "step": 0, "pg": 0,
                                "seq": seq, "op": "allreduce", "dtype": "f32", "n": 4,
                                "bytes": 16, "dur": dur, "tag": f"bucket-{seq}"})
            records.append({"type": "step", "ts": t0, "step": 0, "dur": 3 * dur})
            records.append({"type": "end", "ts": t0 + 3 * dur, "step": 0, "reason": "ok",
                            "status": 0})
            with open(os.path.join(run, f"rank-{rank:05d}.jsonl"), "w", encoding="utf-8") as f:
                f.writelines(json.dumps(r) + "\n" for r in records)
        self.draw(run, run + ".pftrace")
        t = decode(run + ".pftrace")
        colls = sorted((s for s in t.slices if s.category == "coll"),
                       key=lambda s: (t.rank_of(s.track), s.ts))
        self.assertEqual(len(colls), 6)
        for s in colls:
            self.assertEqual((s.ts - (wall + s.args["seq"] * dur), s.dur), (0, dur), s)
            self.assertEqual(s.args["tag"], f"bucket-{s.args['seq']}")
            self.assertIn("wait", s.args)

    def test_flight_recorder_dumps_alone_as_in_the_json(self):
        """A run of Flight Recorder dumps alone (real ones from fixtures/torch_fr, a synth
        one): the JSON's spans, one for one, a group's overlapping collectives on lanes."""
        fixtures = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "fixtures", "torch_fr")
        synth = self.synth("fr", "--ranks", "4", "--steps", "5", "--torch-fr", "--inject",
                           "hang:rank=1,step=3")
        for run in (*(os.path.join(fixtures, name) for name in ("cuda_hang", "nccl_stall",
                                                                "subgroup")), synth):
            with self.subTest(run=os.path.basename(run)):
                out = os.path.join(self.tmp.name, os.path.basename(run))
                t, events, origin, names = self.draw_both(run, out)
                json_spans = collections.Counter(
                    (names[(e["pid"], 0, "process_name")],
                     names[(e["pid"], e["tid"], "thread_name")], e["name"],
                     round(e["ts"] * 1000), round(e["dur"] * 1000),
                     json.dumps(e["args"], sort_keys=True))
                    for e in events if e["ph"] == "X")
                self.assertTrue(json_spans)

                pf_spans = collections.Counter(
                    (t.rank_of(s.track), group_of_lane(t.tracks[s.track].name), s.name,
                     json_time(s.ts, origin),
                     json_time(s.ts + s.dur, origin) - json_time(s.ts, origin),
                     json.dumps(s.args, sort_keys=True)) for s in t.slices)
                self.assertEqual(pf_spans, json_spans)
                json_findings = sorted(e["args"]["summary"] for e in events
                                       if e.get("cat") == "finding")
                pf_findings = sorted(i.args["summary"] for i in t.instants
                                     if i.category == "finding")
                self.assertEqual(pf_findings, json_findings)

    def one_event_trace(self, event_type: int, name_iid: int = 0) -> str:
        """A trace of one track and one event on it, written for the decoder to judge."""
        trace = pb.Trace()
        p = trace.packet.add()
        p.track_descriptor.uuid = 7
        p.track_descriptor.name = "t"
        p = trace.packet.add()
        p.timestamp = 5
        p.trusted_packet_sequence_id = 2
        p.track_event.type = event_type
        p.track_event.track_uuid = 7
        if name_iid:
            p.track_event.name_iid = name_iid
        path = os.path.join(self.tmp.name, "bad.pftrace")
        with open(path, "wb") as f:
            f.write(trace.SerializeToString())
        return path

    def test_decoder_rejects_an_end_that_closes_nothing(self):
        """The checks above can fail: an END on a track with no open slice is reported."""
        with self.assertRaisesRegex(AssertionError, "closes nothing"):
            decode(self.one_event_trace(SLICE_END))

    def test_decoder_rejects_a_name_used_before_it_is_interned(self):
        with self.assertRaisesRegex(AssertionError, "before sequence 2 defines it"):
            decode(self.one_event_trace(INSTANT, name_iid=1))

if __name__ == "__main__":
    DSDIAG = sys.argv.pop(1)
    unittest.main()
