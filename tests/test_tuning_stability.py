"""How stable each tuned choice is across validation seeds: the per-seed values a trial keeps,
``tuning.json`` beside the results, and the leaderboard's Tuning section."""
from __future__ import annotations

import json

import pytest

from harness.report.folder import write_leaderboard
from harness.store import read_tuning_summaries, write_tuning_summaries
from harness.tuning import SEED_VALUES_ATTR, seed_stability
from test_tuning_resume import _frozen, _run, _spec, inline_executors  # noqa: F401 (a fixture)


@pytest.fixture
def tuned(toy_env, write_spec, tmp_path, inline_executors):
    """A toy pair tuned over validation seeds 0 and 1 (4 trials), then run on its test seed."""
    spec = write_spec(_spec("tpe", batch=1, trials=4), stem="tune")
    _run(spec, tmp_path / "o", "inline")
    return spec, tmp_path / "o" / "tune"


def test_tuning_json_says_what_each_seed_alone_picks(tuned):
    _, folder = tuned
    (entry,) = json.loads((folder / "tuning.json").read_text())
    assert (entry["dataset"], entry["method"], entry["metric"], entry["goal"], entry["trials"]) == (
        "a", "toy-tunable", "toy_score", "max", 4)
    (test_params,) = _frozen(folder)
    assert entry["chosen"]["params"] == {name: test_params[name] for name in ("x", "offset")}
    assert [s["seed"] for s in entry["by_seed"]] == [0, 1]
    values = [s["value"] for s in entry["by_seed"]]
    assert sum(values) / 2 == pytest.approx(entry["chosen"]["value"], rel=1e-12)  # what the study ranked
    for s in entry["by_seed"]:
        assert s["best_value"] >= s["value"] and 1 <= s["rank"] <= s["of"] == 4
        assert (s["rank"] == 1) == (s["best_params"] == entry["chosen"]["params"])
    assert entry["stable"] == all(s["rank"] == 1 for s in entry["by_seed"])
    markdown = (folder / "leaderboard.md").read_text()
    # the tuning follows the dataset tables and the claims' evidence (the page opens with verdicts and tables)
    assert "## Tuning" in markdown and markdown.index("\n## a\n") < markdown.index("## Tuning")
    assert "maximises the mean of toy_score over the validation seeds" in markdown
    assert "| a | toy-tunable | x=" in markdown and "<h2>Tuning</h2>" in (folder / "leaderboard.html").read_text()


def test_a_rerun_that_freezes_the_params_keeps_the_entry(tuned):
    spec, folder = tuned
    before = (folder / "tuning.json").read_bytes()
    (folder / "optuna.db").unlink()  # nothing to re-tune from: the test cells froze the params
    _run(spec, folder.parent, "inline")
    assert not (folder / "optuna.db").exists()  # no study was opened again
    assert (folder / "tuning.json").read_bytes() == before


def _edited(spec, old: str, new: str):
    text = spec.read_text()
    assert old in text
    spec.write_text(text.replace(old, new))


def test_a_spec_edited_elsewhere_keeps_the_tuned_choice_without_the_storage(tuned):
    """A method added (a trivial row, say) changes the spec's hash but not the tuned pair's study: with the Optuna
    storage gone, as in a fresh clone of committed results, the pair is not tuned again and its test cells are
    recorded again under the new hash, not run; only the new method's cells run."""
    spec, folder = tuned
    (entry,) = read_tuning_summaries(folder)
    assert entry["study"].startswith("tune/a/toy-tunable/")
    frozen = _frozen(folder)
    (folder / "optuna.db").unlink()
    _edited(spec, "metrics: {primary: toy_score}", "  - {name: toy-constant, kind: baseline}\nmetrics: {primary: toy_score}")
    (summary,) = _run(spec, folder.parent, "inline")
    assert not (folder / "optuna.db").exists()  # no study was opened
    assert summary.statuses == {"ok": 1}  # the new method's one test cell, nothing else
    assert _frozen(folder)[:2] == frozen * 2  # the tuned cell, recorded again under the new spec hash
    (again,) = read_tuning_summaries(folder)
    assert again == entry


def test_a_changed_search_space_tunes_again(tuned):
    spec, folder = tuned
    (folder / "optuna.db").unlink()
    _edited(spec, "offset: {float: [-0.2, 0.2]}", "offset: {float: [-0.3, 0.3]}")
    _run(spec, folder.parent, "inline")
    assert (folder / "optuna.db").exists()  # another study: the trials would not be the same
    (entry,) = read_tuning_summaries(folder)
    assert entry["study"].startswith("tune/a/toy-tunable/") and entry["trials"] == 4


