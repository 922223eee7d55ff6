"""Leaderboards, computed only from a results folder (``spec.yaml`` + ``runs.jsonl``).

Per dataset: methods ranked by the primary metric's direction, mean and 95% t-interval
over seeds for every reported metric; a method whose interval overlaps the best one's is
marked as tied with it (≈). A dataset where no method's primary metric varies across seeds
is flagged: the seed does not change its instance, so it has no interval. A dataset where
every method's interval of the primary metric contains the task's chance level is not
ranked and is left out of the win rate: there is nothing to rank there but noise. Across
datasets: the mean win rate. Outputs Markdown, CSV and a static HTML page with one plot
panel per dataset; the claims' verdicts go to ``claims.json`` for the index.

Goals, units and arrows come from the folder's own metric table (``metrics.json``, see
:func:`harness.metrics.read_metric_table`), chance levels from ``chance.json`` and the
datasets a run left out from ``skipped.json``, the params tuning chose from ``tuning.json``,
never from the plugins registered in this process (nor Optuna), so any folder can be rebuilt
anywhere (an older folder without the last three simply has no chance levels, no skipped
datasets and no tuning section).
"""
from __future__ import annotations

import csv
import html
import io
import itertools
import json
import math
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from harness.claims import check_claim, page_blocks as claim_page_blocks
from harness.report.blocks import AT_CHANCE, PAGE_LIMIT, Table
from harness.columns import ColumnRows, current_rows, read_columns
from harness.hardware import classes_apart, device_class
from harness.metrics import Metric, read_chance_table, read_metric_table
from harness.spec.model import claim_entries, expand_grids, grid_members
from harness.stats import FLOAT_NOISE, mean_and_half_width, means_and_half_widths
from harness.store import CellRows, column, load_yaml, newest_code_only, read_cells, read_skipped_datasets, read_tuning_summaries, write_atomic

FORMATS = ("md", "csv", "html")
TIED = "≈"  # after a rank: the method's interval overlaps the best method's
NO_DEVICE = "device not recorded"  # the class of a row without a device, where a folder spans several classes


class NoResults(FileNotFoundError):
    pass


@dataclass(slots=True)
class Cell:
    mean: float
    half_width: float | None  # of the 95% t-interval; None with one seed, 0.0 when every seed gave the same value
    n: int

    @property
    def no_spread(self) -> bool:
        """Two or more seeds, all with the same value: a mean, but no interval."""
        return self.n >= 2 and self.half_width == 0.0

    def contains(self, value: float) -> bool:
        """Whether the 95% interval holds ``value``; without one (one seed, no spread), whether the mean is ``value``."""
        slack = FLOAT_NOISE * max(1.0, abs(self.mean), abs(value))
        return abs(self.mean - value) <= (self.half_width or 0.0) + slack

    def overlaps(self, other: "Cell") -> bool:
        """Whether the two 95% intervals (a lone mean without one) share a point."""
        slack = FLOAT_NOISE * max(1.0, abs(self.mean), abs(other.mean))
        return abs(self.mean - other.mean) <= (self.half_width or 0.0) + (other.half_width or 0.0) + slack


@dataclass
class Row:
    dataset: str
    method: str
    kind: str
    metrics: dict[str, Cell]
    seeds_ok: int
    seeds_failed: int
    rank: int = 0  # 0: not ranked (no primary value, or a dataset at chance)
    devices: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    seeds_skipped: int = 0
    skips: tuple[str, ...] = ()  # the distinct reasons its skipped seeds give
    tied: bool = False  # ranked below the best, with a 95% interval of the primary metric that overlaps the best's
    device_class: str | None = None  # set only where the folder's rows span several device classes

    @property
    def label(self) -> str:
        """The method, and its device class where the folder has several: what names the row on the page."""
        return row_label(self.method, self.device_class)


def row_label(method: str, device: str | None) -> str:
    return method if device is None else f"{method} on {device}"


def row_class(row: dict, apart: bool) -> str | None:
    """The row's device class where ``apart`` (the folder spans several classes), else None: one row per method."""
    return (device_class(row.get("device")) or NO_DEVICE) if apart else None


def summarise(values: list[float]) -> Cell:
    mean, half_width = mean_and_half_width(values)
    return Cell(mean, half_width, len(values))


def read_folder(folder: Path) -> tuple[dict[str, Any], list[dict]]:
    """The folder's resolved spec (a dataset grid written out) and its current rows (latest per dataset, method, seed).

    Where the rows span several device classes (:func:`harness.hardware.device_class`), latest per dataset,
    method, seed and device class: each class keeps its own cells; a row without a device (skipped before a
    device was chosen) gives way to its cell's rows on a device.
    """
    folder = Path(folder)
    if not (folder / "spec.yaml").exists():
        raise NoResults(f"{folder}: no results here (expected spec.yaml and runs.jsonl from `harness run`)")
    text = (folder / "spec.yaml").read_text()
    columns = read_columns(folder, text)  # first: it may hold the text parsed
    meta = load_yaml(text)
    # the pages show each dataset of a grid, and a claim naming a grid is about its datasets
    expansion = expand_grids(meta["spec"]["datasets"])  # once, for both
    meta["spec"]["claims"] = claim_entries(meta["spec"], grid_members(meta["spec"]["datasets"], expansion))
    meta["spec"]["datasets"] = expansion[0]
    spec_hash = meta["spec_hash"]
    if columns is not None:
        found = current_rows(columns, spec_hash)
        if found is not None:
            return meta, found
    current = newest_code_only([r for r in read_cells(folder, intern=True)
                                if r.spec_hash == spec_hash and r.split == "test"])
    apart = classes_apart(current)
    if not apart:  # the last row of each key, where its first row stood
        latest: dict[tuple, Any] = dict(zip(zip(column(current, "dataset"), column(current, "method"),
                                                column(current, "seed")), current))
        return meta, CellRows(latest.values())
    latest = {}
    for row in current:
        latest[(row["dataset"], row["method"], row["seed"], device_class(row.get("device")))] = row
    if apart:
        placed = {key[:3] for key in latest if key[3] is not None}
        latest = {key: row for key, row in latest.items() if key[3] is not None or key[:3] not in placed}
    return meta, CellRows(latest.values())


