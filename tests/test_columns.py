"""The leaderboard read from columns (harness.columns) writes the pages the row-by-row reader writes, and the columns
saved beside a large runs.jsonl are used only while they match it."""
from __future__ import annotations

import importlib.util
import json
import math
import shutil
from pathlib import Path

import pytest

from harness import columns as columns_module
from harness.report import folder as report_folder
from harness.columns import SIDECAR, ColumnRows, current_rows, read_columns
from harness.report.folder import read_folder, write_leaderboard
from harness.store import RUNS_FILE, RunStore, read_cells

ROOT = Path(__file__).resolve().parents[1]
PAGES = ("leaderboard.md", "leaderboard.csv", "leaderboard.html", "claims.json")


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


def _pages(folder: Path) -> dict[str, bytes]:
    write_leaderboard(folder)
    return {name: (folder / name).read_bytes() for name in PAGES}


def _current(folder: Path) -> str:
    """What the leaderboard reads of a folder (its spec and current rows), as text: cheaper than its pages."""
    meta, rows = read_folder(folder)
    return json.dumps([meta, [[row[n] for n in ("dataset", "method", "seed", "status", "code", "metrics")]
                              for row in rows]])


def _row_by_row(monkeypatch) -> None:
    monkeypatch.setattr(report_folder, "read_columns", lambda folder, spec_text=None: None)


def test_the_pages_from_columns_are_the_pages_row_by_row(tmp_path, monkeypatch):
    folder = _synthetic(tmp_path / "messy")
    meta, rows = read_folder(folder)
    assert isinstance(rows, ColumnRows)  # what this test compares: the columns' path
    from_columns = _pages(folder)
    _row_by_row(monkeypatch)
    assert not isinstance(read_folder(folder)[1], ColumnRows)
    assert _pages(folder) == from_columns


def test_a_column_row_is_the_row_the_reader_gives(tmp_path, monkeypatch):
    """The current rows, in their order, with every field the leaderboard and the claims read (``key`` aside)."""
    folder = _synthetic(tmp_path / "messy")
    _, rows = read_folder(folder)
    _row_by_row(monkeypatch)
    _, expected = read_folder(folder)
    assert len(rows) == len(expected)
    fields = [name for name in type(expected[0]).__struct_fields__ if name != "key"]
    assert [[row[name] for name in fields] for row in rows] == [[row[name] for name in fields] for row in expected]
    # as JSON: 1 == 1.0 in Python, and a metric recorded as an integer stays one
    assert [json.dumps(row["metrics"]) for row in rows] == [json.dumps(row["metrics"]) for row in expected]
    assert any('"rmse": 1,' in json.dumps(row["metrics"]) for row in rows)


@pytest.mark.parametrize("change, why", [
    (lambda r: r["metrics"].update(iterations=2 ** 60), "an integer beyond a float's"),
])
def test_a_row_that_columns_cannot_give_back_exactly_is_read_row_by_row(tmp_path, change, why):
    folder = _synthetic(tmp_path / "f", datasets=4)
    rows = [json.loads(line) for line in (folder / RUNS_FILE).read_text().splitlines()]
    change(rows[7])
    (folder / RUNS_FILE).write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert read_columns(folder) is None, why
    assert not isinstance(read_folder(folder)[1], ColumnRows)


@pytest.mark.parametrize("change, size", [
    (lambda r: r["metrics"].update(flag=True), -1),  # not a row (the row schema): left out, reported
    (lambda r: r.update(seed="s1"), -1),
    (lambda r: r["metrics"].update(bound=None), 0),  # a null metric is missing: a column's nan
])
def test_a_row_of_wrong_types_is_left_out_and_a_null_metric_is_missing(tmp_path, change, size):
    folder = _synthetic(tmp_path / "f", datasets=4)
    rows = [json.loads(line) for line in (folder / RUNS_FILE).read_text().splitlines()]
    change(rows[7])
    (folder / RUNS_FILE).write_text("".join(json.dumps(r) + "\n" for r in rows))
    columns = read_columns(folder)
    assert columns is not None and columns.size == len(rows) + size
    if not size:
        assert math.isnan(columns.metrics["bound"][7])


