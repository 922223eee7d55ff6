"""Leaderboard regressions: two results roots compared spec by spec.

``harness regress BASELINE CURRENT`` reads each spec folder's ``leaderboard.csv`` (means and
95% half-widths over seeds), ``claims.json`` (verdicts), ``spec.yaml`` (primary metric) and
``metrics.json`` (each metric's goal and unit), as ``harness run`` writes them, and reports
what moved. Nothing comes from the plugins registered in this process: an older folder
without ``metrics.json`` falls back to them (:func:`harness.metric_tables.read_metric_table`). A **regression** (exit 1) is:

- a (dataset, method) row whose primary metric moved in the wrong direction (by the metric's
  goal) by more than its tolerance;
- a row that is gone, lost its primary metric, or has fewer seeds ok than before;
- a claim that was ``reproduced`` and no longer is (``not reproduced``, ``inconclusive`` or gone), or a check
  (``kind: check``) that held and no longer does;
- a spec folder of the baseline that the current root lacks.

Two folders of another spec, or of another profile of it, are not compared: :class:`RegressUsage` (exit 2)
names both and what differs, before anything is compared. Another spec hash of the same spec and profile
(the spec edited) is compared, with a note.

Tolerances: by default a metric without a unit is compared exactly (up to 1e-9 of its
value, which absorbs float printing and nothing else: the quick profile is deterministic on
a CPU) when both folders ran on the same hardware, and within the baseline's 95% interval
when they did not (the same code gives other floating-point results on another CPU: a note
says so); a metric read off a clock (unit ``s``, ``ln s`` or ``1/s``: seconds, their log, a rate
per second) is not compared, since wall time is noise between runs and machines (kernel speed is asv's job, see :mod:`harness.bench`). ``--tolerance``
changes that for every metric (``0.05``: 5 % of the baseline value; ``interval``: the
baseline's 95% half-width) or for one (``runtime_s=1.0`` also compares runtimes, allowing 2×).
A metric named in ``--tolerance`` decides like the primary one; other reported metrics
that moved are listed but never fail the comparison.

``--markdown FILE`` also appends the same changes as Markdown tables (:func:`render_markdown`), for a CI job's summary.
"""
from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from harness.metric_tables import read_metric_table
from harness.metrics import WALL_CLOCK_UNITS, Metric

HOLDING = ("reproduced", "holds")  # a claim's and a check's verdict that losing is a regression
EXACT = 1e-9  # relative slack of an "exact" comparison: float noise only
INTERVAL = "interval"


class RegressUsage(ValueError):
    """The command line or the folders are unusable (exit 2)."""


@dataclass(frozen=True)
class Tolerance:
    """How far a metric may move in the wrong direction: a share of the baseline value, or its interval."""

    relative: float | None = EXACT  # None: not compared
    interval: bool = False

    def describe(self) -> str:
        if self.interval:
            return "within the baseline's 95% interval"
        if self.relative is None:
            return "not compared"
        return "exact" if self.relative <= EXACT else f"{self.relative:g} × baseline"


@dataclass
class Tolerances:
    default: Tolerance | None = None  # None: exact without a unit, not compared for seconds
    per_metric: dict[str, Tolerance] = field(default_factory=dict)

    def for_metric(self, name: str, unit: str) -> Tolerance:
        if name in self.per_metric:
            return self.per_metric[name]
        if self.default is not None and unit not in WALL_CLOCK_UNITS:
            return self.default
        return Tolerance(None) if unit in WALL_CLOCK_UNITS else Tolerance(EXACT)


def parse_tolerances(items: list[str] | None) -> Tolerances:
    """``["0.05", "runtime_s=1.0", "ari=interval"]`` → :class:`Tolerances`."""
    tolerances = Tolerances()
    for item in items or ():
        name, _, value = item.rpartition("=")
        tolerance = _parse_tolerance(value, item)
        if name:
            tolerances.per_metric[name] = tolerance
        else:
            tolerances.default = tolerance
    return tolerances