def build_rows(meta: dict, rows: list[dict], metrics: dict[str, Metric],
               chance: dict[str, dict[str, float]] | None = None) -> dict[str, list[Row]]:
    """Per dataset, its rows ranked by the primary metric; ``metrics`` is the folder's metric table.

    ``chance`` (dataset → metric → level, the folder's ``chance.json``): a dataset where every
    method is at chance on the primary metric keeps its order but gets no ranks.
    """
    spec = meta["spec"]
    primary = spec["metrics"]["primary"]
    goal = metrics[primary].goal
    dataset_order = [d.get("id", d["name"]) for d in spec["datasets"]]
    method_order = [m.get("id", m["name"]) for m in spec["methods"]]
    tables: dict[str, list[Row]] = {}
    for row in _group_rows(rows, spec["metrics"]["report"]):
        tables.setdefault(row.dataset, []).append(row)
    groups = {(row.dataset, row.method, row.device_class) for table in tables.values() for row in table}
    sign = -1 if goal == "max" else 1
    classes = sorted({key[2] for key in groups if key[2] not in (None, NO_DEVICE)}) + [NO_DEVICE]
    for dataset, table in tables.items():
        # one device class after another (one group where the folder has one), each ranked on its own
        table.sort(key=lambda r: (classes.index(r.device_class) if r.device_class else 0, primary not in r.metrics,
                                  sign * r.metrics[primary].mean if primary in r.metrics else 0,
                                  method_order.index(r.method) if r.method in method_order else 0))
        if _all_at_chance(table, primary, (chance or {}).get(dataset, {}).get(primary)):
            continue  # nothing to rank but noise
        for group in by_device_class(table):
            for i, row in enumerate(group):
                row.rank = i + 1 if primary in row.metrics else 0
            best = group[0].metrics.get(primary)
            for row in group[1:]:
                row.tied = best is not None and row.rank > 0 and row.metrics[primary].overlaps(best)
    place = {d: i for i, d in reversed(list(enumerate(dataset_order)))}  # a dict: 10k datasets sort in linear time
    return {d: tables[d] for d in sorted(tables, key=lambda d: place.get(d, 1e9))}


def _group_rows(rows: list, report: list[str]) -> list[Row]:
    """One unranked :class:`Row` per (dataset, method, device class where the rows span several), in the order of
    each group's first row: its cells (mean and 95% interval over its ok seeds of every metric in ``report``),
    seeds ok / failed / skipped, devices, errors and skip reasons.

    Columnar: the rows are read once into numpy arrays (group number, status, one float column per metric) and
    grouped by a stable sort, so the values of a group stay in the order written and every interval is the float
    the per-group lists gave (:func:`harness.stats.summarise_rows` on each sample size's rows at once)."""
    import numpy as np

    from harness.stats import summarise_rows

    if not rows:
        return []
    apart = classes_apart(rows)
    index: dict[tuple, int] = {}
    columnar = isinstance(rows, ColumnRows)  # its fields by their codes: no list of a million values per field
    named = None if columnar else column(rows, "device")
    if columnar:  # one device class (else read row by row): groups from the integer codes
        pair = rows.codes("dataset").astype(np.int64) * len(rows.columns.values["method"]) + rows.codes("method")
        _, at, inverse = np.unique(pair, return_index=True, return_inverse=True)
        order = np.argsort(at, kind="stable")  # the groups in order of appearance
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.arange(len(order))
        group = rank[inverse.reshape(-1)]
        datasets, methods = rows.columns.values["dataset"], rows.columns.values["method"]
        starts = at[order]
        index = dict(zip(zip(map(datasets.__getitem__, rows.codes("dataset")[starts].tolist()),
                             map(methods.__getitem__, rows.codes("method")[starts].tolist()),
                             itertools.repeat(None)), range(len(order))))
    else:
        classes = [(device_class(d) or NO_DEVICE) for d in named] if apart else [None] * len(rows)
        keys = zip(column(rows, "dataset"), column(rows, "method"), classes)
        # each key's number is the row number of its first row (a C pass); ranked, they number the groups 0, 1,
        # ... in order of appearance
        firsts = np.fromiter(map(index.setdefault, keys, itertools.count()), dtype=np.int64, count=len(rows))
        _, group = np.unique(firsts, return_inverse=True)
        index = dict(zip(index, range(len(index))))
    count = len(index)
    if columnar:
        codes, table = rows.codes("status"), rows.columns.values["status"]

        def status_in(*wanted):
            return np.isin(codes, [code for code, value in enumerate(table) if value in wanted])
    else:
        status = np.array(column(rows, "status"), dtype=object)

        def status_in(*wanted):
            return np.logical_or.reduce([status == value for value in wanted])
    ok = status_in("ok")
    failed = status_in("failed", "timed-out")
    skipped = status_in("skipped")
    _, first = np.unique(group, return_index=True)  # groups are numbered in order of appearance
    cells: list[dict[str, Cell]] = [{} for _ in range(count)]
    ok_at = np.flatnonzero(ok)
    ok_group = group[ok_at]
    if isinstance(rows, ColumnRows):  # its metric columns, nan where a row lacks one
        table = np.stack([rows.metric(name)[ok_at] for name in report], axis=1) if report else np.empty((len(ok_at), 0))
    else:
        every = column(rows, "metrics")
        table = _metric_table([every[i] for i in ok_at.tolist()], report)
    for k, name in enumerate(report):
        values = table[:, k]
        present = ~np.isnan(values)
        order = np.argsort(ok_group[present], kind="stable")  # each group's values in the order written
        ordered = values[present][order]
        sizes = np.bincount(ok_group[present], minlength=count)
        starts = np.cumsum(sizes) - sizes
        for size in np.unique(sizes[sizes > 0]).tolist():
            at = np.flatnonzero(sizes == size)
            data = ordered[starts[at][:, None] + np.arange(size)]
            for g, (mean, half) in zip(at.tolist(), summarise_rows(data)):
                cells[g][name] = Cell(mean, half, size)
    seeds_ok = np.bincount(group[ok], minlength=count).tolist()
    seeds_failed = np.bincount(group[failed], minlength=count).tolist()
    seeds_skipped = np.bincount(group[skipped], minlength=count).tolist()
    devices: list[tuple[str, ...]] = [()] * count
    names = sorted({d for d in (rows.distinct("device") if columnar else named) if d})
    if names:
        code = {d: i for i, d in enumerate(names)}
        # None and "" are no device: not in ``code``, so -1
        if columnar:
            device = np.array([code.get(d, -1) for d in rows.columns.values["device"]], dtype=np.int64)[
                rows.codes("device")]
        else:
            device = np.fromiter(map(code.get, named, itertools.repeat(-1)), dtype=np.int64, count=len(named))
        known = device >= 0
        for pair in np.unique(group[known] * len(names) + device[known]).tolist():  # by group, then device name
            g, d = divmod(pair, len(names))
            devices[g] = devices[g] + (names[d],)
    read: dict[str, list] = {}

    def at(name: str, positions) -> list:
        """The field on the rows at ``positions``."""
        if columnar:
            return rows.values_at(name, positions)
        found = read[name] if name in read else read.setdefault(name, column(rows, name))
        return [found[i] for i in positions.tolist()]

    errors: list[dict[str, None]] = [{} for _ in range(count)]
    where = np.flatnonzero(failed)
    for g, status_said, error in zip(group[where].tolist(), at("status", where), at("error", where)):
        errors[g][f"{status_said}: {error}"] = None
    skips: list[dict[str, None]] = [{} for _ in range(count)]
    where = np.flatnonzero(skipped)
    for g, error in zip(group[where].tolist(), at("error", where)):
        skips[g][str(error or "no reason recorded")] = None
    kinds = at("kind", first)
    return [Row(dataset, method, kinds[g], cells[g], seeds_ok[g], seeds_failed[g],
                devices=devices[g], errors=tuple(errors[g]), seeds_skipped=seeds_skipped[g], skips=tuple(skips[g]),
                device_class=device_class)
            for (dataset, method, device_class), g in index.items()]


