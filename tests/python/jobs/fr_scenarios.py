"""Hung and broken torch jobs with PyTorch's own Flight Recorder on, and no dsdiag: each writes
torch's dumps, one file per rank (`<prefix><rank>`, `nccl_trace_rank_<R>` unless told), the way
a job that ran without dsdiag leaves them (issue #26). One scenario per function below; TRUTH
says what went wrong in each, which rank is to blame and where.

    python fr_scenarios.py SCENARIO OUT_DIR [--prefix PREFIX] [--after] [--world N]  # torch 2.x
    python fr_scenarios.py --list

Each scenario runs in one of two ways, which differ only in when and by whom the dumps are
written (WHEN):

- `in-flight` (the default): every rank dumps while the bad collective is still pending, as
  NCCL's watchdog does on a timeout (below).
- `after` (`--after`): the dumps a job that ran without any watchdog leaves, written after the
  failure. The job is started by torchrun itself (`python -m torch.distributed.run --standalone`)
  with a short Gloo timeout (AFTER_TIMEOUT_S); each rank installs the two handlers jobs write: an
  `except` around its training loop that dumps once a collective has raised (timed out, or lost
  its peer), and a SIGTERM handler that dumps when torchrun stops the ranks still running after
  one failed; a rank that ends its loop dumps at its end (the post-mortem dump some jobs always
  write) and leaves with destroy_process_group(). A rank that crashes (SIGKILL, as the OOM killer
  sends, or Gloo's abort) leaves none. In these dumps the collective that timed out or failed is
  `retired` and counted in pg_status's `last_completed_collective`, exactly as one that
  succeeded: only where each rank's stream ends tells the culprit.

The job: WORLD ranks on CPU with Gloo (OMP_NUM_THREADS=1, TORCH_FR_BUFFER_SIZE=2000), started by
this script as torchrun's agent starts them (RANK, WORLD_SIZE, MASTER_ADDR/PORT,
TORCHELASTIC_USE_AGENT_STORE: the launcher holds the store, so a rank that dies or that Gloo
aborts takes no one's store with it).

When the dumps are written. torch 2.13's Gloo writes no dump by itself — not on a timeout, not
with TORCH_FR_DUMP_TEMP_FILE set (the dump-on-timeout machinery is NCCL's) — and a Gloo
collective that times out is retired and counted as completed in the dump (pg_status too). So
each rank does what NCCL's watchdog does, from torch's own records: a watchdog thread reads the
rank's Flight Recorder (pg_status) and, once a collective has been pending for STUCK_S, asks
every rank for its dump through the store (as TORCH_NCCL_DUMP_ON_TIMEOUT does); so does a rank
whose collective failed (lost its peer). Each rank's dumper thread then writes torch's dump
API's bytes unchanged (`torch._C._distributed_c10d._dump_fr_trace()`), wherever its main thread
is (blocked in Python, waiting in a collective, done). The process groups' own timeout is
longer (GLOO_TIMEOUT_S), so the stuck collective is still in flight when dumped. A mismatched
Gloo collective aborts the rank that receives more bytes than it posted, so there the healthy
ranks issue it (async) and dump first, and the odd rank issues its own once they have dumped
(no watchdog there). The launcher then tells the ranks to leave (os._exit: a hung Gloo
collective never returns)."""
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from datetime import timedelta

HERE = os.path.abspath(__file__)
STUCK_S = 3  # how long a collective is pending before the watchdog asks for the dumps
GLOO_TIMEOUT_S = 60  # the process groups' timeout: past the dumps
AFTER_TIMEOUT_S = 5  # `after`: the process groups' timeout, which the waiting ranks then hit
WHENS = ("in-flight", "after")
PREFIX = "nccl_trace_rank_"

