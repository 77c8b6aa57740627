"""The data-loader folklore ("2 workers beat 4", pin_memory, persistent_workers) measured on the
job's own dataset, as `dsdiag loader-sweep` measures the reference trainer's:

    python3 -m dsdiag.torch.loader_sweep --dataset train.py:make_dataset \\
        --workers 0,2,4 --batch-size 32 --pin-memory no,yes --out runs/r1

or from a script: `dsdiag.torch.loader_sweep.sweep(dataset, workers=(0, 2, 4), out="runs/r1")`.

Every combination of the lists is one point: a torch DataLoader over the dataset, iterated
`repeats` times (each a fresh iterator, as each epoch is; persistent workers survive between
them), timing `batches` batches after `warmup` ones. A point records the median, min and max
throughput over the repeats, the time from the first iterator to its first batch, and the
peak resident memory of the process and its loader workers (sampled every 10 ms). The result
goes through the one writer of loader-sweep.json (dsdiag._core), with the same
recommendation as the CLI's: the fastest median, or the cheapest setting within 5% of it
(fewer workers, then a smaller batch, then fewer switches on); `dsdiag report RUN_DIR` draws
it.
"""

import argparse
import importlib
import importlib.util
import itertools
import os
import statistics
import sys
import threading
import time
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

Setting = Tuple[int, int, bool, bool]  # workers, batch size, pin_memory, persistent_workers
Point = Dict[str, Any]  # one measured setting, as loader-sweep.json has it

_DEFAULTS: Dict[str, Any] = {"workers": (0, 2, 4), "batch_sizes": (32,), "pin_memory": (False,),
             "persistent_workers": (False,), "batches": 50, "warmup": 2, "repeats": 3}


def sweep(dataset: Any, workers: Sequence[int] = _DEFAULTS["workers"],
          batch_sizes: Sequence[int] = _DEFAULTS["batch_sizes"],
          pin_memory: Sequence[bool] = _DEFAULTS["pin_memory"],
          persistent_workers: Sequence[bool] = _DEFAULTS["persistent_workers"],
          batches: int = _DEFAULTS["batches"], warmup: int = _DEFAULTS["warmup"],
          repeats: int = _DEFAULTS["repeats"], out: Optional[str] = None,
          collate_fn: Optional[Callable[[List[Any]], Any]] = None, shuffle: bool = True,
          progress: Optional[Callable[[str], None]] = None) -> Tuple[List[Point], str]:
    """Measures every combination; writes loader-sweep.json when `out` (a run directory or a
    file path) is given. Returns (points, table): the points as written, the table a person
    reads (with the recommendation)."""
    from dsdiag import _core

    points = []
    for setting in settings(workers, batch_sizes, pin_memory, persistent_workers):
        if progress:
            progress(describe(setting))
        points.append(measure(dataset, setting, batches, warmup, repeats, collate_fn, shuffle))
    if out is not None:
        table = _core.write_loader_sweep(output_path(out), points)
    else:
        table = _core.loader_sweep_table(points)
    return points, table


def settings(workers: Iterable[int], batch_sizes: Iterable[int], pin_memory: Iterable[bool],
             persistent_workers: Iterable[bool]) -> List[Setting]:
    """The combinations to measure, in order; persistent_workers only where there are
    workers (a DataLoader refuses it without), so duplicates at 0 workers are dropped."""
    seen: set = set()
    out: List[Setting] = []
    for w, b, pin, persist in itertools.product(workers, batch_sizes, pin_memory,
                                                persistent_workers):
        setting = (int(w), int(b), bool(pin), bool(persist) and int(w) > 0)
        if setting not in seen:
            seen.add(setting)
            out.append(setting)
    return out


def describe(setting: Setting) -> str:
    w, b, pin, persist = setting
    return "%d workers, batch %d%s%s" % (w, b, ", pin_memory" if pin else "",
                                        ", persistent_workers" if persist else "")


