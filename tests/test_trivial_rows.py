"""A task's trivial answer as a leaderboard row: the spec lists it with ``kind: trivial`` (and only such a method),
the page marks every method that does not beat it, and ``harness audit`` reads it."""
from __future__ import annotations

import json

import pytest

from conftest import TOY_SPEC
from harness.cli import main
from harness.report.folder import compute, write_leaderboard
from harness.spec.load import SpecError, validate_spec

from test_audit import METRICS, PAIR, VARIED, rows_of, seeds, trivial_folder
from test_claim_plugins import toy_spec, write_folder

WITH_PRIOR = TOY_SPEC.replace("  - {name: toy-constant, kind: baseline, params: {value: 0.0}}\n",
                              "  - {name: toy-constant, kind: baseline, params: {value: 0.0}}\n"
                              "  - {name: toy-prior, kind: trivial}\n")


def test_kind_trivial_is_for_the_task_s_trivial_answer_and_it_must_say_so(toy_env, write_spec):
    validate_spec(write_spec(WITH_PRIOR))
    with pytest.raises(SpecError, match=r"methods\[2\]\.kind: 'toy-prior' is its task's trivial answer: list it with "
                                        r"kind: trivial"):
        validate_spec(write_spec(WITH_PRIOR.replace("toy-prior, kind: trivial", "toy-prior, kind: baseline")))
    with pytest.raises(SpecError, match=r"methods\[1\]\.kind: kind: trivial is for a method the task's catalogue "
                                        r"declares its trivial answer, and 'toy-constant' is not one; trivial methods "
                                        r"of 'toy.guess': toy-prior"):
        validate_spec(write_spec(WITH_PRIOR.replace("toy-constant, kind: baseline", "toy-constant, kind: trivial")))


def test_the_page_marks_each_method_that_does_not_beat_the_trivial_row(tmp_path):
    folder = trivial_folder(tmp_path, {"a": VARIED, "b": [0.5] * 6, "prior": [0.55] * 6})
    write_leaderboard(folder)
    page = (folder / "leaderboard.md").read_text()
    assert "**Below the trivial answer:** b does not beat prior (toy_score 0.55)." in page
    assert "| b (≤ trivial) | baseline |" in page and "| a | baseline |" in page and "| prior | trivial |" in page
    assert "“(≤ trivial)” after a method" in page
    board = compute(folder)
    ((best, below),) = board.below_trivial["easy"]
    assert best.method == "prior" and [row.method for row in below] == ["b"]
    # the trivial row beaten by all: said so, nothing marked
    beaten = trivial_folder(tmp_path, {"a": VARIED, "b": [0.5] * 6, "prior": [0.4] * 6}, "beaten")
    write_leaderboard(beaten)
    page = (beaten / "leaderboard.md").read_text()
    assert "every method beats prior (toy_score 0.4)" in page and "(≤ trivial) |" not in page


def test_a_page_without_a_trivial_row_says_nothing_of_one(tmp_path):
    folder = tmp_path / "plain"
    write_folder(folder, toy_spec([PAIR]), rows_of({"a": seeds(6, toy_score=VARIED), "b": seeds(6, toy_score=0.5)}))
    (folder / "metrics.json").write_text(json.dumps(METRICS))
    write_leaderboard(folder)
    assert "trivial" not in (folder / "leaderboard.md").read_text()
    assert compute(folder).below_trivial == {}


def test_a_run_with_the_trivial_row_marks_what_loses_to_it(toy_env, write_spec, tmp_path, capsys):
    spec = write_spec(WITH_PRIOR)
    assert main(["run", str(spec), "--profile", "quick", "--out", str(tmp_path / "out"), "--no-progress"]) == 0
    folder = tmp_path / "out" / "toy"
    rows = [json.loads(line) for line in (folder / "runs.jsonl").read_text().splitlines()]
    assert {r["kind"] for r in rows if r["method"] == "toy-prior"} == {"trivial"}
    assert all(len(r["load_average"]) == 3 and r["cores"] >= 1 for r in rows if r["status"] == "ok")
    page = (folder / "leaderboard.md").read_text()
    # the constant 0 guesses a target near 0.5 (score about 0.5); the prior guesses 0.5 itself
    assert "toy-constant (≤ trivial)" in page and "do not beat toy-prior (toy_score 0.9" in page


def test_the_spec_s_kind_labels_a_method_whose_rows_recorded_another(tmp_path):
    # rows written while the prior was listed as a baseline: relabelling it in the spec runs nothing again
    folder = trivial_folder(tmp_path, {"a": VARIED, "b": [0.5] * 6, "prior": [0.55] * 6})
    lines = [json.loads(line) for line in (folder / "runs.jsonl").read_text().splitlines()]
    (folder / "runs.jsonl").write_text("".join(json.dumps({**line, "kind": "baseline"}) + "\n" for line in lines))
    write_leaderboard(folder)
    page = (folder / "leaderboard.md").read_text()
    assert "| prior | trivial |" in page and "b (≤ trivial)" in page