# What each scenario does wrong: the culprit ranks, the finding that names them, the process
# group and sequence number of the collective where it shows, the op there, and the line (its
# comment ends `@tag` below) that issued it: the waiters' for a hang, the odd rank's for a
# mismatch. `basis`: what says which side of a mismatch is odd (two ranks: no majority, the
# group's earlier collectives). `absent`: ranks that leave no dump; `prefix`: the dumps'
# (PREFIX unless said). `after`: what differs when the dumps are written after the failure
# (WHEN `after`): there a rank that Gloo aborts, or that crashes, leaves no dump. A clean job
# has kind None.
TRUTH = {
    "skip": dict(
        letter="a", world=2, kind="hang", ranks=[1], pg="0", seq=6, op="all_reduce",
        line="skip", why="rank 1 skips step 2's loss all_reduce; rank 0 waits in it"),
    "blocked": dict(
        letter="b", world=3, kind="hang", ranks=[1], pg="0", seq=3, op="all_reduce",
        line="blocked", why="rank 1 blocks in its data queue at step 2; ranks 0,2 wait"),
    "size_mismatch": dict(
        letter="c", world=2, kind="collective-mismatch", ranks=[1], pg="0", seq=4,
        op="all_reduce", line="size_mismatch", basis="history",
        why="rank 1 reduces 5 floats at step 3, 4 at steps 0-2 like rank 0",
        after=dict(absent=[0], basis="call-site history",
                   why="as in flight; Gloo aborts rank 0 (5 floats received, 4 posted): no "
                       "dump of it")),
    "dtype_mismatch": dict(
        letter="d", world=3, kind="collective-mismatch", ranks=[0], pg="0", seq=4,
        op="all_reduce", line="dtype_mismatch", basis="majority",
        why="rank 0 reduces float64 at step 3; ranks 1,2 float32",
        after=dict(absent=[2], basis="history",
                   why="as in flight; Gloo aborts rank 2 (receives rank 0's float64): the "
                       "two dumps left disagree, the group's history decides")),
    "op_mismatch": dict(
        letter="e", world=2, kind="collective-mismatch", ranks=[0], pg="0", seq=4,
        op="broadcast", line="op_mismatch", basis="history",
        why="rank 0 broadcasts at step 3 where rank 1 (and steps 0-2) all_reduce"),
    "subgroup_hang": dict(
        letter="f", world=4, kind="hang", ranks=[3], pg="1", seq=3, op="all_reduce",
        line="subgroup_hang", prefix="comm_lib_trace_rank_",
        why="in new_group([2,3]) rank 3 skips step 2's all_reduce"),
    "died": dict(
        letter="g", world=3, kind="rank-died", ranks=[2], pg="0", seq=3, op="all_reduce",
        line="died", absent=[2], culprit_is_last=True,
        why="rank 2 stops at step 2, is killed undumped; ranks 0,1 wait",
        after=dict(why="rank 2 is SIGKILLed at step 2; the others' all_reduce fails, they "
                       "dump in their except or SIGTERM handler")),
    "rank0_skips": dict(
        letter="h", world=4, kind="hang", ranks=[0], pg="0", seq=6, op="all_reduce",
        line="rank0_skips", why="rank 0 skips step 2's loss all_reduce; ranks 1-3 wait"),
    # Gloo records no send or recv (torch 2.13): the dumps cannot show the recv nor the send
    # rank 0 skipped, only that rank 1, stuck after its last collective, never joins the next.
    "recv_unsent": dict(
        letter="i", world=2, kind="hang", ranks=[1], pg="0", seq=6, op="all_reduce",
        line="recv_unsent",
        why="rank 1 blocks in recv(src=0) at step 2, a send rank 0 skips; Gloo records no "
            "send/recv: rank 1 never joins the all_reduce rank 0 waits in"),
    # Every collective has the same op and size: nothing fails where the streams part, only
    # the call sites (the frames) show it; the job fails at its end, one collective short.
    "skip_same_size": dict(
        letter="j", world=3, kind="collective-mismatch", ranks=[1], pg="0", seq=12,
        op="all_reduce", line="skip_same_size", basis="majority", basis_at_2="history",
        why="rank 1 skips step 5's metrics all_reduce (same size as the gradients'): from "
            "there its collectives pair with the others' wrong ones until the last"),
    # The same two in a sub-group: the loop runs in new_group([1, 2, 3]); rank 0, outside it,
    # only joins the world's first all_reduce and ends.
    "subgroup_blocked": dict(
        letter="l", world=4, kind="hang", ranks=[2], pg="1", seq=3, op="all_reduce",
        line="subgroup_blocked", why="in new_group([1,2,3]) rank 2 blocks in its data queue "
                                     "at step 2; ranks 1,3 wait"),
    "subgroup_died": dict(
        letter="m", world=4, kind="rank-died", ranks=[3], pg="1", seq=3, op="all_reduce",
        line="subgroup_died", absent=[3],
        why="in new_group([1,2,3]) rank 3 dies undumped at step 2; ranks 1,2 wait"),
    "clean": dict(
        letter="k", world=3, kind=None, ranks=[], pg="0", seq=8, op="all_reduce", line="clean",
        why="a clean job: every rank dumps at its end"),
}


