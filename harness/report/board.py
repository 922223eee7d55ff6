"""The board: a results folder's rows grouped into one table per dataset (methods ranked by the primary metric's
direction, the mean and 95% t-interval over seeds of every metric, ties with the best marked ≈), the datasets at
chance, the mean win rate, the datasets without spread; :class:`Board` holds all a page shows.

A dataset where no method's primary metric varies across seeds is flagged: the seed does not change its instance,
so it has no interval. A dataset where every method's interval of the primary metric contains the task's chance
level is not ranked and is left out of the win rate: there is nothing to rank there but noise.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from harness.devices import device_class
from harness.metrics import Metric
from harness.stats import FLOAT_NOISE, mean_and_half_width

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


def row_class(device: str | None, apart: bool) -> str | None:
    """The device class of a row on ``device`` where ``apart`` (the folder spans several classes), else None: one
    row per method."""
    return (device_class(device) or NO_DEVICE) if apart else None


def summarise(values: list[float]) -> Cell:
    mean, half_width = mean_and_half_width(values)
    return Cell(mean, half_width, len(values))


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


def _group_rows(rows, report: list[str]) -> list[Row]:
    """One unranked :class:`Row` per (dataset, method, device class where the rows span several), in the order of
    each group's first row: its cells (mean and 95% interval over its ok seeds of every metric in ``report``),
    seeds ok / failed / skipped, devices, errors and skip reasons. ``rows``: the current cells' table
    (:func:`harness.results_table.current_cells`).

    The groups are numbered from the table's category codes and each metric's values sorted into groups by a stable
    sort, so the values of a group stay in the order written and every interval is the float the per-group lists
    gave (:func:`harness.stats.summarise_rows` on each sample size's rows at once)."""
    import numpy as np
    import pandas as pd

    from harness.results_table import classes_apart, device_classes, is_in, metric_array, texts
    from harness.stats import summarise_rows

    if not len(rows):
        return []
    methods_count = len(rows["method"].cat.categories) + 1
    key = rows["dataset"].cat.codes.to_numpy().astype(np.int64) * methods_count + rows["method"].cat.codes.to_numpy()
    classes = None
    if classes_apart(rows):
        classes = [c or NO_DEVICE for c in device_classes(rows)]
        class_codes, _ = pd.factorize(np.array(classes, dtype=object))
        key = key * (class_codes.max() + 1) + class_codes
    group, _ = pd.factorize(key)  # groups numbered in order of appearance
    _, first = np.unique(group, return_index=True)
    count = len(first)
    index = dict(zip(zip(texts(rows, "dataset", first), texts(rows, "method", first),
                         [classes[i] for i in first.tolist()] if classes else [None] * count), range(count)))
    ok = is_in(rows, "status", ("ok",))
    failed = is_in(rows, "status", ("failed", "timed-out"))
    skipped = is_in(rows, "status", ("skipped",))
    cells: list[dict[str, Cell]] = [{} for _ in range(count)]
    ok_at = np.flatnonzero(ok)
    ok_group = group[ok_at]
    for name in report:
        values = metric_array(rows, name)[ok_at]
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
    device = rows["device"].cat
    used = np.unique(device.codes.to_numpy())
    names = sorted({d for d in device.categories[used[used >= 0]].tolist() if d})
    if names:
        code = {d: i for i, d in enumerate(names)}
        # None and "" are no device: not in ``code``, so -1
        known_codes = np.array([code.get(d, -1) for d in device.categories.tolist()] + [-1], dtype=np.int64)
        found = known_codes[device.codes.to_numpy()]
        known = found >= 0
        for pair in np.unique(group[known] * len(names) + found[known]).tolist():  # by group, then device name
            g, d = divmod(pair, len(names))
            devices[g] = devices[g] + (names[d],)
    errors: list[dict[str, None]] = [{} for _ in range(count)]
    where = np.flatnonzero(failed)
    for g, status_said, error in zip(group[where].tolist(), texts(rows, "status", where), texts(rows, "error", where)):
        errors[g][f"{status_said}: {error}"] = None
    skips: list[dict[str, None]] = [{} for _ in range(count)]
    where = np.flatnonzero(skipped)
    for g, error in zip(group[where].tolist(), texts(rows, "error", where)):
        skips[g][str(error or "no reason recorded")] = None
    kinds = texts(rows, "kind", first)
    return [Row(dataset, method, kinds[g], cells[g], seeds_ok[g], seeds_failed[g],
                devices=devices[g], errors=tuple(errors[g]), seeds_skipped=seeds_skipped[g], skips=tuple(skips[g]),
                device_class=device_class)
            for (dataset, method, device_class), g in index.items()]


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
    share = _shares(np.array([cells[i].mean for i in at], dtype=float), sizes[sizes > 1],
                    metrics[primary].goal == "max")
    per_method: dict[str, list[float]] = {}
    for label, value in zip([rows[i].label for i in at], share.tolist()):
        per_method.setdefault(label, []).append(value)
    return {m: (sum(v) / len(v), len(v)) for m, v in per_method.items()}


def _shares(means, sizes, higher_is_better: bool):
    """Each value's share of the others in its group it beats (ties ½); the groups lie one after another in
    ``means``, of ``sizes``. Wins are whole and half numbers, so the sum is exact in any order."""
    import numpy as np

    share = np.empty(len(means))
    starts = np.cumsum(sizes) - sizes
    for size in np.unique(sizes).tolist():
        at = starts[sizes == size][:, None] + np.arange(size)
        values = means[at]
        mine, other = values[:, :, None], values[:, None, :]
        beaten = (mine > other) if higher_is_better else (mine < other)
        equal = (mine == other).sum(axis=2) - ~np.isnan(values)  # not itself (nan equals nothing)
        share[at] = (beaten.sum(axis=2) + 0.5 * equal) / (size - 1)
    return share


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
