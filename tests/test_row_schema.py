"""Every row of runs.jsonl is checked against the row schema when it is read (issue 26, item 1): a valid JSON line
whose fields have the wrong types is reported with its line number and what is wrong, and left out, like a damaged
line, by the leaderboard, a run's planning and pages, and the dict reader; `harness merge` refuses it naming it;
`harness repair` moves it to damaged.jsonl. A null metric is missing everywhere, claims included."""
from __future__ import annotations

import json
import shutil

import pytest

from harness import runs_file, store

# (name, field, value, what the report says): each gave a traceback in leaderboard, run and merge before
WRONG = [
    ("dataset-a-list", "dataset", ["easy"], 'dataset is ["easy"], expected a string'),
    ("method-a-dict", "method", {"a": 1}, 'method is {"a": 1}, expected a string'),
    ("metrics-a-string", "metrics", "x", 'metrics is "x", expected an object of metric values'),
    ("seed-a-string", "seed", "abc", 'seed is "abc", expected an integer'),
    ("metric-a-string", ("metrics", "toy_score"), "high", 'metrics["toy_score"] is "high", expected a number or null'),
    ("metric-a-list", ("metrics", "toy_score"), [1], 'metrics["toy_score"] is [1], expected a number or null'),
    ("curves-a-string", "curves", "x", 'curves is "x", expected an object'),
    ("curve-without-y", "curves", {"c": {"x": [1.0]}}, 'curves["c"].y is null, expected a list of numbers'),
    ("device-a-number", "device", 3, "device is 3, expected a string or null"),
    ("kind-a-number", "kind", 1, "kind is 1, expected a string or null"),
    ("task-version-a-number", "task_version", 1, "task_version is 1, expected a string or null"),
    ("git-commit-a-number", "git_commit", 1, "git_commit is 1, expected a string or null"),
    # no traceback before, but not rows either: read as rows they would be counted wrong
    ("status-unknown", "status", "weird", 'status is "weird", expected one of ok, failed, timed-out, skipped'),
    ("key-a-number", "key", 5, "key is 5, expected a string"),
    ("seed-a-float", "seed", 1.5, "seed is 1.5, expected an integer"),
    ("seed-a-boolean", "seed", True, "seed is true, expected an integer"),
    ("split-a-list", "split", [1], "split is [1], expected a string"),
    ("metric-a-boolean", ("metrics", "toy_score"), True, 'metrics["toy_score"] is true, expected a number or null'),
]


@pytest.fixture(scope="module")
def toy_folder(tmp_path_factory):
    """A quick toy run's results folder (4 rows), made once; each test copies it."""
    import harness
    from conftest import PLUGINS, TOY_SPEC
    from harness.registry import default_registry

    root = tmp_path_factory.mktemp("toy")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HARNESS_PLUGINS", "toy_plugin:CATALOGUE")
        patch.syspath_prepend(str(PLUGINS))
        default_registry.cache_clear()
        spec = root / "toy.yaml"
        spec.write_text(TOY_SPEC)
        harness.run(spec, root / "out", progress=False, profile="quick")
    default_registry.cache_clear()
    return root / "out" / "toy"


def _with_row(folder, tmp_path, change) -> tuple:
    """A copy of ``folder`` whose second row went through ``change``; (the copy, its lines)."""
    copy = tmp_path / "out" / "toy"
    shutil.copytree(folder, copy)
    lines = (copy / store.RUNS_FILE).read_bytes().splitlines(keepends=True)
    row = json.loads(lines[1])
    change(row)
    lines[1] = (json.dumps(row) + "\n").encode()
    (copy / store.RUNS_FILE).write_bytes(b"".join(lines))
    return copy, lines


def _setter(field, value):
    def change(row):
        if isinstance(field, tuple):
            row[field[0]][field[1]] = value
        else:
            row[field] = value
    return change


