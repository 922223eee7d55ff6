"""``track_*``: each spec's primary metric in the committed quick-profile leaderboards.

One benchmark per spec in ``results/quick/``, ``track_<spec>_<metric>``, with one
parameter value per "dataset · method" row, so that ``asv publish`` graphs every row of
the leaderboard over the commits; and ``track_claims_reproduced`` per spec. Nothing is
run: the numbers are those committed with the code (``.ci/run`` re-runs the quick
profile and ``harness regress`` checks them).
"""
from __future__ import annotations

import csv
import json
import re
from pathlib import Path

QUICK_RESULTS = Path(__file__).resolve().parents[1] / "results" / "quick"
ROW_SEPARATOR = " · "


def _primary_metric(folder: Path) -> str:
    import yaml

    return yaml.safe_load((folder / "spec.yaml").read_text())["spec"]["metrics"]["primary"]


def _leaderboard(folder: Path, metric: str) -> dict[str, float]:
    with open(folder / "leaderboard.csv", newline="") as f:
        return {f"{row['dataset']}{ROW_SEPARATOR}{row['method']}": float(row[f"{metric}_mean"])
                for row in csv.DictReader(f) if row.get(f"{metric}_mean")}


def _track_primary(folder: Path, metric: str, rows: list[str]):
    def track(row: str) -> float:
        value = _leaderboard(folder, metric).get(row)
        if value is None:
            raise KeyError(f"{folder}/leaderboard.csv has no {metric} for {row!r}")
        return value

    from harness.metric_tables import read_metric_table

    known = read_metric_table(folder).get(metric)  # as the run recorded it, whatever is registered here
    goal = known.goal if known else "?"
    track.params = rows
    track.param_names = ["dataset · method"]
    track.unit = f"{metric} ({'higher' if goal == 'max' else 'lower'} is better)"
    track.version = "1"
    track.__doc__ = f"{metric} (mean over the quick profile's seeds) in {folder.relative_to(folder.parents[2])}/leaderboard.csv"
    return track


def _specs() -> list[Path]:
    return sorted(p.parent for p in QUICK_RESULTS.glob("*/leaderboard.csv") if (p.parent / "spec.yaml").exists())


for _folder in _specs():
    _metric = _primary_metric(_folder)
    _rows = list(_leaderboard(_folder, _metric))
    if _rows:
        _name = "track_" + re.sub(r"\W", "_", f"{_folder.name}_{_metric}")
        globals()[_name] = _track_primary(_folder, _metric, _rows)
        globals()[_name].__name__ = _name


def _track_claims(specs: list[str]):
    def track_claims_reproduced(spec: str) -> int:
        """How many of a spec's claims the committed quick-profile run reproduces."""
        claims = json.loads((QUICK_RESULTS / spec / "claims.json").read_text())["claims"]
        return sum(c["verdict"] == "reproduced" for c in claims)

    track_claims_reproduced.params = specs
    track_claims_reproduced.param_names = ["spec"]
    track_claims_reproduced.unit = "claims"
    track_claims_reproduced.version = "1"
    return track_claims_reproduced


_with_claims = [p.parent.name for p in sorted(QUICK_RESULTS.glob("*/claims.json"))]
if _with_claims:  # asv rejects a parameter list that is empty
    track_claims_reproduced = _track_claims(_with_claims)
