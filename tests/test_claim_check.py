"""``kind: check``: an assertion that cannot fail without a bug is tested like a bound but reported apart from the
claims (its own verdict words, its own section of the page and of claims.json), never counted as reproduced."""
from __future__ import annotations

import json

import pytest

from harness.claims import REPRODUCED, check_claim, kinds
from harness.claims.check import FAILS, HOLDS, UNCHECKED
from harness.report.folder import write_index, write_leaderboard
from harness.results_table import table_of_rows
from harness.spec.load import SpecError, validate_spec

from conftest import TOY_SPEC
from test_claim_plugins import rows_with, toy_spec, write_folder


def a_check(**extra) -> dict:
    return {"id": "score-in-range", "kind": "check", "says": "the score is at most 2", "methods": ["a", "b"],
            "metric": "toy_score", "at_most": 2.0, "why": "the task clips the score to [0, 2]", **extra}


def test_a_check_holds_fails_or_is_unchecked():
    holds = check_claim(a_check(), table_of_rows(rows_with({0: 0.1, 1: 0.2})), "max")
    assert holds.verdict == HOLDS and holds.cells == 4 and "no cell violates" in holds.reason
    fails = check_claim(a_check(), table_of_rows(rows_with({0: 0.1, 1: 1.9})), "max")
    assert fails.verdict == FAILS and fails.violations == 1 and "a bug to find" in fails.reason
    rows = rows_with({0: 0.1, 1: 0.2})
    rows[0]["status"] = "failed"
    assert check_claim(a_check(), table_of_rows(rows), "max").verdict == UNCHECKED
    assert kinds()["check"].refuting == FAILS and REPRODUCED not in kinds()["check"].verdicts
    assert holds.to_dict()["kind"] == "check" and holds.to_dict()["why"] == "the task clips the score to [0, 2]"


def test_checks_stand_apart_from_claims_on_the_page_and_in_claims_json(toy_env, tmp_path):
    claim = {"id": "a-wins", "says": "a beats b", "better": "a", "than": "b", "metric": "toy_score",
             "source": "harness"}
    root = tmp_path / "root"
    root.mkdir()
    folder = root / "toy"
    write_folder(folder, toy_spec([claim, a_check()]), rows_with({0: 0.1, 1: 0.2, 2: 0.15, 3: 0.12}))
    verdicts = write_leaderboard(folder)
    assert [v.noun for v in verdicts] == ["claim", "check"]
    record = json.loads((folder / "claims.json").read_text())
    assert [c["claim"] for c in record["claims"]] == ["a-wins"]
    assert [(c["claim"], c["verdict"]) for c in record["checks"]] == [("score-in-range", HOLDS)]
    page = (folder / "leaderboard.md").read_text()
    claims, checks = page.index("## Claims"), page.index("## Checks")
    assert claims < page.index("`a-wins`", claims) < checks < page.index("`score-in-range`", checks)
    assert "the task clips the score to [0, 2]" in page[checks:]
    write_index(root)
    index = (root / "index.md").read_text()
    assert "`a-wins`: **reproduced**" in index and "checks: 1 of 1 hold" in index and "score-in-range" not in index


def test_a_folder_without_checks_keeps_its_claims_json_as_it_was(toy_env, tmp_path):
    claim = {"id": "a-wins", "says": "a beats b", "better": "a", "than": "b", "metric": "toy_score"}
    folder = tmp_path / "toy"
    write_folder(folder, toy_spec([claim]), rows_with({0: 0.1, 1: 0.2, 2: 0.15}))
    write_leaderboard(folder)
    assert "checks" not in json.loads((folder / "claims.json").read_text())


def test_a_check_that_stops_holding_is_a_regression(toy_env, tmp_path):
    from harness.regress import compare_roots, parse_tolerances

    for name, differences in (("before", {0: 0.1, 1: 0.2}), ("after", {0: 0.1, 1: 1.9})):
        (tmp_path / name).mkdir()
        write_folder(tmp_path / name / "toy", toy_spec([a_check()]), rows_with(differences))
        write_leaderboard(tmp_path / name / "toy")
    report = compare_roots(tmp_path / "before", tmp_path / "after", parse_tolerances([]))
    (change,) = [c for c in report.changes if c.what == "verdict"]
    assert (change.where, change.before, change.after, change.verdict) == (
        "check score-in-range", HOLDS, FAILS, "regressed")


def test_a_check_is_validated_when_the_spec_loads(toy_env, write_spec):
    text = TOY_SPEC.replace(
        "better: toy-tunable, than: toy-constant, metric: toy_score}",
        "kind: check, methods: [toy-constant], metric: toy_score, at_most: 1, why: the constant is 0}")
    validate_spec(write_spec(text))
    with pytest.raises(SpecError, match="missing required key 'why'"):
        validate_spec(write_spec(text.replace(", why: the constant is 0", "")))
    with pytest.raises(SpecError, match="has no precondition"):
        validate_spec(write_spec(text.replace(
            "why: the constant is 0}",
            "why: the constant is 0, precondition: {better: toy-tunable, than: toy-constant, metric: toy_score}}")))


def test_the_page_opens_with_the_verdicts_and_the_tables_and_folds_the_description(toy_env, tmp_path):
    """A reader sees each verdict and the tables first: the verdicts (claims and checks) head the page, the dataset
    tables come before the claims' evidence, and the spec's description (often forty lines of decisions and
    history) is last, folded, in the Markdown page as in the HTML one."""
    import yaml

    claim = {"id": "a-wins", "says": "a beats b", "better": "a", "than": "b", "metric": "toy_score",
             "source": "harness"}
    folder = tmp_path / "toy"
    spec = toy_spec([claim, a_check()])
    spec["description"] = "What runs and why: " + "a long history " * 40
    write_folder(folder, spec, rows_with({0: 0.1, 1: 0.2, 2: 0.15, 3: 0.12}))
    write_leaderboard(folder)
    markdown = (folder / "leaderboard.md").read_text()
    html = (folder / "leaderboard.html").read_text()
    top = markdown.index("## Verdicts")
    summary = markdown[top:markdown.index("\n- spec `toy`")]
    assert "| `a-wins` | **" in summary and "| `score-in-range` (check) | **holds** |" in summary
    first_table = markdown.index("\n## ", top + 1)  # the first section after the verdicts: a dataset's table
    assert markdown[first_table:].startswith("\n## easy\n")
    assert top < first_table < markdown.index("## Claims") < markdown.index("## About this comparison")
    folded = markdown[markdown.index("## About this comparison"):]
    assert folded.startswith("## About this comparison\n\n<details><summary>") and "What runs and why:" in folded
    assert folded.rstrip().endswith("</details>") and "What runs and why:" not in markdown[:markdown.index("## About")]
    assert html.index("<h2>Verdicts</h2>") < html.index("<h2>Claims</h2>") < html.index("<details><summary>What runs")
    assert "What runs and why:" in html[html.index("<details><summary>What runs"):]