def line_of(tag):
    """The line of this file whose comment ends `@tag`: where the scenario issues its
    collective (TRUTH's `line`), or the culprit's last one (`<scenario>_last`)."""
    with open(HERE) as f:
        for number, text in enumerate(f, 1):
            if text.rstrip().endswith(" @" + tag):
                return number
    raise KeyError(tag)


# ---- the scenarios: each runs on every rank, `job` being that rank's Job ----

def skip(job):
    """(a) A rank skips a collective: rank 1 does not reduce its loss at step 2."""
    import torch
    import torch.distributed as dist
    for step in range(3):
        dist.all_reduce(torch.ones(4))  # the gradients @skip_last
        if not (job.rank == 1 and step == 2):
            dist.all_reduce(torch.ones(1))  # @skip
    job.log("done")


def rank0_skips(job):
    """(h) The culprit is rank 0: rank 0 skips step 2's loss all_reduce, ranks 1..3 wait in it."""
    import torch
    import torch.distributed as dist
    for step in range(3):
        dist.all_reduce(torch.ones(4))  # the gradients @rank0_skips_last
        if not (job.rank == 0 and step == 2):
            dist.all_reduce(torch.ones(1))  # @rank0_skips
    job.log("done")


def blocked(job):
    """(b) A rank blocks in Python: rank 1 waits at step 2 for a batch its loader never puts
    in the queue, while ranks 0 and 2 wait in the step's all_reduce."""
    import queue

    import torch
    import torch.distributed as dist
    batches = queue.Queue()
    for step in range(3):
        if job.rank == 1 and step == 2:
            batches.get(timeout=120)  # never filled: the dumper thread dumps meanwhile
        dist.all_reduce(torch.ones(4))  # @blocked


def size_mismatch(job):
    """(c) A size mismatch: steps 0-2 reduce 4 floats on both ranks; at step 3 rank 1's last
    batch is uneven and it reduces 5. Two ranks: no majority, the group's history decides."""
    import torch
    import torch.distributed as dist
    for step in range(4):
        last = step == 3
        grad = torch.ones(5 if job.rank == 1 and last else 4)
        job.odd_goes_last(odd=1, now=last)
        work = dist.all_reduce(grad, async_op=True)  # @size_mismatch
        job.settle(work, odd=1, last=last)


def dtype_mismatch(job):
    """(d) A dtype mismatch, odd rank 0: at step 3 rank 0 reduces float64, ranks 1, 2 float32
    (a majority of 2 against 1, the first rank being the odd one)."""
    import torch
    import torch.distributed as dist
    for step in range(4):
        last = step == 3
        grad = torch.ones(4, dtype=torch.float64 if job.rank == 0 and last else torch.float32)
        job.odd_goes_last(odd=0, now=last)
        work = dist.all_reduce(grad, async_op=True)  # @dtype_mismatch
        job.settle(work, odd=0, last=last)


def op_mismatch(job):
    """(e) An op mismatch, odd rank 0: steps 0-2 all_reduce on both ranks; at step 3 rank 0
    broadcasts where rank 1 all_reduces. Two ranks: the group's history decides, and the odd
    one is the first rank, the one an analyzer comparing with the first takes for right."""
    import torch
    import torch.distributed as dist
    for step in range(4):
        last = step == 3
        grad = torch.ones(4)
        job.odd_goes_last(odd=0, now=last)
        if job.rank == 0 and last:
            work = dist.broadcast(grad, src=0, async_op=True)  # @op_mismatch
        else:
            work = dist.all_reduce(grad, async_op=True)
        job.settle(work, odd=0, last=last)


def subgroup_hang(job):
    """(f) A hang inside a sub-group: 4 ranks, new_group([2, 3]); every step reduces in the
    world group, then ranks 2 and 3 in their sub-group; rank 3 skips the sub-group's all_reduce
    at step 2, so rank 2 waits in it. Ranks 0 and 1 finish."""
    import torch
    import torch.distributed as dist
    sub = dist.new_group([2, 3])
    for step in range(3):
        dist.all_reduce(torch.ones(4))  # the world group
        if job.rank == 2 or (job.rank == 3 and step != 2):
            dist.all_reduce(torch.ones(2), group=sub)  # @subgroup_hang
    job.log("done")