def _parse_tolerance(text: str, item: str) -> Tolerance:
    if text == INTERVAL:
        return Tolerance(EXACT, interval=True)
    try:
        value = float(text)
    except ValueError:
        raise RegressUsage(f"--tolerance {item!r}: expected a number (a share of the baseline value, e.g. 0.05), "
                           f"'interval', or METRIC=one of those") from None
    if not value >= 0 or math.isinf(value):
        raise RegressUsage(f"--tolerance {item!r}: expected a finite number ≥ 0")
    return Tolerance(max(value, EXACT))


@dataclass
class Change:
    spec: str
    where: str  # "dataset · method", "claim <id>", "check <id>" or "spec"
    what: str  # the metric, "seeds ok", "verdict", ...
    before: str
    after: str
    verdict: str  # "regressed", "improved", "moved", "new", "note"
    detail: str = ""

    @property
    def regressed(self) -> bool:
        return self.verdict == "regressed"


@dataclass
class SpecFolder:
    name: str
    path: Path
    primary: str
    report: list[str]
    spec_hash: str
    rows: dict[tuple[str, str], dict[str, str]]
    claims: dict[str, str]  # "claim <id>" or "check <id>" → verdict
    metrics: dict[str, Metric] = field(default_factory=dict)  # the folder's metric table: goal and unit
    claim_metrics: dict[str, str] = field(default_factory=dict)  # "claim <id>" → the metric it compares
    profile: str = "?"


def incomparable(baseline: SpecFolder, current: SpecFolder) -> str | None:
    """Why two spec folders are not two runs of one comparison (another spec, or another profile of it), or None.

    Another spec hash of the same spec and profile is a real comparison (the spec or a command-line override was
    edited, a method added): that is compared, with a note."""
    for what, before, after in (("spec", baseline.name, current.name), ("profile", baseline.profile, current.profile)):
        if before != after:
            return (f"{baseline.path} ({what} {before!r}) and {current.path} ({what} {after!r}) are not comparable: "
                    f"regress compares two runs of one spec at one profile; give folders of the same spec and profile, "
                    f"e.g. results/quick and a fresh `harness run --profile quick --out DIR`")
    return None



def spec_folders(root: Path) -> dict[str, Path]:
    """Spec folders under a results root (``root/<spec>/spec.yaml``), or the root itself if it is one."""
    root = Path(root)
    if not root.is_dir():
        raise RegressUsage(f"{root}: no such folder")
    if (root / "spec.yaml").exists():
        return {root.name: root}
    return {p.parent.name: p.parent for p in sorted(root.glob("*/spec.yaml"))}


def _is_spec_folder(root: Path) -> bool:
    return (Path(root) / "spec.yaml").exists()


def read_spec_folder(folder: Path) -> SpecFolder:
    from harness.store import load_yaml

    meta = load_yaml((folder / "spec.yaml").read_text())
    spec = meta["spec"]
    rows: dict[tuple[str, str], dict[str, str]] = {}
    board = folder / "leaderboard.csv"
    if board.exists():
        with open(board, newline="") as f:
            lines = csv.reader(f)
            header = next(lines, [])
            for values in lines:  # csv.DictReader's rows, without its per-row Python layer (100k rows: 0.5 s less)
                row = dict(zip(header, values))
                if len(values) != len(header):
                    row = _padded(header, values)
                # a method on one device class where the folder spans several
                method = row["method"] + (f" on {row['device_class']}" if row.get("device_class") else "")
                rows[(row["dataset"], method)] = row
    claims, claim_metrics = {}, {}
    if (folder / "claims.json").exists():
        data = json.loads((folder / "claims.json").read_text())
        for noun, entries in (("claim", data["claims"]), ("check", data.get("checks", []))):
            for claim in entries:  # a check is compared as a claim is, under its own name
                claims[f"{noun} {claim['claim']}"] = claim["verdict"]
                if claim.get("metric"):
                    claim_metrics[f"{noun} {claim['claim']}"] = claim["metric"]
    return SpecFolder(spec["name"], folder, spec["metrics"]["primary"], list(spec["metrics"]["report"]),
                      meta.get("spec_hash", "?"), rows, claims, read_metric_table(folder), claim_metrics,
                      str(meta.get("profile", "?")))


