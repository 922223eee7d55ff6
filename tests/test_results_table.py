"""The leaderboard reads one table of a folder's rows (harness.results_table): its current cells are those the
rules give row by row, and the Parquet table saved beside a large runs.jsonl is used only while it matches it."""
from __future__ import annotations

import importlib.util
import json
import math
import shutil
from pathlib import Path

import pytest

from harness import results_table as table_module
from harness import runs_file
from harness.devices import device_class
from harness.report.folder import read_folder
from harness.results_table import CACHE, decoded, metric_values, read_table, texts
from harness.runs_file import read_cells, read_runs
from harness.store import RUNS_FILE, RunStore

ROOT = Path(__file__).resolve().parents[1]


def _synthetic(folder: Path, datasets: int = 60) -> Path:
    """benchmarks/synthetic_runs.py's folder (6 methods, paired claims over every dataset and over named ones) with
    what a real folder gathers: metrics recorded as integers, curves, seeds run again, another spec's rows,
    validation rows, a method whose code changed (and an equal code written with its keys in another order),
    skipped and failed cells."""
    found = importlib.util.spec_from_file_location("synthetic_runs", ROOT / "benchmarks" / "synthetic_runs.py")
    synthetic = importlib.util.module_from_spec(found)
    found.loader.exec_module(synthetic)
    synthetic.write_folder(folder, rows=datasets * 6 * 3, seeds=3)
    rows = [json.loads(line) for line in (folder / RUNS_FILE).read_text().splitlines()]
    for row in rows[40:80]:  # a metric recorded as an integer on some rows: paired, 3 - 1 is 2, not 2.0
        if row["metrics"]:
            row["metrics"] = {name: round(value) if name in ("bound_at_init", "rmse") else value
                              for name, value in row["metrics"].items()}
    for i, row in enumerate(rows[80:90]):
        row["curves"] = {"loss": {"x": [0, 1, 2], "y": [1.0, 0.5 + i / 10, 0.25]}}
    (folder / RUNS_FILE).write_text("".join(json.dumps(r) + "\n" for r in rows))
    extra = []
    for i, row in enumerate(rows[:40]):
        again = dict(row, metrics={k: v + 0.25 for k, v in row["metrics"].items()})  # a seed run again: it wins
        extra.append(again)
        extra.append(dict(row, spec_hash="0123456789abcdef"))  # another spec's row: not shown
        extra.append(dict(row, split="validation", metrics={k: 99.0 for k in row["metrics"]}))
    method = rows[0]["method"]
    changed = [r for r in rows if r["method"] == method][:5]
    for row in changed:  # the method's code changed and these cells ran again: its older rows drop out
        extra.append(dict(row, code={**row["code"], "method": "feedfacecafe"}))
    reordered = dict(reversed(list(extra[-1]["code"].items())))  # the same code, keys in another order
    extra.append(dict(changed[0], code=reordered, seed=changed[0]["seed"]))
    other = rows[-1]["method"]
    for row in [r for r in rows if r["method"] == other][:4]:
        extra.append(dict(row, status="skipped", error="needs a GPU", metrics={}))
    with open(folder / RUNS_FILE, "a") as f:
        f.writelines(json.dumps(r) + "\n" for r in extra)
    return folder


def _current(folder: Path) -> str:
    """What the leaderboard reads of a folder (its spec and current cells), as text: cheaper than its pages."""
    meta, rows = read_folder(folder)
    return json.dumps([meta, _cells(rows)])


def _cells(rows) -> list:
    """The current cells' fields a page or a claim reads, as plain values (a metric recorded as an integer stays
    one: 3 - 1 is 2, not 2.0)."""
    metrics = [name[len("metric."):] for name in rows.columns if name.startswith("metric.")]
    values = {name: metric_values(rows, name) for name in metrics}
    return [[*fields, {name: values[name][i] for name in metrics if values[name][i] is not None}]
            for i, fields in enumerate(zip(*(texts(rows, n) for n in ("dataset", "method", "seed", "status",
                                                                        "device", "error")),
                                           decoded(rows, "code")))]


