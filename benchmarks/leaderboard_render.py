"""The leaderboard of a 1M-row folder's shape (issue 25): 16,667 datasets × 6 methods × 10 seeds, 7 metrics, without a
results folder or the reader.

:class:`Render1M`: what follows the grouping, on a board built from cells: ``leaderboard.csv``, the mean win rate
and the rank figure. Row by row (a repr and a csv.writer call per row, a comparison per pair), the CSV took 4.9 s of
CPU and the win rate 0.45 s on the 2-core project machine at load 4; column-wise, 2.5 s and 0.2 s, and the figure
0.6-0.8 s (3 December 2026). On the 1M-row folder itself at load 2, the CSV went from 3.6 s to 1.1 s, and to 0.56 s
once it read the board's arrays instead of Row objects.

:class:`Board1M`: what comes before, on a table of current cells built in memory: picking the current cells, the
grouping into the board (arrays, :func:`harness.report.board_columns.build_columns`; 2.1 s as 100,000 Row and
700,000 Cell objects, 0.57 s as arrays), a paired claim over every dataset (1.0 s with dicts, 0.15 s on arrays) and
the text of ``claims.json`` (0.54 s by ``json.dumps(indent=1)`` with ``dataclasses.asdict``, 0.13 s by
``harness.report.json_text``), measured on the 1M-row folder on 3 December 2026 (minimum of three, load about 2).
"""
from __future__ import annotations

import time

DATASETS, METHODS, METRICS = 16_667, 6, 7


def board():
    """A board of the 1M-row folder's shape: each cell a mean over 10 seeds with its half-width."""
    import numpy as np

    from harness.metrics import Metric
    from harness.report.board import Board, Cell, Row

    rng = np.random.default_rng(0)
    names = [f"metric_{k}" for k in range(METRICS)]
    means = iter(rng.normal(size=DATASETS * METHODS * METRICS).tolist())
    halves = iter(np.abs(rng.normal(0, 0.05, size=DATASETS * METHODS * METRICS)).tolist())
    tied = iter((rng.random(DATASETS * METHODS) < 0.3).tolist())
    tables = {}
    for d in range(DATASETS):
        table = [Row(f"d{d:05d}", f"method-{m}", "implementation" if m < 3 else "baseline",
                     {name: Cell(next(means), next(halves), 10) for name in names}, 10, 0, rank=m + 1,
                     devices=("cpu: x",), tied=next(tied)) for m in range(METHODS)]
        tables[table[0].dataset] = table
    meta = {"spec": {"name": "render", "title": "Render", "metrics": {"primary": names[0], "report": names},
                     "datasets": [], "methods": []}, "profile": "quick"}
    return Board(meta, [], tables, [], {name: Metric(name, "max", "", name) for name in names})


class Render1M:
    """CPU time of each part of a 1M-row folder's pages that reads only the board."""

    version = "1"
    number = 1
    repeat = (2, 5, 60.0)
    timeout = 300

    def setup(self):
        self.board = board()

    def time_csv(self):
        from harness.report.csv_table import render_csv

        render_csv(self.board)

    def time_win_rates(self):
        self.board.columns.win_rates(self.board.primary, True)

    def time_rank_figure(self):
        from harness.report.figures import render_plot_svg

        render_plot_svg(self.board)


SEEDS = 10


def current_cells_table():
    """A table of current cells of the 1M-row folder's shape (as :func:`harness.results_table.read_table` gives
    them): every (dataset, method, seed) once, one cell in a hundred failed, each metric a level per (dataset,
    method) plus noise per seed."""
    import numpy as np
    import pandas as pd

    from harness.results_table import CATEGORIES, METRIC

    rng = np.random.default_rng(0)
    size = DATASETS * METHODS * SEEDS
    failed = rng.random(size) < 0.01

    def categorical(codes, names):
        return pd.Categorical.from_codes(codes, categories=pd.Index(names, dtype=object))

    fixed = {name: categorical(np.zeros(size, dtype=np.int8), [name + "-value"]) for name in CATEGORIES}
    data = {**fixed,
            "status": categorical(failed.astype(np.int8), ["ok", "failed"]),
            "dataset": categorical(np.repeat(np.arange(DATASETS), METHODS * SEEDS), [f"d{d:05d}" for d in range(DATASETS)]),
            "method": categorical(np.tile(np.repeat(np.arange(METHODS), SEEDS), DATASETS), [f"method-{m}" for m in range(METHODS)]),
            "kind": categorical(np.tile(np.repeat(np.arange(METHODS) >= 3, SEEDS), DATASETS).astype(np.int8),
                                ["implementation", "baseline"]),
            "split": categorical(np.zeros(size, dtype=np.int8), ["test"]),
            "spec_hash": categorical(np.zeros(size, dtype=np.int8), ["h"]),
            "device": categorical(np.zeros(size, dtype=np.int8), ["cpu: x (2 cores)"]),
            "error": categorical(np.where(failed, 0, -1).astype(np.int8), ["RuntimeError: synthetic failure"]),
            "seed": np.tile(np.arange(SEEDS, dtype=np.int64), DATASETS * METHODS),
            "curves": np.full(size, None, dtype=object)}
    for k in range(METRICS):
        level = np.repeat(rng.normal(size=DATASETS * METHODS), SEEDS)
        data[f"{METRIC}metric_{k}"] = np.where(failed, np.nan, level + rng.normal(0, 0.1, size))
    return pd.DataFrame(data)


class Board1M:
    """CPU time of the board's grouping, a paired claim over every dataset, the claims.json text and the current
    cells of a 1M-row table (built once per process)."""

    version = "1"
    number = 1
    repeat = (2, 5, 60.0)
    timeout = 300
    timer = time.process_time  # CPU time, as the figures in docs/results.md

    def setup(self):
        import scipy.stats  # noqa: F401 - imported by the first interval, not timed

        from harness.claims.paired import paired_verdict
        from harness.metrics import Metric

        self.rows = current_cells_table()
        names = [f"metric_{k}" for k in range(METRICS)]
        self.metrics = {name: Metric(name, "max", "", name) for name in names}
        self.meta = {"spec": {"name": "board", "title": "Board", "metrics": {"primary": names[0], "report": names},
                              "datasets": [{"name": f"d{d:05d}"} for d in range(DATASETS)],
                              "methods": [{"name": f"method-{m}"} for m in range(METHODS)]}, "profile": "quick"}
        self.claim = {"id": "zero-beats-one", "says": "method 0 beats method 1", "better": "method-0",
                      "than": "method-1", "metric": names[0]}
        self.order = [f"d{d:05d}" for d in range(DATASETS)]
        self.record = {"claims": [paired_verdict(self.claim, self.rows, "max", self.order).to_dict()]}
        from harness.report.board_columns import build_columns

        build_columns(self.meta, self.rows.head(6000), self.metrics)  # first calls' lazy imports, not timed

    def time_board(self):
        from harness.report.board_columns import build_columns

        build_columns(self.meta, self.rows, self.metrics)

    def time_paired_claim(self):
        from harness.claims.paired import paired_verdict

        paired_verdict(self.claim, self.rows, "max", self.order)

    def time_claims_json_text(self):
        from harness.report.json_text import dumps

        dumps(self.record, 1)

    def time_current_cells(self):
        from harness.results_table import current_cells

        current_cells(self.rows, "h")
