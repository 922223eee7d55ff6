"""The platform: the public API, papers that register themselves, the executor interface,
parallel tuning with identical results, stale trials, code-aware keys."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import PLUGINS, ROOT, TOY_SPEC
from harness.runs_file import read_runs


def _rows(folder: Path) -> list[dict]:
    return sorted(read_runs(folder), key=lambda r: (r["dataset"], r["method"], r["seed"]))


# --- the public API ---------------------------------------------------------------------

def test_public_api_exports_the_functions_and_stays_light():
    probe = ("import sys, harness\n"
             "from harness import run, read_results, load_spec, Task, Context, DataUnavailable, SourceTraining\n"
             "assert callable(run) and run.__name__ == 'run' and run.__module__ == 'harness.runner', run\n"
             "assert harness.run is run and callable(read_results) and isinstance(Task, type)\n"
             "print(sorted(m for m in ('torch', 'optuna', 'pandas', 'scipy', 'sklearn') if m in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    import harness

    assert set(harness.__all__) <= set(dir(harness))
    for name in harness.__all__:
        assert getattr(harness, name) is not None


def test_run_api_takes_spec_paths(toy_env, write_spec, tmp_path):
    import harness

    (summary,) = harness.run(write_spec(TOY_SPEC), tmp_path / "o", progress=False, profile="quick")
    assert summary.ok and summary.statuses["ok"] == 4
    frame = harness.read_results(tmp_path / "o" / "toy")
    assert len(frame) == 4 and "metric.toy_score" in frame.columns


# --- papers register themselves -----------------------------------------------------------

def test_the_engine_holds_no_list_of_papers():
    """Task, dataset, method and metric names live in the families' catalogues, not in the engine."""
    from harness.registry import default_registry

    registry = default_registry()
    names = [*registry.names("tasks"), *registry.names("datasets"), *registry.names("methods")]
    engine = [p for p in (ROOT / "harness").rglob("*.py") if "tasks" not in p.relative_to(ROOT / "harness").parts]
    for path in engine:
        text = path.read_text()
        mentioned = [n for n in names if f'"{n}"' in text or f"'{n}'" in text]
        assert not mentioned, f"{path} names {mentioned}: a paper's names belong in its family's catalogue"
    for name in registry.names("tasks"):
        assert registry.entry("tasks", name).origin.startswith("harness.tasks."), "in-repo families are found by scanning"


def test_conflicting_metric_declarations_are_refused():
    from harness.registry import Registry, RegistryError

    same = {"metrics": {"score": {"goal": "max", "unit": "%"}}}
    Registry([("a", same), ("b", same)])  # two families may share a metric they agree on
    with pytest.raises(RegistryError, match="declared twice with different goal or unit"):
        Registry([("a", same), ("b", {"metrics": {"score": {"goal": "min", "unit": "%"}}})])
    with pytest.raises(RegistryError, match="unknown section 'metric'"):
        Registry([("a", {"metric": {}})])


def test_a_task_s_metrics_are_described_in_its_own_family_s_words(toy_env):
    """Two families may share a metric and describe it each for its own protocol; a spec's metrics.json (and its
    pages) take the words of the spec's task's family, not of whichever family registered first."""
    from harness.registry import Registry
    from toy_plugin import CATALOGUE

    other = {"metrics": {"toy_loss": {"goal": "min", "unit": "", "about": "another family's loss"},
                         "other_only": {"goal": "max", "unit": ""}}}
    for catalogues in ([("other", other), ("toy", CATALOGUE)], [("toy", CATALOGUE), ("other", other)]):
        described = Registry(catalogues).task_metrics("toy.guess")
        assert list(described) == ["toy_score", "toy_loss", "runtime_s"]
        assert described["toy_loss"].about == "|prediction - target| (toy)"


