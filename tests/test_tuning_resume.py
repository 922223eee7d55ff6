"""Tuning resumes exactly: a run stopped by Ctrl-C or SIGKILL, then resumed, freezes the params an
uninterrupted run freezes, and its study holds the same trials (params and values, in order)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from conftest import ROOT

TUNING_SPEC = """\
spec: 1
name: tune
title: Tuning that is interrupted
task: toy.guess
datasets:
  - {{name: toy-target, id: a, params: {{noise: 0.1}}}}
methods:
  - name: {method}
    kind: implementation
    search: {search}
metrics: {{primary: toy_score}}
seeds: [0]
tuning: {{trials: {trials}, batch: {batch}, seeds: [0, 1], sampler: {{name: {sampler}, args: {args}}}, sampler_seed: 3}}
hardware: {{device: cpu, threads: 1, timeout_s: 30}}
"""

SAMPLER_ARGS = {"tpe": "{n_startup_trials: 2}", "random": "{}", "qmc": "{scramble: true}",
                "gp": "{n_startup_trials: 2}", "cmaes": "{n_startup_trials: 2}"}


def _spec(sampler: str = "tpe", batch: int = 1, trials: int = 5, method: str = "toy-tunable",
          search: str = "{x: {float: [0.0, 1.0]}, offset: {float: [-0.2, 0.2]}}") -> str:
    return TUNING_SPEC.format(method=method, search=search, trials=trials, batch=batch, sampler=sampler,
                              args=SAMPLER_ARGS[sampler])


def _frozen(folder) -> list[dict]:
    """The params the test cells froze, in order."""
    rows = [json.loads(line) for line in (folder / "runs.jsonl").read_text().splitlines()]
    return [r["params"] for r in rows if r["split"] == "test"]


def _trials(folder) -> list[tuple[str, dict, float | None]]:
    """Every trial of the folder's one study, in order: state, params, value."""
    import optuna

    storage = f"sqlite:///{folder / 'optuna.db'}"
    (name,) = optuna.get_all_study_names(storage)
    study = optuna.load_study(study_name=name, storage=storage)
    return [(t.state.name, t.params, t.value) for t in study.get_trials(deepcopy=False)]


def _interrupting(after_cells: int):
    """An inline executor whose ``wait`` raises KeyboardInterrupt once it handed back ``after_cells`` cells:
    Ctrl-C while the run waits for its cells, with the cells still queued in flight."""
    from harness.executors import Executor

    class Interrupting(Executor):
        def __init__(self, jobs, threads, gpus=None):
            self.queue, self.handed_back = [], 0

        def submit(self, tag, cell):
            self.queue.append((tag, cell))

        @property
        def outstanding(self):
            return len(self.queue)

        def wait(self, timeout=None):
            from harness.execute import execute_cell

            if self.handed_back >= after_cells:
                raise KeyboardInterrupt(f"Ctrl-C after {after_cells} cells")
            self.handed_back += 1
            tag, cell = self.queue.pop(0)
            return [(tag, execute_cell(cell))]

    return Interrupting


@pytest.fixture
def inline_executors(monkeypatch):
    """``inline`` never stops; ``stop-at-<k>`` stops the run (KeyboardInterrupt) after k of its cells."""
    from harness import backends

    monkeypatch.setitem(backends.EXECUTORS, "inline", _interrupting(10**9))
    for k in range(1, 40):
        monkeypatch.setitem(backends.EXECUTORS, f"stop-at-{k}", _interrupting(k))


def _run(spec, out, executor: str):
    import harness

    return harness.run(spec, out, harness.RunOptions(executor=executor), progress=False)


def _interrupted_then_resumed(spec, out, stops: list[int]):
    """Runs stopped by Ctrl-C, the i-th after ``stops[i]`` of its cells, then a run to the end."""
    for stop in stops:
        with pytest.raises(KeyboardInterrupt, match=f"Ctrl-C after {stop} cells"):
            _run(spec, out, f"stop-at-{stop}")
    _run(spec, out, "inline")
    return out / "tune"


@pytest.mark.parametrize("sampler,batch,stops", [
    ("tpe", 1, [1]), ("tpe", 1, [3]), ("tpe", 1, [7, 3]), ("tpe", 1, [9]),
    ("tpe", 2, [3]), ("tpe", 2, [5, 5]),
    ("random", 1, [5]),
    ("qmc", 1, [3]), ("qmc", 2, [5]),
    ("gp", 1, [7]),
    ("cmaes", 1, [7]),
])
def test_ctrl_c_then_resume_freezes_what_an_uninterrupted_run_freezes(
        toy_env, write_spec, tmp_path, inline_executors, sampler, batch, stops):
    if sampler == "cmaes":
        pytest.importorskip("cmaes")
    spec = write_spec(_spec(sampler, batch), stem="tune")
    _run(spec, tmp_path / "whole", "inline")
    whole = tmp_path / "whole" / "tune"
    resumed = _interrupted_then_resumed(spec, tmp_path / "resumed", stops)
    assert _frozen(resumed) == _frozen(whole)
    assert _trials(resumed) == _trials(whole)  # the same trials, in order: none lost, none added


def test_budget_counts_completed_trials_only(toy_env, write_spec, tmp_path, inline_executors):
    """Each interrupted trial is run again; none of them uses up a trial of the budget."""
    spec = write_spec(_spec("tpe", batch=2, trials=5), stem="tune")
    folder = _interrupted_then_resumed(spec, tmp_path / "o", [1, 2, 5, 3])
    states = [state for state, _, _ in _trials(folder)]
    assert states.count("COMPLETE") == 5 and set(states) == {"COMPLETE"}


