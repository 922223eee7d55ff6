"""The board: a results folder's rows grouped into one table per dataset (methods ranked by the primary metric's
direction, the mean and 95% t-interval over seeds of every metric, ties with the best marked ≈), the datasets at
chance, the mean win rate, the datasets without spread; :class:`Board` holds all a page shows.

A dataset where no method's primary metric varies across seeds is flagged: the seed does not change its instance,
so it has no interval. A dataset where every method's interval of the primary metric contains the task's chance
level is not ranked and is left out of the win rate: there is nothing to rank there but noise. Where the spec runs
its task's trivial answer (a method of ``kind: trivial``), every other method whose mean of the primary metric does
not beat the best trivial row of its dataset (and device class) is marked: it learned nothing a constant could not.
"""
from __future__ import annotations

from functools import cached_property
from typing import Any

from harness.devices import device_class
from harness.metrics import Metric
from harness.report.cells import NO_DEVICE, Cell, Row, row_label
from harness.stats import mean_and_half_width

__all__ = ["FORMATS", "TIED", "NO_DEVICE", "NoResults", "Cell", "Row", "row_label", "row_class", "summarise",
           "build_rows", "by_device_class", "at_chance", "win_rates", "zero_variance", "below_trivial", "Board",
           "current_tuning"]

FORMATS = ("md", "csv", "html")


TIED = "≈"  # after a rank: the method's interval overlaps the best method's
TRIVIAL = "trivial"  # the kind of a row that is its task's trivial answer


class NoResults(FileNotFoundError):
    pass


def row_class(device: str | None, apart: bool) -> str | None:
    """The device class of a row on ``device`` where ``apart`` (the folder spans several classes), else None: one
    row per method."""
    return (device_class(device) or NO_DEVICE) if apart else None


def summarise(values: list[float]) -> Cell:
    mean, half_width = mean_and_half_width(values)
    return Cell(mean, half_width, len(values))