def test_a_task_that_is_not_a_harness_task_is_refused(monkeypatch, tmp_path):
    from harness.registry import Registry, RegistryError

    (tmp_path / "loose_task.py").write_text("class T:\n    name = 'x.t'\n\nTASK = T()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = Registry([("p", {"tasks": {"x.t": {"target": "loose_task:TASK"}}})])
    with pytest.raises(RegistryError, match="not an instance of harness.Task"):
        registry.load("tasks", "x.t")


# --- the executor interface and parallel tuning -------------------------------------------

def _recording_executor():
    """An inline executor: proves the orchestrator only submits and waits, and records how much it submits at once."""
    from harness.executors import Executor

    class Recording(Executor):
        made: list = []

        def __init__(self, jobs, threads, gpus=None):
            self.queue, self.most = [], 0
            Recording.made.append(self)

        def submit(self, tag, cell):
            self.queue.append((tag, cell))
            self.most = max(self.most, sum(c["split"] == "val" for _, c in self.queue))  # tuning cells

        @property
        def outstanding(self):
            return len(self.queue)

        def wait(self, timeout=None):
            from harness.execute import execute_cell

            done, self.queue = [(tag, execute_cell(cell)) for tag, cell in self.queue], []
            return done

    return Recording


def _tuning_spec(batch: int) -> str:
    return TOY_SPEC.replace("tuning: {trials: 4, sampler: {name: tpe, args: {n_startup_trials: 2}}}",
                            f"tuning: {{trials: 6, batch: {batch}, sampler: {{name: tpe, args: {{n_startup_trials: 2}}}}}}")


@pytest.mark.parametrize("batch", [1, 3])
def test_studies_run_at_once_and_batches_ask_several_trials(toy_env, write_spec, tmp_path, monkeypatch, batch):
    import harness
    from harness import backends

    recording = _recording_executor()
    monkeypatch.setitem(backends.EXECUTORS, "recording", recording)
    harness.run(write_spec(_tuning_spec(batch)), tmp_path / "o", harness.RunOptions(executor="recording"),
                progress=False)
    (inline,) = recording.made
    # both studies (easy, hard) have a batch out at once: 2 × batch trials × 1 validation seed
    assert inline.most == 2 * batch


def test_tuned_params_do_not_depend_on_jobs(toy_env, write_spec, tmp_path):
    import harness

    spec = write_spec(_tuning_spec(3))
    harness.run(spec, tmp_path / "one", harness.RunOptions(jobs=1), progress=False)
    harness.run(spec, tmp_path / "two", harness.RunOptions(jobs=2), progress=False)
    one, two = _rows(tmp_path / "one" / "toy"), _rows(tmp_path / "two" / "toy")
    assert [(r["params"], r["metrics"]["toy_score"]) for r in one] == [(r["params"], r["metrics"]["toy_score"]) for r in two]
    assert len({json.dumps(r["params"]) for r in one if r["method"] == "toy-tunable"}) == 2  # tuned per dataset


def test_journal_file_storage(toy_env, write_spec, tmp_path):
    import harness

    journal = tmp_path / "studies" / "journal.log"
    harness.run(write_spec(TOY_SPEC), tmp_path / "o", harness.RunOptions(storage=str(journal)), progress=False,
                profile="quick")
    assert journal.exists() and "toy/easy/toy-tunable" in journal.read_text()
    assert not (tmp_path / "o" / "toy" / "optuna.db").exists()


def test_stale_trials_are_taken_over_by_heartbeat_or_dead_owner_never_a_live_one(toy_env, write_spec, tmp_path):
    """On a shared storage another machine's live trial is left alone; a stale one is run again with its
    params, or, when its params were never all drawn, failed without using up the budget."""
    import time

    import optuna
    from optuna.trial import TrialState

    from harness import load_spec
    from harness.optuna_private import sampler_state
    from harness.tuning import INTERRUPTED_ATTR, OWNER_ATTR, SAMPLER_ATTR, StudyRun, owner_id, study_name

    spec = load_spec(write_spec(TOY_SPEC), "default")
    dataset, method = spec.datasets[0], spec.method("toy-tunable")
    storage = optuna.storages.RDBStorage(f"sqlite:///{tmp_path / 'shared.db'}", heartbeat_interval=1, grace_period=1)
    study = optuna.create_study(study_name=study_name(spec, dataset, method, {}), storage=storage)
    stale_elsewhere, dead_here, live_elsewhere, stale_asked, dead_asked = (study.ask() for _ in range(5))
    study_id = storage.get_study_id_from_name(study.study_name)

    def trial_id(trial) -> int:
        return storage.get_trial_id_from_study_id_trial_number(study_id, trial.number)
    for trial in (stale_asked, dead_asked):  # asks that finished: params drawn, sampler saved
        trial.suggest_float("x", 0.0, 1.0)
        storage.set_trial_system_attr(trial_id(trial), SAMPLER_ATTR, sampler_state(study.sampler))
    for trial in (stale_elsewhere, stale_asked):
        trial.set_user_attr(OWNER_ATTR, "other-host:4242:1")
        storage.record_heartbeat(trial_id(trial))
    for trial in (dead_here, dead_asked):
        trial.set_user_attr(OWNER_ATTR, f"{os.uname().nodename}:999999999:0")  # no such process
    live_elsewhere.set_user_attr(OWNER_ATTR, "other-host:4343:1")
    time.sleep(2.5)  # the first heartbeats are now older than the grace period
    storage.record_heartbeat(trial_id(live_elsewhere))
    run = StudyRun(spec, dataset, method, storage, "max", {}, lambda params, seed: params)
    to_run = run.start()
    trials = {t.number: t for t in run.study.get_trials(deepcopy=False)}
    assert {n: t.state for n, t in trials.items()} == {
        stale_elsewhere.number: TrialState.FAIL, dead_here.number: TrialState.FAIL,
        live_elsewhere.number: TrialState.RUNNING, stale_asked.number: TrialState.RUNNING,
        dead_asked.number: TrialState.RUNNING}
    assert all(trials[t.number].user_attrs[INTERRUPTED_ATTR] for t in (stale_elsewhere, dead_here))
    assert [t.number for t in run.interrupted] == [stale_asked.number, dead_asked.number]
    assert {trials[t.number].user_attrs[OWNER_ATTR] for t in (stale_asked, dead_asked)} == {owner_id()}
    assert trials[live_elsewhere.number].user_attrs[OWNER_ATTR] == "other-host:4343:1"
    # the live trial and the two taken over count toward the budget; the two failed ones do not
    assert run.remaining == spec.tuning.trials - 3 and to_run == run.remaining + 2
    # taken-over trials run first, in order, with their own params (one validation seed: one cell)
    assert run.ask_batch() == [(stale_asked.number, [{"x": trials[stale_asked.number].params["x"]}])]


# --- code-aware keys -------------------------------------------------------------------------

def test_fingerprint_ignores_docstrings_and_comments_but_not_code(tmp_path, monkeypatch):
    from harness import code

    monkeypatch.syspath_prepend(str(tmp_path))
    helper = tmp_path / "fp_helper.py"
    main = tmp_path / "fp_main.py"
    helper.write_text("def scale(x):\n    return 2 * x\n")
    main.write_text('"""A method."""\nfrom fp_helper import scale\n\nclass M:\n    def f(self, x):\n        return scale(x)\n')

    def fingerprint() -> str:
        for cache in (code.import_closure, code._source_file, code._module_digest):
            cache.cache_clear()
        return code.fingerprint("fp_main:M")

    first = fingerprint()
    main.write_text('"""A method, documented better."""\n# a comment\nfrom fp_helper import scale\n\n\nclass M:\n'
                    '    """Now with a docstring."""\n\n    def f(self, x):\n        return scale(x)  # why\n')
    assert fingerprint() == first
    helper.write_text("def scale(x):\n    return 3 * x\n")  # a change in a module it imports
    assert fingerprint() != first


def test_fingerprint_sees_modules_that_only_an_import_hook_finds(tmp_path, monkeypatch):
    """An editable install (`pip install -e .`) puts the repository behind setuptools' finder on sys.meta_path, not
    on sys.path: under the `harness` console script the code was not found, every fingerprint was the digest of a
    module name, and changed code never ran again."""
    import importlib.machinery
    import sys

    from harness import code

    package = tmp_path / "hidden" / "fp_hidden"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "helper.py").write_text("def scale(x):\n    return 2 * x\n")
    (package / "main.py").write_text("from fp_hidden.helper import scale\n\nclass M:\n    pass\n")

    class Finder:  # as setuptools' editable finder: it knows one top-level package and where it lives
        @staticmethod
        def find_spec(name, path=None, target=None):
            if name != "fp_hidden":
                return None
            return importlib.machinery.PathFinder.find_spec(name, [str(package.parent)])

    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, Finder])

    def fingerprint() -> str:
        for cache in (code.import_closure, code._source_file, code._module_digest):
            cache.cache_clear()
        return code.fingerprint("fp_hidden.main:M")

    first = fingerprint()
    assert code.import_closure("fp_hidden.main") == {"fp_hidden.main", "fp_hidden.helper"}
    (package / "helper.py").write_text("def scale(x):\n    return 3 * x\n")
    assert fingerprint() != first


