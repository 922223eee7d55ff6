"""A results folder as a pandas DataFrame, for users: :func:`read_results` (``harness.read_results``)."""
from __future__ import annotations

from pathlib import Path

# a row's fields in the frame, before its metrics (each a column ``metric.<name>``)
FIELDS = ("dataset", "method", "seed", "status", "kind", "device", "error", "spec_hash", "git_commit", "task_version",
          "dataset_params", "code", "versions")


def read_results(folder: str | Path, history: bool = False):
    """The cells of a results folder as a tidy pandas DataFrame: one row per cell, its metrics as float columns
    ``metric.<name>`` (NaN where a cell has none: a failed or skipped cell, or a metric recorded as null).

    By default the cells the leaderboard shows: the newest row of each (dataset, method, seed) of the folder's
    spec hash and the test split, its method's newest code, a row per device class where the folder has several
    (:func:`harness.report.folder.read_folder`), with the fields :data:`FIELDS`. With ``history=True``, every line
    of ``runs.jsonl`` in the order written, with every field it recorded (nested ones as ``params.lr`` and so on):
    the superseded rows, the other splits and spec hashes, the tracebacks.

    ``frame.attrs`` holds ``metrics`` (each metric's ``goal``, max or min, its ``unit`` and what it is, from the
    folder's ``metrics.json``), ``spec``, ``profile`` and ``spec_hash``. The leaderboard's grouping, in pandas::

        frame = harness.read_results("results/default/cdfsl")
        ok = frame[frame.status == "ok"]
        ok.groupby(["dataset", "method"])["metric.accuracy_5shot"].agg(["mean", "std", "count"])
    """
    import pandas as pd

    from harness.report.folder import folder_metrics, read_folder

    folder = Path(folder)
    if history:  # every line: the current rows are not needed, only the spec they were read against
        from harness.report.board import NoResults
        from harness.runs_file import read_runs
        from harness.store import load_yaml

        if not (folder / "spec.yaml").exists():
            raise NoResults(f"{folder}: no results here (expected spec.yaml and runs.jsonl from `harness run`)")
        meta = load_yaml((folder / "spec.yaml").read_text())
        frame = pd.json_normalize(list(read_runs(folder)), sep=".")
        frame = frame.rename(columns=lambda c: "metric." + c[len("metrics."):] if c.startswith("metrics.") else c)
    else:
        from harness.results_table import RAW_FIELDS, decoded, metric_names, metric_values, texts

        meta, rows = read_folder(folder)
        data = {name: decoded(rows, name) if name in RAW_FIELDS else texts(rows, name) for name in FIELDS}
        for name in metric_names(rows):
            values = metric_values(rows, name)
            if any(value is not None for value in values):  # a metric only rows of other hashes or splits have
                data[f"metric.{name}"] = values
        frame = pd.DataFrame(data)
    for name in [c for c in frame.columns if c.startswith("metric.")]:
        frame[name] = pd.to_numeric(frame[name], errors="coerce").astype(float)  # a null or a text: NaN, as missing
    metrics = folder_metrics(folder, meta["spec"])
    frame.attrs.update(metrics={name: {"goal": m.goal, "unit": m.unit, "about": m.about} for name, m in metrics.items()},
                       spec=meta["spec"]["name"], profile=meta.get("profile"), spec_hash=meta.get("spec_hash"))
    return frame