def measure(dataset: Any, setting: Setting, batches: int, warmup: int, repeats: int,
            collate_fn: Optional[Callable[[List[Any]], Any]], shuffle: bool) -> Point:
    import torch.utils.data as data

    w, b, pin, persist = setting
    kwargs: Dict[str, Any] = {"batch_size": b, "num_workers": w, "pin_memory": pin,
                              "shuffle": shuffle}
    if persist:
        kwargs["persistent_workers"] = True
    if collate_fn is not None:
        kwargs["collate_fn"] = collate_fn
    memory = PeakMemory()
    memory.start()
    try:
        loader = data.DataLoader(dataset, **kwargs)
        rates, first_batch_ms = [], None
        for _ in range(repeats):
            rate, first = time_one_pass(loader, batches, warmup)
            rates.append(rate)
            if first_batch_ms is None:
                first_batch_ms = first
        del loader  # persistent workers end here, inside the memory window
    finally:
        peak = memory.stop()
    return {"workers": w, "batch_size": b, "samples_per_s_median": statistics.median(rates),
            "samples_per_s_min": min(rates), "samples_per_s_max": max(rates),
            "first_batch_ms": first_batch_ms, "peak_rss_mb": peak, "pin_memory": pin,
            "persistent_workers": persist}


def time_one_pass(loader: Any, batches: int, warmup: int) -> Tuple[float, float]:
    """Samples per second over `batches` batches after `warmup` (the first included), and
    the milliseconds to the first batch. A dataset shorter than that is gone through again
    with a new iterator (an epoch), as training would."""
    start = time.perf_counter()
    batch_iter = iter(loader)
    first = next_batch(loader, [batch_iter])
    first_ms = (time.perf_counter() - start) * 1e3
    holder = [batch_iter]
    for _ in range(warmup - 1):
        next_batch(loader, holder)
    samples = 0
    t0 = time.perf_counter()
    for _ in range(batches):
        samples += batch_samples(next_batch(loader, holder))
    elapsed = time.perf_counter() - t0
    del first
    return (samples / elapsed if elapsed > 0 else 0.0), first_ms


def next_batch(loader: Any, holder: List[Iterator[Any]]) -> Any:
    try:
        return next(holder[0])
    except StopIteration:
        holder[0] = iter(loader)
        return next(holder[0])


def batch_samples(batch: Any) -> int:
    """The number of samples in a collated batch: the first dimension of its first tensor."""
    import torch

    while isinstance(batch, (list, tuple)) and batch:
        batch = batch[0]
    if isinstance(batch, dict) and batch:
        return batch_samples(next(iter(batch.values())))
    if isinstance(batch, torch.Tensor) and batch.dim() > 0:
        return int(batch.shape[0])
    return 1


class PeakMemory(object):
    """The peak of (this process's + its children's) resident memory, in MB, sampled on a
    thread every 10 ms: DataLoader workers are processes, so VmHWM of one process does not
    cover them. None where /proc is not readable."""

    def __init__(self, every_s: float = 0.01) -> None:
        self.every_s = every_s
        self.peak_kb: Optional[int] = None
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="dsdiag-loader-sweep-rss",
                                       daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> Optional[float]:
        self.done.set()
        self.thread.join()
        return round(self.peak_kb / 1024.0, 1) if self.peak_kb else None

    def _loop(self) -> None:
        while True:
            kb = rss_kb_with_children(os.getpid())
            if kb is not None:
                self.peak_kb = max(self.peak_kb or 0, kb)
            if self.done.wait(self.every_s):
                return


def rss_kb_with_children(pid: int) -> Optional[int]:
    total = rss_kb(pid)
    if total is None:
        return None
    for child in children(pid):
        total += rss_kb(child) or 0
    return total


def rss_kb(pid: int) -> Optional[int]:
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def children(pid: int) -> List[int]:
    found: List[int] = []
    try:
        for task in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/children" % (pid, task)) as f:
                found.extend(int(c) for c in f.read().split())
    except (OSError, ValueError):
        pass
    return found


def output_path(out: str) -> str:
    """A run directory (existing, or a path without .json) gets loader-sweep.json in it."""
    from dsdiag import _core

    if os.path.isdir(out) or not out.endswith(".json"):
        os.makedirs(out, exist_ok=True)
        return os.path.join(out, _core.loader_sweep_file_name)
    parent = os.path.dirname(out)
    if parent:
        os.makedirs(parent, exist_ok=True)
    return out


# --- the command ------------------------------------------------------------------------


class UsageError(Exception):
    pass


