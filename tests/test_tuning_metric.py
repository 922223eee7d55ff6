"""The tuning metric: a spec's ``tuning.metric`` and a dataset's ``tuning: {metric: ...}`` (the schema, the loader,
``harness validate``'s errors), the studies that optimise it in its catalogue's direction, the study names of pairs
tuned on the primary metric left as they were, and the page that says which metric a pair was tuned on."""
from __future__ import annotations

import json

import pytest

from conftest import TOY_SPEC, harness_cli
from harness.spec.load import SpecError, load_spec, validate_spec
from harness.spec.model import stable_hash
from test_tuning_resume import _run, inline_executors  # noqa: F401 (a fixture)

EASY = "{name: toy-target, id: easy, params: {noise: 0.05}}"
LOSS_TUNED = "{name: toy-target, id: easy, params: {noise: 0.05}, tuning: {metric: toy_loss}}"
TUNING = "tuning: {trials: 4, sampler: {name: tpe, args: {n_startup_trials: 2}}}"


def _with(dataset: str | None = None, tuning: str | None = None) -> str:
    """TOY_SPEC with the easy dataset's entry and the tuning section replaced."""
    text = TOY_SPEC
    if dataset is not None:
        assert EASY in text
        text = text.replace(EASY, dataset)
    if tuning is not None:
        assert TUNING in text
        text = text.replace(TUNING, tuning)
    return text


def test_the_tuning_metric_defaults_to_the_primary_and_a_dataset_overrides_the_specs(toy_env, write_spec):
    plain = load_spec(write_spec(TOY_SPEC))
    assert [plain.tuning_metric(d) for d in plain.datasets] == ["toy_score", "toy_score"]
    own = load_spec(write_spec(_with(LOSS_TUNED)))
    assert own.dataset("easy").tuning_metric == "toy_loss" and own.dataset("hard").tuning_metric is None
    assert [own.tuning_metric(d) for d in own.datasets] == ["toy_loss", "toy_score"]
    spec_wide = load_spec(write_spec(_with(tuning=TUNING[:-1] + ", metric: toy_loss}")))
    assert spec_wide.tuning.metric == "toy_loss"
    assert [spec_wide.tuning_metric(d) for d in spec_wide.datasets] == ["toy_loss", "toy_loss"]
    assert spec_wide.primary_metric == "toy_score"  # the leaderboard still ranks by the primary metric


def test_a_profile_can_set_a_datasets_tuning_metric(toy_env, write_spec):
    text = TOY_SPEC.replace("datasets: {hard: {params: {noise: 0.2}}}",
                            "datasets: {hard: {params: {noise: 0.2}, tuning: {metric: toy_loss}}}")
    path = write_spec(text)
    assert load_spec(path, "quick").dataset("hard").tuning_metric == "toy_loss"
    assert load_spec(path).dataset("hard").tuning_metric is None


@pytest.mark.parametrize("dataset, tuning, path, needle", [
    ("{name: toy-target, id: easy, params: {noise: 0.05}, tuning: {metric: toy_los}}", None,
     ("datasets", 0, "tuning", "metric"), "unknown metric 'toy_los' (did you mean 'toy_loss'"),
    (None, TUNING[:-1] + ", metric: toy_scor}", ("tuning", "metric"), "unknown metric 'toy_scor' (did you mean"),
    ("{name: toy-target, id: easy, params: {noise: 0.05}, tuning: {metric: miou}}", None,
     ("datasets", 0, "tuning", "metric"), "task 'toy.guess' does not report 'miou'"),
    ("{name: toy-target, id: easy, params: {noise: 0.05}, tuning: {metrc: toy_loss}}", None,
     ("datasets", 0, "tuning", "metrc"), "unknown key 'metrc' (did you mean 'metric'?)"),
])
def test_validate_rejects_an_unknown_tuning_metric_where_it_is_written(toy_env, write_spec, dataset, tuning, path,
                                                                         needle):
    text = _with(dataset, tuning)
    spec = write_spec(text)
    with pytest.raises(SpecError, match=r":\d+:\d+: ") as info:  # file:line:col: every problem located
        validate_spec(spec)
    (problem,) = [p for p in info.value.problems if needle in p.message]
    assert problem.path == path and problem.file == str(spec)
    written = next(i for i, line in enumerate(text.splitlines(), 1) if (dataset or tuning).split(",")[-1] in line)
    assert problem.line == written
    cli = harness_cli("validate", spec)
    assert cli.returncode == 2 and "Traceback" not in cli.stderr
    assert f"{spec}:{problem.line}:" in cli.stderr and needle in cli.stderr


def test_a_pair_tuned_on_the_primary_metric_keeps_its_study_name(toy_env, write_spec):
    """tuning.json entries name their study and a pair whose entry names the study a run would open keeps its choice:
    the name of a pair tuned on the primary metric is the one it had before tuning metrics could differ (the
    fingerprint as it was, hashed here), so committed tuning of other specs still freezes; another metric renames it."""
    from harness.tuning import study_name

    def name(text: str, dataset: str = "easy") -> str:
        spec = load_spec(write_spec(text))
        return study_name(spec, spec.dataset(dataset), spec.method("toy-tunable"), {"task": "t"})

    spec = load_spec(write_spec(TOY_SPEC))
    dataset, method = spec.dataset("easy"), spec.method("toy-tunable")
    before = stable_hash({  # harness.tuning.study_name's fingerprint before the tuning metric (commit 54ae383)
        "dataset": [dataset.name, dataset.params], "method": [method.name, method.params, method.search],
        "tuning": [spec.tuning.sampler, spec.tuning.sampler_args, list(spec.tuning.seeds), spec.tuning.sampler_seed],
        "metric": spec.primary_metric, "profile": spec.profile, "task": spec.task,
        "batch": spec.tuning.batch, "code": {"task": "t"},
    })[:12]
    assert name(TOY_SPEC) == f"toy/easy/toy-tunable/{before}"
    assert name(_with(tuning=TUNING[:-1] + ", metric: toy_score}")) == name(TOY_SPEC)  # the primary, said outright
    own = _with(LOSS_TUNED)
    assert name(own) != name(TOY_SPEC)
    assert name(own, "hard") == name(TOY_SPEC, "hard")  # the other dataset's pairs are tuned as before


