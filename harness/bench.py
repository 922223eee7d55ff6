"""Kernel speed over commits, through asv: ``harness bench run`` and ``harness bench compare``.

``run`` drives asv in the environment harness itself runs in (asv's ``existing``
environment, so no per-commit builds) for the checked-out commit: asv is told the commit
(``--set-commit-hash``) and a pinned machine name, so that results from CI runners with
random host names land in one series. It records the raw samples (``--record-samples``) so
that ``compare`` can test significance. ``--quick`` runs every selected benchmark once
into a throw-away results folder: a check that the suite runs, which stores nothing.

``compare`` reads asv's stored result files itself (asv's exit codes say little about
regressions) and calls a kernel (``time_*``, ``peakmem_*``) **slower** when its median grew
by more than ``factor`` and asv's own significance test (``asv._stats.is_different``, the
one ``asv compare`` uses: a Mann–Whitney U test on the recorded samples at p < 0.002, or,
without samples, non-overlapping 99% intervals) says the difference is real. With a
single sample per side, or for ``peakmem_*`` (no samples), the factor alone decides.
``track_*`` values are printed but never fail the comparison (``harness regress`` checks
leaderboards).
"""
from __future__ import annotations

import itertools
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CONFIG_FILE = "asv.conf.json"
MACHINE_VARIABLE = "HARNESS_BENCH_MACHINE"
DEFAULT_MACHINE = "local"
DEFAULT_FACTOR = 1.2
KERNEL_TYPES = ("time", "peakmem", "mem", "timeraw")


class BenchUsage(RuntimeError):
    """asv, its configuration, the repository or the stored results are not there (exit 2)."""


def default_machine() -> str:
    return os.environ.get(MACHINE_VARIABLE) or DEFAULT_MACHINE


# --- configuration -------------------------------------------------------------------------

def find_config(start: Path | None = None) -> Path:
    """``asv.conf.json`` in ``start`` (default: the working directory) or the nearest folder above."""
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / CONFIG_FILE).is_file():
            return folder / CONFIG_FILE
    raise BenchUsage(f"no {CONFIG_FILE} in {here} or above it: run from the repository root")


def read_config(path: Path) -> dict[str, Any]:
    """asv's configuration (JSON with ``//`` comment lines, as asv allows)."""
    text = "\n".join(line for line in path.read_text().splitlines() if not line.lstrip().startswith("//"))
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise BenchUsage(f"{path}: not valid JSON ({exc})") from None


def results_dir(config_path: Path) -> Path:
    return (config_path.parent / read_config(config_path).get("results_dir", "results")).resolve()


# --- reading stored results ----------------------------------------------------------------

@dataclass
class Measurement:
    """One benchmark at one parameter combination, for one commit."""

    name: str  # benchmark name, with the parameters: ``module.Class.time_x(n=400)``
    benchmark: str
    kind: str  # time, peakmem, track, ...
    unit: str
    version: str | None
    value: float | None  # asv's result: the median for time_*; None when it failed
    samples: list[float] | None
    stats: dict[str, Any] | None
    started_at: int


def _kind(benchmark: str) -> str:
    method = benchmark.rsplit(".", 1)[-1]
    return method.split("_", 1)[0]


def _param_label(param_names: list[str], values: tuple[str, ...]) -> str:
    return ", ".join(f"{n}={v}" for n, v in zip(param_names, values))