def test_fingerprint_asks_finders_as_the_import_system_does(tmp_path, monkeypatch):
    """A finder may take ``target`` without a default (asv's benchmark importer does): it is asked with (name, path,
    target), as the import system asks it; asked with two arguments it raised, and a benchmark failed."""
    import sys

    from harness import code

    (tmp_path / "fp_target.py").write_text("X = 1\n")
    asked = []

    class StrictFinder:  # first on sys.meta_path, as asv's SpecificImporter is in a benchmark's process
        @staticmethod
        def find_spec(name, path, target):
            asked.append((name, target))
            return None

    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "meta_path", [StrictFinder, *sys.meta_path])
    for cache in (code.import_closure, code._source_file, code._module_digest):
        cache.cache_clear()
    assert code._source_file("fp_target") == (tmp_path / "fp_target.py").resolve()
    assert ("fp_target", None) in asked


def test_the_installed_harness_fingerprints_the_repository_s_code_from_anywhere(tmp_path):
    """Run from another folder, without the repository on sys.path (the `harness` console script's case), the
    fingerprint of a method is the one taken here."""
    from harness.code import fingerprint
    from harness.registry import default_registry

    target = default_registry().entry("methods", "locicr").target
    script = (f"import sys; sys.path = [p for p in sys.path if p not in ('', {str(ROOT)!r})]\n"
              f"from harness.code import fingerprint; print(fingerprint({target!r}))")
    elsewhere = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True,
                               env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    if elsewhere.returncode != 0 and "No module named 'harness'" in elsewhere.stderr:
        pytest.skip("harness is not installed in this environment, only on PYTHONPATH")
    assert elsewhere.returncode == 0, elsewhere.stderr
    assert elsewhere.stdout.strip() == fingerprint(target)