def test_a_pair_is_tuned_on_its_datasets_metric_in_its_direction(toy_env, write_spec, tmp_path, inline_executors):
    """toy_loss is minimised: the chosen trial is the one with the least mean validation loss, tuning.json and the
    page say the pair was tuned on it, and the other dataset's pair on the primary metric, maximised."""
    import optuna

    from toy_plugin import Tunable, toy_target

    from harness.tasks.base import Context

    text = _with(LOSS_TUNED, TUNING[:-1] + ", seeds: [0, 1]}").replace("seeds: [0, 1, 2]", "seeds: [0]")
    text = text.replace("  - {name: toy-constant, kind: baseline, params: {value: 0.0}}\n", "")
    text = text.replace("claims:\n  - {id: tunable-wins, says: tuned beats constant, better: toy-tunable, than: "
                        "toy-constant, metric: toy_score}\n", "")
    spec = write_spec(text)
    _run(spec, tmp_path / "o", "inline")
    folder = tmp_path / "o" / "toy"
    entries = {e["dataset"]: e for e in json.loads((folder / "tuning.json").read_text())}
    assert (entries["easy"]["metric"], entries["easy"]["goal"]) == ("toy_loss", "min")
    assert (entries["hard"]["metric"], entries["hard"]["goal"]) == ("toy_score", "max")

    def loss(params: dict, seed: int) -> float:
        data = toy_target(Context(seed=seed, split="val", dataset="easy"), noise=0.05)
        return abs(Tunable(**params).guess(data.hint, None) - data.target)

    storage = f"sqlite:///{folder / 'optuna.db'}"
    study = optuna.load_study(study_name=entries["easy"]["study"], storage=storage)
    assert study.direction == optuna.study.StudyDirection.MINIMIZE
    values = {t.number: t.value for t in study.get_trials(deepcopy=False) if t.value is not None}
    assert len(values) == 4
    for trial in study.get_trials(deepcopy=False):
        assert trial.value == pytest.approx((loss(trial.params, 0) + loss(trial.params, 1)) / 2, abs=1e-12)
    chosen = entries["easy"]["chosen"]
    assert chosen["value"] == min(values.values()) and chosen["number"] == min(values, key=values.get)
    hard = optuna.load_study(study_name=entries["hard"]["study"], storage=storage)
    assert hard.direction == optuna.study.StudyDirection.MAXIMIZE
    markdown = (folder / "leaderboard.md").read_text()
    start = markdown.index("## Tuning")
    end = markdown.find("\n## ", start + 1)  # the next section, if any
    tuning = markdown[start:end if end != -1 else None]
    assert "maximises the mean of toy_score over the validation seeds (the validation value), or, where the value " \
           "says “on” another metric (toy_loss: its dataset's tuning metric)" in tuning
    assert f"| easy | toy-tunable | " in tuning and "(on toy_loss ↓)" in tuning
    assert tuning.count("(on ") == 1  # the hard pair was tuned on the primary metric: nothing said beside it


def test_each_study_names_its_metric_and_what_it_tunes_for_the_dashboard(toy_env, write_spec, tmp_path,
                                                                          inline_executors, monkeypatch):
    """optuna-dashboard shows a study's metric names and user attrs: each study gets its tuning metric and the spec,
    profile, dataset, method, metric and goal, with no ExperimentalWarning; a study opened again (here one from
    before the labels, an interrupted run's) gets them then, and its name and tuning.json stay as they were."""
    import warnings

    import optuna

    from harness.tuning import StudyRun

    text = _with(LOSS_TUNED).replace("seeds: [0, 1, 2]", "seeds: [0]")
    spec = write_spec(text)
    with monkeypatch.context() as unlabelled:  # as the harness opened studies before it labelled them
        unlabelled.setattr(StudyRun, "_label", lambda self: None, raising=False)
        with pytest.raises(KeyboardInterrupt, match="Ctrl-C after 1 cells"):
            _run(spec, tmp_path / "o", "stop-at-1")
    folder = tmp_path / "o" / "toy"
    storage = f"sqlite:///{folder / 'optuna.db'}"
    before = {s.study_name: s for s in optuna.get_all_study_summaries(storage)}
    assert before and all(s.user_attrs == {} for s in before.values())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _run(spec, tmp_path / "o", "inline")
    assert not [w for w in caught if issubclass(w.category, optuna.exceptions.ExperimentalWarning)], caught
    entries = {e["dataset"]: e for e in json.loads((folder / "tuning.json").read_text())}
    assert {e["study"] for e in entries.values()} == set(before)  # the studies reopened, not new ones
    for dataset, metric, goal in (("easy", "toy_loss", "min"), ("hard", "toy_score", "max")):
        study = optuna.load_study(study_name=entries[dataset]["study"], storage=storage)
        assert study.metric_names == [metric]
        assert study.user_attrs == {"spec": "toy", "profile": "default", "dataset": dataset,
                                    "method": "toy-tunable", "metric": metric, "goal": goal}
