"""``harness leaderboard`` on a 100k-row results folder: its time and its peak memory (issue 15).

The folder is :mod:`benchmarks.synthetic_runs`'s (1,667 datasets × 6 methods × 10 seeds, the shape of
``results/quick/tight-sgp``), written once per benchmark environment by ``setup_cache``. What is timed
is the whole rebuild of its pages: reading runs.jsonl, the tables and claims, the Markdown, CSV and HTML
with its figure. Before msgspec's reader and the batched intervals, ``harness leaderboard`` on this folder took
171 s and 2.7 GiB on the 2-core project machine (4.5 s and 0.35 GiB after); with the columnar grouping, the
claims' join, the summary page beyond 48 datasets, the shared strings and no scipy.stats, 2.9 s (on the machine
shared with other work, load average 2.3) and 0.28 GiB. Since the rows are read as one table saved beside
runs.jsonl as Parquet (:mod:`harness.results_table`), a rebuild reads the saved table. Both are timed here: a
return of the dict reader, of one scipy t-test per cell, of a per-row grouping or pairing, of a table or panel
per dataset, or of a saved table that is not used shows; the
1M-row figure (docs/results.md, "Cost at scale") is measured by hand, as it takes minutes of setup.
"""
from __future__ import annotations

from pathlib import Path

ROWS = 100_000


class Leaderboard100k:
    """Wall time (the work reads and writes files) and peak RSS of one ``write_leaderboard`` of 100k rows, from the
    table saved by the rebuild before (as after every ``harness run``)."""

    version = "2"
    number = 1
    repeat = (2, 5, 60.0)
    timeout = 600

    def setup_cache(self):
        from benchmarks.synthetic_runs import write_folder

        # asv runs setup_cache in its own cache folder (the working directory) and removes it afterwards
        return str(write_folder(Path("board").resolve(), ROWS))

    def setup(self, folder):
        from harness.results_table import read_table

        read_table(Path(folder))  # saves it if the first-read benchmark removed it

    def time_leaderboard(self, folder):
        from harness.report.folder import write_leaderboard

        write_leaderboard(Path(folder))

    def peakmem_leaderboard(self, folder):
        from harness.report.folder import write_leaderboard

        write_leaderboard(Path(folder))


class Leaderboard100kFirstRead(Leaderboard100k):
    """The same rebuild with no saved table: runs.jsonl decoded whole (a folder from before it, or copied
    without it)."""

    version = "1"

    def setup(self, folder):
        from harness.results_table import CACHE

        (Path(folder) / CACHE).unlink(missing_ok=True)


class BoundClaim:
    """A bound claim over 100k cells of 10,000 datasets: its per-dataset summary grouped in one pass (a scan of
    every cell per dataset made it 70 s for 16,667 datasets × 2 methods × 10 seeds)."""

    version = "1"

    def setup(self):
        import json
        import tempfile

        from harness.results_table import read_table

        rows = [{"key": f"{d}-{method}-{seed}", "dataset": f"d{d}", "method": method, "seed": seed, "status": "ok",
                 "split": "test", "metrics": {"rmse": 0.1 * ((d + seed) % 7)}}
                for d in range(10_000) for method in ("a", "b") for seed in range(5)]
        with tempfile.TemporaryDirectory() as folder:
            (Path(folder) / "runs.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
            self.rows = read_table(Path(folder))
        self.claim = {"id": "bound", "says": "rmse stays below 1", "kind": "bound", "methods": ["a", "b"],
                      "metric": "rmse", "at_most": 0.5}

    def time_check_bound(self):
        from harness.claims import check_bound

        check_bound(self.claim, self.rows)