def _metric_table(metrics: list[dict], report: list[str]):
    """A float array of one row per metrics dict and one column per name of ``report``; nan where a dict lacks one.

    Where every dict has every name (the common case), one C pass (``operator.itemgetter``) reads them all: a
    million rows' seven metrics in a fraction of a second, not seven Python passes."""
    import operator

    import numpy as np

    if not report:
        return np.empty((len(metrics), 0))
    try:
        found = list(map(operator.itemgetter(*report), metrics))
    except KeyError:
        return np.array([[m.get(name) for name in report] for m in metrics], dtype=float).reshape(-1, len(report))
    return np.array(found, dtype=float).reshape(-1, len(report))


def by_device_class(table: list[Row]) -> list[list[Row]]:
    """The table's rows in runs of one device class, in its order (the whole table where the folder has one)."""
    groups: list[list[Row]] = []
    for row in table:
        if groups and groups[-1][0].device_class == row.device_class:
            groups[-1].append(row)
        else:
            groups.append([row])
    return groups


def _all_at_chance(table: list[Row], metric: str, level: float | None) -> bool:
    if level is None:  # no chance level (most datasets of most tasks): nothing to gather
        return False
    cells = [r.metrics[metric] for r in table if metric in r.metrics]
    return bool(cells) and all(c.contains(level) for c in cells)


def at_chance(tables: dict[str, list[Row]], metric: str, chance: dict[str, dict[str, float]]) -> list[str]:
    """Datasets where every method's 95% interval of ``metric`` contains its chance level (every mean is it, without one)."""
    return [d for d, table in tables.items() if _all_at_chance(table, metric, chance.get(d, {}).get(metric))]


def win_rates(tables: dict[str, list[Row]], primary: str, metrics: dict[str, Metric],
              leave_out: tuple[str, ...] | list[str] = ()) -> dict[str, tuple[float, int]]:
    """Mean over datasets (less ``leave_out``) of the share of other methods beaten on the primary mean (ties count ½).

    Keyed by the row's label: where a folder spans several device classes, a method on one class is compared
    only with the other methods on that class.
    """
    goal = metrics[primary].goal
    per_method: dict[str, list[float]] = {}
    for dataset, table in tables.items():
        if dataset in leave_out:
            continue
        for group in by_device_class(table):
            scored = [r for r in group if primary in r.metrics]
            for row in scored:
                others = [o for o in scored if o is not row]
                if not others:
                    continue
                wins = 0.0
                for other in others:
                    a, b = row.metrics[primary].mean, other.metrics[primary].mean
                    wins += 0.5 if a == b else float(a > b if goal == "max" else a < b)
                per_method.setdefault(row.label, []).append(wins / len(others))
    return {m: (sum(v) / len(v), len(v)) for m, v in per_method.items()}


def zero_variance(tables: dict[str, list[Row]], primary: str) -> list[str]:
    """Datasets where every method with two or more seeds ok got the same primary value in every seed.

    The seed does not change such a dataset's instance (nor any method's randomness on it), so
    its rows are one measurement each: "± 0" over seeds is no interval.
    """
    flagged = []
    for dataset, table in tables.items():
        cells = [r.metrics[primary] for r in table if primary in r.metrics and r.metrics[primary].n >= 2]
        if cells and all(c.no_spread for c in cells):
            flagged.append(dataset)
    return flagged


@dataclass
class Board:
    """Everything a leaderboard shows, computed from one results folder."""

    meta: dict[str, Any]
    rows: list[dict]
    tables: dict[str, list[Row]]
    verdicts: list
    metrics: dict[str, Metric]
    chance: dict[str, dict[str, float]] = field(default_factory=dict)  # dataset → metric → level
    skipped_datasets: list[dict[str, str]] = field(default_factory=list)  # the latest run left these out
    tuning: list[dict[str, Any]] = field(default_factory=list)  # tuning.json's entries behind the shown rows

    @property
    def spec(self) -> dict[str, Any]:
        return self.meta["spec"]

    @property
    def primary(self) -> str:
        return self.spec["metrics"]["primary"]

    @cached_property
    def dataset_entries(self) -> dict[str, dict[str, Any]]:
        """The spec's dataset entries by id."""
        return {d.get("id", d["name"]): d for d in self.spec["datasets"]}

    @cached_property
    def at_chance(self) -> list[str]:
        return at_chance(self.tables, self.primary, self.chance)

    def datasets_at_chance(self, metric: str) -> list[str]:
        """The datasets where no method is above chance on ``metric`` (a claim's differences there compare noise)."""
        return at_chance(self.tables, metric, self.chance)

    @cached_property
    def zero_variance(self) -> list[str]:
        return zero_variance(self.tables, self.primary)


def fmt(value: float) -> str:
    if value == 0 or 1e-3 <= abs(value) < 1e4:
        return f"{value:.3f}"
    return f"{value:.3g}"


def fmt_cell(cell: Cell | None, chance: float | None = None) -> str:
    """``mean ± half-width``; "(at chance)" when the interval contains ``chance``."""
    if cell is None:
        return "—"
    notes = []
    if cell.no_spread:
        text = fmt(cell.mean)
        notes.append(f"{cell.n} seeds, no spread")
    elif cell.half_width is None:
        text = fmt(cell.mean)
        notes.append("1 seed")
    else:
        text = f"{fmt(cell.mean)} ± {fmt(cell.half_width)}"
    if chance is not None and cell.contains(chance):
        notes.append(AT_CHANCE)
    return text + (f" ({'; '.join(notes)})" if notes else "")


