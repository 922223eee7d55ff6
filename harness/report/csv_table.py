"""``leaderboard.csv``: one line per dataset, method (and device class) with every metric's mean and half-width.
"""
from __future__ import annotations

import csv
import io

from harness.report.board import Board


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
