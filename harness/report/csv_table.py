"""``leaderboard.csv``: one line per dataset, method (and device class) with every metric's mean and half-width.

Written column by column: each text field is quoted once per distinct value (by :mod:`csv` itself), the numbers
are formatted in one pass (:func:`_metric_texts`), and the lines are joined in C; the bytes are those a
:func:`csv.writer` gives row by row.
"""
from __future__ import annotations

import csv
import io
import re

from harness.report.board import Board


def render_csv(board: Board) -> str:
    meta, columns = board.meta, board.columns
    report = meta["spec"]["metrics"]["report"]
    flagged, chance_datasets = set(board.zero_variance), set(board.at_chance)
    apart = columns.apart
    quote = _Quoter()
    # new columns go at the end: `harness regress` and other readers find the older ones where they were;
    # device_class only where the folder spans several classes (then a row is a method on one class)
    header = quote.line(["spec", "profile", "dataset", "rank", "method", "kind", "seeds_ok", "seeds_failed"]
                        + [f"{m}_{part}" for m in report for part in ("mean", "ci95", "n")]
                        + ["devices", "zero_variance", "seeds_skipped", "tied_with_best", "chance", "at_chance"]
                        + (["device_class"] if apart else []))
    count = len(columns)
    if not count:
        return header
    levels = [board.chance.get(dataset, {}).get(board.primary) for dataset in columns.datasets]
    dataset = columns.dataset

    def per_dataset(values: list[str]) -> list[str]:
        return _each(values, dataset)

    ranked = columns.rank != 0
    table = [[quote(meta["spec"]["name"])] * count, [quote(meta["profile"])] * count,
             per_dataset([quote(d) for d in columns.datasets]), _ints(columns.rank, zero=""),
             _each([quote(m) for m in columns.methods], columns.method),
             _each([quote(k) for k in columns.kinds], columns.kind), _ints(columns.seeds_ok),
             _ints(columns.seeds_failed)]
    if report:
        table.append(_metric_texts(columns, report))
    table += [_each([quote("; ".join(devices)) for devices in columns.device_sets], columns.devices),
              per_dataset(["true" if d in flagged else "false" for d in columns.datasets]),
              _ints(columns.seeds_skipped), _each(["", "false", "", "true"], ranked + 2 * columns.tied),
              per_dataset(["" if level is None else repr(level) for level in levels]),
              per_dataset(["true" if d in chance_datasets else "false" for d in columns.datasets])]
    if apart:
        table.append(_each([quote(c) for c in columns.classes], columns.device_class))
    return header + "\n".join(map(",".join, zip(*table))) + "\n"


def _each(texts: list[str], codes) -> list[str]:
    """``texts[code]`` for each code."""
    import numpy as np

    lookup = np.empty(len(texts), dtype=object)
    lookup[:] = texts
    return lookup[codes].tolist()


def _ints(values, zero: str = "0") -> list[str]:
    """Each int as ``str`` writes it (0 as ``zero``)."""
    import numpy as np

    distinct, codes = np.unique(values, return_inverse=True)
    return _each([str(v) if v else zero for v in distinct.tolist()], codes)


def _metric_texts(columns, report: list[str]) -> list[str]:
    """Each row's mean, half-width and n of every metric in ``report``: one text per row, its fields joined (a
    metric a row lacks: empty mean and half-width, n 0; a cell without an interval: an empty half-width).

    msgspec's JSON encoder writes all rows at once: its numbers are what ``repr`` (a float) and ``str`` (an int)
    write, for floats of 0 or a magnitude in :data:`SHORTEST` (tests/test_render_columns.py); a row with another
    float (an exponent, nan, inf) is written field by field."""
    import msgspec
    import numpy as np

    fields, other = [], np.zeros(len(columns), dtype=bool)
    for m in report:
        present = columns.present(m)
        for values, shown in ((columns.mean[m], present), (columns.half[m], present & columns.has_half[m])):
            texts = values.tolist()
            for i in np.flatnonzero(~shown).tolist():
                texts[i] = None
            size = np.abs(values)
            with np.errstate(invalid="ignore"):
                other |= shown & ~(((size >= SHORTEST[0]) & (size < SHORTEST[1])) | (size == 0))
            fields.append(texts)
        fields.append(columns.n[m].tolist() if m in columns.n else [0] * len(columns))
    rows = list(zip(*fields))
    text = msgspec.json.encode(rows).decode().replace("null", "")  # None: ""
    texts = text[2:-2].split("],[")
    for i in np.flatnonzero(other).tolist():
        texts[i] = ",".join(map(_field, rows[i]))
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
            if type(text) is str and text and _PLAIN.fullmatch(text):  # nothing csv quotes: the text as it is
                found = self.known[text] = text
            else:
                found = self.known[text] = self.line(["", text])[1:-1]  # after the empty first field's comma
        return found

    def each(self, texts) -> list[str]:
        texts = list(texts)
        for text in set(texts) - self.known.keys():
            self(text)
        return list(map(self.known.__getitem__, texts))


_PLAIN = re.compile(r'[^,"\r\n]*')  # csv.writer quotes a field with a comma, a quote or a line end; others it leaves

SHORTEST = (1e-4, 1e16)  # repr writes a float of 0 or a magnitude in this range positionally, as msgspec does