def load_dataset(spec: str) -> Any:
    """MODULE:NAME or FILE.py:NAME; NAME is a Dataset or a callable returning one."""
    if ":" not in spec:
        raise UsageError("--dataset expects MODULE:NAME or FILE.py:NAME, got %r" % spec)
    where, name = spec.rsplit(":", 1)
    if where.endswith(".py"):
        if not os.path.isfile(where):
            raise UsageError("--dataset: no file %s" % where)
        module_spec = importlib.util.spec_from_file_location("_dsdiag_sweep_dataset", where)
        if module_spec is None or module_spec.loader is None:
            raise UsageError("--dataset: %s is not a Python file" % where)
        module = importlib.util.module_from_spec(module_spec)
        sys.path.insert(0, os.path.dirname(os.path.abspath(where)))
        module_spec.loader.exec_module(module)
    else:
        sys.path.insert(0, os.getcwd())
        try:
            module = importlib.import_module(where)
        except ImportError as e:
            raise UsageError("--dataset: cannot import %s: %s" % (where, e)) from e
    if not hasattr(module, name):
        raise UsageError("--dataset: %s has no %s" % (where, name))
    found = getattr(module, name)
    is_dataset = hasattr(found, "__getitem__") and not isinstance(found, type)
    return found if is_dataset else found()


def int_list(text: str, minimum: int, flag: str) -> List[int]:
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        values = []
    if not values or any(v < minimum for v in values):
        raise UsageError("--%s expects a comma-separated list of integers >= %d, got %r"
                         % (flag, minimum, text))
    return values


def switch_list(text: str, flag: str) -> List[bool]:
    words = {"no": False, "yes": True, "false": False, "true": True, "0": False, "1": True}
    values = [words.get(v.strip().lower()) for v in text.split(",")]
    if not values or None in values:
        raise UsageError("--%s expects a comma-separated list of no/yes, got %r" % (flag, text))
    return [bool(v) for v in values]


def parse_args(argv: List[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python3 -m dsdiag.torch.loader_sweep",
        description="Measure DataLoader throughput on your own dataset over worker counts, "
                    "batch sizes, pin_memory and persistent_workers, and recommend a setting.")
    p.add_argument("--dataset", required=True,
                   help="MODULE:NAME or FILE.py:NAME: a Dataset or a function returning one")
    p.add_argument("--workers", default="0,2,4", help="worker counts (default 0,2,4)")
    p.add_argument("--batch-size", default="32", help="batch sizes (default 32)")
    p.add_argument("--pin-memory", default="no", help="no, yes or no,yes (default no)")
    p.add_argument("--persistent-workers", default="no", help="no, yes or no,yes (default no)")
    p.add_argument("--batches", type=int, default=50, help="timed batches per repeat")
    p.add_argument("--warmup", type=int, default=2, help="batches before timing (>= 1)")
    p.add_argument("--repeats", type=int, default=3, help="passes per point (>= 1)")
    p.add_argument("--format", default="text", choices=("text", "json"))
    p.add_argument("--out", help="RUN_DIR (writes RUN_DIR/loader-sweep.json) or FILE.json")
    a = p.parse_args(argv)
    if a.batches < 1 or a.warmup < 1 or a.repeats < 1:
        raise UsageError("--batches, --warmup and --repeats must be at least 1")
    return a


def main(argv: Optional[List[str]] = None) -> int:
    from dsdiag import _core

    try:
        a = parse_args(sys.argv[1:] if argv is None else argv)
        dataset = load_dataset(a.dataset)
        lists: Dict[str, Any] = dict(workers=int_list(a.workers, 0, "workers"),
                     batch_sizes=int_list(a.batch_size, 1, "batch-size"),
                     pin_memory=switch_list(a.pin_memory, "pin-memory"),
                     persistent_workers=switch_list(a.persistent_workers, "persistent-workers"))
    except UsageError as e:
        sys.stderr.write("loader_sweep: %s\n" % e)
        return 2
    live = sys.stderr.isatty()

    def progress(what: str) -> None:
        sys.stderr.write("\r\033[Kloader-sweep: %s" % what)
        sys.stderr.flush()

    try:
        points, table = sweep(dataset, batches=a.batches, warmup=a.warmup, repeats=a.repeats,
                              out=a.out, progress=progress if live else None, **lists)
    except (OSError, RuntimeError) as e:  # an unwritable --out (the core's writer says which)
        sys.stderr.write("loader_sweep: %s\n" % e)
        return 2
    if live:
        sys.stderr.write("\r\033[K")
    sys.stdout.write(_core.loader_sweep_json(points) if a.format == "json" else table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
