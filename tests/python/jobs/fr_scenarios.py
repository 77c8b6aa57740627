"""Hung and broken torch jobs with PyTorch's own Flight Recorder on, and no dsdiag: each writes
torch's dumps, one file per rank (`<prefix><rank>`, `nccl_trace_rank_<R>` unless told), the way
a job that ran without dsdiag leaves them (issue #26). One scenario per function below; TRUTH
says what went wrong in each, which rank is to blame and where.

    python fr_scenarios.py SCENARIO OUT_DIR [--prefix PREFIX]   # torch 2.x, with the FR dump API
    python fr_scenarios.py --list

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
PREFIX = "nccl_trace_rank_"

# What each scenario does wrong: the culprit ranks, the finding that names them, the process
# group and sequence number of the collective where it shows, the op there, and the line (its
# comment ends `@tag` below) that issued it: the waiters' for a hang, the odd rank's for a
# mismatch. `basis`: what says which side of a mismatch is odd (two ranks: no majority, the
# group's earlier collectives). `absent`: ranks that leave no dump; `prefix`: the dumps'
# (PREFIX unless said).
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
        why="rank 1 reduces 5 floats at step 3, 4 at steps 0-2 like rank 0"),
    "dtype_mismatch": dict(
        letter="d", world=3, kind="collective-mismatch", ranks=[0], pg="0", seq=4,
        op="all_reduce", line="dtype_mismatch", basis="majority",
        why="rank 0 reduces float64 at step 3; ranks 1,2 float32"),
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
        line="died", absent=[2], why="rank 2 stops at step 2, is killed undumped; ranks 0,1 wait"),
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
    """(g) A rank dies before dumping: rank 2 stops at step 2, before the step's all_reduce,
    and is SIGKILLed (its node lost, the OOM killer) when the dumps are asked for, before it
    writes its own; ranks 0 and 1 wait in the all_reduce and dump. No dump of rank 2. (Had it
    died first, Gloo would have failed the others' all_reduce at once, and their dumps would
    count it completed.)"""
    import torch
    import torch.distributed as dist
    job.dies_instead_of_dumping = job.rank == 2
    for step in range(3):
        if job.rank == 2 and step == 2:
            threading.Event().wait(120)
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


SCENARIOS = {f.__name__: f for f in (skip, blocked, size_mismatch, dtype_mismatch, op_mismatch,
                                     subgroup_hang, died, rank0_skips, recv_unsent)}
assert sorted(SCENARIOS) == sorted(TRUTH)


# ---- inside a rank ----

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
        self.dumped = False
        self.dies_instead_of_dumping = False

    def log(self, what):
        print(f"rank {self.rank}: {what}", flush=True)

    def dump_once(self):
        """torch's dump API's bytes, unchanged, written once (renamed into place, so that a
        rank Gloo aborts mid-write leaves no half file)."""
        import torch
        with self.lock:
            if self.dumped:
                return
            data = torch._C._distributed_c10d._dump_fr_trace()
            partial = os.path.join(os.path.dirname(self.path), f".partial.{self.rank}")
            with open(partial, "wb") as f:
                f.write(data)
            os.replace(partial, self.path)
            self.dumped = True
        self.log(f"dumped {len(data)} bytes")
        self.store.set(f"fr/dumped/{self.rank}", "1")

    def request_dumps(self):
        self.store.set("fr/dump", "1")

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
    threading.Event().wait(120)  # the dumper thread ends the process
    os._exit(3)


# ---- the launcher ----

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(scenario, out, prefix=None, python=None, timeout=90):
    """Runs the scenario's job, its dumps going to `out`; returns (each rank's exit status,
    the ranks' output)."""
    from torch.distributed import TCPStore
    prefix = prefix or TRUTH[scenario].get("prefix", PREFIX)
    world = TRUTH[scenario]["world"]
    os.makedirs(out, exist_ok=True)
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
    for name in os.listdir(out):
        if name.startswith(".partial."):
            os.remove(os.path.join(out, name))
    return codes, logs


def main(argv):
    if argv[:1] == ["--rank"]:
        rank_main(*argv[1:4])
        return 0
    if argv[:1] == ["--list"]:
        for name, truth in TRUTH.items():
            print(f"{truth['letter']} {name}: {truth['why']}")
        return 0
    if len(argv) not in (2, 4) or argv[0] not in TRUTH or (len(argv) == 4
                                                           and argv[2] != "--prefix"):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    scenario, out = argv[:2]
    prefix = argv[3] if len(argv) == 4 else TRUTH[scenario].get("prefix", PREFIX)
    codes, logs = run(scenario, out, prefix)
    missing = [r for r in range(TRUTH[scenario]["world"])
               if r not in TRUTH[scenario].get("absent", [])
               and not os.path.exists(os.path.join(out, f"{prefix}{r}"))]
    print(f"{scenario}: exits {codes}, dumps {sorted(os.listdir(out))}")
    for rank in missing:
        print(f"{scenario}: rank {rank} wrote no dump (exit {codes[rank]}):\n"
              + logs[rank][-2000:], file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