def _table_text(text: str) -> str:
    """Text for one Markdown table cell: on one line, its pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


# --------------------------------------------------------------------------- the page, as blocks
# Markdown and HTML are written from the same blocks: a heading, a paragraph, a list item, a
# table (its cells plain text with **bold** and `code`, or (text, CSS class)), the plot.


def _text(cell) -> str:
    return cell[0] if isinstance(cell, tuple) else cell


def _unit(metric: Metric, value: float) -> str:
    return f"{value:g}{' ' + metric.unit if metric.unit else ''}"


def _header_lines(board: Board) -> list[str]:
    meta, rows, spec, primary = board.meta, board.rows, board.spec, board.primary
    commits = sorted(set(column(rows, "git_commit")))
    devices = sorted({d for d in set(column(rows, "device")) if d})
    versions = rows[-1]["versions"] if rows else {}
    task_versions = sorted(set(column(rows, "task_version")))
    seeds = sorted(set(column(rows, "seed")))
    lines = [
        f"spec `{spec['name']}` (hash `{meta['spec_hash']}`), profile **{meta['profile']}**, task `{spec['task']}` "
        f"version {', '.join(task_versions) or '?'}",
        f"seeds: {', '.join(map(str, seeds))}; every value is the mean ± the half-width of a 95% t-interval over seeds "
        f"(test split; tuning used only the validation split)",
        f"rank: by {primary} {board.metrics[primary].arrow}; “{TIED}” after a rank: that method's 95% interval of "
        f"{primary} overlaps the best method's, so these seeds do not separate the two",
    ]
    if any(board.chance.values()):
        lines.append(f"chance level: the value a metric takes at chance, as the task declares it (given per "
                     f"dataset below); “{AT_CHANCE}” marks a value whose 95% interval "
                     f"contains it (or, without an interval, whose mean is it); a dataset where every method is at "
                     f"chance on {primary} is not ranked and is left out of the mean win rate")
    lines += [
        f"hardware: {'; '.join(devices) or 'none recorded'}",
        f"commit: {', '.join(commits) or 'unknown'}; " + ", ".join(f"{k} {v}" for k, v in versions.items()),
    ]
    return lines


def _win_rate_blocks(board: Board) -> list:
    primary, metrics = board.primary, board.metrics
    left_out = board.at_chance
    rates = win_rates(board.tables, primary, metrics, leave_out=left_out)
    blocks: list = []
    if rates:
        kinds = {r.label: r.kind for t in board.tables.values() for r in t}
        rows = [[method, kinds[method], f"{rate:.3f}", str(n)]
                for method, (rate, n) in sorted(rates.items(), key=lambda kv: -kv[1][0])]
        blocks += [("h2", f"Mean win rate across datasets ({primary} {metrics[primary].arrow})"),
                   ("table", Table(["method", "kind", "mean win rate", "datasets"], rows))]
    if left_out:
        if not rates:
            blocks.append(("h2", f"Mean win rate across datasets ({primary} {metrics[primary].arrow})"))
        blocks.append(("p", f"Left out of the win rate and not ranked: {', '.join(left_out)}: every method's 95% "
                            f"interval of {primary} contains the chance level there."))
    return blocks


def _skipped_blocks(board: Board) -> list:
    if not board.skipped_datasets:
        return []
    return [("h2", "Datasets not run"),
            ("p", "The latest run left these datasets out before planning any cell:")] + [
        ("li", f"`{s['dataset']}`: {s['reason']}") for s in board.skipped_datasets]


def current_tuning(meta: dict[str, Any], rows: list[dict], entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``tuning.json`` entries that chose the params of the shown rows: same dataset, method,
    spec hash and code as the pair's newest rows, in the spec's order of datasets, then methods."""
    if not entries:
        return []  # no tuning: no need to go through a million rows
    code = dict(zip(zip(column(rows, "dataset"), column(rows, "method")), column(rows, "code")))
    current = [e for e in entries if (e["dataset"], e["method"]) in code and e.get("spec_hash") == meta["spec_hash"]
               and e.get("code") == code[(e["dataset"], e["method"])]]
    datasets = [d.get("id", d["name"]) for d in meta["spec"]["datasets"]]
    methods = [m.get("id", m["name"]) for m in meta["spec"]["methods"]]

    def place(name: str, order: list[str]) -> int:
        return order.index(name) if name in order else len(order)

    return sorted(current, key=lambda e: (place(e["dataset"], datasets), place(e["method"], methods)))


def fmt_params(params: dict[str, Any]) -> str:
    """``name=value, ...``; floats to 3 significant digits."""
    return ", ".join(f"{name}={value:.3g}" if isinstance(value, float) else f"{name}={value}"
                     for name, value in params.items())


STABILITY = {True: "stable", False: "differs across seeds"}


def _seed_text(entry: dict[str, Any]) -> str:
    """What each validation seed alone would have picked, beside the chosen params."""
    chosen = entry["chosen"]["params"]
    return "; ".join(f"seed {s['seed']}: same (rank {s['rank']})" if s["best_params"] == chosen else
                     f"seed {s['seed']}: would pick {fmt_params(s['best_params'])} "
                     f"(chosen ranks {s['rank']} of {s['of']})" for s in entry["by_seed"]) or "—"


def _verdict_text(entry: dict[str, Any]) -> str:
    if entry["stable"] is not None:
        return STABILITY[entry["stable"]]
    return "one seed: cannot tell" if len(entry["by_seed"]) == 1 else "per-seed values not recorded"


def _tuning_blocks(board: Board) -> list:
    if not board.tuning:
        return []
    primary, metric = board.primary, board.metrics[board.primary]
    rows = [[e["dataset"], e["method"], fmt_params(e["chosen"]["params"]) or "—", fmt(e["chosen"]["value"]),
             str(e["trials"]), _seed_text(e), _verdict_text(e)] for e in board.tuning]
    chooses = "maximises" if metric.goal == "max" else "minimises"
    return [("h2", "Tuning"),
            ("p", f"The params tuning chose for each tuned pair, used on every test seed. The chosen trial {chooses} "
                  f"the mean of {primary} over the validation seeds (the validation value); each seed alone could "
                  f"pick another trial. Per validation seed: “same” when that seed alone picks the chosen params, "
                  f"else the params it would pick and the chosen trial's rank among the completed trials on that "
                  f"seed (1 = best). “stable”: every seed alone picks the chosen params."),
            ("table", Table(["dataset", "method", "chosen params", f"validation {primary} {metric.arrow}", "trials",
                             "per validation seed", "verdict"], rows))]


def _dataset_blocks(board: Board, dataset: str, table: list[Row]) -> list:
    spec, metrics, primary = board.spec, board.metrics, board.primary
    report = spec["metrics"]["report"]
    entry = board.dataset_entries.get(dataset, {})
    params = ", ".join(f"{k}={v}" for k, v in entry.get("params", {}).items())
    levels = board.chance.get(dataset, {})
    shown = sorted((m for m in levels if m in metrics), key=lambda m: report.index(m) if m in report else len(report))
    blocks: list = [("h2", dataset), ("p", f"`{entry.get('name', dataset)}`" + (f" ({params})" if params else "")
                                           + ("; chance level: " + ", ".join(f"{m} {_unit(metrics[m], levels[m])}"
                                                                             for m in shown) if shown else ""))]
    if dataset in board.at_chance:
        blocks.append(("p", f"**Not ranked, at chance:** every method's 95% interval of {primary} contains its chance "
                            f"level ({_unit(metrics[primary], levels[primary])}): no method does better than "
                            f"guessing here, so the order below is noise and the dataset is left out of the win rate."))
    if dataset in board.zero_variance:
        blocks.append(("p", f"**No interval:** {primary} is the same in every seed for every method with two or more "
                            f"seeds here: the seed does not change this dataset's instance, so each row is one "
                            f"measurement, not a mean over independent draws."))

    def column(m: str) -> str:
        return f"{m} {metrics[m].arrow}" + (f" [{metrics[m].unit}]" if metrics[m].unit else "")

    main = [m for m in report if m == primary or not metrics[m].secondary]
    extra = [m for m in report if m not in main]
    rows = []
    apart = any(row.device_class for row in table)  # then each device class is ranked on its own
    for row in table:
        rank = "—" if not row.rank else f"{row.rank} {TIED}" if row.tied else str(row.rank)
        rows.append([rank, row.method, *([row.device_class] if apart else []), row.kind,
                     *(fmt_cell(row.metrics.get(m), levels.get(m)) for m in main),
                     str(row.seeds_ok), str(row.seeds_failed), str(row.seeds_skipped)])
    blocks.append(("table", Table(["rank", "method", *(["device class"] if apart else []), "kind", *map(column, main),
                                   "seeds ok", "failed", "skipped"], rows)))
    if apart:
        blocks.append(("p", "Each device class is ranked on its own: its timings and its cells are never pooled "
                            "with another class's."))
    if extra or len({d for row in table for d in row.devices}) > 1:  # one device for all is in the page's header
        details = [[row.label, *(fmt_cell(row.metrics.get(m), levels.get(m)) for m in extra),
                    "; ".join(row.devices) or "—"] for row in table]
        blocks.append(("table", Table(["method", *map(column, extra), "devices"], details,
                                      summary=f"More columns of {dataset}: " + ", ".join([*extra, "devices"]))))
    blocks += [("li", f"{row.label}: {error}") for row in table for error in row.errors]
    skips: dict[str, list[Row]] = {}
    for row in table:
        for reason in row.skips:
            skips.setdefault(reason, []).append(row)
    blocks += [("li", f"skipped ({', '.join(f'{r.label} × {r.seeds_skipped}' for r in hit)}): {reason}")
               for reason, hit in skips.items()]
    return blocks