def test_rows_on_two_device_classes_are_read_row_by_row(tmp_path):
    folder = _synthetic(tmp_path / "f", datasets=4)
    rows = [json.loads(line) for line in (folder / RUNS_FILE).read_text().splitlines()]
    rows[3]["device"] = "cuda: NVIDIA H200"
    (folder / RUNS_FILE).write_text("".join(json.dumps(r) + "\n" for r in rows))
    meta, _ = read_folder(folder)
    assert read_columns(folder) is not None and current_rows(read_columns(folder), meta["spec_hash"]) is None


@pytest.fixture
def saved(tmp_path, monkeypatch):
    """A folder whose columns are saved at any size, and a record of the byte each read of runs.jsonl began at."""
    monkeypatch.setattr(columns_module, "SIDECAR_MIN_BYTES", 0)
    from harness import store

    starts = []
    real = store.decoded_chunks

    def recording(path, extra=(), start=0, first=1, damaged=None, **rest):
        starts.append(start)
        return real(path, extra, start, first, damaged, **rest)

    monkeypatch.setattr(store, "decoded_chunks", recording)
    return _synthetic(tmp_path / "f", datasets=20), starts


def test_saved_columns_are_read_and_only_the_appended_lines_decoded(saved, monkeypatch):
    folder, starts = saved
    first = _current(folder)
    assert (folder / SIDECAR).exists() and starts == [0]
    size = (folder / RUNS_FILE).stat().st_size
    assert _current(folder) == first and starts == [0, size]  # nothing decoded again
    rows = [json.loads(line) for line in (folder / RUNS_FILE).read_text().splitlines()]
    with RunStore(folder) as store:  # a later run appends: those lines only are decoded, and shown
        for row in rows[:30]:
            store.append(dict(row, metrics={k: v - 1.0 for k, v in row["metrics"].items()}))
    grown = _current(folder)
    assert starts[-1] == size and grown != first
    (folder / SIDECAR).unlink()
    assert _current(folder) == grown and starts[-1] == 0


def test_saved_columns_of_a_rewritten_file_are_not_used(saved):
    """``harness repair`` and a superseded row moved aside rewrite runs.jsonl: the columns saved from the file
    before no longer match it, and it is read afresh."""
    folder, starts = saved
    _current(folder)
    lines = (folder / RUNS_FILE).read_bytes().splitlines(keepends=True)
    with RunStore(folder) as store:
        moved = store.move_aside(lambda record: record["seed"] == 0 and record["dataset"] == "snelson-m5")
    assert moved
    after = _current(folder)
    assert starts[-1] == 0
    (folder / SIDECAR).unlink()
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
    (copy / SIDECAR).unlink(missing_ok=True)
    return _current(copy)


def test_a_large_folder_that_cannot_be_columns_is_not_decoded_for_them_again(saved):
    """Its first read finds the row that cannot be a column and says so beside runs.jsonl; later reads go straight
    to the rows (one decoding, not two), until the file is rewritten."""
    folder, starts = saved
    rows = [json.loads(line) for line in (folder / RUNS_FILE).read_text().splitlines()]
    rows[5]["metrics"]["flag"] = 2 ** 60  # an integer a float column does not hold exactly
    (folder / RUNS_FILE).write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert read_columns(folder) is None and starts == [0]
    assert read_columns(folder) is None and starts == [0]  # nothing decoded for columns
    with open(folder / RUNS_FILE, "a") as f:  # appended rows do not change it
        f.write(json.dumps(rows[0]) + "\n")
    assert read_columns(folder) is None and starts == [0]
    rows[5]["metrics"].pop("flag")
    (folder / RUNS_FILE).write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert read_columns(folder) is not None and starts == [0, 0]