def read_results_file(path: Path, described: dict[str, dict]) -> dict[str, Measurement]:
    """Every measurement of one asv result file (format version 2, asv 0.6)."""
    data = json.loads(path.read_text())
    if data.get("version") != 2:
        raise BenchUsage(f"{path}: asv result format {data.get('version')!r}, expected 2 (asv 0.6); "
                         f"run `asv update` or rerun the suite")
    columns = data["result_columns"]
    out: dict[str, Measurement] = {}
    for benchmark, row in data["results"].items():
        row = dict(zip(columns, list(row) + [None] * (len(columns) - len(row))))
        params = row["params"] or []
        combos = list(itertools.product(*params)) if params else [()]
        values = row["result"] or [None] * len(combos)
        meta = described.get(benchmark, {})
        names = meta.get("param_names") or [f"param{i + 1}" for i in range(len(params))]
        for i, combo in enumerate(combos):
            stats = None
            if row.get("stats_ci_99_a") is not None and row["stats_ci_99_a"][i] is not None:
                stats = {key[6:]: (row[key][i] if row.get(key) is not None else None)
                         for key in columns if key.startswith("stats_")}
            samples = row["samples"][i] if row.get("samples") is not None else None
            value = values[i] if i < len(values) else None
            label = f"{benchmark}({_param_label(names, combo)})" if combo else benchmark
            out[label] = Measurement(
                label, benchmark, _kind(benchmark), meta.get("unit", "seconds" if _kind(benchmark) == "time" else ""),
                row.get("version"), None if value is None else float(value), samples, stats,
                int(row.get("started_at") or 0))
    return out


def stored_commits(results: Path, machine: str) -> list[str]:
    folder = results / machine
    hashes = []
    for path in sorted(folder.glob("*.json")):
        if path.name == "machine.json":
            continue
        try:
            hashes.append(json.loads(path.read_text())["commit_hash"])
        except (OSError, ValueError, KeyError):
            continue
    return sorted(set(hashes))


def resolve_commit(name: str, root: Path, known: list[str]) -> str | None:
    """A full commit hash for a git name (branch, tag, HEAD~1, hash) or a prefix of a stored hash."""
    done = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{name}^{{commit}}"], cwd=root,
                          capture_output=True, text=True)
    if done.returncode == 0 and done.stdout.strip():
        return done.stdout.strip()
    matches = [h for h in known if re.fullmatch(r"[0-9a-fA-F]{4,40}", name) and h.startswith(name.lower())]
    return matches[0] if len(matches) == 1 else None


def load_commit(results: Path, machine: str, commit: str) -> dict[str, Measurement]:
    """The measurements stored for ``commit`` on ``machine`` (latest per benchmark over environments)."""
    described = {}
    if (results / "benchmarks.json").exists():
        described = {k: v for k, v in json.loads((results / "benchmarks.json").read_text()).items() if k != "version"}
    merged: dict[str, Measurement] = {}
    for path in sorted((results / machine).glob("*.json")):
        if path.name == "machine.json" or json.loads(path.read_text()).get("commit_hash") != commit:
            continue
        for label, measurement in read_results_file(path, described).items():
            if label not in merged or measurement.started_at >= merged[label].started_at:
                merged[label] = measurement
    return merged


# --- comparing -----------------------------------------------------------------------------

@dataclass
class Comparison:
    name: str
    kind: str
    unit: str
    before: float | None
    after: float | None
    status: str  # slower, faster, same, failed, skipped, fixed, new, gone, incomparable, changed (track)
    note: str = ""

    @property
    def ratio(self) -> float | None:
        if self.before is None or self.after is None or self.before == 0:
            return None
        return self.after / self.before


def significant(before: Measurement, after: Measurement) -> tuple[bool, str]:
    """Whether asv's test finds the two measurements different, and which test decided."""
    if before.stats is None or after.stats is None or before.stats.get("repeat") == 1 or after.stats.get("repeat") == 1:
        return True, "factor only (no statistics stored)"
    try:
        from asv._stats import is_different
    except ImportError:  # asv moved its private statistics module; its documented fallback rule
        return _intervals_apart(before.stats, after.stats), "99% intervals (asv._stats not found)"
    samples = before.samples is not None and after.samples is not None
    return (bool(is_different(before.samples, after.samples, before.stats, after.stats)),
            "Mann-Whitney U, p < 0.002" if samples else "99% intervals")