def page_blocks(board: Board) -> list:
    """The leaderboard page, as the blocks :func:`render_markdown` and :func:`render_html` write (computed once per
    board: read-only tuples and tables)."""
    if "_page_blocks" not in board.__dict__:
        board.__dict__["_page_blocks"] = _page_blocks(board)
    return board.__dict__["_page_blocks"]


def _page_blocks(board: Board) -> list:
    spec = board.spec
    blocks: list = [("h1", spec["title"]), ("p", f"Leaderboard of `{spec['name']}` — {board.meta['profile']} profile.")]
    if spec.get("description"):
        blocks.append(("p", " ".join(spec["description"].split())))
    if spec.get("paper"):
        paper = spec["paper"]
        blocks.append(("p", f"Paper: {paper['title']}" + (f" ({paper['venue']})" if paper.get("venue") else "")))
    blocks += [("li", line) for line in _header_lines(board)]
    blocks.append(("figure",))
    blocks += claim_page_blocks(board.verdicts, board) + _curve_blocks(board) + _win_rate_blocks(board) + _skipped_blocks(board)
    blocks += _tuning_blocks(board)
    if len(board.tables) > PAGE_LIMIT:
        return blocks + _many_datasets_blocks(board)
    for dataset, table in board.tables.items():
        blocks += _dataset_blocks(board, dataset, table)
    return blocks


SHOWN_NAMES = 10  # beyond PAGE_LIMIT, a list of datasets (no spread, at chance) names this many, then counts


def _names(datasets: list[str]) -> str:
    shown = ", ".join(f"`{d}`" for d in datasets[:SHOWN_NAMES])
    return shown + (f" and {len(datasets) - SHOWN_NAMES} more" if len(datasets) > SHOWN_NAMES else "")


def _many_datasets_blocks(board: Board) -> list:
    """Beyond :data:`PAGE_LIMIT` datasets, instead of a section per dataset: each method's ranks over the datasets,
    the flagged datasets and the failures counted, and where every table is (leaderboard.csv, complete).

    A page of thousands of tables (46 MB of HTML for 16,667 datasets) is neither readable nor cheap to write; the
    CSV has every dataset × method row with every column those tables show."""
    primary, metrics = board.primary, board.metrics
    blocks: list = [("h2", f"Per dataset ({len(board.tables)} datasets)"), ("p",
                     f"**The per-dataset tables are in `leaderboard.csv`**: with more than {PAGE_LIMIT} datasets this "
                     f"page shows each method's ranks over them instead. The CSV has one row per dataset and method "
                     f"with everything a table here would show: the rank (and `tied_with_best`, the “{TIED}”), the "
                     f"mean, 95% half-width and number of seeds of every reported metric, seeds ok, failed and "
                     f"skipped, the devices, the chance level and the `zero_variance` and `at_chance` flags.")]
    ranks: dict[str, list[int]] = {}
    kinds: dict[str, str] = {}
    counts: dict[str, list[int]] = {}  # label → [rows, tied, seeds ok, failed, skipped]
    for table in board.tables.values():
        for row in table:
            kinds.setdefault(row.label, row.kind)
            seen = counts.setdefault(row.label, [0, 0, 0, 0, 0])
            seen[0] += 1
            seen[1] += row.tied
            seen[2] += row.seeds_ok
            seen[3] += row.seeds_failed
            seen[4] += row.seeds_skipped
            if row.rank:
                ranks.setdefault(row.label, []).append(row.rank)
    rows = []
    mean_rank = {label: sum(got) / len(got) for label, got in ranks.items()}
    for label, seen in sorted(counts.items(), key=lambda kv: mean_rank.get(kv[0], math.inf)):
        got = ranks.get(label, [])
        mean = f"{mean_rank[label]:.2f}" if got else "—"
        rows.append([label, kinds[label], str(seen[0]), str(len(got)), mean, str(got.count(1)), str(seen[1]),
                     str(seen[2]), str(seen[3]), str(seen[4])])
    blocks.append(("table", Table(["method", "kind", "datasets", "ranked", f"mean rank ({primary} "
                                   f"{metrics[primary].arrow})", "ranked 1", f"tied with the best ({TIED})",
                                   "seeds ok", "failed", "skipped"], rows)))
    if board.zero_variance:
        blocks.append(("p", f"**No interval** on {len(board.zero_variance)} datasets ({_names(board.zero_variance)}): "
                            f"{primary} is the same in every seed for every method with two or more seeds there "
                            f"(`zero_variance` in the CSV)."))
    if board.at_chance:
        blocks.append(("p", f"**Not ranked, at chance** on {len(board.at_chance)} datasets "
                            f"({_names(board.at_chance)}): every method's 95% interval of {primary} contains its "
                            f"chance level there (`at_chance` in the CSV)."))
    errors: dict[str, int] = {}  # message → dataset × method rows that gave it
    skips: dict[str, int] = {}
    for table in board.tables.values():
        for row in table:
            for error in row.errors:
                errors[error] = errors.get(error, 0) + 1
            for reason in row.skips:
                skips[reason] = skips.get(reason, 0) + 1
    blocks += [("li", f"{error} (on {count} dataset × method rows)") for error, count in errors.items()]
    blocks += [("li", f"skipped ({count} dataset × method rows): {reason}") for reason, count in skips.items()]
    return blocks


def render_markdown(board: Board) -> str:
    out: list[str] = []
    previous = None
    for block in page_blocks(board):
        kind = block[0]
        if kind == "figure":
            continue
        if kind == "curves-figure":
            block = ("p", f"![curves]({CURVES_SVG})")
            kind = "p"
        if out and not (kind == "li" and previous == "li"):
            out.append("")
        if kind == "h1":
            out.append(f"# {block[1]}")
        elif kind == "h2":
            out.append(f"## {block[1]}")
        elif kind == "p":
            out.append(block[1])
        elif kind == "li":
            out.append(f"- {block[1]}")
        elif kind == "table":
            table: Table = block[1]
            if table.summary:
                out += [f"{table.summary}:", ""]
            out.append("| " + " | ".join(_table_text(h) for h in table.header) + " |")
            out.append("|" + "---|" * len(table.header))
            out += ["| " + " | ".join(_table_text(_text(c)) for c in row) + " |" for row in table.rows]
        previous = kind
    return "\n".join(out) + "\n"


