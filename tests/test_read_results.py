"""harness.read_results: a results folder's cells as a tidy DataFrame, the leaderboard's by default, every line with
history=True, metrics as float columns with their goal and unit in attrs."""
from __future__ import annotations

import json

import pytest

from conftest import ROOT, TOY_SPEC


def test_the_cells_the_leaderboard_shows_with_their_metrics_goals_and_units(toy_env, write_spec, tmp_path):
    import harness

    spec = write_spec(TOY_SPEC)
    harness.run(spec, tmp_path, progress=False, profile="quick")
    folder = tmp_path / "toy"
    frame = harness.read_results(folder)
    lines = [json.loads(line) for line in (folder / "runs.jsonl").read_text().splitlines()]
    tested = [r for r in lines if r["split"] == "test"]
    assert len(frame) == len(tested) and set(frame.method) == {r["method"] for r in tested}
    assert frame["metric.toy_score"].dtype == float
    assert sorted(frame["metric.toy_score"]) == sorted(r["metrics"]["toy_score"] for r in tested)
    assert frame.attrs["metrics"]["toy_score"]["goal"] in ("max", "min") and frame.attrs["profile"] == "quick"
    assert frame.attrs["spec"] == "toy" and frame.attrs["spec_hash"] == tested[0]["spec_hash"]
    # the docstring's grouping, as the leaderboard groups
    ok = frame[frame.status == "ok"]
    table = ok.groupby(["dataset", "method"])["metric.toy_score"].agg(["mean", "count"])
    assert table["count"].sum() == len(ok)


def test_history_has_every_line_and_the_default_only_the_newest(toy_env, write_spec, tmp_path):
    import harness

    spec = write_spec(TOY_SPEC)
    harness.run(spec, tmp_path, progress=False, profile="quick")
    folder = tmp_path / "toy"
    runs = folder / "runs.jsonl"
    first = json.loads(runs.read_text().splitlines()[0])
    newer = {**first, "metrics": {**first["metrics"], "toy_score": 123.0}}  # the same cell recorded again
    with open(runs, "a") as f:
        f.write(json.dumps(newer) + "\n")
    current, history = harness.read_results(folder), harness.read_results(folder, history=True)
    assert len(history) == len(current) + 1 + sum(1 for line in runs.read_text().splitlines()
                                                  if json.loads(line)["split"] != "test")
    mine = current[(current.dataset == first["dataset"]) & (current.method == first["method"])
                   & (current.seed == first["seed"])]
    assert list(mine["metric.toy_score"]) == [123.0]
    assert "params.lr" in history.columns or any(c.startswith("params") for c in history.columns)


def test_a_null_metric_is_missing(toy_env, write_spec, tmp_path):
    import harness

    harness.run(write_spec(TOY_SPEC), tmp_path, progress=False, profile="quick")
    folder = tmp_path / "toy"
    runs = folder / "runs.jsonl"
    lines = [json.loads(line) for line in runs.read_text().splitlines()]
    lines[-1]["metrics"]["toy_score"] = None
    runs.write_text("".join(json.dumps(line) + "\n" for line in lines))
    frame = harness.read_results(folder, history=True)
    assert frame["metric.toy_score"].isna().sum() >= 1 and frame["metric.toy_score"].dtype == float


@pytest.mark.parametrize("folder", sorted((ROOT / "results" / "quick").glob("*/runs.jsonl"))[:3], ids=lambda p: p.parent.name)
def test_committed_folders_read(folder):
    import harness

    frame = harness.read_results(folder.parent)
    assert len(frame) > 0 and any(c.startswith("metric.") for c in frame.columns)