def test_saved_columns_that_no_longer_match_are_removed(saved, monkeypatch):
    """A folder whose runs.jsonl shrank below the size that keeps columns (superseded rows moved aside) does not
    keep a stale file, which every rebuild would load to find it stale."""
    folder, starts = saved
    _current(folder)
    assert (folder / SIDECAR).exists()
    monkeypatch.setattr(columns_module, "SIDECAR_MIN_BYTES", 10 ** 9)
    with RunStore(folder) as store:
        assert store.move_aside(lambda record: record["seed"] == 0)
    _current(folder)
    assert not (folder / SIDECAR).exists() and starts[-1] == 0


def test_damaged_saved_columns_are_built_again(saved):
    folder, starts = saved
    first = _current(folder)
    (folder / SIDECAR).write_bytes(b"not a pickle")
    assert _current(folder) == first and starts[-1] == 0


def test_columns_saved_by_another_version_are_built_again(saved, monkeypatch):
    """A saved file of another format, or whose columns lack a field this version has, is not used."""
    import pickle

    folder, starts = saved
    first = _current(folder)
    monkeypatch.setattr(columns_module, "_FORMAT", columns_module._FORMAT + 1)
    assert _current(folder) == first and starts[-1] == 0
    with open(folder / SIDECAR, "rb") as f:
        header, body = pickle.load(f), pickle.load(f)
    del body["columns"]["integers"]
    (folder / SIDECAR).write_bytes(pickle.dumps(header) + pickle.dumps(body))
    assert _current(folder) == first and starts[-1] == 0
    assert _current(folder) == first and starts[-1] == (folder / RUNS_FILE).stat().st_size


def test_damaged_lines_are_reported_from_saved_columns_too(saved, capsys):
    folder, _ = saved
    number = len((folder / RUNS_FILE).read_bytes().splitlines()) + 1
    with open(folder / RUNS_FILE, "ab") as f:
        f.write(b"{not json\n")
    _current(folder)
    said = capsys.readouterr().err
    from harness import store

    store._reported.clear()  # a new process
    _current(folder)
    assert capsys.readouterr().err == said and f"{RUNS_FILE}:{number}: not a cell record" in said


def test_the_saved_columns_hold_the_spec_parsed(saved, monkeypatch):
    """A 16,667-dataset spec.yaml takes 0.6 s to parse: a folder with saved columns keeps it parsed beside them."""
    import yaml

    from harness import store

    folder, _ = saved
    parses, parse = [], yaml.load
    store._known_yaml.clear()
    monkeypatch.setattr(yaml, "load", lambda *a, **k: parses.append(1) or parse(*a, **k))
    first = _current(folder)
    assert len(parses) == 1  # saving it and reading it: one parse
    store._known_yaml.clear()  # a new process
    monkeypatch.setattr(yaml, "load", lambda *a, **k: pytest.fail("parsed the spec.yaml the columns hold"))
    assert _current(folder) == first


def test_the_fast_reader_and_the_columns_agree_on_every_committed_folder():
    """Each committed folder either is read from columns, whose rows are the fast reader's, or is refused whole."""
    for path in sorted((ROOT / "results").glob("*/*/" + RUNS_FILE)):
        columns = read_columns(path.parent)
        if columns is None:
            continue
        cells = list(read_cells(path.parent))
        assert columns.size == len(cells), path
        for name in ("dataset", "method", "seed", "status", "code"):
            values = columns.values[name]
            assert [values[c] for c in columns.codes[name].tolist()] == [c[name] for c in cells], (path, name)


def test_a_claim_pairs_the_same_cells_from_columns_as_from_rows(tmp_path, monkeypatch):
    """Each paired claim's (dataset, seed) differences, value and type alike (a metric recorded as an integer
    gives integer differences, as the rows do)."""
    from harness.claims import paired_cells

    folder = _synthetic(tmp_path / "messy")
    meta, rows = read_folder(folder)
    _row_by_row(monkeypatch)
    _, expected = read_folder(folder)
    methods = [m.get("id", m["name"]) for m in meta["spec"]["methods"]]
    claims = [dict(c, metric=metric) for c in meta["spec"]["claims"] if c.get("better")
              for metric in (c["metric"], "rmse")]
    claims += [{"better": better, "than": than, "metric": "rmse"} for better, than in zip(methods, methods[1:])]
    assert claims
    for claim in claims:
        for goal in ("max", "min"):
            mine, theirs = paired_cells(claim, rows, goal), paired_cells(claim, expected, goal)
            assert list(mine) == list(theirs) and json.dumps(list(mine.values())) == json.dumps(list(theirs.values()))
    assert any(type(v) is int for claim in claims for v in paired_cells(claim, rows, "min").values())


