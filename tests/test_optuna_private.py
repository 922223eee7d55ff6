"""Each thing :mod:`harness.optuna_private` takes from Optuna beyond its public API, called for real: an Optuna
that changes one fails here, by name, not in the middle of a resumed tuning run."""
from __future__ import annotations

import ast
import json
import time
import warnings

import pytest

from conftest import ROOT

optuna = pytest.importorskip("optuna")

from harness.optuna_private import has_heartbeat, restored_sampler, sampler_state, stale_trial_numbers  # noqa: E402
from harness.samplers import sampler_class  # noqa: E402


def _spec_sampler_names() -> list[str]:
    schema = json.loads((ROOT / "harness" / "spec" / "schema.json").read_text(encoding="utf-8"))
    found = []

    def walk(node):
        if isinstance(node, dict):
            if "sampler" in node and isinstance(node["sampler"], dict):
                enum = node["sampler"].get("properties", {}).get("name", {}).get("enum")
                if enum:
                    found.extend(enum)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
    walk(schema)
    return sorted(set(found))


SAMPLER_NAMES = _spec_sampler_names()


def test_the_spec_names_samplers_that_optuna_has():
    assert set(SAMPLER_NAMES) == {"tpe", "random", "cmaes", "qmc", "gp"}
    for name in SAMPLER_NAMES:
        assert issubclass(sampler_class(name), optuna.samplers.BaseSampler)


def _draws(study, count: int) -> list[tuple[float, float]]:
    """Ask ``count`` trials of a two-parameter space and tell each its value; their params."""
    drawn = []
    for _ in range(count):
        trial = study.ask()
        x, y = trial.suggest_float("x", -2.0, 2.0), trial.suggest_float("y", -2.0, 2.0)
        study.tell(trial, (x - 0.3) ** 2 + (y + 0.5) ** 2)
        drawn.append((x, y))
    return drawn


def _sampler(name: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        args = {"n_startup_trials": 2} if name in ("tpe", "gp", "cmaes") else {}
        return sampler_class(name)(seed=7, **args)


@pytest.mark.parametrize("name", SAMPLER_NAMES)
def test_a_pickled_sampler_continues_the_draws_of_an_uninterrupted_study(name):
    """What a resumed run does (harness.tuning): the sampler saved after the last draw, read back by a new process
    into a study of the same storage, draws what the study would have drawn had it never stopped."""
    if name == "cmaes":
        pytest.importorskip("cmaes")  # Optuna's CMA-ES sampler needs it; a spec naming cmaes needs it installed
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        uninterrupted = optuna.create_study(sampler=_sampler(name))
        expected = _draws(uninterrupted, 6)

        storage = optuna.storages.InMemoryStorage()
        first = optuna.create_study(study_name="s", storage=storage, sampler=_sampler(name))
        assert _draws(first, 3) == expected[:3]
        saved = sampler_state(first.sampler)
        assert isinstance(saved, str) and json.dumps(saved)  # a system attr holds it as text

        resumed = optuna.load_study(study_name="s", storage=storage, sampler=_sampler(name))
        resumed.sampler = restored_sampler(saved)
        assert resumed.sampler is not None, f"this Optuna cannot read back its own {name} sampler"
        assert _draws(resumed, 3) == expected[3:]


def test_a_sampler_state_this_optuna_cannot_read_is_none():
    assert restored_sampler("bm90IGEgcGlja2xl") is None  # base64 of "not a pickle"
    assert restored_sampler("not base64 at all!") is None


def test_stale_trials_are_those_whose_heartbeat_is_older_than_the_grace_period(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        storage = optuna.storages.RDBStorage(f"sqlite:///{tmp_path / 'study.db'}", heartbeat_interval=1,
                                             grace_period=1)
    assert has_heartbeat(storage)
    assert not has_heartbeat(optuna.storages.RDBStorage(f"sqlite:///{tmp_path / 'plain.db'}"))
    assert not has_heartbeat(optuna.storages.InMemoryStorage())
    study = optuna.create_study(study_name="s", storage=storage)
    study_id = storage.get_study_id_from_name("s")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the heartbeat is meant for Study.optimize: harness.tuning records its own
        stale, live, never = study.ask(), study.ask(), study.ask()

    def beat(trial) -> None:
        storage.record_heartbeat(storage.get_trial_id_from_study_id_trial_number(study_id, trial.number))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        beat(stale)
        beat(live)
        time.sleep(2.5)  # past the grace period
        beat(live)
    assert stale_trial_numbers(storage, study_id) == {stale.number}  # one that never beat is not stale
    assert never.number not in stale_trial_numbers(storage, study_id)
    assert stale_trial_numbers(optuna.storages.InMemoryStorage(), 0) == set()


def _optuna_privates(source: str) -> list[str]:
    """What a module takes of Optuna's private API: an import of a private Optuna module or name, and any
    ``x._name`` where ``x`` is not ``self``/``cls`` (a module that imports Optuna reaches its objects' privates
    that way: ``trial._trial_id``, ``storage._get_stale_trial_ids``)."""
    from test_layering import _private

    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [f"line {node.lineno}: import {a.name}" for a in node.names
                      if a.name.split(".")[0] == "optuna" and _private(a.name)]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "optuna":
            found += [f"line {node.lineno}: from {node.module} import {a.name}" for a in node.names
                      if _private(f"{node.module}.{a.name}")]
        elif (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
              and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))):
            found.append(f"line {node.lineno}: .{node.attr}")
    return found


def test_the_reader_sees_private_optuna_uses():
    assert _optuna_privates("import optuna\nfrom optuna.storages._heartbeat import BaseHeartbeat\n"
                            "def f(trial, self):\n    return trial._trial_id, self._ids, self.storage._get_stale_trial_ids\n"
                            ) == ["line 2: from optuna.storages._heartbeat import BaseHeartbeat", "line 4: ._trial_id",
                                  "line 4: ._get_stale_trial_ids"]


def test_only_optuna_private_reaches_into_optuna():
    """Every module that imports Optuna, but harness/optuna_private.py, uses its public API only."""
    from test_layering import imported

    wrong = []
    for path in sorted((ROOT / "harness").rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        if path.name == "optuna_private.py" or not any(name.split(".")[0] == "optuna" for _, name in imported(path)):
            continue  # a module that does not import Optuna holds none of its objects but through one that does
        wrong += [f"{path.relative_to(ROOT)} {use}" for use in _optuna_privates(source)]
    assert not wrong, ("private Optuna API outside harness/optuna_private.py (move it there, with a test here): "
                       + "; ".join(wrong))