def render_csv(board: Board) -> str:
    meta, tables = board.meta, board.tables
    report = meta["spec"]["metrics"]["report"]
    flagged, chance_datasets = set(board.zero_variance), set(board.at_chance)
    apart = any(row.device_class for table in tables.values() for row in table)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    # new columns go at the end: `harness regress` and other readers find the older ones where they were;
    # device_class only where the folder spans several classes (then a row is a method on one class)
    writer.writerow(["spec", "profile", "dataset", "rank", "method", "kind", "seeds_ok", "seeds_failed"]
                    + [f"{m}_{part}" for m in report for part in ("mean", "ci95", "n")]
                    + ["devices", "zero_variance", "seeds_skipped", "tied_with_best", "chance", "at_chance"]
                    + (["device_class"] if apart else []))
    for dataset, table in tables.items():
        level = board.chance.get(dataset, {}).get(board.primary)
        for row in table:
            values = []
            for m in report:
                cell = row.metrics.get(m)
                values += ["", "", 0] if cell is None else [
                    repr(cell.mean), "" if cell.half_width is None else repr(cell.half_width), cell.n]
            writer.writerow([meta["spec"]["name"], meta["profile"], dataset, row.rank or "", row.method, row.kind,
                             row.seeds_ok, row.seeds_failed, *values, "; ".join(row.devices),
                             "true" if dataset in flagged else "false", row.seeds_skipped,
                             ("true" if row.tied else "false") if row.rank else "", "" if level is None else repr(level),
                             "true" if dataset in chance_datasets else "false", *([row.device_class] if apart else [])])
    return buffer.getvalue()


PANEL_COLUMNS = 4
PANEL_LIMIT = 48  # datasets (or curve panels) one figure shows panel by panel; beyond, a summary (see plot_figure)


def plot_figure(board: Board):
    """The primary metric per method: one panel per dataset, each on its own y-axis, with 95% intervals and the
    chance level (a dashed line, or a note at the edge where a line would squash the panel's scale).

    Beyond :data:`PANEL_LIMIT` datasets, panels would be unreadable and slow (8 s for 3,000): one panel instead,
    the distribution of each method's rank over the ranked datasets (:func:`plot_rank_summary`).
    """
    if len(board.tables) > PANEL_LIMIT:
        return plot_rank_summary(board)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    meta, tables, metrics, primary = board.meta, board.tables, board.metrics, board.primary
    datasets = list(tables)
    methods = list(dict.fromkeys(r.label for t in tables.values() for r in t))
    implementations = {r.label for t in tables.values() for r in t if r.kind == "implementation"}
    chance_datasets = set(board.at_chance)
    lines = math.ceil(len(datasets) / PANEL_COLUMNS)
    columns = math.ceil(len(datasets) / lines)  # balanced: 5 panels are 3 + 2, not 4 + 1
    fig, axes = plt.subplots(lines, columns, figsize=(3.2 * columns, 2.5 * lines + 1.3), sharey=False, squeeze=False)
    label = f"{primary} {metrics[primary].arrow}" + (f" [{metrics[primary].unit}]" if metrics[primary].unit else "")
    drew_chance = False
    for k, ax in enumerate(axes.flat):
        if k >= len(datasets):
            ax.set_visible(False)
            continue
        dataset = datasets[k]
        for j, method in enumerate(methods):
            row = next((r for r in tables[dataset] if r.label == method and primary in r.metrics), None)
            if row:
                cell = row.metrics[primary]
                ax.errorbar([j], [cell.mean], yerr=[cell.half_width or 0.0], fmt="o" if method in implementations else "s",
                            color=f"C{j % 10}", capsize=3)
        level = board.chance.get(dataset, {}).get(primary)
        if level is not None:
            low, high = ax.get_ylim()
            if low - 0.5 * (high - low) <= level <= high + 0.5 * (high - low):
                ax.axhline(level, color="0.35", linestyle="--", linewidth=1)
                drew_chance = True
            else:  # far off: a line would squash this panel's own scale into a band
                below = level < low
                ax.annotate(f"chance {level:g} {'↓' if below else '↑'}", xy=(0.02, 0.03 if below else 0.97),
                            xycoords="axes fraction", va="bottom" if below else "top", fontsize="x-small", color="0.35")
        ax.set_title(dataset + (f" ({AT_CHANCE})" if dataset in chance_datasets else ""), fontsize="medium")
        ax.set_xticks([])
        ax.set_xlim(-0.6, len(methods) - 0.4)
        ax.grid(axis="y", alpha=0.3)
        ax.tick_params(axis="y", labelsize="small")
        if k % columns == 0:
            ax.set_ylabel(label)
    handles = [Line2D([], [], color=f"C{j % 10}", marker="o" if m in implementations else "s", linestyle="", label=m)
               for j, m in enumerate(methods)]
    if drew_chance:
        handles.append(Line2D([], [], color="0.35", linestyle="--", linewidth=1, label="chance level"))
    fig.legend(handles=handles, loc="lower center", ncol=min(len(handles), 4), fontsize="small", frameon=False)
    fig.suptitle(f"{meta['spec']['name']} ({meta['profile']}): {primary}, mean and 95% interval over seeds, each "
                 f"panel on its own scale; ● implementation, ■ baseline", fontsize="medium")
    legend_rows = math.ceil(len(handles) / 4)
    fig.tight_layout(rect=(0, (0.25 * legend_rows + 0.1) / fig.get_figheight(), 1, 1))
    return fig


def plot_rank_summary(board: Board):
    """One panel for a folder of many datasets: per method (label), a box plot of its rank on the primary metric
    over the datasets where it was ranked (box: quartiles, whiskers: 5th and 95th percentiles, a dot: the mean)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ranks: dict[str, list[int]] = {}
    for table in board.tables.values():
        for row in table:
            ranks.setdefault(row.label, [])
            if row.rank:
                ranks[row.label].append(row.rank)
    methods = list(ranks)
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(methods) + 2.0))
    shown = [m for m in methods if ranks[m]]
    if shown:
        ax.boxplot([ranks[m] for m in shown], orientation="horizontal", whis=(5, 95), showfliers=False,
                   showmeans=True, meanprops={"marker": "o", "markerfacecolor": "C1", "markeredgecolor": "C1"})
        ax.set_yticks(range(1, len(shown) + 1), [f"{m} ({len(ranks[m])})" for m in shown], fontsize="small")
        ax.invert_yaxis()
    ax.set_xlabel(f"rank by {board.primary} {board.metrics[board.primary].arrow} (1 = best)")
    ax.grid(axis="x", alpha=0.3)
    ranked = sum(any(row.rank for row in table) for table in board.tables.values())
    ax.set_title(f"{board.spec['name']} ({board.meta['profile']}): each method's rank over {ranked} ranked of "
                 f"{len(board.tables)} datasets (in brackets: datasets where it was ranked); box: quartiles, "
                 f"whiskers: 5th-95th percentile, dot: mean", fontsize="small", wrap=True)
    fig.tight_layout()
    return fig


CURVES_SVG = "curves.svg"
CURVE_TABLE_POINTS = 8  # the page's table of a curve shows at most this many x values


@dataclass
class CurveLine:
    """One method's curve on one dataset: the mean over seeds at each x, its 95% half-width, and the theory."""

    method: str
    x: list[float]
    mean: list[float]
    half_width: list[float | None]
    theory: list[float] | None
    seeds: int


def curve_panels(board: Board) -> dict[tuple[str, str], tuple[str, str, list[CurveLine]]]:
    """(dataset, curve name) → (x label, y label, one line per method), from the rows' ``curves``. A method's seeds
    are averaged where their x values agree with its first seed's; seeds measured at other x are left out."""
    if "_curve_panels" in board.__dict__:  # the page asks three times
        return board.__dict__["_curve_panels"]
    board.__dict__["_curve_panels"] = panels = _curve_panels(board)
    return panels


