"""The leaderboard's rendering of a 1M-row folder's board (issue 25): 16,667 datasets × 6 methods, 7 metrics, the
board of the README's 1M-row folder, built from cells (no results folder, no reader). What is timed is what follows
the grouping: ``leaderboard.csv``, the mean win rate and the rank figure. Row by row (a repr and a csv.writer call
per row, a comparison per pair), the CSV took 4.9 s of CPU and the win rate 0.45 s on the 2-core project machine
at load 4; column-wise, 2.5 s and 0.2 s, and the figure 0.6-0.8 s (3 December 2026). On the 1M-row folder itself
at load 2, the CSV went from 3.6 s to 1.1 s.
"""
from __future__ import annotations

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
        from harness.report.board import win_rates

        win_rates(self.board.tables, self.board.primary, self.board.metrics)

    def time_rank_figure(self):
        from harness.report.figures import render_plot_svg

        render_plot_svg(self.board)