def died(job):
    """(g) A rank dies before dumping: the last rank (2) stops at step 2, before the step's
    all_reduce, and is SIGKILLed (its node lost, the OOM killer) when the dumps are asked for,
    before it writes its own; ranks 0 and 1 wait in the all_reduce and dump. No dump of rank 2.
    (Had it died first, Gloo would have failed the others' all_reduce at once, and their dumps
    would count it completed: WHEN `after` has it die so.)"""
    import torch
    import torch.distributed as dist
    for step in range(3):
        if job.rank == job.world - 1 and step == 2:
            job.crash_undumped()
        dist.all_reduce(torch.ones(4))  # @died


def recv_unsent(job):
    """(i) A recv whose send never comes: every step rank 0 sends its state to rank 1 between
    the gradients' and the loss's all_reduce, but skips it at step 2 and goes on to the loss
    all_reduce; rank 1 blocks in dist.recv(src=0). torch 2.13's Gloo records neither the sends
    nor the recv (NCCL would: there dsdiag pairs them and names rank 0), so the dumps show
    rank 1 never joining the all_reduce rank 0 waits in, after the gradients' all_reduce."""
    import torch
    import torch.distributed as dist
    for step in range(3):
        dist.all_reduce(torch.ones(4))  # the gradients @recv_unsent_last
        if job.rank == 0 and step != 2:
            dist.send(torch.ones(3), dst=1)
        elif job.rank == 1:
            dist.recv(torch.empty(3), src=0)
        dist.all_reduce(torch.ones(1))  # the loss @recv_unsent
    job.log("done")


def skip_same_size(job):
    """(j) A rank skips a collective of the same size as its neighbours: every step reduces
    the gradients, then the step's metrics (as many floats); rank 1 skips the metrics at step 5.
    Its next all_reduce (step 6's gradients) pairs with the others' metrics of step 5, and so
    on: Gloo reduces them without a word (same op, same size), and the job only fails at the
    end, where ranks 0 and 2 issue one all_reduce more than rank 1."""
    import torch
    import torch.distributed as dist
    for step in range(8):
        dist.all_reduce(torch.ones(4))  # the gradients @skip_same_size_other
        if not (job.rank == 1 and step == 5):
            dist.all_reduce(torch.ones(4))  # the metrics @skip_same_size
    job.log("done")


def subgroup_blocked(job):
    """(l) A rank blocks in Python inside a sub-group: the loop's all_reduce runs in
    new_group([1, 2, 3]); rank 2 waits at step 2 for a batch that never comes. Rank 0, outside
    the sub-group, joins only the world's first all_reduce."""
    import queue

    import torch
    import torch.distributed as dist
    sub = dist.new_group([1, 2, 3], timeout=job.timeout)  # as the world's: not inherited
    dist.all_reduce(torch.ones(4))  # the world, once
    if job.rank == 0:
        return
    batches = queue.Queue()
    for step in range(3):
        if job.rank == 2 and step == 2:
            batches.get(timeout=120)  # never filled
        dist.all_reduce(torch.ones(4), group=sub)  # @subgroup_blocked


def subgroup_died(job):
    """(m) A rank dies undumped inside a sub-group: the loop runs in new_group([1, 2, 3]);
    rank 3 is killed at step 2, before the step's all_reduce; ranks 1 and 2 wait in it."""
    import torch
    import torch.distributed as dist
    sub = dist.new_group([1, 2, 3], timeout=job.timeout)
    dist.all_reduce(torch.ones(4))  # the world, once
    if job.rank == 0:
        return
    for step in range(3):
        if job.rank == 3 and step == 2:
            job.crash_undumped()
        dist.all_reduce(torch.ones(4), group=sub)  # @subgroup_died


def clean(job):
    """(k) A clean job: four steps of two all_reduces; every rank dumps at its end."""
    import torch
    import torch.distributed as dist
    for _ in range(4):
        dist.all_reduce(torch.ones(4))
        dist.all_reduce(torch.ones(1))  # @clean
    job.log("done")


SCENARIOS = {f.__name__: f for f in (skip, blocked, size_mismatch, dtype_mismatch, op_mismatch,
                                     subgroup_hang, died, rank0_skips, recv_unsent,
                                     skip_same_size, subgroup_blocked, subgroup_died,
                                     clean)}
