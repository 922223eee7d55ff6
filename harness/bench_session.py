"""``harness bench compare BASE HEAD``: both commits timed in one interleaved session, judged by paired rounds.

Each commit's files come out of git (``git archive``) into a scratch folder, and a worker process per commit
(:mod:`harness.bench_worker`) imports that tree's benchmark suite and code, never the editable install of the
checkout that runs the session (the worker refuses modules from elsewhere; the record names the tree timed).
A **third** worker runs the base commit again: the A/A arm. A session is ``rounds`` rounds; each round starts
fresh workers and goes through the kernels one by one: each arm sets the kernel up, then the arms take their samples in
turn (base, head, base again, the order rotated from sample to sample), so that whatever the machine does
meanwhile hits all three alike. For every kernel and round the least of a few samples per arm (:data:`STATISTICS`; the median on
request) gives two paired log-ratios:
``head / base`` (the change) and ``base again / base`` (noise: the same code in another process at the same
moment). The change's estimate is the geometric mean of its per-round ratios with a t interval
(:data:`LEVEL`); the **noise band** is the A/A ratios' interval, widened to include 1: the ratios that code
compared with itself gives at this moment. A kernel is **slower** when its ratio exceeds both ``factor`` and the
band, and its interval lies above 1 (the change is not noise of its own rounds); **faster** symmetrically.
(Demanding the whole interval above the band, tried first, missed a 1.3× slowdown whenever the load was high:
two intervals of 6 noisy rounds each rarely separate.)

The clock is the benchmark's own (:func:`harness.bench_worker.clock_of`): CPU time for the suite's CPU kernels,
wall time for those that wait on other processes or a GPU. Where the kernel gives a hardware instruction counter
(``perf_event_open``, as ``perf stat -e instructions:u``), each kernel's instructions per call are a second,
near-deterministic signal: a verdict that the counts confirm says ``cpu+instructions``.
"""
from __future__ import annotations

import json
import math
import os
import re
import select
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from harness.bench import CONFIG_FILE, BenchUsage, fmt_value

DEFAULT_ROUNDS = 6
SAMPLES_PER_ROUND = 5
SAMPLE_S = float(os.environ.get("HARNESS_BENCH_SAMPLE_S", "0.03"))  # the least CPU time of one sample
LEVEL = 0.95  # of the t intervals, for the change and for the A/A band
# What a round keeps of an arm's samples. The least: load only ever adds CPU time to a sample (other processes
# evict its caches, the hypervisor steals its CPU), so the least-disturbed sample varies least. Measured on the
# 2-core machine at load 5: a planted 1.25x kernel gave 1.22 (0.92-1.63) by per-round medians, 1.25 (1.18-1.31)
# by per-round minima; an untouched one 0.88 (0.72-1.08) and 0.97 (0.87-1.08).
STATISTICS = {"min": min, "median": statistics.median}
DEFAULT_STATISTIC = "min"
ARMS = ("base", "head", "again")  # again: the base commit in a third process, the A/A calibration
ORDERS = (("base", "head", "again"), ("head", "again", "base"), ("again", "base", "head"))
WORKER = Path(__file__).with_name("bench_worker.py")


# --- the repository --------------------------------------------------------------------------------------------

def _git(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)


def repository(start: Path | None = None) -> Path:
    here = Path(start or Path.cwd()).resolve()
    done = _git(here, "rev-parse", "--show-toplevel")
    if done.returncode != 0:
        raise BenchUsage(f"{here} is not inside a git repository: bench compare times two commits of one")
    return Path(done.stdout.strip())


def resolve(root: Path, label: str, name: str) -> str:
    done = _git(root, "rev-parse", "--verify", "--quiet", f"{name}^{{commit}}")
    if done.returncode != 0 or not done.stdout.strip():
        raise BenchUsage(f"{label} {name!r} is not a commit of {root} (a hash, branch, tag or HEAD~N)")
    return done.stdout.strip()