def _by_the_rules(folder: Path) -> list:
    """The current cells computed row by row from the dict reader, as the README states the rules: the test rows
    of the folder's spec hash whose code equals their method's newest; the last row of each (dataset, method, seed,
    device class where the rows span several) in the place of its first; a row without a device gives way to its
    cell's rows on a device."""
    meta, _ = read_folder(folder)
    rows = [r for r in read_runs(folder) if r.get("spec_hash") == meta["spec_hash"] and r["split"] == "test"]
    newest = {r["method"]: r.get("code") for r in rows}
    rows = [r for r in rows if r.get("code") == newest[r["method"]]]
    apart = len({device_class(r.get("device")) for r in rows} - {None}) > 1
    latest: dict = {}
    for row in rows:
        latest[(row["dataset"], row["method"], row["seed"], device_class(row.get("device")) if apart else None)] = row
    if apart:
        placed = {key[:3] for key in latest if key[3] is not None}
        latest = {key: row for key, row in latest.items() if key[3] is not None or key[:3] not in placed}
    return [[r["dataset"], r["method"], r["seed"], r["status"], r.get("device"), r.get("error"), r.get("code"),
             r.get("metrics") or {}] for r in latest.values()]


def test_the_current_cells_are_those_the_rules_give_row_by_row(tmp_path):
    """The newest row per cell, a changed method's older rows, other spec hashes and splits left out, and a metric
    recorded as an integer given back as one."""
    folder = _synthetic(tmp_path / "messy")
    _, rows = read_folder(folder)
    # a cell's metrics in any order (the table's columns follow first appearance over the file, a row's dict its own)
    assert json.dumps(_cells(rows), sort_keys=True) == json.dumps(_by_the_rules(folder), sort_keys=True)
    assert any('"rmse": 1,' in json.dumps(cell[-1]) for cell in _cells(rows))


def test_rows_on_two_device_classes_keep_a_cell_per_class(tmp_path):
    folder = _synthetic(tmp_path / "f", datasets=4)
    rows = [json.loads(line) for line in (folder / RUNS_FILE).read_text().splitlines()]
    extra = [dict(rows[3], device="cuda: NVIDIA H200 (GPU 0)"), dict(rows[4], device="cuda: NVIDIA H200 (GPU 1)"),
             dict(rows[5], device=None, status="skipped", error="no GPU", metrics={})]
    (folder / RUNS_FILE).write_text("".join(json.dumps(r) + "\n" for r in rows + extra))
    _, current = read_folder(folder)
    assert json.dumps(_cells(current)) == json.dumps(_by_the_rules(folder))
    assert sum("cuda" in (cell[4] or "") for cell in _cells(current)) == 2  # beside their cells on the CPU


def test_an_integer_metric_beyond_a_floats_precision_is_read_as_the_nearest_float(tmp_path):
    folder = _synthetic(tmp_path / "f", datasets=4)
    rows = [json.loads(line) for line in (folder / RUNS_FILE).read_text().splitlines()]
    rows[7]["metrics"].update(iterations=2 ** 60 + 1)
    (folder / RUNS_FILE).write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert metric_values(read_table(folder), "iterations")[7] == 2 ** 60


@pytest.mark.parametrize("change, size", [
    (lambda r: r["metrics"].update(flag=True), -1),  # not a row (the row schema): left out, reported
    (lambda r: r.update(seed="s1"), -1),
    (lambda r: r["metrics"].update(bound=None), 0),  # a null metric is missing: NaN in its column
])
def test_a_row_of_wrong_types_is_left_out_and_a_null_metric_is_missing(tmp_path, change, size):
    folder = _synthetic(tmp_path / "f", datasets=4)
    rows = [json.loads(line) for line in (folder / RUNS_FILE).read_text().splitlines()]
    change(rows[7])
    (folder / RUNS_FILE).write_text("".join(json.dumps(r) + "\n" for r in rows))
    table = read_table(folder)
    assert len(table) == len(rows) + size
    if not size:
        assert math.isnan(table["metric.bound"][7])


