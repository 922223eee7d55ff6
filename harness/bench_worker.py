"""One arm of an interleaved ``harness bench compare`` session: times one commit's asv benchmarks in this process.

The parent (:mod:`harness.bench_session`) starts it as ``python -I bench_worker.py TREE BENCHMARK_DIR
[instructions|-] [MODULE,...]`` (the modules: only those, once the first round has found the kernels) with the
commit's source tree (``git archive``'s copy) as ``TREE``. ``-I`` keeps the script's own folder and
``PYTHONPATH`` off ``sys.path``; ``TREE`` goes first on it before anything is imported, so the commit's
``harness``, ``implementations``, ... are imported, not the editable install of the checkout that runs the
session (whose finder sits after the path in ``sys.meta_path``). After importing the suite the worker lists
every module it imported from a top-level name that the tree has, with its file; one from elsewhere is an error
(:func:`foreign_modules`). This module imports nothing of harness itself: it is copied out and run as a script.

Protocol: JSON lines. Requests come on stdin, replies go to the original stdout (duplicated before the
benchmarks run); what the benchmarks print goes to stderr. First reply: the suite (``hello``); then one reply per
request: ``prepare`` (setup and a warm-up call of one combination: ``{"number": calls per sample}``),
``sample`` (``{"sample": [cpu_s, wall_s, instructions or None]}`` per call), ``finish`` (teardown); any of them
may answer ``{"skipped": why}`` (setup raised ``NotImplementedError``) or ``{"failed": why}``. The parent asks
the arms for their samples in turn, so that a sample of each commit is taken within milliseconds of the others.

Timing follows asv's conventions: a benchmark class's ``params`` / ``param_names``, ``setup`` /
``teardown`` (a ``NotImplementedError`` in ``setup`` skips the combination), ``setup_cache``, ``number``,
``timeout`` and ``timer``. Every sample reads both this process's CPU time and wall time; which of the two a
verdict rests on is the benchmark's own clock (``timer``: :func:`clock_of`), CPU time when it declares none —
a benchmark whose work runs in other processes declares a wall clock (``timer = time.perf_counter``).
"""
from __future__ import annotations

import ctypes
import importlib
import itertools
import json
import math
import os
import sys
import time
import traceback

KINDS = ("time_",)  # what an interleaved session times; peakmem_* and track_* are left to `harness bench run`
MIN_SAMPLE_S = 0.01  # by default a sample repeats the call (asv's "number") until it takes at least this long


# --- discovery -------------------------------------------------------------------------------------------------

def _params(owner) -> tuple[list[list], list[str]]:
    params = getattr(owner, "params", [])
    if params and not all(isinstance(p, (list, tuple)) for p in params):
        params = [params]  # asv: a flat list is the one parameter's values
    names = list(getattr(owner, "param_names", None) or [f"param{i + 1}" for i in range(len(params))])
    return [list(p) for p in params], names


def clock_of(timer) -> str:
    """``cpu`` or ``wall``: which of the two clocks a benchmark's ``timer`` reads (probed: the two clocks'
    readings are far apart, process CPU time counting from this process's start)."""
    if timer is None:
        return "cpu"
    timer = getattr(timer, "__func__", timer)
    if timer is time.process_time:
        return "cpu"
    reading = float(timer())
    return "cpu" if abs(reading - time.process_time()) < abs(reading - time.perf_counter()) else "wall"


def discover(tree: str, benchmark_dir: str, only: set[str] | None = None) -> dict[str, dict]:
    """``{name: {"owner": class or module, "method": callable name, "params", "param_names", "version",
    "clock", "timeout", "number"}}`` for every ``time_*`` benchmark of the suite, named as asv names them
    (``module.Class.time_x``, the module's path relative to the benchmark folder); ``only``: just these modules."""
    root = os.path.join(tree, benchmark_dir)
    package = os.path.basename(os.path.normpath(benchmark_dir))
    sys.path.insert(1, os.path.dirname(os.path.abspath(root)))
    found: dict[str, dict] = {}
    importlib.import_module(package)
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")))
        for file in sorted(files):
            if not file.endswith(".py") or file.startswith("_"):
                continue
            relative = os.path.relpath(os.path.join(folder, file[:-3]), root).replace(os.sep, ".")
            if only is not None and relative not in only:
                continue
            module = importlib.import_module(f"{package}.{relative}")
            for name, obj in sorted(vars(module).items()):
                if getattr(obj, "__module__", None) != module.__name__:
                    continue
                if isinstance(obj, type):
                    for attr in sorted(dir(obj)):
                        if attr.startswith(KINDS) and callable(getattr(obj, attr)):
                            found[f"{relative}.{name}.{attr}"] = _describe(obj, attr, getattr(obj, attr), relative)
                elif callable(obj) and name.startswith(KINDS):
                    found[f"{relative}.{name}"] = _describe(module, name, obj, relative)
    return found