def _curve_panels(board: Board) -> dict[tuple[str, str], tuple[str, str, list[CurveLine]]]:
    method_order = [m.get("id", m["name"]) for m in board.spec["methods"]]
    dataset_order = list(board.tables) or [d.get("id", d["name"]) for d in board.spec["datasets"]]
    found: dict[tuple[str, str], dict[tuple[str, str | None], list[dict]]] = {}
    labels: dict[tuple[str, str], tuple[str, str]] = {}
    apart = classes_apart(board.rows)  # then a line per method and device class
    rows = board.rows
    for at, (status, curves) in enumerate(zip(column(rows, "status"), column(rows, "curves"))):
        if status != "ok" or not curves:
            continue
        row = rows[at]
        for name, curve in curves.items():
            found.setdefault((row["dataset"], name), {}).setdefault((row["method"], row_class(row, apart)), []).append(curve)
            labels.setdefault((row["dataset"], name), (curve.get("x_label", "step"), curve.get("y_label") or name))
    panels = {}
    place = {d: i for i, d in reversed(list(enumerate(dataset_order)))}
    for key in sorted(found, key=lambda k: (place.get(k[0], len(dataset_order)), k)):
        lines = []
        for method, device in sorted(found[key], key=lambda m: (method_order.index(m[0]) if m[0] in method_order
                                                                else len(method_order), m[1] or "")):
            curves = found[key][(method, device)]
            x = curves[0]["x"]
            same = [c for c in curves if c["x"] == x]
            columns = list(zip(*(c["y"] for c in same)))
            stats = [mean_and_half_width(list(col)) for col in columns]
            theories = [c["theory"] for c in same if c.get("theory") is not None]
            theory = [sum(t) / len(t) for t in zip(*theories)] if theories else None
            lines.append(CurveLine(row_label(method, device), list(x), [m for m, _ in stats], [h for _, h in stats],
                                   theory, len(same)))
        panels[key] = (*labels[key], lines)
    return panels


def _curve_blocks(board: Board) -> list:
    panels = curve_panels(board)
    if not panels:
        return []
    blocks: list = [("h2", "Curves"), ("p",
                     "Each method's measured curve is its mean over seeds (the band and ± are the half-width of the "
                     "95% t-interval); a dashed line of the same colour is the theory's prediction for that method, "
                     "averaged over the same seeds."), ("curves-figure",)]
    for (dataset, name), (x_label, y_label, lines) in panels.items():
        xs = sorted({x for line in lines for x in line.x})  # every method's x: curves may differ in length
        step = max(1, math.ceil(len(xs) / CURVE_TABLE_POINTS))
        shown = [xs[i] for i in sorted(set(range(0, len(xs), step)) | {len(xs) - 1})]
        rows = []
        for line in lines:
            at = {x: i for i, x in enumerate(line.x)}
            rows.append([line.method, str(line.seeds),
                         *[_fmt_mean(line.mean[at[x]], line.half_width[at[x]]) if x in at else "—" for x in shown]])
            if line.theory is not None:
                rows.append([f"{line.method} (theory)", str(line.seeds),
                             *[f"{line.theory[at[x]]:.4g}" if x in at else "—" for x in shown]])
        header = ["method", "seeds", *[f"{x_label} {x:g}" for x in shown]]
        blocks.append(("table", Table(header, rows, summary=f"{dataset}: {y_label} against {x_label}")))
    return blocks


def _fmt_mean(mean: float, half: float | None) -> str:
    return f"{mean:.4g}" + ("" if half is None else f" ± {half:.2g}")


