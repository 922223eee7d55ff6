"""The board held as arrays (:mod:`harness.report.board_columns`, issue 25's 1M-row leaderboard) against a
straightforward row-by-row reference on random tables: groups, cells, seeds, devices, errors, skip reasons, the
order within each dataset, ranks, ties, datasets at chance and without spread, win rates. The tables have NaN and
null metrics, integer metrics, missing cells, one-seed and no-spread cells, ties, failed and skipped seeds, rows
without a device or a kind, datasets and methods the spec does not name, and several device classes."""
from __future__ import annotations

import math
import random

import pytest

from harness.metrics import Metric
from harness.report.board import NO_DEVICE, Board, Cell, Row, at_chance, build_rows, win_rates, zero_variance
from harness.report.board_columns import BoardColumns, build_columns
from harness.results_table import current_cells, table_of_rows
from harness.devices import device_class, several_classes
from harness.stats import mean_and_half_width

REPORT = ["p", "q", "r"]


def random_rows(seed: int) -> tuple[dict, list[dict], dict]:
    rng = random.Random(seed)
    datasets = [f"d{k}" for k in range(rng.randint(1, 7))]
    methods = ["a", "b", "c", "d"][: rng.randint(1, 4)]
    devices = rng.choice([["cpu: X (2 cores)"], ["cpu: X (2 cores)", "cpu: X (4 cores)", None],
                          ["cpu: X (2 cores)", "cuda: Y (GPU 0)", None, ""], ["cuda: Y (GPU 1)", "tpu"]])
    levels = [0.5, 1.0, 2.0, -1.5, 0.0, 3]
    rows = []
    for _ in range(rng.randint(0, 120)):
        status = rng.choice(["ok"] * 6 + ["failed", "timed-out", "skipped"])
        metrics = {}
        for name in REPORT:
            pick = rng.random()
            if pick < 0.1:
                continue  # the row lacks it
            if pick < 0.15:
                metrics[name] = None  # recorded as null: missing
            elif pick < 0.2:
                metrics[name] = math.nan  # written as null: missing
            elif pick < 0.35:
                metrics[name] = rng.randint(-3, 3)  # an integer
            else:
                metrics[name] = rng.choice(levels) if rng.random() < 0.4 else rng.gauss(0, 2)
        row = {"status": status, "dataset": rng.choice(datasets + ["zz"]), "method": rng.choice(methods + ["x"]),
               "seed": rng.randint(0, 5), "metrics": metrics, "device": rng.choice(devices),
               "error": rng.choice(["boom", "slow", None]) if status != "ok" else None}
        if rng.random() < 0.9:
            row["kind"] = rng.choice(["implementation", "baseline"])
        rows.append(row)
    spec = {"metrics": {"primary": "p", "report": REPORT},
            "datasets": [{"name": d} for d in rng.sample(datasets, len(datasets))],
            "methods": [{"name": m} for m in rng.sample(methods, len(methods))]}
    chance = {d: {"p": rng.choice(levels)} for d in datasets if rng.random() < 0.5}
    return {"spec": spec}, rows, chance


def reference_tables(meta: dict, rows: list[dict], metrics: dict[str, Metric], chance: dict) -> dict[str, list[Row]]:
    """The board row by row: rows grouped in dicts, sorted with Python's sort, ranked with Cell's own methods."""
    spec = meta["spec"]
    primary, report = spec["metrics"]["primary"], spec["metrics"]["report"]
    apart = several_classes(row.get("device") for row in rows)
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        cls = (device_class(row.get("device")) or NO_DEVICE) if apart else None
        groups.setdefault((row["dataset"], row["method"], cls), []).append(row)
    tables: dict[str, list[Row]] = {}
    for (dataset, method, cls), members in groups.items():
        ok = [r for r in members if r["status"] == "ok"]
        cells = {}
        for name in report:
            values = [r["metrics"][name] for r in ok if r["metrics"].get(name) is not None
                      and not (isinstance(r["metrics"][name], float) and math.isnan(r["metrics"][name]))]
            if values:
                cells[name] = Cell(*mean_and_half_width([float(v) for v in values]), len(values))
        errors = dict.fromkeys(f"{r['status']}: {r.get('error')}" for r in members if r["status"] in
                               ("failed", "timed-out"))
        skips = dict.fromkeys(str(r.get("error") or "no reason recorded") for r in members
                              if r["status"] == "skipped")
        tables.setdefault(dataset, []).append(Row(
            dataset, method, members[0].get("kind"), cells, len(ok),
            sum(r["status"] in ("failed", "timed-out") for r in members),
            devices=tuple(sorted({r["device"] for r in members if r.get("device")})), errors=tuple(errors),
            seeds_skipped=sum(r["status"] == "skipped" for r in members), skips=tuple(skips), device_class=cls))
    sign = -1 if metrics[primary].goal == "max" else 1
    method_order = [m["name"] for m in spec["methods"]]
    classes = sorted({r.device_class for t in tables.values() for r in t} - {None, NO_DEVICE}) + [NO_DEVICE]
    for dataset, table in tables.items():
        table.sort(key=lambda r: (classes.index(r.device_class) if r.device_class else 0, primary not in r.metrics,
                                  sign * r.metrics[primary].mean if primary in r.metrics else 0,
                                  method_order.index(r.method) if r.method in method_order else 0))
        level = chance.get(dataset, {}).get(primary)
        scored = [r.metrics[primary] for r in table if primary in r.metrics]
        if level is not None and scored and all(c.contains(level) for c in scored):
            continue
        runs: list[list[Row]] = []
        for row in table:
            if runs and runs[-1][0].device_class == row.device_class:
                runs[-1].append(row)
            else:
                runs.append([row])
        for run in runs:
            for i, row in enumerate(run):
                row.rank = i + 1 if primary in row.metrics else 0
            best = run[0].metrics.get(primary)
            for row in run[1:]:
                row.tied = best is not None and row.rank > 0 and row.metrics[primary].overlaps(best)
    place = [d["name"] for d in spec["datasets"]]
    return {d: tables[d] for d in sorted(tables, key=lambda d: place.index(d) if d in place else 1e9)}