def _padded(header: list[str], values: list[str]) -> dict[str, str | None]:
    """A short or long CSV row as ``csv.DictReader`` gives it: missing fields None, extra ones under None."""
    row: dict = dict(zip(header, values))
    for name in header[len(values):]:
        row[name] = None
    if len(values) > len(header):
        row[None] = values[len(header):]
    return row


def _devices(folder: SpecFolder) -> set[str]:
    """Every device a folder's rows ran on (the leaderboard's ``devices`` column)."""
    return {d.strip() for row in folder.rows.values() for d in row.get("devices", "").split(";") if d.strip()}


def _number(row: dict[str, str] | None, column: str) -> float | None:
    text = (row or {}).get(column, "")
    return float(text) if text not in ("", None) else None


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.6g}"


def compare_metric(name: str, goal: str | None, tolerance: Tolerance, before: float, after: float,
                   half_width: float | None) -> tuple[str, str]:
    """(verdict, detail) for one metric of one row: ``same`` (within the tolerance either way),
    ``improved`` or ``regressed``."""
    slack = tolerance.relative * abs(before) + 1e-12
    if tolerance.interval and half_width is not None:
        slack = max(slack, half_width)
    if abs(after - before) <= slack:
        return "same", ""
    if goal is None:
        return "regressed", f"{name} has no known direction (not in the metric table), and it moved"
    worse = (after - before) * (1 if goal == "min" else -1)  # positive: moved the wrong way
    if worse < 0:
        return "improved", ""
    if tolerance.interval:
        bound = (f"outside the baseline's 95% interval (± {_fmt(half_width)})" if half_width is not None
                 else "compared exactly: the baseline has one seed, so no interval")
    else:
        bound = f"beyond {tolerance.describe()}"
    share = f" ({100 * worse / abs(before):.2g}%)" if before else ""
    return "regressed", f"worse by {_fmt(worse)}{share}, {bound}"


def compare_specs(baseline: SpecFolder, current: SpecFolder, tolerances: Tolerances) -> list[Change]:
    table = {**baseline.metrics, **current.metrics}  # the current run's declaration wins where both have one
    changes: list[Change] = []
    name = baseline.name
    if baseline.spec_hash != current.spec_hash:
        changes.append(Change(name, "spec", "spec_hash", baseline.spec_hash, current.spec_hash, "note",
                              "the resolved spec changed; update the committed results if that was meant"))
    primary = baseline.primary
    hardware = (_devices(baseline), _devices(current))
    if tolerances.default is None and hardware[0] and hardware[1] and hardware[0] != hardware[1]:
        # the same code gives other floating-point results on another CPU or GPU (BLAS and torch
        # kernels differ by instruction set): exactness would flag the machine, not the code
        tolerances = Tolerances(Tolerance(EXACT, interval=True), tolerances.per_metric)
        changes.append(Change(name, "spec", "hardware", "; ".join(sorted(hardware[0])), "; ".join(sorted(hardware[1])),
                              "note", "the runs used other hardware: metrics compared within the baseline's 95% "
                                      "interval instead of exactly (--tolerance 0 compares exactly anyway)"))
    for key, before_row in baseline.rows.items():
        where = " · ".join(key)
        after_row = current.rows.get(key)
        if after_row == before_row:
            continue  # the same text in every column: nothing moved (most rows of a rebuild)
        if after_row is None:
            changes.append(Change(name, where, "row", "present", "missing", "regressed",
                                  "the current leaderboard has no such dataset × method"))
            continue
        seeds_before, seeds_after = int(before_row["seeds_ok"]), int(after_row["seeds_ok"])
        if seeds_after < seeds_before:
            changes.append(Change(name, where, "seeds ok", str(seeds_before), str(seeds_after), "regressed",
                                  f"{after_row['seeds_failed']} seed(s) failed; see runs.jsonl"))
        for metric in baseline.report:
            known = table.get(metric)
            unit = known.unit if known else ""
            tolerance = tolerances.for_metric(metric, unit)
            if tolerance.relative is None:
                continue  # seconds, not compared by default
            before = _number(before_row, f"{metric}_mean")
            after = _number(after_row, f"{metric}_mean")
            if before is None:
                continue
            if after is None:
                verdict = "regressed" if metric == primary else "moved"
                changes.append(Change(name, where, metric, _fmt(before), "—", verdict, "no value in the current run"))
                continue
            verdict, detail = compare_metric(metric, known.goal if known else None, tolerance, before, after,
                                             _number(before_row, f"{metric}_ci95"))
            if verdict == "same":
                continue
            if verdict == "regressed" and metric != primary and metric not in tolerances.per_metric:
                verdict, detail = "moved", detail + "; not the primary metric, so listed only"
            changes.append(Change(name, where, metric, _fmt(before), _fmt(after), verdict, detail))
    for key in current.rows.keys() - baseline.rows.keys():
        changes.append(Change(name, " · ".join(key), "row", "—", "present", "new", "not in the baseline"))
    for claim, before in baseline.claims.items():
        after = current.claims.get(claim, "missing")
        if after == before:
            continue
        verdict = ("regressed" if before in HOLDING else ("improved" if after in HOLDING else "moved"))
        detail = ""
        metric = baseline.claim_metrics.get(claim) or current.claim_metrics.get(claim)
        known = baseline.metrics.get(metric) or current.metrics.get(metric)
        if verdict == "regressed" and known is not None and known.unit in WALL_CLOCK_UNITS and metric not in tolerances.per_metric:
            # a claim on wall time inherits its noise: another machine or a busy one can flip it
            verdict, detail = "moved", (f"a claim on {metric}, read off a clock, which is noise between runs and machines: "
                                        f"listed only (--tolerance {metric}=... makes it count)")
        changes.append(Change(name, claim, "verdict", before, after, verdict, detail))
    for claim in current.claims.keys() - baseline.claims.keys():
        changes.append(Change(name, claim, "verdict", "—", current.claims[claim], "new"))
    return changes


