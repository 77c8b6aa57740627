"""What the Python tests share: starting a job under `dsdiag run`, reading compare's
findings, and a temporary run directory per test (JobTestCase).

DSDIAG_BINARY names the dsdiag executable; jobs run with the lane's interpreter,
DSDIAG_TEST_PYTHON (ctest sets it per lane: tests/python/CMakeLists.txt; default: this
interpreter), and one intra-op thread per rank. TORCH is that interpreter's torch version as
(major, minor); lane_needs() skips a test that cannot run on this lane, saying why."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

DSDIAG = os.environ.get("DSDIAG_BINARY", "dsdiag")
JOBS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jobs")
PYTHON = os.environ.get("DSDIAG_TEST_PYTHON") or sys.executable
LANE = os.environ.get("DSDIAG_TEST_LANE", "default")


def _torch_version():
    import torch

    return tuple(int(part) for part in torch.__version__.split("+")[0].split(".")[:2])


TORCH = _torch_version()


def lane_needs(version, why):
    """unittest.skipUnless for a test that needs torch >= version (a (major, minor) pair)."""
    return unittest.skipUnless(TORCH >= version, "lane %s has torch %d.%d: %s"
                               % (LANE, TORCH[0], TORCH[1], why))


def package_dir():
    """The folder holding the dsdiag package, found next to the dsdiag binary as `dsdiag run`
    finds it (a build's python/, an installation's lib/dsdiag/python)."""
    binary = os.path.realpath(shutil.which(DSDIAG) or DSDIAG)
    for package in (os.path.join(os.path.dirname(binary), "python"),
                    os.path.join(os.path.dirname(os.path.dirname(binary)), "lib/dsdiag/python")):
        if os.path.exists(os.path.join(package, "dsdiag", "__init__.py")):
            break
    return package


def read_trace(path):
    """A rank's event records as JSON lines, the way the analyzers read them: the compact
    records of trace formats v2 and v3 expanded into the records they stand for, through the
    package's own reader (dsdiag._core.read_trace), found next to the dsdiag binary as
    `dsdiag run` finds it."""
    package = package_dir()
    if package not in sys.path:
        sys.path.insert(0, package)
    from dsdiag import _core
    return _core.read_trace(path)


def run_job(out, job, nproc=2, env=None, timeout=120, extra=(), wrap=()):
    """`dsdiag run [--nproc N] --out OUT [extra...] -- [wrap...] python3 JOB`; returns (exit
    status, stdout, stderr). `wrap` goes before the interpreter (e.g. `env VAR=value`)."""
    command = [DSDIAG, "run", "--out", out] + list(extra)
    if nproc:
        command += ["--nproc", str(nproc)]
    command += ["--"] + list(wrap) + [PYTHON, os.path.join(JOBS, job)]
    full_env = dict(os.environ, OMP_NUM_THREADS="1", **(env or {}))
    done = subprocess.run(command, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=timeout, universal_newlines=True)
    return done.returncode, done.stdout, done.stderr


def compare(out):
    done = subprocess.run([DSDIAG, "compare", out, "--format", "json"], stdout=subprocess.PIPE,
                          universal_newlines=True, timeout=60)
    return json.loads(done.stdout)["findings"]


def serious(findings, timing=False):
    """kind/severity of every warning and error (timing findings aside unless asked: two ranks
    on two shared cores are never quite even)."""
    kinds = set()
    for f in findings:
        if f["severity"] == "info":
            continue
        if not timing and f["kind"] in ("straggler", "loader-starvation"):
            continue
        kinds.add("%s/%s" % (f["kind"], f["severity"]))
    return kinds


def find(findings, kind, severity="error"):
    for f in findings:
        if f["kind"] == kind and f["severity"] == severity:
            return f
    return None


# torch 2.x with Gloo, with or without dsdiag: a rank can abort at interpreter shutdown,
# after its last line, when a Gloo worker thread still alive then drops the last work of a
# backward (its at::ThreadLocalState holds a Python object: the GIL it needs is gone, the
# thread is ended mid-C++) — pytorch#190489. Seen in about 1 of 15 runs of the --probes off
# jobs here; freeing the DDP model first does not cure it (the group outlives it).
TORCH_EXIT_RACE = "terminate called without an active exception"


def ran_to_its_end(status, err):
    """The job exited 0, or its only failure was torch's exit race (SIGABRT, 134, with that
    message): what a baseline run (--probes off) is for, comparing results, still holds."""
    return status == 0 or (status == 134 and TORCH_EXIT_RACE in err)


def finished_every_rank(status, out, err, ranks, final="final loss"):
    """The job exited 0, or torch's exit race struck after every one of `ranks` printed its
    `final` line: a job under dsdiag whose training is done. FSDP's jobs on Gloo meet the
    race far more often than DDP's (2 in 20 runs of fsdp2_job.py with --probes off here, 3 in
    20 with --probes light: the last reduce-scatter's work holds a Python object), so their
    tests cannot demand exit 0; a dsdiag-made abort before the end still fails."""
    finals = sum(1 for line in out.splitlines() if line.startswith(final))
    return finals == ranks and ran_to_its_end(status, err)


# A topic with tests that assert on time is run by ctest twice (tests/python/CMakeLists.txt,
# dsdiag_split_topics): DSDIAG_TIMED=only runs its @timed tests alone, so that two ranks'
# timing is theirs; DSDIAG_TIMED=skip runs the others beside one more test. Unset: all.
TIMED = os.environ.get("DSDIAG_TIMED", "all")


def timed(test):
    """Marks a test that asserts on time (a straggler, a starved loader, an end within a
    bound): where its topic is split, it runs in the part run alone."""
    test.dsdiag_timed = True
    return test


class JobTestCase(unittest.TestCase):
    """A test with its own temporary directory: self.path(name) is a run directory in it.
    Honours DSDIAG_TIMED: a @timed test runs in the timed part of its topic, the others in
    the rest."""

    def assertRanToItsEnd(self, status, err):
        """For a run without dsdiag's probes (the baseline): exit 0, or torch's exit race."""
        self.assertTrue(ran_to_its_end(status, err), "exit %d: %s" % (status, err))

    def assertFinishedEveryRank(self, status, out, err, ranks):
        """Exit 0, or torch's exit race once every rank printed its final line."""
        self.assertTrue(finished_every_rank(status, out, err, ranks),
                        "exit %d: %s\n%s" % (status, out, err))

    def setUp(self):
        is_timed = getattr(getattr(self, self._testMethodName), "dsdiag_timed", False)
        if TIMED == "only" and not is_timed:
            self.skipTest("asserts nothing on time: run in this topic's untimed part")
        if TIMED == "skip" and is_timed:
            self.skipTest("asserts on time: run alone, in this topic's timed part")
        self.dir = tempfile.mkdtemp(prefix="dsdiag-py-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.dir, name)
