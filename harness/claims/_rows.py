"""Reading a results folder's rows for a claim: each method's rows indexed once, and the columns a claim reads.

Both take either rows (dicts) or :class:`harness.columns.ColumnRows`; the one-table reader of the report
package will replace the two forms with one.
"""
from __future__ import annotations

def indexed(rows) -> tuple[bool, dict[str, list]]:
    """Whether the rows span several device classes, and each method's rows in the order written.

    Kept in the ``memo`` of a :class:`harness.store.CellRows` (what the leaderboard reads), so the claims of a
    folder of a million rows index them once, not once per claim (a claim reads only its two methods' rows)."""
    memo = getattr(rows, "memo", None)
    if memo is not None and "claims" in memo:
        return memo["claims"]
    import itertools

    import numpy as np

    from harness.columns import classes_apart, column

    methods = column(rows, "method")
    first: dict[str, int] = {}
    codes = np.fromiter(map(first.setdefault, methods, itertools.count()), dtype=np.int64, count=len(methods))
    order = np.argsort(codes, kind="stable")  # each method's rows together, in the order written
    ordered = np.empty(len(rows), dtype=object)
    ordered[:] = rows
    ordered = ordered[order].tolist()
    bounds = np.searchsorted(codes[order], list(first.values()) + [len(rows)]).tolist()
    by_method = {method: ordered[bounds[k]:bounds[k + 1]] for k, method in enumerate(first)}
    found = (classes_apart(rows), by_method)
    if memo is not None:
        memo["claims"] = found
    return found


def claim_columns(rows, fields: tuple[str, ...], metric: str, methods=None, datasets=None) -> list[list]:
    """Each of ``fields`` of every row as a list, then the rows' values of ``metric`` (None where a row lacks it):
    what a claim that reads every row reads. From :class:`harness.columns.ColumnRows`, only the rows of ``methods``
    and ``datasets`` (None: all) and without building a row; from rows, every row (the caller keeps its own)."""
    from harness.columns import ColumnRows, column

    if isinstance(rows, ColumnRows):
        return rows.narrow(fields, metric, methods, datasets)
    return [*(column(rows, name) for name in fields), [found.get(metric) for found in column(rows, "metrics")]]