def as_dicts(table) -> list[dict]:
    """The current cells' table as row dicts, each metric as recorded."""
    from harness.results_table import metric_names, metric_values, texts

    names = ("status", "dataset", "method", "seed", "device", "error", "kind")
    columns = {name: texts(table, name) for name in names}
    values = {name: metric_values(table, name) for name in metric_names(table)}
    return [{**{name: columns[name][i] for name in names},
             "metrics": {name: v[i] for name, v in values.items() if v[i] is not None}} for i in range(len(table))]


@pytest.mark.parametrize("seed", range(60))
@pytest.mark.parametrize("goal", ["max", "min"])
@pytest.mark.parametrize("grouped", [False, True], ids=["interleaved", "grouped"])
def test_the_board_is_the_row_by_row_grouping(seed, goal, grouped):
    """``grouped``: each (dataset, method)'s rows written together, as a run writes them (no sort into groups)."""
    meta, rows, chance = random_rows(seed)
    if grouped:
        rows.sort(key=lambda row: (row["dataset"], row["method"], str(device_class(row.get("device")))))
    metrics = {m: Metric(m, goal, "", m) for m in REPORT}
    table = current_cells(table_of_rows([{"key": str(i), "split": "test", "spec_hash": "h", **row}
                                         for i, row in enumerate(rows)]), "h")
    columns = build_columns(meta, table, metrics, chance)
    expected = reference_tables(meta, as_dicts(table), metrics, chance)
    got = columns.tables()
    assert repr(got) == repr(expected)  # repr: floats to the last bit, -0.0 apart from 0.0
    assert build_rows(meta, table, metrics, chance) == got
    assert repr(BoardColumns.of_tables(got, REPORT).tables()) == repr(got)
    for metric in REPORT:
        assert columns.at_chance(metric, chance) == at_chance(expected, metric, chance)
        assert columns.zero_variance(metric) == zero_variance(expected, metric)
    left_out = list(expected)[::3]
    for leave_out in ((), left_out):
        assert list(columns.win_rates("p", goal == "max", leave_out).items()) == list(
            win_rates(expected, "p", metrics, leave_out).items())
    board = Board(meta, table, columns, [], metrics, chance)
    assert board.datasets == list(expected) and repr(board.tables) == repr(expected)
    assert board.at_chance == at_chance(expected, "p", chance)


@pytest.mark.parametrize("seed", range(0, 60, 6))
def test_many_device_names_give_the_same_board(seed, monkeypatch):
    """Beyond MATRIX_DEVICES device names, each group's devices come from its sorted (group, name) pairs."""
    import harness.report.board_columns as board_columns

    meta, rows, chance = random_rows(seed)
    metrics = {m: Metric(m, "max", "", m) for m in REPORT}
    table = current_cells(table_of_rows([{"key": str(i), "split": "test", "spec_hash": "h", **row}
                                         for i, row in enumerate(rows)]), "h")
    expected = repr(build_columns(meta, table, metrics, chance).tables())
    monkeypatch.setattr(board_columns, "MATRIX_DEVICES", 0)
    assert repr(build_columns(meta, table, metrics, chance).tables()) == expected


def test_an_empty_board():
    meta, _, _ = random_rows(0)
    metrics = {m: Metric(m, "max", "", m) for m in REPORT}
    columns = build_columns(meta, table_of_rows([]), metrics)
    assert columns.tables() == {} and len(columns) == 0
    assert columns.win_rates("p", True) == {} and columns.at_chance("p", {}) == [] and columns.zero_variance("p") == []