CATALOGUE = '''
CATALOGUE = {
    "tasks": {"toy.guess": {"target": "toy_plugin:TASK"}},
    "datasets": {"toy-target": {"task": "toy.guess", "target": "toy_plugin:toy_target"}},
    "methods": {"toy-tunable": {"task": "toy.guess", "target": "toy_plugin:Tunable"},
                "toyx-constant": {"task": "toy.guess", "target": "toyx_constant:Constant"}},
    "metrics": {"toy_score": {"goal": "max", "unit": ""}, "toy_loss": {"goal": "min", "unit": ""},
                "runtime_s": {"goal": "min", "unit": "s"}},
}
'''

CONSTANT = '''
class Constant:
    """Always the same guess."""

    def __init__(self, value=0.5):
        self.value = value

    def guess(self, hint, rng):
        return self.value{change}
'''

CODE_SPEC = """\
spec: 1
name: code
title: code-aware keys
task: toy.guess
datasets: [{name: toy-target, params: {noise: 0.05}}]
methods:
  - {name: toy-tunable, kind: implementation, params: {x: 0.3}}
  - {name: toyx-constant, kind: baseline, search: {value: {float: [0.0, 1.0]}}}
metrics: {primary: toy_score, report: [toy_score]}
seeds: [0, 1, 2]
tuning: {trials: 2, sampler: {name: random}}
hardware: {device: cpu, threads: 1, timeout_s: 20}
"""


@pytest.fixture
def changing_plugin(tmp_path, monkeypatch):
    from harness.code import _module_digest, _source_file, import_closure
    from harness.registry import default_registry

    plugin = tmp_path / "plugin"
    plugin.mkdir()
    (plugin / "toyx_catalogue.py").write_text(CATALOGUE)
    (plugin / "toyx_constant.py").write_text(CONSTANT.format(change=""))
    monkeypatch.setenv("HARNESS_PLUGINS", "toyx_catalogue:CATALOGUE")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(plugin), str(PLUGINS), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.syspath_prepend(str(PLUGINS))
    monkeypatch.syspath_prepend(str(plugin))

    def change(text: str) -> None:
        (plugin / "toyx_constant.py").write_text(CONSTANT.format(change=text))
        for cache in (import_closure, _source_file, _module_digest):
            cache.cache_clear()

    default_registry.cache_clear()
    yield change
    default_registry.cache_clear()


