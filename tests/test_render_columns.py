"""The leaderboard's column-wise rendering (issue 25) against the row-by-row code it replaced, on random boards
(ties, nan, an exponent, missing metrics, one-seed cells, device classes, names to quote): the CSV is what
csv.writer wrote row by row (``repr`` of every float), the win rates what counting one comparison at a time gave,
the many-dataset summary's ranks and counts what one loop over the rows gave."""
from __future__ import annotations

import csv
import io
import math
import random
import struct

import numpy as np
import pytest

from harness.metrics import Metric
from harness.report.board import Board, Cell, Row, by_device_class, win_rates
from harness.report.board_columns import BoardColumns
from harness.report.csv_table import _metric_texts, render_csv
from harness.report.pages import _many_datasets_blocks

SPECIAL = [0.0, -0.0, 1e-4, 1e-5, 9.999999999999999e-05, 1e16, 9999999999999998.0, 1e22, 5e-324, 0.1, -2.5,
           1.7976931348623157e308, math.nan, math.inf, -math.inf, 123456789.0, 1e-4 * (1 + 2 ** -52)]


def random_float(rng: random.Random) -> float:
    pick = rng.random()
    if pick < 0.1:
        return rng.choice(SPECIAL)
    if pick < 0.4:  # any finite double
        while True:
            value = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]
            if math.isfinite(value):
                return value
    if pick < 0.6:
        return round(rng.gauss(0, 100), rng.randint(0, 6))
    return rng.gauss(0, 1) * 10 ** rng.randint(-7, 18)


def random_board(seed: int, datasets: int = 60) -> Board:
    rng = random.Random(seed)
    methods = ["a", "b,c", 'd "q"', "e\nf", "g", "h\ri"][: rng.randint(1, 6)]
    classes = [None] if rng.random() < 0.5 else ["cpu", "gpu: x", None]
    report = ["p", "q", "r"]
    tables = {}
    for d in range(datasets):
        name = rng.choice([f"d{d}", f"d,{d}", f'd"{d}"', f"d\r{d}", f" d {d} ", f"d\t{d}é"])
        table = []
        for device_class in classes:
            for method in methods:
                if rng.random() < 0.1:
                    continue
                metrics = {}
                for m in report:
                    if rng.random() < 0.85:
                        n = rng.choice([1, 2, 3, 10])
                        mean = rng.choice([0.5, 1.0]) if rng.random() < 0.2 else random_float(rng)  # ties
                        half = None if n == 1 else rng.choice([0.0, abs(random_float(rng))])
                        metrics[m] = Cell(mean, half, n)
                table.append(Row(name, method, rng.choice(["implementation", "baseline"]), metrics,
                                 rng.randint(0, 10), rng.randint(0, 2), rank=rng.randint(0, 4),
                                 devices=tuple(rng.sample(["cpu: x", "gpu, y", "tpu"], rng.randint(0, 2))),
                                 errors=tuple(rng.sample(["failed: boom", "timed-out: 5 s"], rng.randint(0, 1))),
                                 seeds_skipped=rng.randint(0, 2), skips=tuple(rng.sample(["no data"], rng.randint(0, 1))),
                                 tied=rng.random() < 0.3, device_class=device_class if len(classes) > 1 else None))
        tables[name] = table
    goal = rng.choice(["max", "min"])
    metrics = {m: Metric(m, goal, "", m) for m in report}
    chance = {name: {"p": rng.choice([0.5, 1, 1e-5])} for name in tables if rng.random() < 0.3}
    meta = {"spec": {"name": "toy,1", "title": "Toy", "metrics": {"primary": "p", "report": report},
                     "datasets": [], "methods": []}, "profile": "quick"}
    return Board(meta, [], tables, [], metrics, chance)


def csv_row_by_row(board: Board) -> str:
    """The CSV as it was written before: csv.writer, a row at a time, repr of each float."""
    meta, tables = board.meta, board.tables
    report = meta["spec"]["metrics"]["report"]
    flagged, chance_datasets = set(board.zero_variance), set(board.at_chance)
    apart = any(row.device_class for table in tables.values() for row in table)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
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


@pytest.mark.parametrize("seed", range(12))
def test_the_csv_is_what_csv_writer_wrote_row_by_row(seed):
    board = random_board(seed)
    assert render_csv(board) == csv_row_by_row(board)