def refuse_dirty(root: Path, commits: dict[str, str]) -> None:
    """Uncommitted changes to tracked files, when BASE or HEAD names the checked-out commit: the session times
    commits, so those changes would silently not be timed."""
    checked_out = _git(root, "rev-parse", "HEAD").stdout.strip()
    named = [label.upper() for label, commit in commits.items() if commit == checked_out]
    changed = _git(root, "status", "--porcelain", "--untracked-files=no").stdout.splitlines()
    if named and changed:
        raise BenchUsage(f"the working tree has uncommitted changes ({len(changed)} file(s), e.g. "
                         f"{changed[0][3:]}) and {' and '.join(named)} {'are' if len(named) > 1 else 'is'} the checked-out "
                         f"commit {checked_out[:8]}: "
                         f"bench compare times committed code only; commit or stash them first")


def export_tree(root: Path, commit: str, into: Path) -> Path:
    """The commit's files (``git archive``) under ``into``: a tree that no install points at."""
    into.mkdir(parents=True)
    archive = subprocess.Popen(["git", "archive", "--format=tar", commit], cwd=root, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    with tarfile.open(fileobj=archive.stdout, mode="r|") as tar:
        tar.extractall(into, filter="data")
    if archive.wait() != 0:
        raise BenchUsage(f"git archive {commit[:8]} failed: {archive.stderr.read().decode().strip()}")
    return into


def suite_settings(tree: Path, label: str, commit: str) -> tuple[str, float]:
    """(benchmark folder, default timeout) from the commit's own asv configuration."""
    from harness.bench import read_config

    path = tree / CONFIG_FILE
    if not path.is_file():
        raise BenchUsage(f"{label} {commit[:8]} has no {CONFIG_FILE}: it has no asv suite to time")
    config = read_config(path)
    return config.get("benchmark_dir", "benchmarks"), float(config.get("default_benchmark_timeout", 60))


# --- the arms --------------------------------------------------------------------------------------------------

class ArmDied(RuntimeError):
    pass


class Arm:
    """One worker process: a commit's tree, its suite imported, answering ``measure`` requests."""

    def __init__(self, label: str, commit: str, tree: Path, benchmark_dir: str, scratch: Path, instructions: bool,
                 modules: list[str] | None = None):
        self.label, self.commit, self.tree = label, commit, tree
        cwd = scratch / f"cwd-{label}"
        cwd.mkdir(exist_ok=True)
        self.log = (scratch / f"{label}.log").open("ab")
        env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONHASHSEED": "0"}  # the tree for the suite's children too
        command = [sys.executable, "-I", str(scratch / WORKER.name), str(tree), benchmark_dir]
        command += ["instructions" if instructions else "-"] + ([",".join(modules)] if modules else [])
        self.process = subprocess.Popen(command, cwd=cwd, env=env,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log)
        self.hello: dict = {}

    def ready(self) -> Arm:
        """Wait for the worker's list of the suite (the workers of a round import in parallel)."""
        label, commit, tree = self.label, self.commit, self.tree
        try:
            self.hello = self._reply(300.0)
        except ArmDied as exc:
            raise BenchUsage(f"{label} {commit[:8]}: the worker importing its suite {exc}; see its stderr in "
                             f"{self.log.name}") from None
        if "error" in self.hello:
            self.close()
            raise BenchUsage(f"{label} {commit[:8]}: its benchmark suite does not import: "
                             f"{self.hello['error'].strip().splitlines()[-1]}")
        if self.hello["foreign"]:
            self.close()
            raise BenchUsage(f"{label} {commit[:8]}: the worker imported code from outside the commit's tree "
                             f"{tree}: {'; '.join(self.hello['foreign'][:3])}")
        return self

    def _reply(self, timeout: float) -> dict:
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        line = self.process.stdout.readline() if ready else b""
        if not line:
            self.close()
            raise ArmDied("timed out" if not ready else f"its process ended (exit {self.process.returncode})")
        return json.loads(line)

    def ask(self, request: dict, timeout: float) -> dict:
        try:
            self.process.stdin.write((json.dumps(request) + "\n").encode())
            self.process.stdin.flush()
        except BrokenPipeError:
            self.close()
            raise ArmDied(f"its process ended (exit {self.process.poll()})") from None
        return self._reply(timeout)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        self.log.close()


# --- statistics ------------------------------------------------------------------------------------------------

def t_interval(logs: list[float], level: float = LEVEL) -> tuple[float, float, float]:
    """(mean, low, high) of log-ratios: the mean ± Student's t quantile × standard error."""
    from scipy.stats import t

    mean = statistics.fmean(logs)
    if len(logs) < 2:
        return mean, -math.inf, math.inf
    half = float(t.ppf(0.5 + level / 2, len(logs) - 1)) * statistics.stdev(logs) / math.sqrt(len(logs))
    return mean, mean - half, mean + half


@dataclass
class PairedComparison:
    """One kernel's verdict: medians over rounds, the paired ratio head / base with its interval, the A/A band."""

    name: str
    clock: str  # cpu or wall: the signal the verdict rests on (+instructions when the counts agree)
    status: str  # slower, faster, same, failed, skipped, new, gone, incomparable
    base_s: float | None = None
    head_s: float | None = None
    ratio: float | None = None
    interval: tuple[float, float] | None = None
    band: tuple[float, float] | None = None
    rounds: int = 0
    instructions: float | None = None  # head / base instructions per call, where counted
    note: str = ""
    kind: str = "time"
    unit: str = "seconds"


def judge(name: str, clock: str, per_round: dict[str, list[float | None]], factor: float,
          counts: dict[str, float] | None = None) -> PairedComparison:
    """The verdict on one kernel from one figure per round and arm (None: that arm failed that round)."""
    full = [r for r in range(len(per_round["base"]))
            if all(per_round[arm][r] is not None and per_round[arm][r] > 0 for arm in ARMS)]
    row = PairedComparison(name, clock, "same", rounds=len(full))
    if len(full) < 2:
        row.status, row.note = "incomparable", f"{len(full)} complete round(s): an interval needs 2"
        return row
    base = [per_round["base"][r] for r in full]
    head = [per_round["head"][r] for r in full]
    again = [per_round["again"][r] for r in full]
    row.base_s, row.head_s = statistics.median(base), statistics.median(head)
    mean, low, high = t_interval([math.log(h / b) for h, b in zip(head, base)])
    _, noise_low, noise_high = t_interval([math.log(a / b) for a, b in zip(again, base)])
    row.ratio, row.interval = math.exp(mean), (math.exp(low), math.exp(high))
    row.band = (min(1.0, math.exp(noise_low)), max(1.0, math.exp(noise_high)))
    if row.ratio > max(factor, row.band[1]) and row.interval[0] > 1:
        row.status = "slower"
    elif row.ratio < min(1 / factor, row.band[0]) and row.interval[1] < 1:
        row.status = "faster"
    elif row.ratio > factor or row.ratio < 1 / factor:
        inside = row.band[0] <= row.ratio <= row.band[1]
        row.note = "inside the A/A noise band" if inside else "its interval contains 1"
    if counts is not None:
        row.instructions = counts["head"] / counts["base"]
        noise = max(counts["again"] / counts["base"], counts["base"] / counts["again"], factor)
        said = "slower" if row.instructions > noise else "faster" if row.instructions < 1 / noise else "same"
        if said == row.status:
            row.clock += "+instructions"
        else:
            row.note = (row.note + "; " if row.note else "") + f"instructions say {said} ({row.instructions:.2f}×)"
    return row


# --- the session -----------------------------------------------------------------------------------------------

@dataclass
class Session:
    commits: dict[str, str]
    trees: dict[str, str]
    rounds: int
    factor: float
    rows: list[PairedComparison] = field(default_factory=list)
    instructions: str | None = None  # why there are no instruction counts; None when they were counted
    load: tuple[float, float] | None = None
    seconds: float = 0.0
    measured: dict = field(default_factory=dict)  # label -> arm -> per-round samples (cpu, wall, instructions)
    statistic: str = DEFAULT_STATISTIC  # of a round's samples: min or median

    def record(self) -> dict:
        return {"commits": self.commits, "source_trees": self.trees, "rounds": self.rounds,
                "samples_per_round": SAMPLES_PER_ROUND, "per_round": self.statistic, "factor": self.factor,
                "level": LEVEL,
                "instructions": self.instructions or "counted", "load_1min": self.load, "seconds": self.seconds,
                "python": sys.executable, "rows": [asdict(r) for r in self.rows], "samples": self.measured}


def _labels(hello: dict) -> dict[str, tuple[str, int, dict]]:
    """``{label: (benchmark, combination index, description)}`` for every combination of a suite."""
    import itertools

    out = {}
    for name, entry in hello.items():
        combos = list(itertools.product(*entry["params"])) if entry["params"] else [()]
        for index, combo in enumerate(combos):
            label = f"{name}({', '.join(f'{n}={v}' for n, v in zip(entry['param_names'], combo))})" if combo else name
            out[label] = (name, index, entry)
    return out


def run_session(base: str, head: str, factor: float = 1.2, rounds: int = DEFAULT_ROUNDS, bench: str | None = None,
                instructions: bool = True, start: Path | None = None, echo=print,
                per_round_statistic: str = DEFAULT_STATISTIC) -> Session:
    """Time BASE and HEAD (and BASE again) interleaved; raises :class:`BenchUsage` on bad input."""
    root = repository(start)
    commits = {"base": resolve(root, "BASE", base), "head": resolve(root, "HEAD", head)}
    refuse_dirty(root, commits)
    pattern = None
    if bench:
        try:
            pattern = re.compile(bench)
        except re.error as exc:
            raise BenchUsage(f"--bench {bench!r} is not a regular expression: {exc}") from None
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="harness-compare-") as folder:
        scratch = Path(folder)
        shutil.copy(WORKER, scratch / WORKER.name)
        trees = {"base": export_tree(root, commits["base"], scratch / f"tree-{commits['base'][:8]}")}
        trees["head"] = trees["base"] if commits["head"] == commits["base"] else \
            export_tree(root, commits["head"], scratch / f"tree-{commits['head'][:8]}")
        trees["again"] = trees["base"]
        settings = {label: suite_settings(trees[label], label.upper(), commits[label]) for label in ("base", "head")}
        settings["again"] = settings["base"]
        commit_of = {**commits, "again": commits["base"]}

        modules: list[str] | None = None  # after the first round, the workers import the timed kernels' only

        def new_arm(label: str) -> Arm:
            return Arm(label, commit_of[label], trees[label], settings[label][0], scratch, instructions, modules)

        def start_arms() -> dict[str, Arm]:
            arms: dict[str, Arm] = {}
            try:
                for label in ARMS:
                    arms[label] = new_arm(label)
                for arm in arms.values():
                    arm.ready()
            except BaseException:
                for arm in arms.values():
                    arm.close()
                raise
            return arms

        arms = start_arms()
        suites = {label: _labels(arm.hello["hello"]) for label, arm in arms.items()}
        session = Session(commits, {label: str(trees[label]) for label in ("base", "head")}, rounds, factor,
                          load=(os.getloadavg()[0], 0.0), statistic=per_round_statistic)
        counted = [arm.hello["instructions"] for arm in arms.values()]
        session.instructions = next((c for c in counted if c is not None), None)
        wanted = sorted(label for label in suites["base"].keys() | suites["head"].keys()
                        if pattern is None or pattern.search(label))
        if not wanted:
            for arm in arms.values():
                arm.close()
            raise BenchUsage(f"no benchmark matches --bench {bench!r}" if bench else "the suites have no time_* "
                             "benchmark at either commit")
        timed, settled = [], {}
        for label in wanted:
            b, h = suites["base"].get(label), suites["head"].get(label)
            clock = (h or b)[2]["clock"]
            if b is None or h is None:
                settled[label] = PairedComparison(label, clock, "new" if b is None else "gone")
            elif b[2]["version"] != h[2]["version"]:
                settled[label] = PairedComparison(label, clock, "incomparable",
                                                  note=f"benchmark version {b[2]['version']} → {h[2]['version']}")
            else:
                timed.append(label)
        modules = sorted({suites["base"][label][2]["module"] for label in timed}) or None
        samples = {label: {arm: [] for arm in ARMS} for label in timed}
        errors: dict[str, dict[str, str]] = {label: {} for label in timed}
        numbers: dict[str, int] = {}

        def ask(arm_label: str, request: dict, limit: float) -> dict:
            try:
                return arms[arm_label].ask(request, limit)
            except ArmDied as exc:  # a fresh worker for the kernels after this one
                arms[arm_label] = new_arm(arm_label).ready()
                return {"failed": f"the worker {exc} (limit {limit:g} s)"}

        for r in range(rounds):
            echo(f"round {r + 1}/{rounds}: {len(timed)} kernel(s) × {len(ARMS)} arms, load {os.getloadavg()[0]:.1f}")
            if r:
                arms = start_arms()
            for label in timed:
                limits, live = {}, []
                for arm_label in ARMS:  # setup and warm-up in every arm, then the samples in turn
                    name, index, entry = suites[arm_label][label]
                    limits[arm_label] = max(entry["timeout"], settings[arm_label][1])
                    answer = ask(arm_label, {"do": "prepare", "name": name, "index": index,
                                             "number": numbers.get(label, 0), "min_sample_s": SAMPLE_S},
                                 limits[arm_label])
                    if "number" in answer:
                        numbers.setdefault(label, answer["number"])
                        live.append(arm_label)
                    else:
                        errors[label][arm_label] = answer.get("failed") or answer.get("skipped")
                        errors[label].setdefault("kind", "failed" if "failed" in answer else "skipped")
                taken = {arm_label: [] for arm_label in live}
                for s in range(SAMPLES_PER_ROUND):
                    for arm_label in ORDERS[(r + s) % len(ORDERS)]:
                        if arm_label not in taken:
                            continue
                        answer = ask(arm_label, {"do": "sample"}, limits[arm_label])
                        if "sample" in answer:
                            taken[arm_label].append(answer["sample"])
                        else:
                            errors[label][arm_label] = answer["failed"]
                            errors[label].setdefault("kind", "failed")
                            del taken[arm_label]
                for arm_label in ARMS:
                    if arm_label in taken:
                        ask(arm_label, {"do": "finish"}, limits[arm_label])
                    samples[label][arm_label].append(taken.get(arm_label) or None)
            for arm in arms.values():
                arm.close()
        session.load = (session.load[0], os.getloadavg()[0])
        for label in wanted:
            session.rows.append(settled.get(label) or verdict(label, suites["head"][label][2]["clock"], samples[label],
                                                              errors[label], factor, per_round_statistic))
        session.measured = samples
        session.seconds = time.monotonic() - began
    return session


