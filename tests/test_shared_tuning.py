"""One tuning study shared by several `harness run` processes (--storage: a journal file on one machine,
PostgreSQL for several): the budget is spent once, no trial is lost or run twice, and every run freezes
the same params.

The PostgreSQL tests need a server: `.ci/run` starts one on loopback and sets ``HARNESS_TEST_POSTGRES``
(a URL) and ``HARNESS_REQUIRE_POSTGRES=1``, so there a missing server fails instead of skipping.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections import Counter

import pytest

from conftest import ROOT

SHARED_SPEC = """\
spec: 1
name: shared
title: A study tuned by two processes at once
task: toy.guess
datasets:
  - {name: toy-target, id: a, params: {noise: 0.1}}
methods:
  - name: toy-stop
    kind: implementation
    params: {seconds: 0.25}
    search:
      x: {float: [0.0, 1.0]}
metrics: {primary: toy_score}
seeds: [0, 1]
tuning: {trials: 10, sampler: {name: random, args: {}}, sampler_seed: 5}
hardware: {device: cpu, threads: 1, timeout_s: 30}
"""


def postgres_url() -> str:
    url = os.environ.get("HARNESS_TEST_POSTGRES")
    if not url:
        if os.environ.get("HARNESS_REQUIRE_POSTGRES"):
            pytest.fail("HARNESS_REQUIRE_POSTGRES is set but HARNESS_TEST_POSTGRES (a postgresql:// URL) is not")
        pytest.skip("no PostgreSQL server: set HARNESS_TEST_POSTGRES to a postgresql:// URL (.ci/run starts one)")
    return url


def fresh_postgres_database() -> str:
    """A new, empty database on the test server, so that runs of this test never share a study."""
    import psycopg

    url = postgres_url()
    name = f"harness_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(f"CREATE DATABASE {name}")
    return url.rsplit("/", 1)[0] + "/" + name


def _study(storage: str):
    import optuna

    from harness.tuning import open_storage

    backend = open_storage(storage, None)
    (summary,) = optuna.get_all_study_summaries(backend)
    return optuna.load_study(study_name=summary.study_name, storage=backend)


def _two_runs_at_once(write_spec, tmp_path, storage: str) -> None:
    spec = write_spec(SHARED_SPEC, stem="shared")
    counter = tmp_path / "calls"
    env = {**os.environ, "HARNESS_TOY_STOP": f"{counter}:0:SIGINT"}  # count every call of the method
    commands = [[sys.executable, "-m", "harness.cli", "run", str(spec), "--out", str(tmp_path / out), "--jobs", "1",
                 "--storage", storage, "--no-progress"] for out in ("a", "b")]
    processes = [subprocess.Popen(c, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for c in commands]
    for process in processes:
        _, err = process.communicate(timeout=300)
        assert process.returncode == 0, err

    from optuna.trial import TrialState

    from harness.tuning import OVER_BUDGET_ATTR, OWNER_ATTR

    trials = _study(storage).get_trials(deepcopy=False)
    states = Counter(t.state for t in trials)
    assert states[TrialState.COMPLETE] == 10 and states[TrialState.RUNNING] == 0  # the budget, spent once
    failed = [t for t in trials if t.state == TrialState.FAIL]
    assert all(t.user_attrs.get(OVER_BUDGET_ATTR) for t in failed)  # asked after the budget was gone, never run
    assert len({t.user_attrs[OWNER_ATTR] for t in trials if t.state == TrialState.COMPLETE}) == 2  # both tuned
    # every trial ran once (one validation seed each), and each run's test cells (2 seeds): nothing twice
    assert int(counter.read_text()) == 10 + 2 * 2
    chosen = [json.loads((tmp_path / out / "shared" / "tuning.json").read_text())[0]["chosen"] for out in ("a", "b")]
    assert chosen[0] == chosen[1]  # both froze the best of all ten trials
    frozen = [[r["params"] for r in map(json.loads, (tmp_path / out / "shared" / "runs.jsonl").read_text().splitlines())]
              for out in ("a", "b")]
    assert frozen[0] == frozen[1]


@pytest.mark.slow  # 20 s: .ci/run runs it (-m slow -k shared_tuning)
def test_two_runs_share_one_study_through_a_journal_file(toy_env, write_spec, tmp_path):
    _two_runs_at_once(write_spec, tmp_path, str(tmp_path / "study.journal"))


@pytest.mark.slow  # 20 s: .ci/run runs it with its PostgreSQL server
def test_two_runs_share_one_study_through_postgresql(toy_env, write_spec, tmp_path):
    _two_runs_at_once(write_spec, tmp_path, fresh_postgres_database())


def _study_runs(write_spec, storage_path):
    """Two StudyRun objects on one storage, as two processes would hold them."""
    from harness.registry import metrics
    from harness.spec.load import load_spec
    from harness.tuning import StudyRun, open_storage

    spec = load_spec(write_spec(SHARED_SPEC, stem="shared"), "default")
    dataset, method = spec.datasets[0], spec.methods[0]
    goal = metrics()[spec.primary_metric].goal
    return [StudyRun(spec, dataset, method, open_storage(str(storage_path), None), goal, {"method": "m"},
                     lambda params, seed: params) for _ in range(2)]


def _results(batch, value=0.5):
    return {number: [{"status": "ok", "metrics": {"toy_score": value + 0.01 * number}, "error": None}]
            for number, _ in batch}


def test_a_trial_asked_after_the_budget_is_spent_elsewhere_is_failed_unrun_and_uncounted(toy_env, write_spec, tmp_path):
    from optuna.trial import TrialState

    from harness.tuning import OVER_BUDGET_ATTR

    first, second = _study_runs(write_spec, tmp_path / "study.journal")
    assert first.start() == 10 and second.start() == 10  # both see the whole budget left
    asked = []
    while not first.finished:
        batch = first.ask_batch()
        asked += batch
        first.tell(_results(batch))
    assert len(asked) == 10
    assert second.ask_batch() == []  # the budget went meanwhile: nothing to run
    assert second.finished and not second.others_running()
    trials = first.study.get_trials(deepcopy=False)
    (extra,) = [t for t in trials if t.state == TrialState.FAIL]
    assert extra.user_attrs[OVER_BUDGET_ATTR] is True and extra.number == 10
    assert second.outcome().params == first.outcome().params and second.outcome().trials_done == 10


def test_a_run_done_with_its_share_waits_for_the_others_then_chooses_from_all(toy_env, write_spec, tmp_path):
    first, second = _study_runs(write_spec, tmp_path / "study.journal")
    first.start()
    second.start()
    held = first.ask_batch()  # another process's trial, in flight
    while not second.finished:
        second.tell(_results(second.ask_batch(), value=0.1))
    assert second.others_running()  # its share is done, the other's trial is not
    first.tell(_results(held, value=0.9))  # the best trial is the other process's
    assert not second.others_running()
    assert second.outcome().best_value == pytest.approx(0.9 + 0.01 * held[0][0])


def test_a_gone_process_s_running_trial_is_taken_over_under_its_own_number(toy_env, write_spec, tmp_path):
    from harness.tuning import OWNER_ATTR

    first, second = _study_runs(write_spec, tmp_path / "study.journal")
    first.start()
    second.start()
    ((number, cells),) = first.ask_batch()
    trial_id = first.running[number]
    first.storage.set_trial_user_attr(trial_id, OWNER_ATTR, f"{os.uname().nodename}:999999999:0")  # its process died
    while not second.finished:
        second.tell(_results(second.ask_batch()))
    assert second.others_running()
    assert second.refresh() == 1  # it takes the dead process's trial
    assert second.ask_batch() == [(number, cells)]  # the same trial, the same params: run again, not re-drawn


@pytest.mark.parametrize("error", ["integrity", "duplicate-table"])
def test_a_process_that_collides_creating_the_tables_tries_again(monkeypatch, error):
    """Two runs opening a new PostgreSQL database at once: the second one's CREATE TABLE fails (a unique violation,
    or psycopg's DuplicateTable, "relation ... already exists", a ProgrammingError); it opens the storage again and
    finds the tables. Any other error is raised at once."""
    import optuna
    from sqlalchemy.exc import IntegrityError, ProgrammingError

    from harness import tuning

    calls = []
    collision = (IntegrityError("INSERT", {}, Exception("duplicate key")) if error == "integrity" else
                 ProgrammingError("CREATE TABLE studies", {}, Exception('relation "studies" already exists')))

    def opened(url, **options):
        calls.append(url)
        if len(calls) == 1:
            raise collision
        return "storage"

    monkeypatch.setattr(optuna.storages, "RDBStorage", opened)
    monkeypatch.setattr("time.sleep", lambda seconds: None)
    assert tuning._rdb_storage("postgresql://h/db") == "storage" and len(calls) == 2
    calls.clear()

    def refused(url, **options):
        calls.append(url)
        raise ProgrammingError("SELECT", {}, Exception("permission denied for table studies"))

    monkeypatch.setattr(optuna.storages, "RDBStorage", refused)
    with pytest.raises(ProgrammingError, match="permission denied"):
        tuning._rdb_storage("postgresql://h/db")
    assert len(calls) == 1