def test_every_float_is_written_as_repr_writes_it():
    """Half a million floats of every magnitude, nan and inf (msgspec writes most, repr the others)."""
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 2 ** 64, size=150_000, dtype=np.uint64).view(np.float64)  # any double, nan and inf too
    near = (np.array([1e-4, 1e16, 1.0, 0.1, 2.0 ** 53]).view(np.int64)[:, None] + np.arange(-2000, 2000)).ravel()
    values = np.concatenate([bits, near.view(np.float64), rng.normal(size=150_000) * 10.0 ** rng.integers(-8, 20, 150_000),
                             np.round(rng.normal(size=150_000) * 1000, 3), np.array(SPECIAL)]).tolist()
    values += [round(v, k % 9) for k, v in enumerate(rng.normal(size=50_000).tolist())] + [None] * 7
    values += [0.5] * (-len(values) % 8)
    names = [f"m{k}" for k in range(8)]  # eight metrics a row
    rows = [Row("d", "m", "k", {name: Cell(value, value, 3) for name, value in zip(names, values[at:at + 8])
                                if value is not None}, 1, 0) for at in range(0, len(values), 8)]
    text = [",,0" if value is None else f"{value!r},{value!r},3" for value in values]  # None: no cell
    expected = [",".join(text[at:at + 8]) for at in range(0, len(values), 8)]
    assert _metric_texts(BoardColumns.of_tables({"d": rows}, names), names) == expected


def win_rates_one_by_one(tables, primary, metrics, leave_out=()):
    goal = metrics[primary].goal
    per_method: dict[str, list[float]] = {}
    for dataset, table in tables.items():
        if dataset in leave_out:
            continue
        for group in by_device_class(table):
            scored = [r for r in group if primary in r.metrics]
            for row in scored:
                others = [o for o in scored if o is not row]
                if not others:
                    continue
                wins = 0.0
                for other in others:
                    a, b = row.metrics[primary].mean, other.metrics[primary].mean
                    wins += 0.5 if a == b else float(a > b if goal == "max" else a < b)
                per_method.setdefault(row.label, []).append(wins / len(others))
    return {m: (sum(v) / len(v), len(v)) for m, v in per_method.items()}


@pytest.mark.parametrize("seed", range(12))
def test_win_rates_are_the_one_by_one_count(seed):
    board = random_board(seed)
    leave_out = list(board.tables)[::7]
    for left_out in ((), leave_out):
        got = win_rates(board.tables, "p", board.metrics, leave_out=left_out)
        assert list(got.items()) == list(win_rates_one_by_one(board.tables, "p", board.metrics, left_out).items())
    assert win_rates({}, "p", board.metrics) == {}


def rank_table_one_loop(board: Board) -> tuple[list[list[str]], dict[str, int], dict[str, int]]:
    ranks: dict[str, list[int]] = {}
    kinds: dict[str, str] = {}
    counts: dict[str, list[int]] = {}
    errors: dict[str, int] = {}
    skips: dict[str, int] = {}
    for table in board.tables.values():
        for row in table:
            kinds.setdefault(row.label, row.kind)
            seen = counts.setdefault(row.label, [0, 0, 0, 0, 0])
            for k, value in enumerate((1, row.tied, row.seeds_ok, row.seeds_failed, row.seeds_skipped)):
                seen[k] += value
            if row.rank:
                ranks.setdefault(row.label, []).append(row.rank)
            for error in row.errors:
                errors[error] = errors.get(error, 0) + 1
            for reason in row.skips:
                skips[reason] = skips.get(reason, 0) + 1
    mean_rank = {label: sum(got) / len(got) for label, got in ranks.items()}
    rows = []
    for label, seen in sorted(counts.items(), key=lambda kv: mean_rank.get(kv[0], math.inf)):
        got = ranks.get(label, [])
        rows.append([label, kinds[label], str(seen[0]), str(len(got)), f"{mean_rank[label]:.2f}" if got else "—",
                     str(got.count(1)), *map(str, seen[1:])])
    return rows, errors, skips


@pytest.mark.parametrize("seed", range(8))
def test_the_many_dataset_summary_counts_as_one_loop_did(seed):
    board = random_board(seed)
    blocks = _many_datasets_blocks(board)
    rows, errors, skips = rank_table_one_loop(board)
    assert next(block[1].rows for block in blocks if block[0] == "table") == rows
    assert [block[1] for block in blocks if block[0] == "li"] == (
        [f"{e} (on {n} dataset × method rows)" for e, n in errors.items()]
        + [f"skipped ({n} dataset × method rows): {r}" for r, n in skips.items()])
