"""The board as arrays: one entry per (dataset, method, device class) row of the leaderboard, in the page's order
(the datasets in the spec's order, each dataset's rows ranked), built from the current cells' table without a
Python object per row.

A folder of 16,667 datasets × 6 methods has 100,000 such rows and 700,000 cells (mean, half-width, seeds of one
metric): as :class:`~harness.report.board.Row` and :class:`~harness.report.board.Cell` objects, building them, and
reading them back for the CSV, the win rate and the rank summary, was most of a rebuild's CPU. Here a row is a
position in arrays, and :meth:`BoardColumns.tables` makes the objects only when asked (a page of at most
:data:`~harness.report.blocks.PAGE_LIMIT` datasets shows a table per dataset; other callers read
``Board.tables``).

Every number is the one the row-by-row code gave: each interval from :func:`harness.stats.summarise_arrays` over
a group's values in the order written, the order within a dataset that of Python's stable sort on the same keys,
ranks, ties and "at chance" by the same float comparisons (tests/test_board_columns.py checks the objects against
a row-by-row reference on random tables).
"""
from __future__ import annotations

from functools import cached_property
from typing import Any

from harness.report.cells import NO_DEVICE

MATRIX_DEVICES = 64  # up to this many device names, a group's devices are found by a (device × group) matrix