def verdict(label: str, clock: str, samples: dict[str, list], errors: dict[str, str], factor: float,
            per_round_statistic: str = DEFAULT_STATISTIC) -> PairedComparison:
    """The verdict on one kernel from its samples (``{arm: [round's samples or None]}``, as the record keeps them)."""
    column = 0 if clock == "cpu" else 1
    reduce = STATISTICS[per_round_statistic]
    per_round = {arm: [reduce([s[column] for s in taken]) if taken else None for taken in samples[arm]]
                 for arm in ARMS}
    failed_at = [arm for arm in ("base", "head") if all(v is None for v in per_round[arm])]
    if failed_at:
        kind = errors.get("kind", "failed")
        row = PairedComparison(label, clock, kind)
        why = errors.get(failed_at[-1], "")
        if kind == "failed" and failed_at == ["base"]:
            row.status = "fixed"
        elif kind == "failed" and failed_at == ["base", "head"]:
            row.status = "same"
            row.note = f"failed at BASE too: {why}"
        else:
            row.note = f"{kind} at {'HEAD' if 'head' in failed_at else 'BASE'}: {why}"
        return row
    counts = None
    flat = {arm: [s[2] for taken in samples[arm] if taken for s in taken] for arm in ARMS}
    if all(flat[arm] and None not in flat[arm] for arm in ARMS):
        counts = {arm: statistics.median(flat[arm]) for arm in ARMS}
    return judge(label, clock, per_round, factor, counts)