def test_a_changed_method_runs_again_and_its_old_rows_move_aside(changing_plugin, write_spec, tmp_path):
    import harness
    from harness.report.folder import read_folder
    from harness.results_table import texts

    spec = write_spec(CODE_SPEC, stem="code")
    out = tmp_path / "o"
    (first,) = harness.run(spec, out, progress=False)
    assert first.statuses["ok"] == 6
    changing_plugin("  # a comment only")
    (same,) = harness.run(spec, out, progress=False)
    assert sum(same.statuses.values()) == 0 and same.already_done == 6
    changing_plugin(" + 0.1")  # the code changed: its guesses move
    (changed,) = harness.run(spec, out, progress=False)
    assert changed.statuses["ok"] == 3 and changed.already_done == 3  # only toyx-constant's cells ran again
    assert any("moved to" in note and "superseded.jsonl" in note for note in changed.notes)
    superseded = [json.loads(l) for l in (out / "code" / "superseded.jsonl").read_text().splitlines()]
    assert {r["method"] for r in superseded} == {"toyx-constant"} and len(superseded) == 3
    rows = _rows(out / "code")
    assert len(rows) == 6 and len({json.dumps(r["code"]) for r in rows if r["method"] == "toyx-constant"}) == 1

    changing_plugin(" + 0.2")  # changed again, but only seed 0 runs: seeds 1 and 2 are of older code
    harness.run(spec, out, harness.RunOptions(seeds=(0,)), progress=False)
    _, current = read_folder(out / "code")
    cells = list(zip(texts(current, "method"), texts(current, "seed")))
    assert [s for m, s in cells if m == "toyx-constant"] == [0], "the leaderboard never mixes two versions of a method's code"
    assert len([m for m, _ in cells if m == "toy-tunable"]) == 3
    import sqlite3

    studies = [n for (n,) in sqlite3.connect(out / "code" / "optuna.db").execute("select study_name from studies")]
    # tuned anew for each version of the code: params frozen by older code (seeds 1, 2) are not reused
    assert len([n for n in studies if "/toyx-constant/" in n]) == 3


def test_a_dataset_that_needs_a_gpu_is_skipped_with_a_line(toy_env, write_spec, tmp_path):
    import harness

    text = TOY_SPEC.replace("  - {name: toy-target, id: hard, params: {noise: 0.3}}",
                            "  - {name: toy-target, id: hard, params: {noise: 0.3}, requires: gpu}")
    (summary,) = harness.run(write_spec(text), tmp_path / "o", progress=False, profile="quick")
    assert any("skipped dataset 'hard': it needs a GPU" in note for note in summary.notes)
    assert {r["dataset"] for r in read_runs(tmp_path / "o" / "toy")} == {"easy"}


def test_the_resolved_spec_is_written_as_the_python_emitter_writes_it():
    """spec.yaml goes through libyaml's emitter where that gives PyYAML's text, byte for byte: every committed
    folder's spec, and one with a character beyond the Basic Multilingual Plane, which libyaml would escape."""
    import yaml

    from harness.store import dump_yaml

    bodies = [yaml.safe_load(path.read_text()) for path in sorted((ROOT / "results").glob("*/*/spec.yaml"))]
    assert len(bodies) >= 20
    bodies.append({"claims": [{"quote": "the fraction is orthogonal (𝒳ᵀ𝒳 = 16·I)"}], "seeds": list(range(5))})
    for body in bodies:
        assert dump_yaml(body) == yaml.safe_dump(body, sort_keys=False, allow_unicode=True)


def test_a_resolved_spec_reads_back_as_the_value_it_was_written_from():
    """The leaderboard takes the runner's just-written spec.yaml from memory (store.remember_yaml) rather than
    parsing it again: that is the same only if the text parses back to exactly the value dumped, types and all
    (1, 1.0 and True are equal in Python, so each value is compared with its type). Every committed spec, and the
    values a spec can hold that YAML 1.1 reads in more than one way."""
    import yaml

    from harness.store import dump_yaml

    def typed(value):
        if isinstance(value, dict):
            return {k: typed(v) for k, v in value.items()}
        if isinstance(value, list):
            return [typed(v) for v in value]
        return type(value).__name__, repr(value)

    bodies = [yaml.safe_load(path.read_text()) for path in sorted((ROOT / "results").glob("*/*/spec.yaml"))]
    bodies.append({"values": [1, 1.0, True, None, "1", "1.0", "true", "yes", "null", "~", "1e-06", 1e-06, 1e17,
                              -0.0, float("inf"), "", " lead", "10:30", "0x1f", 0o17, "a: b", "- x", "𝒳", 2 ** 70]})
    for body in bodies:
        assert typed(yaml.safe_load(dump_yaml(body))) == typed(body)


