"""``harness leaderboard`` on a 100k-row results folder: its time and its peak memory (issue 15).

The folder is :mod:`benchmarks.synthetic_runs`'s (1,667 datasets × 6 methods × 10 seeds, the shape of
``results/quick/tight-sgp``), written once per benchmark environment by ``setup_cache``. What is timed
is the whole rebuild of its pages: reading runs.jsonl, the tables and claims, the Markdown, CSV and HTML
with its figure. Before msgspec's reader and the batched intervals, ``harness leaderboard`` on this folder took
171 s and 2.7 GiB on the 2-core project machine (4.5 s and 0.35 GiB after); with the columnar grouping, the
claims' join, the summary page beyond 48 datasets, the shared strings and no scipy.stats, 2.9 s (on the machine
shared with other work, load average 2.3) and 0.28 GiB. Since the rows are read as columns and saved beside
runs.jsonl (:mod:`harness.columns`), a rebuild reads the saved columns: 1.0 s and 0.12 GiB, and 1.8 s the first
time (2 December 2026). Both are timed here: a return of the dict reader, of one scipy t-test per cell, of a
per-row grouping or pairing, of a table or panel per dataset, or of saved columns that are not used shows; the
1M-row figure (README, "Cost at scale") is measured by hand, as it takes minutes of setup.
"""
from __future__ import annotations

from pathlib import Path

ROWS = 100_000


class Leaderboard100k:
    """Wall time (the work reads and writes files) and peak RSS of one ``write_leaderboard`` of 100k rows, from the
    columns saved by the rebuild before (as after every ``harness run``)."""

    version = "2"
    number = 1
    repeat = (2, 5, 60.0)
    timeout = 600

    def setup_cache(self):
        from benchmarks.synthetic_runs import write_folder

        # asv runs setup_cache in its own cache folder (the working directory) and removes it afterwards
        return str(write_folder(Path("board").resolve(), ROWS))

    def setup(self, folder):
        from harness.columns import read_columns

        read_columns(Path(folder))  # saves them if the first-read benchmark removed them

    def time_leaderboard(self, folder):
        from harness.report.folder import write_leaderboard

        write_leaderboard(Path(folder))

    def peakmem_leaderboard(self, folder):
        from harness.report.folder import write_leaderboard

        write_leaderboard(Path(folder))


class Leaderboard100kFirstRead(Leaderboard100k):
    """The same rebuild with no saved columns: runs.jsonl decoded whole (a folder from before them, or copied
    without them)."""

    version = "1"

    def setup(self, folder):
        from harness.columns import SIDECAR

        (Path(folder) / SIDECAR).unlink(missing_ok=True)


class BoundClaim:
    """A bound claim over 100k cells of 10,000 datasets: its per-dataset summary grouped in one pass (a scan of
    every cell per dataset made it 70 s for 16,667 datasets × 2 methods × 10 seeds)."""

    version = "1"

    def setup(self):
        rows = [{"dataset": f"d{d}", "method": method, "seed": seed, "status": "ok",
                 "metrics": {"rmse": 0.1 * ((d + seed) % 7)}}
                for d in range(10_000) for method in ("a", "b") for seed in range(5)]
        self.rows = rows
        self.claim = {"id": "bound", "says": "rmse stays below 1", "kind": "bound", "methods": ["a", "b"],
                      "metric": "rmse", "at_most": 0.5}

    def time_check_bound(self):
        from harness.claims import check_bound

        check_bound(self.claim, self.rows)