assert sorted(SCENARIOS) == sorted(TRUTH)


# ---- inside a rank ----

def write_dump(path, tag):
    """torch's dump API's bytes, unchanged, renamed into place (a rank aborted mid-write leaves
    no half file; `tag` names the partial file of this writer). Returns the bytes."""
    import torch
    data = torch._C._distributed_c10d._dump_fr_trace()
    partial = os.path.join(os.path.dirname(path), f".partial.{tag}")
    with open(partial, "wb") as f:
        f.write(data)
    os.replace(partial, path)
    return data


class Job:
    """One rank's side of the harness: its store clients, its dump, its leaving."""

    def __init__(self, scenario, out, prefix):
        from torch.distributed import TCPStore
        self.scenario = scenario
        self.rank = int(os.environ["RANK"])
        self.world = int(os.environ["WORLD_SIZE"])
        self.path = os.path.join(out, f"{prefix}{self.rank}")
        self.addr = os.environ["MASTER_ADDR"]
        self.port = int(os.environ["MASTER_PORT"])
        self.store = TCPStore(self.addr, self.port, is_master=False,
                              timeout=timedelta(seconds=120))
        self.lock = threading.Lock()
        self.timeout = timedelta(seconds=GLOO_TIMEOUT_S)  # the process groups'
        self.dumped = False
        self.dies_instead_of_dumping = False

    def log(self, what):
        print(f"rank {self.rank}: {what}", flush=True)

    def dump_once(self):
        """torch's dump API's bytes, unchanged, written once (renamed into place, so that a
        rank Gloo aborts mid-write leaves no half file)."""
        with self.lock:
            if self.dumped:
                return
            data = write_dump(self.path, f"{self.rank}")
            self.dumped = True
        self.log(f"dumped {len(data)} bytes")
        self.store.set(f"fr/dumped/{self.rank}", "1")

    def request_dumps(self):
        self.store.set("fr/dump", "1")

    def crash_undumped(self):
        """Stops here and is SIGKILLed, undumped, when the dumps are asked for (a lost node,
        the OOM killer); the others' dumps show it missing while they wait."""
        self.dies_instead_of_dumping = True
        threading.Event().wait(120)

    def dumper(self):
        """Waits for a dump request, dumps, waits to be told to leave, and ends the process
        (its main thread may be blocked anywhere)."""
        from torch.distributed import TCPStore
        store = TCPStore(self.addr, self.port, is_master=False, timeout=timedelta(seconds=120))
        store.wait(["fr/dump"])
        if self.dies_instead_of_dumping:
            os.kill(os.getpid(), signal.SIGKILL)
        self.dump_once()
        store.wait(["fr/leave"])
        sys.stdout.flush()
        os._exit(0)

    def watchdog(self):
        """Asks every rank for its dump once one of this rank's collectives has been pending
        (enqueued, not completed: torch's pg_status) for STUCK_S."""
        import pickle

        import torch
        from torch.distributed import TCPStore
        store = TCPStore(self.addr, self.port, is_master=False, timeout=timedelta(seconds=120))
        pending = {}  # (pg, seq) -> since when
        while not store.check(["fr/dump"]):
            status = pickle.loads(torch._C._distributed_c10d._dump_fr_trace(
                includeCollectives=False, includeStackTraces=False))["pg_status"]
            now = time.monotonic()
            for pg, s in status.items():
                if s["last_enqueued_collective"] > s["last_completed_collective"]:
                    since = pending.setdefault((pg, s["last_enqueued_collective"]), now)
                    if now - since > STUCK_S:
                        self.log(f"pg {pg} seq {s['last_enqueued_collective']} pending for "
                                 f"{now - since:.1f} s: asking every rank for its dump")
                        store.set("fr/dump", "1")
                        return
            time.sleep(0.2)

    def odd_goes_last(self, odd, now):
        """Before a mismatched collective: the odd rank (the larger buffer) issues its own
        once every other rank has issued and dumped, for Gloo aborts the rank that receives
        more bytes than it posted."""
        if now and self.rank == odd:
            self.store.wait([f"fr/dumped/{r}" for r in range(self.world) if r != odd])

    def settle(self, work, odd, last):
        """After a collective: a healthy step's completes; the mismatched one is left in
        flight and dumped (the odd rank then asks the others, already dumped, to dump)."""
        if not last:
            work.wait()
            return
        time.sleep(0.3)
        self.dump_once()
        if self.rank == odd:
            self.request_dumps()