def test_the_leaderboard_reads_the_spec_the_run_just_wrote_from_memory(toy_env, write_spec, tmp_path, monkeypatch):
    """After a run writes spec.yaml, reading that text again costs no YAML parse (a 10,000-dataset spec.yaml took
    0.66 s to parse): load_yaml answers it with a copy of what was written, and parses any other text."""
    import yaml

    import harness
    from harness.store import load_yaml

    harness.run(write_spec(TOY_SPEC), tmp_path / "o", progress=False, profile="quick")
    text = (tmp_path / "o" / "toy" / "spec.yaml").read_text()
    parse = yaml.load
    monkeypatch.setattr(yaml, "load", lambda *a, **k: pytest.fail("parsed a text this process wrote"))
    first, second = load_yaml(text), load_yaml(text)
    assert first == second == parse(text, Loader=yaml.SafeLoader) and first is not second  # copies: safe to change
    first["spec"]["name"] = "changed"
    assert load_yaml(text)["spec"]["name"] == "toy"
    monkeypatch.setattr(yaml, "load", parse)
    assert load_yaml(text.replace("toy", "toy2"))["spec"]["name"] == "toy2"


def test_a_planned_cell_s_key_is_the_hash_of_what_determines_its_result(toy_env, write_spec):
    """Planning writes each (dataset, method)'s key text once and puts each seed in it; every key must still be
    the documented hash, including where a value holds the text that stands for the seed."""
    from dataclasses import replace

    from harness.plan import code_fingerprints, test_cells
    from harness.spec.load import load_spec
    from harness.spec.model import stable_hash

    spec = load_spec(write_spec(TOY_SPEC), "default")
    odd = replace(spec.datasets[1], params={"noise": 0.25, "nested": {"b": [1, "é", 2.5e-9]}, "mark": "\x00seed\x00"})
    spec = replace(spec, datasets=[spec.datasets[0], odd], seeds=[0, 1, 7, 123456])
    code = code_fingerprints(spec)
    params = {(d.id, m.id): {"x": 0.25} if m.search else dict(m.params) for d in spec.datasets for m in spec.methods}
    cells = test_cells(spec, params, "3", None, code)
    assert len(cells) == 16 and len({cell.key for cell in cells}) == 16
    for cell in cells:
        assert cell.key == stable_hash({
            "task": [spec.task, "3"], "dataset": [cell.dataset.name, cell.dataset.params],
            "method": [cell.method.name, params[(cell.dataset.id, cell.method.id)]], "seed": cell.seed,
            "split": "test", "profile": "default", "hardware": ["cpu", "fp32"],
            "code": code[(cell.dataset.id, cell.method.id)]})[:20]


def test_a_local_pool_is_fed_a_window_of_cells_at_a_time(toy_env, write_spec, tmp_path, monkeypatch):
    """A million-cell run must not hold a million payloads: the local pool never has more than its window of
    cells submitted and not back, and every cell still runs once."""
    import harness
    from harness.executors import LocalExecutor
    from harness.runs_file import read_runs

    most, submit = [0], LocalExecutor.submit

    def counted(self, tag, cell):
        submit(self, tag, cell)
        most[0] = max(most[0], self.outstanding)

    monkeypatch.setattr(LocalExecutor, "window", 3)
    monkeypatch.setattr(LocalExecutor, "submit", counted)
    spec = write_spec(TOY_SPEC.replace("seeds: [0, 1, 2]", "seeds: [0, 1, 2, 3, 4, 5]"))
    (summary,) = harness.run(spec, tmp_path / "o", harness.RunOptions(jobs=2, trials=0), progress=False)
    assert summary.statuses["ok"] == 24 and most[0] == 3
    keys = [row["key"] for row in read_runs(tmp_path / "o" / "toy")]
    assert len(keys) == len(set(keys)) == 24