@pytest.mark.parametrize("folder", sorted(p.parent for p in (ROOT / "results").glob("*/*/" + RUNS_FILE)),
                         ids=lambda p: f"{p.parent.name}-{p.name}")
def test_every_claim_of_every_committed_folder_has_the_same_verdict_from_columns(folder, monkeypatch):
    """Paired, scaling, exponent-bound and bound claims alike: the verdict, every number in it, from columns and
    row by row."""
    from harness.claims import check_claim
    from harness.report.folder import folder_metrics

    meta, rows = read_folder(folder)
    assert isinstance(rows, ColumnRows)
    _row_by_row(monkeypatch)
    _, expected = read_folder(folder)
    metrics = folder_metrics(folder, meta["spec"])
    goals = {name: metric.goal for name, metric in metrics.items()}
    order = [d.get("id", d["name"]) for d in meta["spec"]["datasets"]]
    for claim in meta["spec"].get("claims", []):
        goal = metrics[claim["metric"]].goal
        assert (json.dumps(check_claim(claim, rows, goal, order, goals).to_dict())
                == json.dumps(check_claim(claim, expected, goal, order, goals).to_dict())), claim.get("id")


@pytest.fixture
def in_processes(monkeypatch):
    """Large-file reads at any size, split over three processes (this one and two spawned), whose calls are counted."""
    calls = []
    real = columns_module._decoded_in_processes

    def counted(*args):
        calls.append(args[1])
        return real(*args)

    monkeypatch.setattr(columns_module, "_cores", lambda: 3)
    monkeypatch.setattr(columns_module, "_decoded_in_processes", counted)
    monkeypatch.setattr(columns_module, "PARALLEL_MIN_BYTES", 0)
    return calls


def test_a_large_file_read_in_processes_gives_the_columns_of_one(tmp_path, monkeypatch, in_processes, capsys):
    folder = _synthetic(tmp_path / "f", datasets=30)
    lines = (folder / RUNS_FILE).read_bytes().splitlines(keepends=True)
    lines[len(lines) // 2] = b"{not json\n"  # in the second of three ranges: reported by its line in the file
    (folder / RUNS_FILE).write_bytes(b"".join(lines) + b'{"cut": ')  # and a last line cut by a crash
    together = _current(folder)
    assert in_processes == [0]
    said = capsys.readouterr().err
    assert f"{RUNS_FILE}:{len(lines) // 2 + 1}: not a cell record" in said and said.count("not a cell record") == 1
    monkeypatch.setattr(columns_module, "PARALLEL_MIN_BYTES", 1 << 40)
    from harness import store

    store._reported.clear()
    assert _current(folder) == together and in_processes == [0]  # this process alone reads the same
    assert capsys.readouterr().err == said
    parts = read_columns(folder)
    monkeypatch.setattr(columns_module, "PARALLEL_MIN_BYTES", 0)
    split = read_columns(folder)
    assert split.size == parts.size and all((split.codes[n] == parts.codes[n]).all() for n in parts.codes)
    assert split.values == parts.values and split.metrics.keys() == parts.metrics.keys()


def test_a_row_that_cannot_be_a_column_in_any_range_reads_rows(tmp_path, monkeypatch, in_processes):
    folder = _synthetic(tmp_path / "f", datasets=30)
    rows = [json.loads(line) for line in (folder / RUNS_FILE).read_text().splitlines()]
    rows[-3]["metrics"] = {"rmse": 2 ** 60}  # in the last range only: an integer no float column holds exactly
    (folder / RUNS_FILE).write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert read_columns(folder) is None and in_processes == [0]