def _describe(owner, attr: str, function, module: str) -> dict:
    source = function if not isinstance(owner, type) else owner
    params, names = _params(source)
    return {"owner": owner, "method": attr, "module": module, "params": params, "param_names": names,
            "version": str(getattr(function, "version", getattr(owner, "version", None))),
            "clock": clock_of(getattr(source, "timer", None)), "timeout": float(getattr(source, "timeout", 60.0)),
            "number": int(getattr(source, "number", 0) or 0)}


def combos(entry: dict) -> list[tuple]:
    return list(itertools.product(*entry["params"])) if entry["params"] else [()]


def foreign_modules(tree: str) -> list[str]:
    """Imported modules whose top-level name the tree has (a package folder or a module file) but whose file lies
    outside the tree: code of another checkout timed in this one's name."""
    tree = os.path.realpath(tree)
    local = {n[:-3] if n.endswith(".py") else n for n in os.listdir(tree)
             if n.endswith(".py") or os.path.isfile(os.path.join(tree, n, "__init__.py"))}
    wrong = []
    for name, module in sorted(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if name.split(".")[0] in local and path and not os.path.realpath(path).startswith(tree + os.sep):
            wrong.append(f"{name} from {path}")
    return wrong


# --- instruction counts (Linux perf_event_open, user space only) -------------------------------------------------

class _PerfAttr(ctypes.Structure):
    _fields_ = [("type", ctypes.c_uint32), ("size", ctypes.c_uint32), ("config", ctypes.c_uint64),
                ("sample_period", ctypes.c_uint64), ("sample_type", ctypes.c_uint64),
                ("read_format", ctypes.c_uint64), ("flags", ctypes.c_uint64), ("wakeup_events", ctypes.c_uint32),
                ("bp_type", ctypes.c_uint32), ("config1", ctypes.c_uint64), ("config2", ctypes.c_uint64)]


PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS = 0, 1
PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK = 1, 1
_EXCLUDE_KERNEL_HV = (1 << 5) | (1 << 6)  # flags: exclude_kernel, exclude_hv (what an unprivileged user may count)
_SYSCALL_PERF_EVENT_OPEN = {"x86_64": 298, "aarch64": 241}


class Counter:
    """A count of this process's user-space events from the kernel's ``perf_event_open`` (what ``perf stat -e
    instructions:u`` reads): :meth:`read` gives the running total. ``Counter.open()`` is None with the reason in
    ``Counter.why_not`` where the kernel, the machine (a VM without a PMU) or ``perf_event_paranoid`` refuses."""

    why_not = ""

    def __init__(self, fd: int):
        self.fd = fd

    @classmethod
    def open(cls, event_type: int = PERF_TYPE_HARDWARE, config: int = PERF_COUNT_HW_INSTRUCTIONS) -> Counter | None:
        number = _SYSCALL_PERF_EVENT_OPEN.get(os.uname().machine)
        if sys.platform != "linux" or number is None:
            cls.why_not = f"perf_event_open is Linux x86_64/aarch64 only, not {sys.platform} {os.uname().machine}"
            return None
        libc = ctypes.CDLL(None, use_errno=True)
        attr = _PerfAttr(type=event_type, size=ctypes.sizeof(_PerfAttr), config=config, flags=_EXCLUDE_KERNEL_HV)
        fd = libc.syscall(number, ctypes.byref(attr), 0, -1, -1, 0)
        if fd < 0:
            err = ctypes.get_errno()
            cls.why_not = f"perf_event_open refused the instruction counter: {os.strerror(err)}" + (
                " (no hardware counter here: a VM without a PMU?)" if err in (2, 19, 95) else "")
            return None
        return cls(fd)

    def read(self) -> int:
        return int.from_bytes(os.read(self.fd, 8), sys.byteorder)


# --- measuring ---------------------------------------------------------------------------------------------------

class Arm:
    def __init__(self, tree: str, benchmark_dir: str, count_instructions: bool, only: set[str] | None = None):
        self.tree, self.benchmark_dir = tree, benchmark_dir
        self.suite = discover(tree, benchmark_dir, only)
        self.caches: dict[int, object] = {}
        self.current: tuple | None = None  # the prepared combination: (function, args, teardown, number)
        self.counter = Counter.open() if count_instructions else None

    def hello(self) -> dict:
        names = {}
        for name, entry in self.suite.items():
            names[name] = {k: entry[k] for k in ("module", "params", "param_names", "version", "clock", "timeout")}
            names[name]["params"] = [[repr(v) for v in values] for values in entry["params"]]
        return {"hello": names, "foreign": foreign_modules(self.tree), "python": sys.executable,
                "instructions": None if self.counter else (Counter.why_not or "not asked for")}

    def _cache(self, entry: dict):
        owner = entry["owner"]
        setup_cache = getattr(owner, "setup_cache", None) if isinstance(owner, type) else None
        if setup_cache is None:
            return ()
        if id(owner) not in self.caches:
            self.caches[id(owner)] = setup_cache(owner())
        return (self.caches[id(owner)],)

    def prepare(self, name: str, index: int, number: int, min_sample_s: float = MIN_SAMPLE_S) -> dict:
        """``setup`` for one combination, a warm-up call, and the number of calls per sample (``number`` when
        given, else the benchmark's own, else enough for :data:`MIN_SAMPLE_S` of CPU time)."""
        self.finish()
        entry = self.suite[name]
        params = combos(entry)[index]
        owner = entry["owner"]
        target = owner() if isinstance(owner, type) else owner
        args = (*self._cache(entry), *params)
        setup, teardown = getattr(target, "setup", None), getattr(target, "teardown", None)
        try:
            if setup is not None:
                setup(*args)
        except NotImplementedError as exc:
            return {"skipped": f"setup raised NotImplementedError {exc}".strip()}
        function = getattr(target, entry["method"])
        self.current = (function, args, teardown, 0)
        start = time.process_time()
        function(*args)
        if number <= 0:
            number = entry["number"] or max(1, math.ceil(min_sample_s / max(time.process_time() - start, 1e-7)))
        self.current = (function, args, teardown, number)
        return {"number": number}

    def sample(self) -> dict:
        """One sample of the prepared combination: CPU time, wall time and instructions per call."""
        function, args, _, number = self.current
        count = self.counter.read() if self.counter else None
        cpu, wall = time.process_time(), time.perf_counter()
        for _ in range(number):
            function(*args)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        count = (self.counter.read() - count) / number if self.counter else None
        return {"sample": [cpu / number, wall / number, count]}

    def finish(self) -> dict:
        current, self.current = self.current, None
        if current is not None and current[2] is not None:
            current[2](*current[1])
        return {}


def main(argv: list[str]) -> int:
    tree, benchmark_dir = os.path.realpath(argv[1]), argv[2]
    count_instructions = len(argv) > 3 and argv[3] == "instructions"
    only = set(argv[4].split(",")) if len(argv) > 4 else None  # the modules of the kernels timed, after round 1
    reply = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # the benchmarks' prints go to stderr, never into the replies
    sys.path.insert(0, tree)
    try:
        arm = Arm(tree, benchmark_dir, count_instructions, only)
    except BaseException:  # noqa: BLE001 - any error importing the suite is the answer
        reply.write(json.dumps({"error": traceback.format_exc(limit=-3)}) + "\n")
        return 1
    reply.write(json.dumps(arm.hello()) + "\n")
    for line in sys.stdin:
        request = json.loads(line)
        try:
            if request["do"] == "prepare":
                answer = arm.prepare(request["name"], request["index"], request["number"],
                                     request.get("min_sample_s", MIN_SAMPLE_S))
            else:
                answer = arm.sample() if request["do"] == "sample" else arm.finish()
        except Exception:  # noqa: BLE001 - a failing benchmark is a result, not the end of the arm
            answer = {"failed": traceback.format_exc(limit=-2).strip().splitlines()[-1]}
            arm.current = None
        reply.write(json.dumps(answer) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
