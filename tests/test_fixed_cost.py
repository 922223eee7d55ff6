"""A run with nothing new to run stays cheap (issue 27), and exactly as right as a full one.

What it would derive again every time is kept in the cache (:mod:`harness.cache`): the checked spec, the code
fingerprints' parsing, the task's facts, the entry points, the legends, whether index.md and spec.yaml stand.
Here: such a run imports neither numpy nor jsonschema nor the task's module; anything that changes the plan (the
spec's text, a method's code, the registry, the installed packages) still leads to the full path; a damaged or
unwritable cache is no cache; and what a run prints and writes is the same with the cache as without.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import PLUGINS, ROOT, harness_cli

# the toy task's names, registered by a catalogue module of their own: toy_plugin (the task's and methods'
# module, which imports numpy) is imported only when something needs the task or a method
CATALOGUE = '''
CATALOGUE = {
    "tasks": {"toy.guess": {"target": "toy_plugin:TASK"}},
    "datasets": {"toy-target": {"task": "toy.guess", "target": "toy_plugin:toy_target"}},
    "methods": {"toy-tunable": {"task": "toy.guess", "target": "toy_plugin:Tunable"},
                "idle-constant": {"task": "toy.guess", "target": "idle_constant:Constant"}},
    "metrics": {"toy_score": {"goal": "max", "unit": ""}, "toy_loss": {"goal": "min", "unit": ""},
                "runtime_s": {"goal": "min", "unit": "s"}},
}
'''

CONSTANT = '''
class Constant:
    """Always the same guess."""

    def __init__(self, {param}=0.5):
        self.value = {param}

    def guess(self, hint, rng):
        return self.value{change}
'''

SPEC = """\
spec: 1
name: idle
title: a run with nothing to do
task: toy.guess
datasets: [{name: toy-target, id: easy, params: {noise: 0.05}}]
methods:
  - {name: toy-tunable, kind: implementation, params: {x: 0.3}}
  - {name: idle-constant, kind: baseline, params: {value: 0.2}}
metrics: {primary: toy_score, report: [toy_score]}
seeds: [0, 1]
hardware: {device: cpu, threads: 1, timeout_s: 20}
claims:
  - {id: tunable-wins, says: x beats a constant, better: toy-tunable, than: idle-constant, metric: toy_score}
"""

# what a run with nothing to do must not import: the task's module (and numpy with it), the schema's validator,
# YAML, the worker pool, tuning, the claim kinds and the pages, the packages' metadata
NOT_IMPORTED = ("toy_plugin", "numpy", "jsonschema", "yaml", "harness.executors", "harness.execute", "harness.tuning",
                "optuna", "harness.claims", "harness.report.folder", "pandas", "scipy", "matplotlib",
                "importlib.metadata", "harness.spec.checks", "harness.tasks.base")

PROBE = ("import json, sys\n"
         "from harness.cli import main\n"
         "code = main(sys.argv[1:])\n"
         f"print('IMPORTED:' + json.dumps(sorted(m for m in {NOT_IMPORTED!r} if m in sys.modules)), file=sys.stderr)\n"
         "sys.exit(code)\n")


@pytest.fixture
def idle_env(tmp_path, monkeypatch):
    """The toy task's names from a catalogue of their own; one method (idle-constant) in a file the test edits."""
    plugin = tmp_path / "plugin"
    plugin.mkdir()
    (plugin / "idle_catalogue.py").write_text(CATALOGUE)
    (plugin / "idle_constant.py").write_text(CONSTANT.format(param="value", change=""))
    monkeypatch.setenv("HARNESS_PLUGINS", "idle_catalogue:CATALOGUE")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(plugin), str(PLUGINS), os.environ.get("PYTHONPATH", "")]))
    spec = tmp_path / "idle.yaml"
    spec.write_text(SPEC)
    return spec, plugin