# --- the report ------------------------------------------------------------------------------------------------

def _span(pair: tuple[float, float] | None) -> str:
    return "—" if pair is None else f"{pair[0]:.2f}–{pair[1]:.2f}"


def render(session: Session) -> str:
    base, head = session.commits["base"][:8], session.commits["head"][:8]
    rows = session.rows
    bands = [r.band for r in rows if r.band]
    lines = [f"# {base} (base) → {head} (head), timed interleaved: {session.rounds} rounds of base, head and base "
             f"again (the A/A arm), {SAMPLES_PER_ROUND} samples each; {int(LEVEL * 100)}% intervals of the paired "
             f"ratio head / base of each round's {session.statistic}",
             f"# slower = ratio above {session.factor:g} and above the A/A noise band, its interval above 1 "
             f"(faster: the mirror)",
             f"# source trees: base {session.trees['base']}, head {session.trees['head']} (git archive; the "
             f"workers imported nothing from elsewhere); load {session.load[0]:.1f} → {session.load[1]:.1f}, "
             f"{session.seconds:.0f} s",
             f"# instruction counts: {session.instructions or 'counted (perf_event_open, user space)'}"]
    if bands:
        widths = sorted(max(b[1] - 1, 1 - b[0]) for b in bands)
        widest = max((r for r in rows if r.band), key=lambda r: max(r.band[1] - 1, 1 - r.band[0]))
        lines.append(f"# A/A noise band (base vs base again): median ±{widths[len(widths) // 2] * 100:.1f}%, widest "
                     f"{_span(widest.band)} ({widest.name})")
    header = ("status", "base", "head", "ratio", "interval", "A/A band", "signal")
    body = [(r.status, fmt_value(r.base_s, r.unit), fmt_value(r.head_s, r.unit),
             "—" if r.ratio is None else f"{r.ratio:.2f}", _span(r.interval), _span(r.band), r.clock) for r in rows]
    widths = [max(len(x[i]) for x in [header, *body]) for i in range(len(header))]
    for r, cells in zip([None, *rows], [header, *body]):
        name = "benchmark" if r is None else r.name + (f"  [{r.note}]" if r.note else "")
        lines.append("  ".join(c.rjust(w) if 0 < i < 6 else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))
                     + "  " + name)
    return "\n".join(lines)


def write_record(session: Session, path: Path) -> None:
    path.write_text(json.dumps(session.record(), indent=1) + "\n")


def compare_command(base: str, head: str, factor: float, rounds: int, bench: str | None, json_path: Path | None,
                    per_round_statistic: str = DEFAULT_STATISTIC) -> int:
    """``harness bench compare`` (without ``--stored``): the report on stdout, a line per regression on stderr;
    exit 1 when a kernel is slower or newly failing, else 0 (:class:`BenchUsage` for bad input)."""
    session = run_session(base, head, factor, rounds, bench, echo=lambda line: print(line, file=sys.stderr),
                          per_round_statistic=per_round_statistic)
    if json_path:
        write_record(session, json_path)
    print(render(session))
    bad = [r for r in session.rows if r.status in ("slower", "failed")]
    for r in bad:
        what = f"{r.ratio:.2f}× slower ({r.clock})" if r.status == "slower" else f"failed ({r.note})"
        print(f"REGRESSION {r.name}: {what}", file=sys.stderr)
    print(f"{len(bad)} regression(s) among {len(session.rows)} benchmarks" if bad else
          f"no kernel slower by more than {factor:g}× among {len(session.rows)} benchmarks")
    return 1 if bad else 0