def test_the_page_shows_what_another_seed_would_pick_and_nothing_of_other_code(tuned):
    _, folder = tuned
    (entry,) = read_tuning_summaries(folder)
    chosen = entry["chosen"]["params"]
    other = {"x": 0.031622776, "offset": 0.1}
    entry["by_seed"] = [
        {"seed": 0, "value": 0.9, "best_number": 2, "best_params": chosen, "best_value": 0.9, "rank": 1, "of": 6},
        {"seed": 1, "value": 0.7, "best_number": 4, "best_params": other, "best_value": 0.8, "rank": 3, "of": 6}]
    entry["stable"] = False
    (folder / "tuning.json").write_text(json.dumps([entry]))
    write_leaderboard(folder)
    first = (folder / "leaderboard.md").read_bytes(), (folder / "leaderboard.html").read_bytes()
    markdown = first[0].decode()
    assert ("seed 0: same (rank 1); seed 1: would pick x=0.0316, offset=0.1 (chosen ranks 3 of 6) "
            "| differs across seeds |") in markdown
    write_leaderboard(folder)
    assert ((folder / "leaderboard.md").read_bytes(), (folder / "leaderboard.html").read_bytes()) == first

    entry["code"] = {**entry["code"], "method": "another version"}  # tuned with code the rows no longer come from
    (folder / "tuning.json").write_text(json.dumps([entry]))
    write_leaderboard(folder)
    assert "## Tuning" not in (folder / "leaderboard.md").read_text()


def test_a_retuned_pair_replaces_its_entry_and_the_others_stay(tmp_path):
    old = [{"dataset": "a", "method": "m", "chosen": 1}, {"dataset": "b", "method": "m", "chosen": 2}]
    write_tuning_summaries(tmp_path, old)
    write_tuning_summaries(tmp_path, [{"dataset": "c", "method": "m", "chosen": 4},
                                      {"dataset": "a", "method": "m", "chosen": 3}])
    assert [e["chosen"] for e in read_tuning_summaries(tmp_path)] == [3, 2, 4]
    write_tuning_summaries(tmp_path, [], failed=[("b", "m")])  # tuned again, no trial completed
    assert [e["chosen"] for e in read_tuning_summaries(tmp_path)] == [3, 4]


def _study(per_trial: list[list[float] | None], goal: str = "max"):
    """An in-memory study: trial i holds per_trial[i]'s values, one per seed 0, 1, ... (None: none kept)."""
    import optuna

    study = optuna.create_study(direction="maximize" if goal == "max" else "minimize")
    lr = optuna.distributions.FloatDistribution(1e-4, 1.0, log=True)
    for i, values in enumerate(per_trial):
        attrs = {SEED_VALUES_ATTR: [[seed, v] for seed, v in enumerate(values)]} if values is not None else {}
        mean = sum(values) / len(values) if values is not None else 0.5
        study.add_trial(optuna.trial.create_trial(params={"lr": 10.0 ** -i}, distributions={"lr": lr}, value=mean,
                                                  user_attrs=attrs))
    return study


def _stability(study, goal: str = "max") -> dict:
    from optuna.trial import TrialState

    return seed_stability(study.get_trials(states=(TrialState.COMPLETE,)), study.best_trial.number, ["lr"], goal)


def test_every_seed_picking_the_chosen_trial_is_stable():
    summary = _stability(_study([[0.5, 0.6], [0.9, 0.8], [0.7, 0.7]]))
    assert summary["chosen"] == {"number": 1, "params": {"lr": 0.1}, "value": pytest.approx(0.85)}
    assert summary["stable"] is True and summary["trials"] == 3
    assert [(s["seed"], s["value"], s["best_number"], s["rank"], s["of"]) for s in summary["by_seed"]] == [
        (0, 0.9, 1, 1, 3), (1, 0.8, 1, 1, 3)]


def test_a_seed_that_alone_picks_another_trial_is_not_stable():
    # mean: trial 0 0.75, trial 1 0.8 (chosen), trial 2 0.6; seed 0 alone picks trial 0 (1.0 > 0.7)
    summary = _stability(_study([[1.0, 0.5], [0.7, 0.9], [0.8, 0.4]]))
    assert summary["stable"] is False
    seed0, seed1 = summary["by_seed"]
    assert (seed0["best_number"], seed0["best_params"], seed0["best_value"], seed0["rank"]) == (0, {"lr": 1.0}, 1.0, 3)
    assert (seed1["best_number"], seed1["rank"]) == (1, 1)


def test_ranks_follow_the_goal_and_ties_go_to_the_chosen_trial():
    # minimised: trial 1 is chosen (mean 0.2); on seed 1 it ties with trial 0 (0.3): a tie keeps the choice
    summary = _stability(_study([[0.5, 0.3], [0.1, 0.3], [0.2, 0.9]], goal="min"), goal="min")
    assert [(s["best_number"], s["rank"]) for s in summary["by_seed"]] == [(1, 1), (1, 1)]
    assert summary["stable"] is True


def test_one_seed_or_no_kept_values_cannot_tell():
    one = _stability(_study([[0.5], [0.9]]))
    assert one["stable"] is None and len(one["by_seed"]) == 1
    old = _stability(_study([None, None]))  # a study from before the per-seed values were kept
    assert old["stable"] is None and old["by_seed"] == [] and old["trials"] == 2
    mixed = _stability(_study([None, [0.9, 0.8], [0.7, 0.6]]))  # the trial without them is not ranked
    assert mixed["stable"] is True and [s["of"] for s in mixed["by_seed"]] == [2, 2]