def _run(spec: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    return harness_cli("run", spec, "--out", out, "--no-progress", *extra)


def _probed_run(spec: Path, out: Path) -> tuple[subprocess.CompletedProcess, list[str]]:
    done = subprocess.run([sys.executable, "-c", PROBE, "run", str(spec), "--out", str(out),
                           "--no-progress"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    found = [line for line in done.stderr.splitlines() if line.startswith("IMPORTED:")]
    assert found, done.stderr[-3000:]
    return done, json.loads(found[-1][len("IMPORTED:"):])


def _said(done: subprocess.CompletedProcess) -> str:
    """What a run printed, its time left out."""
    return re.sub(r" in [0-9.]+ s ", " in T s ", done.stdout)


def test_a_run_with_nothing_to_do_imports_neither_numpy_nor_jsonschema_nor_the_task(idle_env, tmp_path):
    spec, _ = idle_env
    out = tmp_path / "out"
    first = _run(spec, out)
    assert first.returncode == 0, first.stderr
    assert "4 ok" in first.stdout, first.stdout
    done, imported = _probed_run(spec, out)
    assert done.returncode == 0, done.stderr
    assert "nothing new to run (4 already done)" in done.stdout, done.stdout
    assert imported == [], f"a run with nothing to do imported {imported}"
    assert "claim tunable-wins:" in done.stdout and "(reproduced:" in done.stdout  # the verdict and its legend


def test_what_a_run_with_nothing_to_do_prints_and_writes_is_the_same_with_the_cache_as_without(idle_env, tmp_path,
                                                                                               monkeypatch):
    spec, _ = idle_env
    out = tmp_path / "out"
    assert _run(spec, out).returncode == 0
    with_cache = _run(spec, out)
    files = {name: (out / "idle" / name).read_bytes() for name in
             ("spec.yaml", "metrics.json", "chance.json", "skipped.json", "claims.json", "runs.jsonl")}
    index = (out / "index.md").read_bytes()
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "another-cache"))  # empty: everything derived again
    without = _run(spec, out)
    assert with_cache.returncode == without.returncode == 0, without.stderr
    assert _said(with_cache) == _said(without) and "nothing new to run" in without.stdout
    assert files == {name: (out / "idle" / name).read_bytes() for name in files}
    assert index == (out / "index.md").read_bytes()


def test_an_edited_method_runs_again_and_a_parameter_it_lost_is_refused(idle_env, tmp_path):
    spec, plugin = idle_env
    out = tmp_path / "out"
    assert _run(spec, out).returncode == 0
    assert "nothing new to run" in _run(spec, out).stdout  # the cache holds the spec, the code, the task
    (plugin / "idle_constant.py").write_text(CONSTANT.format(param="value", change=" + 0.01"))
    again = _run(spec, out)
    assert again.returncode == 0, again.stderr
    assert "2 ok (2 already done)" in again.stdout and "superseded.jsonl" in again.stdout, again.stdout
    (plugin / "idle_constant.py").write_text(CONSTANT.format(param="level", change=""))
    refused = _run(spec, out)
    assert refused.returncode == 2, refused.stdout
    assert "'idle-constant' has no parameter 'value'" in refused.stderr, refused.stderr


def test_an_edited_spec_is_checked_again(idle_env, tmp_path):
    spec, _ = idle_env
    out = tmp_path / "out"
    assert _run(spec, out).returncode == 0
    spec.write_text(SPEC.replace("seeds: [0, 1]", "seeds: [0, 1]\ncolour: red"))
    refused = _run(spec, out)
    assert refused.returncode == 2 and "unknown key 'colour'" in refused.stderr, refused.stderr
    spec.write_text(SPEC.replace("seeds: [0, 1]", "seeds: [0, 1, 2]"))
    more = _run(spec, out)
    assert more.returncode == 0 and "2 ok (4 already done)" in more.stdout, more.stdout


def test_a_catalogue_that_drops_a_name_is_seen(idle_env, tmp_path):
    """The registry is part of what a checked spec depends on: a method no longer registered is refused."""
    spec, plugin = idle_env
    out = tmp_path / "out"
    assert _run(spec, out).returncode == 0
    (plugin / "idle_catalogue.py").write_text(CATALOGUE.replace('"idle-constant"', '"idle-constant-2"'))
    refused = _run(spec, out)
    assert refused.returncode == 2 and "unknown method 'idle-constant'" in refused.stderr, refused.stderr


def test_a_damaged_or_unwritable_cache_is_no_cache(idle_env, tmp_path, monkeypatch, harness_cache):
    spec, _ = idle_env
    out = tmp_path / "out"
    assert _run(spec, out).returncode == 0
    clean = _run(spec, out)
    entries = [p for p in harness_cache.rglob("*") if p.is_file()]
    assert {p.parent.name for p in entries} == {"code", "spec", "task", "entry-points", "legends", "index",
                                                "spec.yaml"}
    for path in entries:
        path.write_bytes(b"\x00{not json")
    damaged = _run(spec, out)
    assert damaged.returncode == 0, damaged.stderr
    assert _said(damaged) == _said(clean)
    assert json.loads(next(harness_cache.rglob("spec/*")).read_bytes())["resolved"]  # written again, whole
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(blocked))
    unwritable = _run(spec, out)
    assert unwritable.returncode == 0, unwritable.stderr
    assert _said(unwritable) == _said(clean)