class BoardColumns:
    """The leaderboard's rows as arrays, in page order: dataset ``k``'s rows are ``starts[k]:starts[k + 1]``.

    Per row: ``method``, ``kind`` and ``device_class`` are codes into ``methods``, ``kinds`` and ``classes``
    (``classes == [None]`` where the folder has one device class); ``seeds_ok``, ``seeds_failed``,
    ``seeds_skipped``, ``rank`` (0: not ranked) and ``tied`` arrays; ``devices`` a code into ``device_sets`` (the
    sorted tuple of the row's device names); ``errors`` and ``skips`` the rows' messages, by row, only for rows
    that have some. Per metric of ``report``: ``mean``, ``half`` and ``n`` arrays (n 0: the row has no cell of
    it) and ``has_half`` (False: one seed, no interval; the cell's half-width is None)."""

    def __init__(self, report: list[str], datasets: list[str], starts, methods: list, method, kinds: list, kind,
                 classes: list, device_class, seeds_ok, seeds_failed, seeds_skipped, rank, tied,
                 device_sets: list[tuple[str, ...]], devices, errors: dict[int, tuple[str, ...]],
                 skips: dict[int, tuple[str, ...]], mean: dict, half: dict, n: dict, has_half: dict):
        self.report, self.datasets, self.starts = list(report), datasets, starts
        self.methods, self.method, self.kinds, self.kind = methods, method, kinds, kind
        self.classes, self.device_class = classes, device_class
        self.seeds_ok, self.seeds_failed, self.seeds_skipped = seeds_ok, seeds_failed, seeds_skipped
        self.rank, self.tied = rank, tied
        self.device_sets, self.devices, self.errors, self.skips = device_sets, devices, errors, skips
        self.mean, self.half, self.n, self.has_half = mean, half, n, has_half

    def __len__(self) -> int:
        return len(self.method)

    @property
    def apart(self) -> bool:
        """Whether some row has a device class (the folder spans several): a device class column on the page."""
        return any(self.classes)

    @cached_property
    def dataset(self):
        """Each row's dataset, as its position in ``datasets``."""
        import numpy as np

        return np.repeat(np.arange(len(self.datasets)), np.diff(self.starts))

    @cached_property
    def labels(self) -> tuple[list[str], Any]:
        """The distinct labels (the method, and its device class where the folder has several) in order of their
        first row, and each row's label as a code into them."""
        import numpy as np

        from harness.report.cells import row_label

        if not len(self):
            return [], np.zeros(0, dtype=np.int64)
        pair = self.method.astype(np.int64) * len(self.classes) + self.device_class
        codes, uniques = _factorize(pair)
        texts = [row_label(self.methods[p // len(self.classes)], self.classes[p % len(self.classes)])
                 for p in uniques.tolist()]
        labels, code_of_text = _codes(texts)  # two pairs of one text (a method named "a on b") are one label
        return labels, code_of_text[codes]

    def label_texts(self) -> list[str]:
        """Each row's label."""
        labels, codes = self.labels
        return _lookup(labels, codes)

    def present(self, metric: str):
        """Whether each row has a cell of ``metric`` (False for all where the board does not report it)."""
        import numpy as np

        return self.n[metric] > 0 if metric in self.n else np.zeros(len(self), dtype=bool)

    # --- what the pages read -------------------------------------------------------------------------------------

    def at_chance(self, metric: str, chance: dict[str, dict[str, float]]) -> list[str]:
        """The datasets where every row's 95% interval of ``metric`` contains its chance level (every mean is it,
        without an interval), as :meth:`harness.report.board.Cell.contains` decides it, row by row."""
        import numpy as np

        if metric not in self.n or not any(metric in levels for levels in chance.values()):
            return []
        levels = [chance.get(d, {}).get(metric) for d in self.datasets]
        with_level = np.array([level is not None for level in levels], dtype=bool)
        inside = self.contains(metric, np.array([np.nan if level is None else level for level in levels],
                                                dtype=float)[self.dataset])
        present = self.present(metric)
        cells = np.bincount(self.dataset[present], minlength=len(self.datasets))
        outside = np.bincount(self.dataset[present & ~inside], minlength=len(self.datasets))
        found = with_level & (cells > 0) & (outside == 0)
        return [self.datasets[k] for k in np.flatnonzero(found).tolist()]

    def contains(self, metric: str, level):
        """Each row's :meth:`~harness.report.board.Cell.contains` of ``level`` (an array, a value per row)."""
        import numpy as np

        from harness.stats import FLOAT_NOISE

        mean = self.mean[metric]
        slack = FLOAT_NOISE * np.maximum(np.maximum(1.0, np.abs(mean)), np.abs(level))
        with np.errstate(invalid="ignore"):
            return np.abs(mean - level) <= _half_or_zero(self.half[metric], self.has_half[metric]) + slack

    def zero_variance(self, metric: str) -> list[str]:
        """Datasets where every row with two or more seeds of ``metric`` got the same value in every seed (a
        half-width of 0), and there is such a row."""
        import numpy as np

        if metric not in self.n:
            return []
        several = self.n[metric] >= 2
        flat = several & self.has_half[metric] & (self.half[metric] == 0.0)
        counted = np.bincount(self.dataset[several], minlength=len(self.datasets))
        spread = np.bincount(self.dataset[several & ~flat], minlength=len(self.datasets))
        return [self.datasets[k] for k in np.flatnonzero((counted > 0) & (spread == 0)).tolist()]

    def runs(self):
        """Each row's run: its dataset's rows of its device class (a dataset's rows sorted by class lie together),
        numbered in page order; and each run's first row."""
        import numpy as np

        if not len(self):
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        start = np.zeros(len(self), dtype=bool)
        start[self.starts[:-1][np.diff(self.starts) > 0]] = True
        start[1:] |= self.device_class[1:] != self.device_class[:-1]
        start[0] = True
        return np.cumsum(start) - 1, np.flatnonzero(start)

    def win_rates(self, primary: str, higher_is_better: bool, leave_out=()) -> dict[str, tuple[float, int]]:
        """:func:`harness.report.board.win_rates` of these rows: per label, the mean over datasets (less
        ``leave_out``) of the share of the other rows of its run beaten on the primary mean (ties ½)."""
        import numpy as np

        if not len(self) or primary not in self.n:
            return {}
        left_out = set(leave_out)
        kept = np.array([d not in left_out for d in self.datasets], dtype=bool)[self.dataset]
        run, _ = self.runs()
        scored = kept & self.present(primary)
        sizes = np.bincount(run[scored], minlength=run[-1] + 1)
        at = np.flatnonzero(scored & (sizes[run] > 1))  # a lone row beats no other
        share = shares(self.mean[primary][at], sizes[sizes > 1], higher_is_better)
        labels, codes = self.labels
        codes = codes[at]
        by_label = np.argsort(codes, kind="stable")  # each label's shares in the order of its rows
        values = share[by_label].tolist()
        sizes = np.bincount(codes, minlength=len(labels))
        ends = np.cumsum(sizes).tolist()
        seen = np.unique(codes, return_index=True)[1]  # labels in order of their first scored row
        out = {}
        for code in np.unique(codes)[np.argsort(seen)].tolist():
            shares_ = values[ends[code] - sizes[code]:ends[code]]
            out[labels[code]] = (sum(shares_) / len(shares_), len(shares_))
        return out

    def ranked_datasets(self) -> int:
        """How many datasets have a ranked row."""
        import numpy as np

        return int(np.count_nonzero(np.bincount(self.dataset[self.rank > 0], minlength=len(self.datasets))))

    # --- as objects ----------------------------------------------------------------------------------------------

    def row(self, i: int):
        """Row ``i`` as a :class:`~harness.report.board.Row`."""
        from harness.report.cells import Cell, Row

        dataset = self.datasets[int(self.dataset[i])]
        cells = {}
        for name in self.report:
            n = int(self.n[name][i])
            if n:
                cells[name] = Cell(float(self.mean[name][i]),
                                   float(self.half[name][i]) if self.has_half[name][i] else None, n)
        return Row(dataset, self.methods[self.method[i]], self.kinds[self.kind[i]], cells, int(self.seeds_ok[i]),
                   int(self.seeds_failed[i]), rank=int(self.rank[i]), devices=self.device_sets[self.devices[i]],
                   errors=self.errors.get(i, ()), seeds_skipped=int(self.seeds_skipped[i]),
                   skips=self.skips.get(i, ()), tied=bool(self.tied[i]),
                   device_class=self.classes[self.device_class[i]])

    def tables(self) -> dict[str, list]:
        """Per dataset, its :class:`~harness.report.board.Row` objects in order."""
        starts = self.starts.tolist()
        return {dataset: [self.row(i) for i in range(starts[k], starts[k + 1])]
                for k, dataset in enumerate(self.datasets)}

    @classmethod
    def of_tables(cls, tables: dict[str, list], report: list[str]) -> "BoardColumns":
        """The columns of rows held as objects (a board built in Python: a test, a benchmark), ranks and ties as
        the rows have them. ``report``: the metrics of the columns (a row's other metrics are added after)."""
        import numpy as np

        rows = [row for table in tables.values() for row in table]
        report = list(dict.fromkeys([*report, *(name for row in rows for name in row.metrics)]))
        methods, method = _codes(row.method for row in rows)
        kinds, kind = _codes(row.kind for row in rows)
        classes, device_class = _codes(row.device_class for row in rows)
        if not classes:
            classes = [None]
        device_sets, devices = _codes(tuple(row.devices) for row in rows)
        if not device_sets:
            device_sets = [()]
        mean, half, n, has_half = {}, {}, {}, {}
        for name in report:
            cells = [row.metrics.get(name) for row in rows]
            mean[name] = np.array([np.nan if c is None else c.mean for c in cells], dtype=float)
            half[name] = np.array([np.nan if c is None or c.half_width is None else c.half_width for c in cells],
                                  dtype=float)
            n[name] = np.array([0 if c is None else c.n for c in cells], dtype=np.int64)
            has_half[name] = np.array([c is not None and c.half_width is not None for c in cells], dtype=bool)
        starts = np.cumsum([0] + [len(table) for table in tables.values()])

        def ints(name: str):
            return np.array([getattr(row, name) for row in rows], dtype=np.int64)

        return cls(report, list(tables), starts, methods, method, kinds, kind, classes, device_class,
                   ints("seeds_ok"), ints("seeds_failed"), ints("seeds_skipped"), ints("rank"),
                   np.array([bool(row.tied) for row in rows], dtype=bool), device_sets, devices,
                   {i: tuple(row.errors) for i, row in enumerate(rows) if row.errors},
                   {i: tuple(row.skips) for i, row in enumerate(rows) if row.skips}, mean, half, n, has_half)


def _half_or_zero(half, has_half):
    """``half_width or 0.0`` of each cell: 0 without one (nan stays nan, as ``nan or 0.0`` does)."""
    import numpy as np

    return np.where(has_half, half, 0.0)


def _codes(values) -> tuple[list, Any]:
    """The distinct values in order of first appearance, and each value's code (an int64 array)."""
    import numpy as np

    index: dict = {}
    codes = [index.setdefault(value, len(index)) for value in values]
    return list(index), np.array(codes, dtype=np.int64)


def _factorize(values) -> tuple[Any, Any]:
    """``pandas.factorize`` of an int array: codes, and the distinct values in order of first appearance."""
    import pandas as pd

    codes, uniques = pd.factorize(values)
    return codes.astype("int64", copy=False), uniques


def _lookup(values: list, codes) -> list:
    """``[values[c] for c in codes]``, by numpy."""
    import numpy as np

    table = np.empty(len(values), dtype=object)
    table[:] = values
    return table[codes].tolist()


def build_columns(meta: dict, rows, metrics: dict, chance: dict[str, dict[str, float]] | None = None) -> BoardColumns:
    """The board of the current cells ``rows`` (:func:`harness.results_table.current_cells`): one row per
    (dataset, method, device class where the rows span several) with its cells (mean and 95% interval over its ok
    seeds of every metric the spec reports), seeds ok / failed / skipped, devices, errors and skip reasons; each
    dataset's rows sorted by (device class, no primary value, the primary mean best first, the spec's order of
    methods), stably, ranked within each device class, the rows whose interval of the primary metric overlaps the
    best's marked tied; the datasets in the spec's order (others after, in order of appearance). A dataset where
    every row's interval of the primary metric contains its chance level keeps its order but gets no ranks.

    The groups are numbered from the table's category codes in order of their first row, and each metric's values
    sorted into groups by one stable sort, so the values of a group stay in the order written."""
    import numpy as np

    from harness.results_table import classes_apart, device_classes, is_in, metric_array

    spec = meta["spec"]
    report = list(spec["metrics"]["report"])
    primary = spec["metrics"]["primary"]
    if not len(rows):
        return _empty(report)
    dataset_column, method_column = rows["dataset"].cat, rows["method"].cat
    methods_count = len(method_column.categories) + 1
    key = dataset_column.codes.to_numpy().astype(np.int64) * methods_count + method_column.codes.to_numpy()
    class_codes = None
    if classes_apart(rows):
        class_codes, class_names = _factorize(np.array([c or NO_DEVICE for c in device_classes(rows)], dtype=object))
        key = key * (len(class_names) + 1) + class_codes
    group, _ = _factorize(key)  # groups numbered in order of appearance
    count = int(group.max()) + 1
    highest = np.maximum.accumulate(group)  # a group's first row is where the highest number seen grows
    first = np.flatnonzero(np.concatenate(([True], highest[1:] > highest[:-1])))

    # each group's dataset, method, class and kind (of its first row)
    g_dataset = dataset_column.codes.to_numpy()[first].astype(np.int64)
    g_method = method_column.codes.to_numpy()[first].astype(np.int64)
    kind_codes = rows["kind"].cat.codes.to_numpy()[first].astype(np.int64)
    kinds = rows["kind"].cat.categories.tolist() + [None]  # code -1: no kind recorded
    g_kind = np.where(kind_codes < 0, len(kinds) - 1, kind_codes)
    # a method the spec lists has the spec's kind (a label, not a measurement: relabelling a method, e.g. as the
    # task's trivial answer, runs nothing again); a method the spec no longer lists keeps the kind its rows recorded
    spec_kind = {m.get("id", m.get("name")): m["kind"] for m in meta["spec"].get("methods", []) if m.get("kind")}
    kinds += [k for k in dict.fromkeys(spec_kind.values()) if k not in kinds]
    listed = np.array([kinds.index(spec_kind[m]) if m in spec_kind else -1
                       for m in method_column.categories.tolist()] + [-1], dtype=np.int64)[g_method]
    g_kind = np.where(listed >= 0, listed, g_kind)
    all_methods = method_column.categories.tolist()
    if class_codes is None:
        classes: list = [None]
        g_class = np.zeros(count, dtype=np.int64)
    else:
        classes = class_names.tolist()
        g_class = class_codes[first].astype(np.int64)

    # cells: every metric's values sorted into groups once (stably: each group's values in the order written)
    status = {name: is_in(rows, "status", names) for name, names in
              (("ok", ("ok",)), ("failed", ("failed", "timed-out")), ("skipped", ("skipped",)))}
    ok_at = np.flatnonzero(status["ok"])
    ok_group = group[ok_at]
    if (ok_group[1:] >= ok_group[:-1]).all():  # each group's rows together already (a folder written in order)
        sorted_group = ok_group
    else:
        ok_at = ok_at[np.argsort(ok_group, kind="stable")]
        sorted_group = group[ok_at]
    mean, half, n, has_half = {}, {}, {}, {}
    from harness.stats import summarise_arrays

    for name in report:
        values = metric_array(rows, name)[ok_at]
        present = ~np.isnan(values)
        ordered, ordered_group = (values, sorted_group) if present.all() else (values[present], sorted_group[present])
        sizes = np.bincount(ordered_group, minlength=count)
        starts = np.cumsum(sizes) - sizes
        mean[name], half[name] = np.full(count, np.nan), np.full(count, np.nan)
        n[name] = sizes
        has_half[name] = sizes >= 2
        for size in np.unique(sizes[sizes > 0]).tolist():
            at = np.flatnonzero(sizes == size)
            means, halves = summarise_arrays(ordered[starts[at][:, None] + np.arange(size)])
            mean[name][at] = means
            if size >= 2:
                half[name][at] = halves
    seeds = {name: np.bincount(group[found], minlength=count) for name, found in status.items()}

    # devices: each group's distinct device names, sorted
    device_sets, g_devices = _device_sets(rows, group, count)
    errors = _messages(rows, group, np.flatnonzero(status["failed"]), True)
    skips = _messages(rows, group, np.flatnonzero(status["skipped"]), False)

    # the page's order: datasets in the spec's order (others after, in order of appearance), then within each
    # dataset (device class, no primary value, sign × the primary mean, the spec's place of the method), stably
    all_datasets = dataset_column.categories.tolist()
    order_of = {d: i for i, d in reversed(list(enumerate(d.get("id", d["name"]) for d in spec["datasets"])))}
    used, first_group = np.unique(g_dataset, return_index=True)  # groups are in order of appearance
    place = np.array([order_of.get(all_datasets[d], 1e9) for d in used.tolist()], dtype=float)
    dataset_order = used[np.lexsort((first_group, place))]
    position = np.empty(len(all_datasets), dtype=np.int64)
    position[dataset_order] = np.arange(len(dataset_order))
    class_rank = np.zeros(len(classes), dtype=np.int64)
    if class_codes is not None:
        ranked_classes = sorted(c for c in classes if c != NO_DEVICE) + [NO_DEVICE]
        class_rank = np.array([ranked_classes.index(c) for c in classes], dtype=np.int64)
    method_order = [m.get("id", m["name"]) for m in spec["methods"]]
    method_place = np.array([method_order.index(m) if m in method_order else 0 for m in all_methods] + [0],
                            dtype=np.int64)
    scored = n[primary] > 0 if primary in n else np.zeros(count, dtype=bool)
    sign = -1.0 if metrics[primary].goal == "max" else 1.0
    value = np.where(scored, sign * mean[primary], 0.0) if primary in mean else np.zeros(count)
    order = np.lexsort((np.arange(count), method_place[g_method], value, ~scored, class_rank[g_class],
                        position[g_dataset]))

    def take(array):
        return array[order]

    g_dataset, g_method, g_kind, g_class, g_devices, scored = map(take, (g_dataset, g_method, g_kind, g_class,
                                                                         g_devices, scored))
    mean, half, n, has_half = ({name: take(a) for name, a in d.items()} for d in (mean, half, n, has_half))
    seeds = {name: take(a) for name, a in seeds.items()}
    where = np.empty(count, dtype=np.int64)
    where[order] = np.arange(count)
    errors = {int(where[g]): messages for g, messages in errors.items()}
    skips = {int(where[g]): messages for g, messages in skips.items()}
    starts = np.searchsorted(position[g_dataset], np.arange(len(dataset_order) + 1))
    columns = BoardColumns(report, [all_datasets[d] for d in dataset_order.tolist()], starts, all_methods, g_method,
                           kinds, g_kind, classes, g_class, seeds["ok"], seeds["failed"], seeds["skipped"],
                           np.zeros(count, dtype=np.int64), np.zeros(count, dtype=bool), device_sets, g_devices,
                           dict(sorted(errors.items())), dict(sorted(skips.items())), mean, half, n, has_half)
    if primary in n:
        _rank(columns, primary, chance or {})
    return columns


def _rank(columns: BoardColumns, primary: str, chance: dict) -> None:
    """Ranks and ties in place: within each run of a dataset's rows of one device class, the rows with a primary
    value ranked 1, 2, ... in order; a row below the best whose interval overlaps the best's
    (:meth:`~harness.report.board.Cell.overlaps`) tied; none in a dataset at chance."""
    import numpy as np

    from harness.stats import FLOAT_NOISE

    run, first = columns.runs()
    scored = columns.present(primary)
    rank = np.where(scored, np.arange(len(columns)) - first[run] + 1, 0)
    mean = columns.mean[primary]
    width = _half_or_zero(columns.half[primary], columns.has_half[primary])
    best = first[run]
    slack = FLOAT_NOISE * np.maximum(np.maximum(1.0, np.abs(mean)), np.abs(mean[best]))
    with np.errstate(invalid="ignore"):
        overlaps = np.abs(mean - mean[best]) <= width + width[best] + slack
    tied = (np.arange(len(columns)) != best) & scored[best] & (rank > 0) & overlaps
    at_chance = set(columns.at_chance(primary, chance))
    if at_chance:
        flat = np.array([d in at_chance for d in columns.datasets], dtype=bool)[columns.dataset]
        rank[flat], tied[flat] = 0, False
    columns.rank, columns.tied = rank, tied


def _device_sets(rows, group, count: int) -> tuple[list[tuple[str, ...]], Any]:
    """The distinct sorted tuples of device names of the groups (``()`` first: a group with none), and each
    group's code into them."""
    import numpy as np

    from harness.results_table import used_codes

    device = rows["device"].cat
    codes = device.codes.to_numpy()
    used = used_codes(rows["device"])
    names = sorted({d for d in device.categories[used[used >= 0]].tolist() if d})
    g_devices = np.zeros(count, dtype=np.int64)
    if not names:
        return [()], g_devices
    code = {d: i for i, d in enumerate(names)}
    # None and "" are no device: not in ``code``, so -1
    known_codes = np.array([code.get(d, -1) for d in device.categories.tolist()] + [-1], dtype=np.int64)
    found = known_codes[codes]
    index = {s: k for k, s in enumerate([()] + [(d,) for d in names])}
    if len(names) > MATRIX_DEVICES:  # many device names: each group's (group, name) pairs, sorted
        pairs = np.unique(group[found >= 0] * len(names) + found[found >= 0])
        owner, name = np.divmod(pairs, len(names))
        several: dict[int, list[str]] = {}
        for g, d in zip(owner.tolist(), name.tolist()):
            several.setdefault(g, []).append(names[d])
        for g, found_names in several.items():
            g_devices[g] = index.setdefault(tuple(found_names), len(index))
        return list(index), g_devices
    has = np.zeros((len(names), count), dtype=bool)  # whether group g has a row on device d
    for d in range(len(names)):
        has[d, group[found == d]] = True
    g_devices[:] = np.where(has.any(axis=0), has.argmax(axis=0) + 1, 0)  # a group on one device: (name,)
    for g in np.flatnonzero(has.sum(axis=0) > 1).tolist():
        g_devices[g] = index.setdefault(tuple(names[d] for d in np.flatnonzero(has[:, g]).tolist()), len(index))
    return list(index), g_devices


def _messages(rows, group, where, failed: bool) -> dict[int, tuple[str, ...]]:
    """Per group with some, the distinct messages of its rows at ``where``, in order: ``status: error`` of failed
    rows, the error (or "no reason recorded") of skipped ones."""
    from harness.results_table import texts

    found: dict[int, dict[str, None]] = {}
    if failed:
        for g, said, error in zip(group[where].tolist(), texts(rows, "status", where), texts(rows, "error", where)):
            found.setdefault(g, {})[f"{said}: {error}"] = None
    else:
        for g, error in zip(group[where].tolist(), texts(rows, "error", where)):
            found.setdefault(g, {})[str(error or "no reason recorded")] = None
    return {g: tuple(messages) for g, messages in found.items()}


def _empty(report: list[str]) -> BoardColumns:
    import numpy as np

    none = np.zeros(0, dtype=np.int64)
    return BoardColumns(report, [], np.zeros(1, dtype=np.int64), [], none, [], none, [None], none, none, none, none,
                        none, np.zeros(0, dtype=bool), [()], none, {}, {},
                        {m: np.zeros(0) for m in report}, {m: np.zeros(0) for m in report},
                        {m: none for m in report}, {m: np.zeros(0, dtype=bool) for m in report})


def shares(means, sizes, higher_is_better: bool):
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