@dataclass
class Report:
    changes: list[Change]
    specs: list[str]
    rows: int
    claims: int

    @property
    def regressed(self) -> list[Change]:
        return [c for c in self.changes if c.regressed]


def compare_roots(baseline_root: Path, current_root: Path, tolerances: Tolerances) -> Report:
    baseline, current = spec_folders(baseline_root), spec_folders(current_root)
    if not baseline:
        raise RegressUsage(f"{baseline_root}: no spec results here (expected <spec>/spec.yaml from `harness run`)")
    if _is_spec_folder(baseline_root) and _is_spec_folder(current_root):
        # two spec folders named on the command line are compared with each other, whatever their folders' names
        current = {name: Path(current_root) for name in baseline}
    pairs = {}
    for name, folder in baseline.items():  # every pair read and matched before anything is compared
        before = read_spec_folder(folder)
        after = read_spec_folder(current[name]) if name in current else None
        why = incomparable(before, after) if after is not None else None
        if why:
            raise RegressUsage(why)
        pairs[name] = (before, after)
    changes: list[Change] = []
    rows = claims = 0
    for name, (before, after) in pairs.items():
        if after is None:
            changes.append(Change(name, "spec", "results", "present", "missing", "regressed",
                                  f"{current_root} has no {name}/ folder"))
            continue
        rows += len(before.rows)
        claims += len(before.claims)
        changes += compare_specs(before, after, tolerances)
    for name in current.keys() - baseline.keys():
        changes.append(Change(name, "spec", "results", "—", "present", "new",
                              f"no baseline in {baseline_root}: commit its results to track it"))
    return Report(changes, sorted(baseline), rows, claims)


def render(report: Report, tolerances: Tolerances) -> str:
    lines = []
    if report.changes:
        header = ("spec", "where", "what", "before", "after", "verdict", "detail")
        body = [(c.spec, c.where, c.what, c.before, c.after, c.verdict, c.detail) for c in report.changes]
        widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header) - 1)]
        for row in [header, *body]:
            lines.append("  ".join(cell.ljust(w) for cell, w in zip(row[:-1], widths)) + "  " + row[-1])
        lines.append("")
    if report.regressed:
        named = [f"{c.spec} {c.where} {c.what} {c.before} → {c.after}" for c in report.regressed]
        more = f"; and {len(named) - 5} more marked 'regressed' above" if len(named) > 5 else ""
        lines.append(f"{len(named)} regression(s): " + "; ".join(named[:5]) + more)
    else:
        lines.append(_MOVED if _moved(report) else _NOTHING)
    lines.append(_compared(report, tolerances))
    return "\n".join(lines)