def test_a_missing_index_is_written_again(idle_env, tmp_path):
    spec, _ = idle_env
    out = tmp_path / "out"
    assert _run(spec, out).returncode == 0
    index = (out / "index.md").read_bytes()
    (out / "index.md").unlink()
    assert _run(spec, out).returncode == 0
    assert (out / "index.md").read_bytes() == index


# --- the pieces ------------------------------------------------------------------------------------------------

def test_fingerprints_from_the_cache_are_the_ones_parsed(harness_cache):
    """Every registered target's fingerprint: taken with an empty cache (every module parsed, as before the cache),
    again from the cache, and again from a cache whose entries are damaged."""
    from harness import code
    from harness.registry import default_registry

    registry = default_registry()
    targets = sorted({registry.entry(kind, name).target for kind in ("tasks", "datasets", "methods")
                      for name in registry.names(kind)})

    def fingerprints() -> list[str]:
        for cache in (code.import_closure, code._source_file, code._module_digest):
            cache.cache_clear()
        return [code.fingerprint(target) for target in targets]

    parsed = fingerprints()
    assert list((harness_cache / "v1" / "code").iterdir())
    assert fingerprints() == parsed
    for path in (harness_cache / "v1" / "code").iterdir():
        path.write_text('["0000", ["not", "the", "imports"]')  # not JSON: a miss
    assert fingerprints() == parsed


def test_a_task_s_facts_are_read_back_without_importing_it(harness_cache):
    from harness.plan import TaskFacts
    from harness.registry import default_registry
    from harness.spec.load import load_spec
    from harness.spec.model import dataset_entries

    spec = load_spec(ROOT / "specs" / "cdfsl.yaml", "quick")
    datasets = [(d["name"], d.get("params", {})) for d in dataset_entries(spec.resolved)]
    first = TaskFacts(spec.task)
    levels = [first.chance(name, params) for name, params in datasets]
    first.save()
    again = TaskFacts(spec.task)
    assert (again.version, again.framework, again.metrics) == (first.version, first.framework, first.metrics)
    assert [again.chance(name, params) for name, params in datasets] == levels
    assert again._task is None  # read from the cache alone
    task = default_registry().load("tasks", spec.task)
    assert (again.version, again.framework, again.metrics) == (str(task.version), task.framework, tuple(task.metrics))
    assert levels == [{k: float(v) for k, v in task.chance(name, params).items()} for name, params in datasets]


def test_cache_entries_round_trip_and_a_damaged_one_is_a_miss(harness_cache):
    from harness import cache

    assert cache.get("kind", "key") is None
    cache.put("kind", "key", {"a": [1, 2.5, None, "x"]})
    assert cache.get("kind", "key") == {"a": [1, 2.5, None, "x"]}
    (harness_cache / "v1" / "kind" / "key").write_bytes(b'{"a": [1, 2')
    assert cache.get("kind", "key") is None
    cache.put("kind", "other", {1, 2})  # not JSON: not kept
    assert cache.get("kind", "other") is None
    assert cache.digest("ab", "c") != cache.digest("a", "bc")


def test_installing_a_package_changes_the_environment_digest_and_its_entry_points_are_read_again(
        tmp_path, monkeypatch):
    """A distribution's record appearing on the path (pip install) registers its catalogue's entry point at once,
    and its removal unregisters it, although the entry points are kept in the cache."""
    folder = tmp_path / "site"
    folder.mkdir()
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(folder), str(PLUGINS), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.delenv("HARNESS_PLUGINS", raising=False)
    assert "toy.guess" not in harness_cli("list", "tasks").stdout
    record = folder / "toyplug-1.0.dist-info"
    record.mkdir()
    (record / "METADATA").write_text("Metadata-Version: 2.1\nName: toyplug\nVersion: 1.0\n")
    (record / "entry_points.txt").write_text("[harness.catalogue]\ntoy = toy_plugin:CATALOGUE\n")
    listed = harness_cli("list", "tasks")
    assert "toy.guess" in listed.stdout and "toyplug:toy" in listed.stdout, listed.stderr
    for path in record.iterdir():
        path.unlink()
    record.rmdir()
    assert "toy.guess" not in harness_cli("list", "tasks").stdout


def test_the_claim_kinds_entry_point_group_is_the_one_the_kinds_are_read_from():
    """harness.spec.load names the group without importing the claim kinds; it must be theirs."""
    from harness.claims.registry import ENTRY_POINT_GROUP
    from harness.spec.load import CLAIM_KINDS

    assert CLAIM_KINDS == ENTRY_POINT_GROUP