def test_a_trial_the_method_fails_counts_toward_the_budget(toy_env, write_spec, tmp_path, inline_executors):
    spec = write_spec(_spec("random", trials=3, method="toy-raise", search="{message: {choice: [a, b]}}"),
                      stem="tune")
    folder = tmp_path / "o" / "tune"
    _run(spec, tmp_path / "o", "inline")
    assert [state for state, _, _ in _trials(folder)] == ["FAIL"] * 3


# --- a real `harness run`, stopped by a signal at a known cell --------------------------------------------

@pytest.mark.parametrize("signame,stops", [("SIGINT", [2]), ("SIGKILL", [1, 6])])
def test_signal_then_resume_freezes_what_an_uninterrupted_run_freezes(toy_env, write_spec, tmp_path, signame, stops):
    """``toy-stop`` signals the `harness run` that runs it at its k-th call, while that cell is in flight."""
    import harness

    spec = write_spec(_spec("tpe", batch=1, trials=4, method="toy-stop"), stem="tune")
    harness.run(spec, tmp_path / "whole", progress=False)
    command = [sys.executable, "-m", "harness.cli", "run", str(spec), "--out", str(tmp_path / "resumed"),
               "--no-progress"]
    env = {**os.environ, "HARNESS_TOY_STOP": f"{tmp_path / 'calls'}:{','.join(map(str, stops))}:{signame}"}
    # a suite started in the background (`cmd &` in a script) ignores SIGINT, and an ignored signal is
    # inherited, so Python would install no Ctrl-C handler in the run: give it the default, as a terminal does
    default_sigint = lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)  # noqa: E731
    for _ in stops:
        stopped = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
                                 preexec_fn=default_sigint)
        assert stopped.returncode == (130 if signame == "SIGINT" else -signal.SIGKILL), stopped.stderr
    finished = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert finished.returncode == 0, finished.stderr
    whole, resumed = tmp_path / "whole" / "tune", tmp_path / "resumed" / "tune"
    assert _frozen(resumed) == _frozen(whole)
    assert _trials(resumed) == _trials(whole)


KILLED_IN_ASK = """\
import os, signal, sys
import harness.tuning
from harness.cli import main

calls, suggest = [0], harness.tuning.suggest


def suggest_then_die(trial, name, space):
    calls[0] += 1
    if calls[0] == {call}:  # SIGKILL while this trial's params are drawn, before its sampler is saved
        os.kill(os.getpid(), signal.SIGKILL)
    return suggest(trial, name, space)


if __name__ == "__main__":  # not in the worker processes, which import this file again
    harness.tuning.suggest = suggest_then_die
    sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("sampler,batch", [("tpe", 1), ("tpe", 2)])
def test_sigkill_while_params_are_drawn_draws_them_again(toy_env, write_spec, tmp_path, sampler, batch):
    """The half-drawn trial fails without using up the budget, and the sampler saved before it draws its
    params again: the same trials complete, in the same order, as in an uninterrupted run."""
    import harness

    spec = write_spec(_spec(sampler, batch, trials=4), stem="tune")
    harness.run(spec, tmp_path / "whole", progress=False)
    killed = tmp_path / "killed.py"
    killed.write_text(KILLED_IN_ASK.format(call=6))  # the second param of trial 2
    args = ["run", str(spec), "--out", str(tmp_path / "resumed"), "--no-progress"]
    stopped = subprocess.run([sys.executable, str(killed), *args], cwd=ROOT, capture_output=True, text=True,
                             timeout=120)
    assert stopped.returncode == -signal.SIGKILL, stopped.stderr
    finished = subprocess.run([sys.executable, "-m", "harness.cli", *args], cwd=ROOT, capture_output=True,
                              text=True, timeout=120)
    assert finished.returncode == 0, finished.stderr
    whole, resumed = tmp_path / "whole" / "tune", tmp_path / "resumed" / "tune"
    assert _frozen(resumed) == _frozen(whole)
    trials = _trials(resumed)
    assert [t for t in trials if t[0] != "FAIL"] == _trials(whole)
    assert [params for state, params, _ in trials if state == "FAIL"] == [{"x": _trials(whole)[2][1]["x"]}]


def test_a_sampler_state_this_optuna_cannot_read_is_said_not_silently_replaced(
        toy_env, write_spec, tmp_path, inline_executors, capsys):
    import optuna

    from harness.tuning import SAMPLER_ATTR

    spec = write_spec(_spec("tpe", batch=1), stem="tune")
    out = tmp_path / "o"
    with pytest.raises(KeyboardInterrupt, match="Ctrl-C after 5 cells"):
        _run(spec, out, "stop-at-5")
    storage = optuna.storages.RDBStorage(f"sqlite:///{out / 'tune' / 'optuna.db'}")
    (summary,) = optuna.get_all_study_summaries(storage)
    study = optuna.load_study(study_name=summary.study_name, storage=storage)
    (newest,) = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,))
    assert SAMPLER_ATTR in newest.system_attrs  # the newest saved state: the one a resumed run reads
    newest_id = storage.get_trial_id_from_study_id_trial_number(storage.get_study_id_from_name(study.study_name),
                                                                newest.number)
    storage.set_trial_system_attr(newest_id, SAMPLER_ATTR, "bm90IGEgcGlja2xl")  # "not a pickle"
    capsys.readouterr()
    _run(spec, out, "inline")
    assert "cannot read the sampler state the interrupted run saved" in capsys.readouterr().err
