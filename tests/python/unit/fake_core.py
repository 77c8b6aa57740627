"""A fake of dsdiag._core's recording half, for in-process unit tests of the hooked areas.

The package hands every value it sees to the C++ core (`_core.write_*`, the Session's
begin_step/end_step/phase/mark/end, RankProbes.collective/peer_op). install() puts this fake
in place of `dsdiag._core` before any area is imported: those calls land in CALLS, in order,
as Call(name, args) with the arguments named as the real binding names them (read from its
pybind11 signature, so they are spelled once, in the C++). Everything else (the fingerprint
functions, the trace reader) is the real core's, so the values the areas compute are real.

One rank, in-process: a test starts a world-size-1 Gloo group and drives torch as a job
does; a run takes seconds, not a multi-process job's tens of seconds.
"""

import importlib
import re
import sys
from collections import namedtuple

Call = namedtuple("Call", "name args")
CALLS = []


def calls(call=None, **where):
    """The calls recorded so far named `call` (all when None) whose arguments equal
    `where`'s."""
    return [c for c in CALLS if (call is None or c.name == call)
            and all(c.args.get(k) == v for k, v in where.items())]


def args(call, **where):
    return [c.args for c in calls(call, **where)]


def clear():
    del CALLS[:]


def _record(call, **named):
    CALLS.append(Call(call, named))


def _parameter_names(function):
    """The parameter names of a pybind11 function, from its signature line
    `name(a: T, b: T = ...) -> R`."""
    doc = (function.__doc__ or "").splitlines()[0]
    inside = doc[doc.index("(") + 1:doc.rindex(")")]
    return [m.group(1) for m in re.finditer(r"(?:^|, )(\w+):", inside)]


def _bind(call, names, positional, keywords):
    """The arguments of `call` named as the real binding names them; a name it does not
    take raises TypeError, as pybind11 would."""
    unknown = set(keywords) - set(names)
    if unknown or len(positional) > len(names):
        raise TypeError("%s() takes %s, not %s" % (call, names, sorted(unknown) or positional))
    named = dict(zip(names, positional))
    named.update(keywords)
    return named


def _recorder(name, real):
    names = _parameter_names(real)

    def write(*positional, **keywords):
        named = _bind(name, names, positional, keywords)
        session = named.pop("session", None)
        assert isinstance(session, FakeSession), "%s without the session" % name
        _record(name, **named)

    write.__name__ = name
    return write


class FakePhase(object):
    def __init__(self, name):
        self.name = name

    def __enter__(self):
        _record("phase_enter", name=self.name)
        return self

    def __exit__(self, *exc):
        _record("phase_exit", name=self.name, failed=exc[0] is not None)
        return False


class FakeSession(object):
    real = None  # dsdiag._core.Session, whose methods' parameter names the fake's take

    def __init__(self, config):
        self.on = True
        self.full = config["mode"] == "full"
        self.rank = config["rank"]
        self.current_step = -1
        self.probe_ns = 0

    def _called(self, call, positional, keywords):
        names = _parameter_names(getattr(FakeSession.real, call))[1:]  # after self
        _record(call, **_bind(call, names, positional, keywords))

    def begin_step(self, *positional, **keywords):
        self._called("begin_step", positional, keywords)
        self.current_step = CALLS[-1].args["step"]

    def end_step(self, *positional, **keywords):
        self._called("end_step", positional, keywords)

    def phase(self, name):
        return FakePhase(name)

    def record_error(self, *a):
        _record("record_error", detail=a)

    def record_signal(self, *a):
        _record("record_signal", detail=a)

    def mark(self, *a):
        _record("mark", detail=a)

    def end(self, reason, status, detail=""):
        _record("end", reason=reason, status=status, detail=detail)
        self.on = False

    def add_probe_time(self, ns):
        self.probe_ns += ns


class FakeOp(object):
    """A collective or point-to-point op the hooks issued: its life goes into CALLS."""

    def __init__(self, kind, seq, **described):
        self.seq = seq
        self.completed = False
        self.described = described
        _record(kind, seq=seq, **described)

    def started(self):
        pass

    def set_peer(self, peer, group_peer):
        self.described.update(peer=peer, group_peer=group_peer)

    def waiting(self):
        pass

    def mark_completed(self, failed=False):
        self.completed = True
        self.failed = failed

    def mark_queued_on_device(self):
        self.completed = True  # the host's side, as the core's op says
        self.failed = False
        _record("op_queued", seq=self.seq)

    def mark_device_completed(self):
        _record("op_device_completed", seq=self.seq)

    def write(self):
        _record("op_written", seq=self.seq, failed=getattr(self, "failed", None),
                **self.described)


class FakeRankProbes(object):
    started = []  # the configs start() was given

    def __init__(self, config):
        self.config = config
        self.session = FakeSession(config)
        self.run_dir = config["run_dir"]
        self.run_id = "fake"
        self._seqs = {}
        self._sites = {}

    @staticmethod
    def start(config, store=None):
        FakeRankProbes.started.append(config)
        return FakeRankProbes(config)

    def _next(self, pg):
        seq = self._seqs.get(pg, 0)
        self._seqs[pg] = seq + 1
        return seq

    def collective(self, pg, op, dtype, count, bytes, tag, send=(), recv=(), peers=(), site=0):
        return FakeOp("collective", self._next(pg), pg=pg, op=op, dtype=dtype, count=count,
                      bytes=bytes, tag=tag, site=site)

    def peer_op(self, pg, op, peer, group_peer, match_tag, dtype, count, bytes, tag, site=0):
        return FakeOp("peer_op", self._next(("p2p", pg, peer)), pg=pg, op=op, peer=peer,
                      dtype=dtype, count=count)

    def next_seq(self, pg):
        return self._seqs.get(pg, 0)

    def call_site(self, file, line, fn):
        key = (file, line, fn)
        if key not in self._sites:
            self._sites[key] = len(self._sites) + 1
            _record("site", id=self._sites[key], file=file, line=line, fn=fn)
        return self._sites[key]

    def dump(self, reason):
        _record("dump", reason=reason)

    def set_stack_provider(self, provider):
        self.stack_provider = provider

    def set_refresher(self, refresher):
        self.refresher = refresher

    def measure_clock(self, *a):
        pass

    def finish(self, status=0):
        _record("finish", status=status)


class FakeCore(object):
    """dsdiag._core with its recording half faked."""

    def __init__(self, real):
        self._real = real
        self.RankProbes = FakeRankProbes
        self.Session = FakeSession
        for name in dir(real):
            if name.startswith("write_") and name != "write_loader_sweep":
                setattr(self, name, _recorder(name, getattr(real, name)))

    def ddp_hook_api(self, probes):
        raise TypeError("the fake core has no native DDP hook")

    def __getattr__(self, name):
        return getattr(self._real, name)



def install(package_dir):
    """Puts the fake in place of dsdiag._core (before dsdiag.torch is imported); returns it."""
    if package_dir not in sys.path:
        sys.path.insert(0, package_dir)
    assert "dsdiag.torch" not in sys.modules, "install the fake before importing dsdiag.torch"
    real = importlib.import_module("dsdiag._core")
    FakeSession.real = real.Session
    fake = FakeCore(real)
    sys.modules["dsdiag._core"] = fake
    import dsdiag

    dsdiag._core = fake
    return fake