class AfterJob:
    """One rank's side when the dumps are written after the failure (WHEN `after`): torchrun
    starts it; no watchdog, no store of the harness; the job's own handlers dump."""

    def __init__(self, out, prefix):
        self.rank = int(os.environ["RANK"])
        self.world = int(os.environ["WORLD_SIZE"])
        self.path = os.path.join(out, f"{prefix}{self.rank}")
        self.timeout = timedelta(seconds=AFTER_TIMEOUT_S)  # the process groups'
        self.dumped = False

    def log(self, what):
        print(f"rank {self.rank}: {what}", flush=True)

    def dump(self, why):
        """torch's dump API's bytes, unchanged; once (a SIGTERM may come while the except
        handler dumps)."""
        if self.dumped:
            return
        data = write_dump(self.path, f"{self.rank}.{why}")
        self.dumped = True  # only now: a SIGTERM that stops a dump half way dumps again
        self.log(f"dumped {len(data)} bytes ({why})")

    def crash_undumped(self):
        """Killed here, as the OOM killer kills: no handler runs, no dump."""
        self.log("SIGKILL")
        os.kill(os.getpid(), signal.SIGKILL)

    def odd_goes_last(self, odd, now):
        """Nothing to stage: each rank issues when it gets there."""

    def settle(self, work, odd, last):
        work.wait()


def rank_main_after(scenario, out, prefix):
    """What a job that leaves its Flight Recorder dumps after the failure does (WHEN `after`)."""
    import torch.distributed as dist
    job = AfterJob(out, prefix)
    dist.init_process_group("gloo", timeout=job.timeout)

    def on_sigterm(signum, frame):  # torchrun stops the ranks left after one failed
        job.dump("SIGTERM")
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, on_sigterm)
    try:
        SCENARIOS[scenario](job)
    except Exception as error:  # noqa: BLE001 - a collective raised: leave the evidence
        job.log(f"{type(error).__name__}: {str(error).splitlines()[0][:200]}")
        job.dump("except")
        os._exit(1)
    job.dump("end")
    dist.destroy_process_group()


def rank_main(scenario, out, prefix):
    import torch.distributed as dist
    job = Job(scenario, out, prefix)
    dist.init_process_group("gloo", timeout=timedelta(seconds=GLOO_TIMEOUT_S))
    threading.Thread(target=job.dumper, daemon=True).start()
    if TRUTH[scenario]["kind"] != "collective-mismatch":
        threading.Thread(target=job.watchdog, daemon=True).start()
    try:
        SCENARIOS[scenario](job)
    except Exception as error:  # noqa: BLE001 - a collective failed: ask every rank to dump
        job.log(f"{type(error).__name__}: {str(error).splitlines()[0][:200]}")
        job.request_dumps()
    if TRUTH[scenario]["kind"] is None:  # a clean job: nothing to wait for, it dumps at its end
        job.dump_once()
        job.store.wait(["fr/leave"])
        os._exit(0)
    threading.Event().wait(120)  # the dumper thread ends the process
    os._exit(3)


# ---- the launcher ----

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def truth_of(scenario, when="in-flight", world=None):
    """The scenario's TRUTH, with its `after` overrides when the dumps are written after, and
    at another world size (`world`: the scenarios that take one, WORLDS)."""
    truth = dict(TRUTH[scenario])
    overrides = truth.pop("after", {})
    if when == "after":
        truth.update(overrides)
    if world is not None and world != truth["world"]:
        truth["world"] = world
        if truth.get("culprit_is_last"):
            truth["ranks"] = [world - 1]
            truth["absent"] = [world - 1]
        if world == 2 and "basis_at_2" in truth:
            truth["basis"] = truth["basis_at_2"]
    return truth


# The other world sizes the scenarios that take one (`--world N`) run at besides their own.
WORLDS = {"blocked": (2, 4), "skip_same_size": (2, 4), "died": (2, 4)}