def _intervals_apart(a: dict, b: dict) -> bool:
    return not (a["ci_99_b"] >= b["ci_99_a"] and a["ci_99_a"] <= b["ci_99_b"])


def compare(base: dict[str, Measurement], head: dict[str, Measurement], factor: float) -> list[Comparison]:
    out = []
    for name in sorted(base.keys() | head.keys()):
        b, h = base.get(name), head.get(name)
        ref = h or b
        row = Comparison(name, ref.kind, ref.unit, b.value if b else None, h.value if h else None, "same")
        if b is None:
            row.status = "new"
        elif h is None:
            row.status = "gone"
        elif b.version != h.version:
            row.status, row.note = "incomparable", f"benchmark version {b.version} → {h.version}"
        elif h.value is None:
            base_ran = b.value is not None and not math.isnan(b.value)
            row.status = "failed" if base_ran else "same"
            row.note = "failed at HEAD" if base_ran else "failed or skipped at BASE too"
        elif math.isnan(h.value):
            row.status, row.note = "skipped", "skipped at HEAD (its setup raised NotImplementedError)"
        elif b.value is None or math.isnan(b.value):
            row.status = "fixed"
        elif ref.kind == "track":
            row.status = "same" if h.value == b.value else "changed"
        elif ref.kind in KERNEL_TYPES:
            ratio = row.ratio
            if ratio is not None and (ratio > factor or ratio < 1 / factor):
                real, test = significant(b, h)
                if real:
                    row.status = "slower" if ratio > factor else "faster"
                    row.note = test
                else:
                    row.note = f"ratio beyond {factor:g} but not significant ({test})"
        out.append(row)
    return out


def fmt_value(value: float | None, unit: str) -> str:
    if value is None:
        return "—"
    if math.isnan(value):
        return "n/a"
    if unit == "seconds":
        for scale, suffix in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
            if value >= scale:
                return f"{value / scale:.3g}{suffix}"
        return f"{value * 1e9:.3g}ns"
    if unit == "bytes":
        return f"{value / 2**20:.1f}MiB"
    return f"{value:.6g}"


def render(rows: list[Comparison], base: str, head: str, factor: float) -> str:
    header = ("status", "before", "after", "ratio", "benchmark")
    body = []
    for r in rows:
        ratio = f"{r.ratio:.2f}" if r.ratio is not None else "—"
        body.append((r.status, fmt_value(r.before, r.unit), fmt_value(r.after, r.unit), ratio,
                     r.name + (f"  [{r.note}]" if r.note else "")))
    widths = [max(len(x[i]) for x in [header, *body]) for i in range(4)]
    lines = [f"# {base[:8]} (before) → {head[:8]} (after); slower = median ratio > {factor:g} and significant"]
    for row in [header, *body]:
        lines.append("  ".join(c.rjust(w) if 0 < i < 4 else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths)))
                     + "  " + row[4])
    return "\n".join(lines)


def compare_commits(base: str, head: str, factor: float = DEFAULT_FACTOR, machine: str | None = None,
                    config: Path | None = None) -> tuple[list[Comparison], str]:
    """Compare two commits' stored results; raises :class:`BenchUsage` when either has none."""
    config = config or find_config()
    results = results_dir(config)
    machine = machine or default_machine()
    known = stored_commits(results, machine)
    loaded = {}
    for label, name in (("BASE", base), ("HEAD", head)):
        commit = resolve_commit(name, config.parent, known)
        data = load_commit(results, machine, commit) if commit else {}
        if not data:
            stored = ", ".join(h[:8] for h in known) or "none"
            raise BenchUsage(f"{label} {name!r}: no asv results for {'commit ' + commit[:8] if commit else 'that name'} "
                             f"on machine {machine!r} in {results} (stored commits: {stored}); "
                             f"run `harness bench run --machine {machine}` on it first")
        loaded[label] = (commit, data)
    rows = compare(loaded["BASE"][1], loaded["HEAD"][1], factor)
    return rows, render(rows, loaded["BASE"][0], loaded["HEAD"][0], factor)