def test_the_saved_table_is_parquet_that_pandas_reads_alone(tmp_path, monkeypatch):
    """A pandas (or polars, DuckDB) user reads the saved table without the harness: one row per line."""
    import pandas as pd

    monkeypatch.setattr(table_module, "CACHE_MIN_BYTES", 0)
    folder = _synthetic(tmp_path / "f", datasets=4)
    table = read_table(folder)
    alone = pd.read_parquet(folder / CACHE)
    assert len(alone) == len(table) == len(list(read_runs(folder)))
    assert list(alone["method"].astype(str)) == texts(table, "method")
    assert alone["metric.rmse"].equals(table["metric.rmse"])


@pytest.fixture
def saved(tmp_path, monkeypatch):
    """A folder whose table is saved at any size, and a record of the byte each read of runs.jsonl began at."""
    monkeypatch.setattr(table_module, "CACHE_MIN_BYTES", 0)
    starts = []
    real = runs_file.decoded_chunks

    def recording(path, extra=(), start=0, first=1, damaged=None, **rest):
        starts.append(start)
        return real(path, extra, start, first, damaged, **rest)

    monkeypatch.setattr(runs_file, "decoded_chunks", recording)
    return _synthetic(tmp_path / "f", datasets=20), starts


def test_the_saved_table_is_read_and_only_the_appended_lines_decoded(saved, monkeypatch):
    folder, starts = saved
    first = _current(folder)
    assert (folder / CACHE).exists() and starts == [0]
    size = (folder / RUNS_FILE).stat().st_size
    assert _current(folder) == first and starts == [0, size]  # nothing decoded again
    rows = [json.loads(line) for line in (folder / RUNS_FILE).read_text().splitlines()]
    with RunStore(folder) as store:  # a later run appends: those lines only are decoded, and shown
        for row in rows[:30]:
            store.append(dict(row, metrics={k: v - 1.0 for k, v in row["metrics"].items()}))
    grown = _current(folder)
    assert starts[-1] == size and grown != first
    (folder / CACHE).unlink()
    assert _current(folder) == grown and starts[-1] == 0


def test_the_saved_table_of_a_rewritten_file_is_not_used(saved):
    """``harness repair`` and a superseded row moved aside rewrite runs.jsonl: the table saved from the file
    before no longer match it, and it is read afresh."""
    folder, starts = saved
    _current(folder)
    lines = (folder / RUNS_FILE).read_bytes().splitlines(keepends=True)
    with RunStore(folder) as store:
        moved = store.move_aside(lambda record: record["seed"] == 0 and record["dataset"] == "snelson-m5")
    assert moved
    after = _current(folder)
    assert starts[-1] == 0
    (folder / CACHE).unlink()
    assert _current(folder) == after
    # the same size, one line changed in place (no harness command does this): the file's size and time tell
    (folder / RUNS_FILE).write_bytes(b"".join(lines))
    _current(folder)
    assert starts[-1] == 0
    middle = len(lines) // 2
    changed = lines[middle].replace(b'"status": "ok"', b'"status": "no"')
    assert len(changed) == len(lines[middle])
    (folder / RUNS_FILE).write_bytes(b"".join(lines[:middle] + [changed] + lines[middle + 1:]))
    assert _current(folder) == _fresh(folder)


def _fresh(folder: Path) -> dict[str, bytes]:
    copy = folder.parent / "fresh"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(folder, copy)
    (copy / CACHE).unlink(missing_ok=True)
    return _current(copy)


