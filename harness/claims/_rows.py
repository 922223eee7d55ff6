"""The columns a claim reads of a results folder's current cells (:func:`harness.results_table.current_cells`)."""
from __future__ import annotations


def claim_columns(rows, fields: tuple[str, ...], metric: str, methods=None, datasets=None,
                  measured: bool = False) -> list[list]:
    """Of the rows of ``methods`` and ``datasets`` (None: all), in order: each of ``fields`` as a list (None where a
    row lacks it; ``dataset_params`` decoded), then their values of ``metric`` as recorded (None where a row lacks
    it). ``measured``: only the ok rows that have the metric. Read by position: the table is not copied."""
    import numpy as np

    from harness.results_table import RAW_FIELDS, decoded, is_in, metric_array, metric_values, texts

    keep = np.ones(len(rows), dtype=bool)
    if measured:
        keep &= is_in(rows, "status", ("ok",)) & ~np.isnan(metric_array(rows, metric))
    for name, allowed in (("method", methods), ("dataset", datasets)):
        if allowed is not None:
            keep &= is_in(rows, name, allowed)
    at = np.flatnonzero(keep)
    return [*((decoded(rows, name, at) if name in RAW_FIELDS else texts(rows, name, at)) for name in fields),
            metric_values(rows, metric, at)]