# --- running -------------------------------------------------------------------------------

def asv_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "asv", *args]


def require_asv() -> None:
    import importlib.util

    if importlib.util.find_spec("asv") is None:
        raise BenchUsage("asv is not installed in this environment: pip install -e '.[bench]'")


def ensure_machine(machine: str) -> None:
    """Create the pinned machine entry in ~/.asv-machine.json unless it is there (a clean CI clone has none)."""
    path = Path.home() / ".asv-machine.json"
    try:
        if machine in json.loads(path.read_text()):
            return
    except (OSError, ValueError):
        pass
    done = subprocess.run(asv_command("machine", "--machine", machine, "--yes"), capture_output=True, text=True)
    if done.returncode != 0:
        raise BenchUsage(f"`asv machine --machine {machine} --yes` failed:\n{done.stdout}{done.stderr}")


def head_commit(root: Path) -> str:
    done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True)
    if done.returncode != 0:
        raise BenchUsage(f"{root} is not a git checkout with a commit: asv records results per commit")
    return done.stdout.strip()


def _dirty(root: Path) -> bool:
    done = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                          capture_output=True, text=True)
    return bool(done.stdout.strip())


@dataclass
class RunOutcome:
    commit: str
    machine: str
    stored_in: Path | None  # None for --quick
    measured: list[str]
    failed: list[str]
    skipped: list[str]  # asv's NaN: the benchmark's setup raised NotImplementedError (e.g. a GPU-only size)
    asv_exit: int
    nothing_selected: bool = False


def _quick_config(config: Path, scratch: Path) -> Path:
    """A copy of the configuration whose results go to ``scratch`` (asv changes into the config's folder)."""
    data = read_config(config)
    for key in ("repo", "benchmark_dir", "env_dir", "html_dir"):
        if key in data:
            data[key] = str((config.parent / data[key]).resolve())
    data["results_dir"] = str(scratch / "results")
    path = scratch / CONFIG_FILE
    path.write_text(json.dumps(data, indent=1))
    return path


def run_suite(quick: bool = False, bench: str | None = None, machine: str | None = None,
              config: Path | None = None, echo=print) -> RunOutcome:
    """Run the asv suite for the checked-out commit; return what was measured and what failed."""
    require_asv()
    config = config or find_config()
    root = config.parent
    machine = machine or default_machine()
    commit = head_commit(root)
    if _dirty(root):
        echo(f"note: the working tree has uncommitted changes; they are measured and stored under {commit[:8]}")
    ensure_machine(machine)
    with tempfile.TemporaryDirectory(prefix="harness-bench-") as scratch:
        used_config = _quick_config(config, Path(scratch)) if quick else config
        results = results_dir(used_config)
        args = ["run", "--config", str(used_config), "--set-commit-hash", commit, "--machine", machine,
                "--show-stderr"]
        args += ["--quick"] if quick else ["--record-samples"]
        if bench:
            args += ["--bench", bench]
        started_ms = int(time.time() * 1000)
        process = subprocess.Popen(asv_command(*args), cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   text=True, bufsize=1)
        nothing_selected = False
        for line in process.stdout:
            echo(line.rstrip("\n"))
            nothing_selected = nothing_selected or "No benchmarks selected" in line
        exit_code = process.wait()
        measured, failed, skipped = [], [], []
        for label, m in load_commit(results, machine, commit).items():
            if m.started_at < started_ms - 1000:
                continue  # an earlier run's result, kept by asv in the same file
            (failed if m.value is None else skipped if math.isnan(m.value) else measured).append(label)
        return RunOutcome(commit, machine, None if quick else results, sorted(measured), sorted(failed),
                          sorted(skipped), exit_code, nothing_selected)