def test_a_saved_table_that_no_longer_matches_is_removed(saved, monkeypatch):
    """A folder whose runs.jsonl shrank below the size that keeps a table (superseded rows moved aside) does not
    keep a stale file, which every rebuild would load to find it stale."""
    folder, starts = saved
    _current(folder)
    assert (folder / CACHE).exists()
    monkeypatch.setattr(table_module, "CACHE_MIN_BYTES", 10 ** 9)
    with RunStore(folder) as store:
        assert store.move_aside(lambda record: record["seed"] == 0)
    _current(folder)
    assert not (folder / CACHE).exists() and starts[-1] == 0


def test_a_damaged_saved_table_is_built_again(saved):
    folder, starts = saved
    first = _current(folder)
    (folder / CACHE).write_bytes(b"not parquet")
    assert _current(folder) == first and starts[-1] == 0


def test_a_table_saved_by_another_version_is_built_again(saved, monkeypatch):
    folder, starts = saved
    first = _current(folder)
    monkeypatch.setattr(table_module, "_FORMAT", table_module._FORMAT + "x")
    assert _current(folder) == first and starts[-1] == 0
    assert _current(folder) == first and starts[-1] == (folder / RUNS_FILE).stat().st_size


def test_damaged_lines_are_reported_from_the_saved_table_too(saved, capsys):
    folder, _ = saved
    number = len((folder / RUNS_FILE).read_bytes().splitlines()) + 1
    with open(folder / RUNS_FILE, "ab") as f:
        f.write(b"{not json\n")
    _current(folder)
    said = capsys.readouterr().err
    runs_file._reported.clear()  # a new process
    _current(folder)
    assert capsys.readouterr().err == said and f"{RUNS_FILE}:{number}: not a cell record" in said


def test_the_saved_table_holds_the_spec_parsed(saved, monkeypatch):
    """A 16,667-dataset spec.yaml takes 0.6 s to parse: a folder with saved table keeps it parsed beside them."""
    import yaml

    from harness import store

    folder, _ = saved
    parses, parse = [], yaml.load
    store._known_yaml.clear()
    monkeypatch.setattr(yaml, "load", lambda *a, **k: parses.append(1) or parse(*a, **k))
    first = _current(folder)
    assert len(parses) == 1  # saving it and reading it: one parse
    store._known_yaml.clear()  # a new process
    monkeypatch.setattr(yaml, "load", lambda *a, **k: pytest.fail("parsed the spec.yaml the saved table holds"))
    assert _current(folder) == first


def test_the_spec_read_with_the_table_is_the_callers_own(saved):
    """read_folder takes the spec parsed from the saved table (no copy of it kept for load_yaml to unpickle)."""
    import yaml

    folder, _ = saved
    text = (folder / "spec.yaml").read_text()
    _, first = table_module.read_table_and_spec(folder, text)  # parsed to be saved
    _, again = table_module.read_table_and_spec(folder, text)  # the saved table's
    assert first == again == yaml.safe_load(text) and first is not again
    again["spec"]["title"] = "changed by the caller"
    assert table_module.read_table_and_spec(folder, text)[1] == first
    assert table_module.read_table_and_spec(folder, text + "# another text\n")[1] is None


@pytest.mark.parametrize("folder", sorted(p.parent for p in (ROOT / "results").glob("*/*/" + RUNS_FILE)),
                         ids=lambda p: f"{p.parent.name}-{p.name}")
def test_every_committed_folders_current_cells_are_those_the_rules_give(folder):
    """Every row of the table is the fast reader's, and the current cells are those the rules give row by row."""
    table, cells = read_table(folder), list(read_cells(folder))
    assert len(table) == len(cells)
    for name in ("dataset", "method", "seed", "status"):
        assert texts(table, name) == [c[name] for c in cells], name
    assert decoded(table, "code") == [c["code"] for c in cells]
    _, rows = read_folder(folder)
    # a cell's metrics in any order (the table's columns follow first appearance over the file, a row's dict its own)
    assert json.dumps(_cells(rows), sort_keys=True) == json.dumps(_by_the_rules(folder), sort_keys=True)