def run(scenario, out, prefix=None, python=None, timeout=90, when="in-flight", world=None):
    """Runs the scenario's job, its dumps going to `out`; returns (each rank's exit status,
    the ranks' output). `when`: WHENS; `world`: the ranks (TRUTH's unless given)."""
    prefix = prefix or TRUTH[scenario].get("prefix", PREFIX)
    world = world or TRUTH[scenario]["world"]
    os.makedirs(out, exist_ok=True)
    if when == "after":
        codes, logs = run_under_torchrun(scenario, out, prefix, python, timeout, world)
    else:
        codes, logs = run_with_watchdog(scenario, out, prefix, python, timeout, world)
    for name in os.listdir(out):
        if name.startswith(".partial."):
            os.remove(os.path.join(out, name))
    return codes, logs


def run_under_torchrun(scenario, out, prefix, python, timeout, world):
    """WHEN `after`: torchrun starts the ranks and, once one fails, stops the others
    (SIGTERM). Returns ([torchrun's exit status], [its output, every rank's lines])."""
    env = dict(os.environ, OMP_NUM_THREADS="1", TORCH_FR_BUFFER_SIZE="2000")
    command = [python or sys.executable, "-m", "torch.distributed.run", "--standalone",
               "--nproc_per_node", str(world), HERE, "--rank-after", scenario, out, prefix]
    try:
        done = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=timeout)
    except subprocess.TimeoutExpired as expired:
        return [None], [(expired.stdout or b"").decode(errors="replace")]
    return [done.returncode], [done.stdout.decode(errors="replace")]


def run_with_watchdog(scenario, out, prefix, python, timeout, world):
    """WHEN `in-flight`: this script starts the ranks, each with its watchdog and dumper."""
    from torch.distributed import TCPStore
    store = TCPStore("127.0.0.1", free_port(), is_master=True, wait_for_workers=False,
                     timeout=timedelta(seconds=timeout))
    ranks = []
    for rank in range(world):
        env = dict(os.environ, OMP_NUM_THREADS="1", TORCH_FR_BUFFER_SIZE="2000",
                   RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world),
                   LOCAL_WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(store.port), TORCHELASTIC_USE_AGENT_STORE="True")
        log = tempfile.TemporaryFile()
        command = [python or sys.executable, HERE, "--rank", scenario, out, prefix]
        ranks.append((subprocess.Popen(command, env=env, stdout=log, stderr=log), log))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:  # every rank has dumped or is gone
        if all(p.poll() is not None or store.check([f"fr/dumped/{r}"])
               for r, (p, _) in enumerate(ranks)):
            break
        time.sleep(0.1)
    else:
        store.set("fr/dump", "1")
        time.sleep(2)
    store.set("fr/leave", "1")
    codes = []
    for p, _ in ranks:
        try:
            codes.append(p.wait(timeout=20))
        except subprocess.TimeoutExpired:
            p.kill()
            codes.append(p.wait())
    logs = []
    for _, log in ranks:
        log.seek(0)
        logs.append(log.read().decode(errors="replace"))
        log.close()
    return codes, logs


def main(argv):
    if argv[:1] == ["--rank"]:
        rank_main(*argv[1:4])
        return 0
    if argv[:1] == ["--rank-after"]:
        rank_main_after(*argv[1:4])
        return 0
    if argv[:1] == ["--list"]:
        for name, truth in TRUTH.items():
            print(f"{truth['letter']} {name}: {truth['why']}")
        return 0
    when = "after" if "--after" in argv else "in-flight"
    argv = [a for a in argv if a != "--after"]
    world = None
    if "--world" in argv[:-1]:
        at = argv.index("--world")
        world = int(argv[at + 1])
        argv = argv[:at] + argv[at + 2:]
    if len(argv) not in (2, 4) or argv[0] not in TRUTH or (len(argv) == 4
                                                           and argv[2] != "--prefix"):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    scenario, out = argv[:2]
    prefix = argv[3] if len(argv) == 4 else TRUTH[scenario].get("prefix", PREFIX)
    truth = truth_of(scenario, when, world)
    codes, logs = run(scenario, out, prefix, when=when, world=truth["world"])
    missing = [r for r in range(truth["world"]) if r not in truth.get("absent", [])
               and not os.path.exists(os.path.join(out, f"{prefix}{r}"))]
    print(f"{scenario} ({when}): exits {codes}, dumps {sorted(os.listdir(out))}")
    for rank in missing:
        log = logs[rank] if len(logs) > rank else logs[0]
        print(f"{scenario}: rank {rank} wrote no dump:\n" + log[-3000:], file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