def build_rows(meta: dict, rows, metrics: dict[str, Metric],
               chance: dict[str, dict[str, float]] | None = None) -> dict[str, list[Row]]:
    """Per dataset, its rows ranked by the primary metric; ``metrics`` is the folder's metric table.

    ``chance`` (dataset → metric → level, the folder's ``chance.json``): a dataset where every
    method is at chance on the primary metric keeps its order but gets no ranks. The board's rows as objects:
    :func:`harness.report.board_columns.build_columns` holds them as arrays.
    """
    from harness.report.board_columns import build_columns

    return build_columns(meta, rows, metrics, chance).tables()


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

    The comparisons are made with numpy, for all groups of one size at once; each row's share is the float that
    counting its wins one by one gave, and each method's mean sums the shares in the order of the datasets.
    """
    import numpy as np

    left_out = set(leave_out)
    kept = [table for dataset, table in tables.items() if dataset not in left_out]
    rows = [row for table in kept for row in table]
    if not rows:
        return {}
    # groups: a dataset's rows on one device class (runs of one class, see by_device_class), numbered in order
    starts = np.zeros(len(rows), dtype=bool)
    starts[np.cumsum([0] + [len(table) for table in kept[:-1]])] = True
    classes = [row.device_class for row in rows]
    if any(classes):
        starts[1:] |= np.array(classes[1:], dtype=object) != np.array(classes[:-1], dtype=object)
    group = np.cumsum(starts) - 1
    cells = [row.metrics.get(primary) for row in rows]
    scored = np.array([cell is not None for cell in cells], dtype=bool)
    sizes = np.bincount(group[scored], minlength=group[-1] + 1)
    at = np.flatnonzero(scored & (sizes[group] > 1)).tolist()  # a lone row beats no other
    from harness.report.board_columns import shares

    share = shares(np.array([cells[i].mean for i in at], dtype=float), sizes[sizes > 1],
                    metrics[primary].goal == "max")
    per_method: dict[str, list[float]] = {}
    for label, value in zip([rows[i].label for i in at], share.tolist()):
        per_method.setdefault(label, []).append(value)
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


def below_trivial(tables: dict[str, list[Row]], primary: str, metric: Metric) -> dict[str, list[tuple[Row, list[Row]]]]:
    """Dataset → for each device class with a trivial row there: (the best trivial row on ``primary``, the other rows
    whose mean does not beat it). Datasets without a trivial row are left out."""
    def beats(cell: Cell, level: float) -> bool:
        return cell.mean > level if metric.goal == "max" else cell.mean < level

    found: dict[str, list[tuple[Row, list[Row]]]] = {}
    for dataset, table in tables.items():
        for group in by_device_class(table):
            trivial = [row for row in group if row.kind == TRIVIAL and primary in row.metrics]
            if not trivial:
                continue
            pick = max if metric.goal == "max" else min
            best = pick(trivial, key=lambda row: row.metrics[primary].mean)
            level = best.metrics[primary].mean
            found.setdefault(dataset, []).append(
                (best, [row for row in group if row.kind != TRIVIAL and primary in row.metrics
                        and not beats(row.metrics[primary], level)]))
    return found


class Board:
    """Everything a leaderboard shows, computed from one results folder.

    ``tables`` (dataset → its :class:`Row` objects) is made from ``columns`` (the rows as arrays,
    :class:`~harness.report.board_columns.BoardColumns`) when first read; a board built from objects (a test, a
    benchmark) gives ``tables``, and its columns are made from them."""

    def __init__(self, meta: dict[str, Any], rows, tables, verdicts: list, metrics: dict[str, Metric],
                 chance: dict[str, dict[str, float]] | None = None,
                 skipped_datasets: list[dict[str, str]] | None = None, tuning: list[dict[str, Any]] | None = None,
                 trivial_methods: list[str] | None = None):
        from harness.report.board_columns import BoardColumns

        self.meta, self.rows, self.verdicts, self.metrics = meta, rows, verdicts, metrics
        self.chance = {} if chance is None else chance  # dataset → metric → level
        self.skipped_datasets = [] if skipped_datasets is None else skipped_datasets  # the latest run left these out
        self.tuning = [] if tuning is None else tuning  # tuning.json's entries behind the shown rows
        self.trivial_methods = trivial_methods  # the task's trivial answers (trivial.json); None: the folder predates it
        self.findings: list = []  # harness audit's findings on this board (harness.audit.base.audit_board)
        if isinstance(tables, BoardColumns):
            self.columns, self._tables = tables, None
        else:
            self.columns, self._tables = BoardColumns.of_tables(tables, self.spec["metrics"]["report"]), tables

    @property
    def tables(self) -> dict[str, list[Row]]:
        if self._tables is None:
            self._tables = self.columns.tables()
        return self._tables

    @property
    def datasets(self) -> list[str]:
        """The datasets with rows, in the page's order."""
        return self.columns.datasets

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
        return self.columns.at_chance(self.primary, self.chance)

    def datasets_at_chance(self, metric: str) -> list[str]:
        """The datasets where no method is above chance on ``metric`` (a claim's differences there compare noise)."""
        return self.columns.at_chance(metric, self.chance)

    @cached_property
    def zero_variance(self) -> list[str]:
        return self.columns.zero_variance(self.primary)

    @cached_property
    def below_trivial(self) -> dict[str, list[tuple[Row, list[Row]]]]:
        """Per dataset with a trivial row: the best trivial row and the methods that do not beat it
        (:func:`below_trivial`); empty when the spec runs no trivial answer."""
        if TRIVIAL not in self.columns.kinds:
            return {}
        return below_trivial(self.tables, self.primary, self.metrics[self.primary])


def current_tuning(meta: dict[str, Any], rows: list[dict], entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``tuning.json`` entries that chose the params of the shown rows: same dataset, method,
    spec hash and code as the pair's newest rows, in the spec's order of datasets, then methods."""
    if not entries:
        return []  # no tuning: no need to go through a million rows
    from harness.results_table import decoded, texts

    code = dict(zip(zip(texts(rows, "dataset"), texts(rows, "method")), decoded(rows, "code")))
    current = [e for e in entries if (e["dataset"], e["method"]) in code and e.get("spec_hash") == meta["spec_hash"]
               and e.get("code") == code[(e["dataset"], e["method"])]]
    datasets = [d.get("id", d["name"]) for d in meta["spec"]["datasets"]]
    methods = [m.get("id", m["name"]) for m in meta["spec"]["methods"]]

    def place(name: str, order: list[str]) -> int:
        return order.index(name) if name in order else len(order)

    return sorted(current, key=lambda e: (place(e["dataset"], datasets), place(e["method"], methods)))
