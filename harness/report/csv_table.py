"""``leaderboard.csv``: one line per dataset, method (and device class) with every metric's mean and half-width.

Written column by column: each text field is quoted once per distinct value (by :mod:`csv` itself), the numbers
are formatted in one pass (:func:`_metric_texts`), and the lines are joined in C; the bytes are those a
:func:`csv.writer` gives row by row.
"""
from __future__ import annotations

import csv
import io
from operator import attrgetter

from harness.report.board import Board, Cell


def render_csv(board: Board) -> str:
    meta, tables = board.meta, board.tables
    report = meta["spec"]["metrics"]["report"]
    flagged, chance_datasets = set(board.zero_variance), set(board.at_chance)
    rows = [row for table in tables.values() for row in table]
    apart = any(row.device_class for row in rows)
    quote = _Quoter()
    # new columns go at the end: `harness regress` and other readers find the older ones where they were;
    # device_class only where the folder spans several classes (then a row is a method on one class)
    header = quote.line(["spec", "profile", "dataset", "rank", "method", "kind", "seeds_ok", "seeds_failed"]
                        + [f"{m}_{part}" for m in report for part in ("mean", "ci95", "n")]
                        + ["devices", "zero_variance", "seeds_skipped", "tied_with_best", "chance", "at_chance"]
                        + (["device_class"] if apart else []))
    if not rows:
        return header
    per_dataset: dict[str, tuple[str, str, str, str]] = {}  # its quoted name, zero_variance, chance, at_chance
    for dataset in tables:
        level = board.chance.get(dataset, {}).get(board.primary)
        per_dataset[dataset] = (quote(dataset), "true" if dataset in flagged else "false",
                                "" if level is None else repr(level), "true" if dataset in chance_datasets else "false")
    dataset = [per_dataset[d] for d, table in tables.items() for _ in table]
    ranks = [row.rank for row in rows]
    columns = [[quote(meta["spec"]["name"])] * len(rows), [quote(meta["profile"])] * len(rows), [d[0] for d in dataset],
               [str(r) if r else "" for r in ranks], quote.each(map(_METHOD, rows)), quote.each(map(_KIND, rows)),
               _ints(map(_SEEDS_OK, rows)), _ints(map(_SEEDS_FAILED, rows))]
    if report:
        columns.append(_metric_texts(rows, report))
    columns += [quote.each(["; ".join(devices) for devices in map(_DEVICES, rows)]), [d[1] for d in dataset],
                _ints(map(_SEEDS_SKIPPED, rows)),
                [("true" if row.tied else "false") if rank else "" for row, rank in zip(rows, ranks)],
                [d[2] for d in dataset], [d[3] for d in dataset]]
    if apart:
        columns.append(quote.each(map(_DEVICE_CLASS, rows)))
    return header + "\n".join(map(",".join, zip(*columns))) + "\n"


_ABSENT = Cell(None, None, 0)  # a metric a row lacks: empty mean and half-width, n 0
_MEAN, _HALF_WIDTH, _N = attrgetter("mean"), attrgetter("half_width"), attrgetter("n")
_METHOD, _KIND, _METRICS, _DEVICES, _DEVICE_CLASS = map(attrgetter, ("method", "kind", "metrics", "devices",
                                                                     "device_class"))
_SEEDS_OK, _SEEDS_FAILED, _SEEDS_SKIPPED = map(attrgetter, ("seeds_ok", "seeds_failed", "seeds_skipped"))


def _ints(values) -> list[str]:
    values = list(values)
    text = {value: str(value) for value in set(values)}
    return list(map(text.__getitem__, values))


def _metric_texts(rows: list, report: list[str]) -> list[str]:
    """Each row's mean, half-width and n of every metric in ``report``: one text per row, its fields joined.

    msgspec's JSON encoder writes all rows at once: its numbers are what ``repr`` (a float) and ``str`` (an int)
    write, for floats of 0 or a magnitude in :data:`SHORTEST` (tests/test_render_columns.py); a row
    with another float (an exponent, nan, inf) is written field by field, as is every row where a field is neither
    a float, an int nor None."""
    import msgspec
    import numpy as np

    every = list(map(_METRICS, rows))
    columns = []
    for m in report:
        cells = [metrics.get(m, _ABSENT) for metrics in every]
        columns += [list(map(_MEAN, cells)), list(map(_HALF_WIDTH, cells)), list(map(_N, cells))]
    fields = list(zip(*columns))
    types = [set(map(type, column)) for column in columns]
    if not all(found <= {float, int, type(None)} for found in types):
        return [",".join(map(_field, row)) for row in fields]
    text = msgspec.json.encode(fields).decode().replace("null", "")  # None (and nan, inf): ""
    texts = text[2:-2].split("],[")
    other = np.zeros(len(rows), dtype=bool)
    for column, found in zip(columns, types):
        if found <= {int, type(None)}:
            continue
        size = np.abs(np.array(column, dtype=float))  # None: nan
        outside = ~(((size >= SHORTEST[0]) & (size < SHORTEST[1])) | (size == 0))
        if type(None) in found:
            outside &= np.array([value is not None for value in column], dtype=bool)
        other |= outside
    for i in np.flatnonzero(other).tolist():
        texts[i] = ",".join(map(_field, fields[i]))
    return texts


def _field(value) -> str:
    """A number (or None) as :func:`csv.writer` writes it."""
    return "" if value is None else repr(value) if isinstance(value, float) else str(value)


class _Quoter:
    """A text field as :func:`csv.writer` writes it among others (quoted where it must be), once per distinct text."""

    def __init__(self):
        self.buffer = io.StringIO()
        self.writer = csv.writer(self.buffer, lineterminator="\n")
        self.known: dict = {}

    def line(self, fields: list) -> str:
        self.buffer.seek(0)
        self.buffer.truncate()
        self.writer.writerow(fields)
        return self.buffer.getvalue()

    def __call__(self, text) -> str:
        found = self.known.get(text)
        if found is None:
            found = self.known[text] = self.line(["", text])[1:-1]  # after the empty first field's comma
        return found

    def each(self, texts) -> list[str]:
        texts = list(texts)
        for text in set(texts) - self.known.keys():
            self(text)
        return list(map(self.known.__getitem__, texts))


SHORTEST = (1e-4, 1e16)  # repr writes a float of 0 or a magnitude in this range positionally, as msgspec does