def test_a_claim_pairs_the_cells_the_rules_give(tmp_path):
    """Each paired claim's (dataset, seed) differences, value and type alike (a metric recorded as an integer
    gives integer differences), as a join of the two methods' current cells row by row gives them."""
    from harness.claims import paired_cells

    folder = _synthetic(tmp_path / "messy")
    meta, rows = read_folder(folder)
    cells = _by_the_rules(folder)
    methods = [m.get("id", m["name"]) for m in meta["spec"]["methods"]]
    claims = [dict(c, metric=metric) for c in meta["spec"]["claims"] if c.get("better")
              for metric in (c["metric"], "rmse")]
    claims += [{"better": better, "than": than, "metric": "rmse"} for better, than in zip(methods, methods[1:])]
    assert claims
    for claim in claims:
        wanted = set(claim.get("datasets") or ()) or None
        for goal in ("max", "min"):
            found = {m: {(c[0], c[2]): c[-1][claim["metric"]] for c in cells if c[1] == m and c[3] == "ok"
                         and claim["metric"] in c[-1] and (wanted is None or c[0] in wanted)}
                     for m in (claim["better"], claim["than"])}
            mine, theirs = found[claim["better"]], found[claim["than"]]
            expected = {cell: (mine[cell] - theirs[cell]) if goal == "max" else (theirs[cell] - mine[cell])
                        for cell in sorted(mine) if cell in theirs}
            got = paired_cells(claim, rows, goal)
            assert list(got) == list(expected) and json.dumps(list(got.values())) == json.dumps(list(expected.values()))
    assert any(type(v) is int for claim in claims for v in paired_cells(claim, rows, "min").values())


@pytest.fixture
def in_processes(monkeypatch):
    """Large-file reads at any size, split over three processes (this one and two spawned), whose calls are counted."""
    calls = []
    real = table_module._decoded_in_processes

    def counted(*args):
        calls.append(args[1])
        return real(*args)

    monkeypatch.setattr(table_module, "_cores", lambda: 3)
    monkeypatch.setattr(table_module, "_decoded_in_processes", counted)
    monkeypatch.setattr(table_module, "PARALLEL_MIN_BYTES", 0)
    return calls


def test_a_large_file_read_in_processes_gives_the_table_of_one(tmp_path, monkeypatch, in_processes, capsys):
    folder = _synthetic(tmp_path / "f", datasets=30)
    lines = (folder / RUNS_FILE).read_bytes().splitlines(keepends=True)
    lines[len(lines) // 2] = b"{not json\n"  # in the second of three ranges: reported by its line in the file
    (folder / RUNS_FILE).write_bytes(b"".join(lines) + b'{"cut": ')  # and a last line cut by a crash
    together = _current(folder)
    assert in_processes == [0]
    said = capsys.readouterr().err
    assert f"{RUNS_FILE}:{len(lines) // 2 + 1}: not a cell record" in said and said.count("not a cell record") == 1
    monkeypatch.setattr(table_module, "PARALLEL_MIN_BYTES", 1 << 40)
    runs_file._reported.clear()
    assert _current(folder) == together and in_processes == [0]  # this process alone reads the same
    assert capsys.readouterr().err == said
    alone = read_table(folder)
    monkeypatch.setattr(table_module, "PARALLEL_MIN_BYTES", 0)
    split = read_table(folder)
    assert len(split) == len(alone) and list(split.columns) == list(alone.columns)
    for name in split.columns:
        if name in table_module.CATEGORIES:
            assert texts(split, name) == texts(alone, name), name
        elif name != "curves":
            assert split[name].equals(alone[name]), name
    assert split["curves"].tolist() == alone["curves"].tolist()