def plot_curves(board: Board):
    """One panel per (dataset, curve): each method's mean curve with its 95% band, its theory dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    panels = curve_panels(board)
    total = len(panels)
    if total > PANEL_LIMIT:  # the first panels, in the page's order; every panel's table is on the page
        panels = dict(list(panels.items())[:PANEL_LIMIT])
    methods = list(dict.fromkeys(line.method for _, _, lines in panels.values() for line in lines))
    # up to 20 distinct colours (tab20), then the same colours dash-dotted and dotted: 60 methods stay apart
    palette = matplotlib.colormaps["tab20"].colors if len(methods) > 10 else [f"C{i}" for i in range(10)]
    colour = {m: palette[i % len(palette)] for i, m in enumerate(methods)}
    style = {m: ("-", "-.", ":")[(i // len(palette)) % 3] for i, m in enumerate(methods)}
    rows = math.ceil(len(panels) / PANEL_COLUMNS)
    columns = math.ceil(len(panels) / rows)
    fig, axes = plt.subplots(rows, columns, figsize=(3.6 * columns, 2.8 * rows + 1.3), squeeze=False)
    theory_drawn = False
    for ax, ((dataset, name), (x_label, y_label, lines)) in zip(axes.flat, panels.items()):
        positive = all(v > 0 for line in lines for v in line.mean + (line.theory or []))
        for line in lines:
            ax.plot(line.x, line.mean, color=colour[line.method], linestyle=style[line.method],
                    marker="." if len(line.x) <= 20 else None)
            if any(h is not None for h in line.half_width):
                low = [m - (h or 0.0) for m, h in zip(line.mean, line.half_width)]
                high = [m + (h or 0.0) for m, h in zip(line.mean, line.half_width)]
                ax.fill_between(line.x, low, high, color=colour[line.method], alpha=0.15, linewidth=0)
            if line.theory is not None:
                ax.plot(line.x, line.theory, color=colour[line.method], linestyle="--", linewidth=1)
                theory_drawn = True
        values = [v for line in lines for v in line.mean if v > 0]
        if positive and values and max(values) > 100 * min(values):
            ax.set_yscale("log")  # a curve over orders of magnitude reads as one
        ax.set_title(f"{dataset}: {name}", fontsize="medium")
        ax.set_xlabel(x_label, fontsize="small")
        ax.set_ylabel(y_label, fontsize="small")
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize="small")
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    handles = [Line2D([], [], color=colour[m], linestyle=style[m], label=m) for m in methods]
    if theory_drawn:
        handles.append(Line2D([], [], color="0.35", linestyle="--", linewidth=1, label="theory (method's colour)"))
    fig.legend(handles=handles, loc="lower center", ncol=min(len(handles), 4), fontsize="small", frameon=False)
    fig.suptitle(f"{board.spec['name']} ({board.meta['profile']}): measured curves, mean and 95% band over seeds"
                 + (f" (the first {len(panels)} of {total} panels; each one's table is on the page)"
                    if total > len(panels) else ""), fontsize="medium")
    fig.tight_layout(rect=(0, (0.25 * math.ceil(len(handles) / 4) + 0.1) / fig.get_figheight(), 1, 1))
    return fig


def render_curves_svg(board: Board) -> str:
    """:func:`plot_curves` as SVG."""
    return _figure_svg(plot_curves(board), "harness-curves")


def render_plot_svg(board: Board) -> str:
    """:func:`plot_figure` as inline SVG."""
    return _figure_svg(plot_figure(board), "harness-leaderboard")


def _figure_svg(fig, salt: str) -> str:
    """A matplotlib figure as an ``<svg>`` element, closed after. A fixed id salt and no date: rebuilding an unchanged
    folder rewrites the page byte for byte."""
    import matplotlib.pyplot as plt

    buffer = io.StringIO()
    with plt.rc_context({"svg.hashsalt": salt}):
        fig.savefig(buffer, format="svg", metadata={"Date": None})
    plt.close(fig)
    svg = buffer.getvalue()
    return svg[svg.index("<svg"):]


STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:1280px;margin:2em auto;padding:0 1em;line-height:1.35}"
    "table{border-collapse:collapse;margin:1em 0;font-size:.92em}"
    "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}"
    "th{background:#f3f3f3}"
    ".meta{margin:.2em 0;color:#444}figure{margin:0}svg{max-width:100%;height:auto}"
    "details{margin:.5em 0 1em}summary{cursor:pointer;color:#444}details table{margin-top:.5em}"
    ".verdict{font-weight:bold}"
    ".reproduced{background:#dcf2dc;color:#14551b}"
    ".not-reproduced{background:#fadcdc;color:#8a1414}"
    ".inconclusive{background:#fdf0d0;color:#7a5200}"
)


def render_html(board: Board) -> str:
    """A static page: the header, the plot, then the tables (secondary ones collapsed)."""
    body: list[str] = []
    for block in page_blocks(board):
        kind = block[0]
        if kind == "figure":
            body.append(f"<figure>{render_plot_svg(board)}</figure>" if board.tables else "<p>No finished cells yet.</p>")
        elif kind == "curves-figure":
            body.append(f"<figure>{render_curves_svg(board)}</figure>")
        elif kind == "h1":
            body.append(f"<h1>{_inline(block[1])}</h1>")
        elif kind == "h2":
            body.append(f"<h2>{_inline(block[1])}</h2>")
        elif kind == "p":
            body.append(f"<p>{_inline(block[1])}</p>")
        elif kind == "li":
            body.append(f"<p class='meta'>{_inline(block[1])}</p>")
        elif kind == "table":
            body.append(_html_table(block[1]))
    title = html.escape(board.spec["title"])
    return (f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>{title}</title>"
            f"<style>{STYLE}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")


def _html_table(table: Table) -> str:
    def cell(tag: str, value) -> str:
        text, cls = (value if isinstance(value, tuple) else (value, ""))
        text = _inline(text).replace("_", "_<wbr>")  # long metric names may break after an underscore
        return f"<{tag} class='{cls}'>{text}</{tag}>" if cls else f"<{tag}>{text}</{tag}>"

    rows = ["<tr>" + "".join(cell("th", h) for h in table.header) + "</tr>"]
    rows += ["<tr>" + "".join(cell("td", c) for c in row) + "</tr>" for row in table.rows]
    text = "<table>\n" + "\n".join(rows) + "\n</table>"
    if table.summary:
        return f"<details><summary>{_inline(table.summary)}</summary>\n{text}\n</details>"
    return text


def _inline(text: str) -> str:
    text = html.escape(text)
    if "*" not in text and "`" not in text:
        return text  # most table cells: nothing to mark up
    text = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", text)
    return re.sub(r"`(.+?)`", r"<code>\1</code>", text)


def folder_metrics(folder: Path, spec: dict) -> dict[str, Metric]:
    """The folder's metric table, checked to hold every metric the spec reports or claims."""
    metrics = read_metric_table(folder)
    needed = [spec["metrics"]["primary"], *spec["metrics"]["report"], *(c["metric"] for c in spec.get("claims", [])),
              *(c["precondition"]["metric"] for c in spec.get("claims", []) if c.get("precondition"))]
    missing = sorted(set(needed) - set(metrics))
    if missing:
        raise NoResults(f"{folder}: no goal or unit known for {', '.join(missing)}: the folder has no metrics.json "
                        f"(written by runs of this harness version on) and no registered family declares them; "
                        f"register the plugin that does (e.g. HARNESS_PLUGINS) to rebuild this older folder")
    return metrics


def compute(folder: Path) -> Board:
    """Everything the leaderboard of a results folder shows."""
    meta, rows = read_folder(folder)
    spec = meta["spec"]
    metrics = folder_metrics(folder, spec)
    chance = read_chance_table(folder)
    tables = build_rows(meta, rows, metrics, chance)
    order = [d.get("id", d["name"]) for d in spec["datasets"]]
    goals = {name: metric.goal for name, metric in metrics.items()}
    verdicts = [check_claim(c, rows, metrics[c["metric"]].goal, order, goals) for c in spec.get("claims", [])]
    return Board(meta, rows, tables, verdicts, metrics, chance, read_skipped_datasets(folder),
                 current_tuning(meta, rows, read_tuning_summaries(folder)))


def write_leaderboard(folder: Path) -> list:
    """(Re)write leaderboard.md, .csv, .html and claims.json of a results folder.

    Python's cyclic garbage collector is off meanwhile: a million rows keep a million metric dicts alive, and every
    collection the grouping's and the pages' new objects started walked all of them (3 s of CPU of a 1M-row
    rebuild). The board holds no reference cycle; what the figures leave is collected once it is back on."""
    import gc

    collecting = gc.isenabled()
    gc.disable()
    try:
        return _write_leaderboard(Path(folder))
    finally:
        if collecting:
            gc.enable()


def _write_leaderboard(folder: Path) -> list:
    board = compute(folder)
    write_atomic(folder / "leaderboard.md", render_markdown(board))
    write_atomic(folder / "leaderboard.csv", render_csv(board))
    write_atomic(folder / "leaderboard.html", render_html(board))
    if curve_panels(board):
        write_atomic(folder / CURVES_SVG, render_curves_svg(board))
    elif (folder / CURVES_SVG).exists():
        (folder / CURVES_SVG).unlink()  # a re-run without curves leaves no stale figure
    write_atomic(folder / "claims.json", json.dumps(
        {"spec": board.spec["name"], "profile": board.meta["profile"], "title": board.spec["title"],
         "zero_variance": board.zero_variance, "at_chance": board.at_chance,
         "claims": [v.to_dict() for v in board.verdicts]}, indent=1) + "\n")
    return board.verdicts


def write_index(root: Path) -> None:
    """``root/index.md``: every spec's results folder below ``root`` with its claims' verdicts."""
    root = Path(root)
    found = sorted(p.parent for p in root.glob("*/claims.json")) + sorted(p.parent for p in root.glob("*/*/claims.json"))
    lines = ["# Results", "", "Every spec's leaderboard in this folder, with its claims' verdicts "
             "(`harness check` prints the numbers behind each).", "",
             "| profile | spec | title | claims | leaderboard |", "|---|---|---|---|---|"]
    for folder in found:
        if any(part.startswith(".") for part in folder.relative_to(root).parts):
            continue  # archived runs
        data = json.loads((folder / "claims.json").read_text())
        claims = "<br>".join(f"`{c['claim']}`: **{c['verdict']}**" for c in data["claims"]) or "none"
        link = (folder / "leaderboard.md").relative_to(root).as_posix()
        lines.append(f"| {data['profile']} | {data['spec']} | {data['title']} | {claims} | [{link}]({link}) |")
    write_atomic(root / "index.md", "\n".join(lines) + "\n")