@pytest.mark.parametrize("field, value, said", [w[1:] for w in WRONG], ids=[w[0] for w in WRONG])
def test_a_row_of_wrong_types_is_reported_left_out_and_repaired(toy_folder, tmp_path, capsys, toy_env, field,
                                                                 value, said):
    import harness
    from harness.merge import MergeError, merge
    from harness.report.folder import write_leaderboard
    from harness.store import RunStore

    folder, lines = _with_row(toy_folder, tmp_path, _setter(field, value))
    expected = f"runs.jsonl:2: {said}; the line is ignored (`harness repair {folder}` moves such lines to damaged.jsonl)"
    runs_file._reported.clear()
    assert len(list(runs_file.read_cells(folder))) == 3
    assert expected in capsys.readouterr().err
    runs_file._reported.clear()
    assert [r["key"] for r in runs_file.read_runs(folder)] == [json.loads(lines[i])["key"] for i in (0, 2, 3)]
    assert expected in capsys.readouterr().err  # the dict reader agrees
    runs_file._reported.clear()
    write_leaderboard(folder)  # the pages, without the row
    assert expected in capsys.readouterr().err
    with pytest.raises(MergeError, match=r"runs\.jsonl:2: damaged line \(" + _re(said) + r"\); `harness repair"):
        merge(tmp_path / "merged", [folder])
    assert not (tmp_path / "merged").exists()
    runs_file._reported.clear()
    # a run plans over the folder (the row's cell is not done: it runs again) and rebuilds its pages
    spec = tmp_path / "toy.yaml"
    from conftest import TOY_SPEC

    spec.write_text(TOY_SPEC)
    (summary,) = harness.run(spec, tmp_path / "out", progress=False, profile="quick")
    assert summary.ok and sum(summary.statuses.values()) == 1 and summary.already_done == 3
    with RunStore(folder) as runs:
        assert runs.repair() == [2]
    assert (folder / store.DAMAGED_FILE).read_bytes() == lines[1]


def _re(text: str) -> str:
    import re

    return re.escape(text)


def test_a_null_metric_is_missing_everywhere_claims_included(toy_folder, tmp_path, capsys, toy_env):
    """The README says null metrics are supported: a claim that reads one gave a traceback
    (float - NoneType); now the row lacks the metric, for the pages, the claims and both readers."""
    import harness
    from harness.merge import merge
    from harness.report.folder import write_leaderboard

    folder, _ = _with_row(toy_folder, tmp_path, _setter(("metrics", "toy_score"), None))
    cells, rows = list(runs_file.read_cells(folder)), list(runs_file.read_runs(folder))
    assert "toy_score" not in cells[1]["metrics"] and "toy_loss" in cells[1]["metrics"]
    assert [c["metrics"] for c in cells] == [r["metrics"] for r in rows]
    verdicts = write_leaderboard(folder)  # the claim tunable-wins reads toy_score of that cell
    assert [v.claim for v in verdicts] == ["tunable-wins"]
    merge(tmp_path / "merged", [folder])
    spec = tmp_path / "toy.yaml"
    from conftest import TOY_SPEC

    spec.write_text(TOY_SPEC)
    (summary,) = harness.run(spec, tmp_path / "out", progress=False, profile="quick")
    assert summary.ok and "Traceback" not in capsys.readouterr().err


def test_the_table_reader_reports_the_same_problem_from_the_saved_table(tmp_path, capsys, monkeypatch):
    """The saved table keeps what was wrong with each damaged line, so a second read says it again."""
    from harness import results_table

    monkeypatch.setattr(results_table, "CACHE_MIN_BYTES", 0)
    folder = tmp_path / "f"
    folder.mkdir()
    good = {"key": "k", "status": "ok", "dataset": "d", "method": "m", "seed": 0, "split": "test", "metrics": {"x": 1.0}}
    bad = {**good, "seed": "abc"}
    (folder / store.RUNS_FILE).write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    for _ in range(2):
        runs_file._reported.clear()
        assert len(results_table.read_table(folder)) == 1
        assert 'runs.jsonl:2: seed is "abc", expected an integer' in capsys.readouterr().err
    assert (folder / results_table.CACHE).exists()