_MOVED = "no regression, but results moved: if that was meant, commit the new results as the baseline"
_NOTHING = "nothing moved"


def _moved(report: Report) -> bool:
    """Whether anything other than a regression changed (both renderings say so the same way)."""
    return any(c.verdict in ("improved", "moved", "new", "note") for c in report.changes)


def _compared(report: Report, tolerances: Tolerances) -> str:
    return (f"{len(report.specs)} spec(s), {report.rows} leaderboard row(s), {report.claims} claim(s) compared; "
            f"tolerance: {describe_tolerances(tolerances)}")


def render_markdown(report: Report, tolerances: Tolerances, baseline: Path, current: Path) -> str:
    """The comparison as Markdown, for a CI job's summary (GitHub's ``$GITHUB_STEP_SUMMARY``): a heading, one line
    of outcome, a table of the leaderboard rows that moved (spec, dataset, method, metric, baseline → current, verdict,
    why it counts or not), one of the claims and checks whose verdict changed, one of changes to whole specs, and what
    was compared. The same changes and outcome as :func:`render`."""
    lines = [f"### Leaderboards: `{baseline}` → `{current}`", ""]
    if report.regressed:
        lines.append(f"**{len(report.regressed)} regression(s)**: the comparison fails (rows marked **regressed**).")
    else:
        lines.append(_MOVED[0].upper() + _MOVED[1:] + "." if _moved(report) else _NOTHING)
    rows = [c for c in report.changes if c.where != "spec" and not c.where.startswith(("claim ", "check "))]
    claims = [c for c in report.changes if c.where.startswith(("claim ", "check "))]
    specs = [c for c in report.changes if c.where == "spec"]
    if rows:
        lines += ["", _md_row("spec", "dataset", "method", "metric", "baseline → current", "verdict", "why"),
                  _md_row(*["---"] * 7)]
        for c in rows:
            dataset, _, method = c.where.partition(" · ")
            lines.append(_md_row(c.spec, dataset, method, c.what, f"{c.before} → {c.after}", _md_verdict(c), _why(c)))
    if claims:
        lines += ["", _md_row("spec", "claim", "baseline → current", "verdict", "why"), _md_row(*["---"] * 5)]
        for c in claims:
            noun, _, name = c.where.partition(" ")
            lines.append(_md_row(c.spec, name + (" (check)" if noun == "check" else ""), f"{c.before} → {c.after}",
                                 _md_verdict(c), _why(c)))
    if specs:
        lines += ["", _md_row("spec", "what", "baseline → current", "verdict", "why"), _md_row(*["---"] * 5)]
        lines += [_md_row(c.spec, c.what, f"{c.before} → {c.after}", _md_verdict(c), _why(c)) for c in specs]
    lines += ["", _compared(report, tolerances) + ".", ""]
    return "\n".join(lines)


def _why(change: Change) -> str:
    """Why a change counts (or does not): its detail, or what its verdict means where it has none."""
    if change.detail:
        return change.detail
    claim = change.where.startswith(("claim ", "check "))
    return {"regressed": "it held in the baseline and no longer does" if claim else "a regression",
            "improved": "it holds now" if claim else "moved the right way",
            "moved": "neither verdict holds: listed only" if claim else "listed only",
            "new": "not in the baseline"}.get(change.verdict, "")


def _md_verdict(change: Change) -> str:
    return f"**{change.verdict}**" if change.regressed else change.verdict


def _md_row(*cells: str) -> str:
    """One Markdown table row, each cell as the leaderboard's Markdown writes one (on one line, pipes escaped)."""
    from harness.report.pages import table_text

    return "| " + " | ".join(table_text(c) for c in cells) + " |"


def describe_tolerances(tolerances: Tolerances) -> str:
    default = tolerances.default.describe() if tolerances.default is not None else "exact"
    parts = [f"{default} for metrics without a unit", "clock readings (s, ln s, 1/s) not compared"]
    parts += [f"{metric}: {t.describe()}" for metric, t in sorted(tolerances.per_metric.items())]
    return ", ".join(parts)
