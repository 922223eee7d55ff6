"""An outside plugin that fails to load (a typo in HARNESS_PLUGINS, a broken entry point) is reported once, in one
line, and left out: every other command goes on, and a spec that needs a name it would have provided is refused
naming it. Before, the first such plugin raised out of every command, `harness list` included, with a traceback."""
from __future__ import annotations

import importlib.metadata
import os
import re
import textwrap

import pytest

from conftest import TOY_SPEC, harness_cli
from harness.registry import default_registry

TYPO = "toy_plugn:CATALOGUE"
NO_MODULE = f"HARNESS_PLUGINS entry '{TYPO}' failed to load: No module named 'toy_plugn'"


@pytest.fixture
def fresh_registry():
    default_registry.cache_clear()
    yield default_registry
    default_registry.cache_clear()


def test_a_typo_is_reported_once_and_the_other_plugins_still_register(toy_env, monkeypatch, fresh_registry, capsys):
    monkeypatch.setenv("HARNESS_PLUGINS", f"{TYPO},toy_plugin:CATALOGUE")
    registry = fresh_registry()
    assert registry.entry("tasks", "toy.guess").origin == "toy_plugin:CATALOGUE"
    assert registry.failed == [NO_MODULE]
    assert capsys.readouterr().err == f"harness: {NO_MODULE}; its names are not available\n"
    fresh_registry()
    assert capsys.readouterr().err == ""  # once per command


def test_each_way_a_plugin_fails_is_one_line(toy_env, monkeypatch, fresh_registry, tmp_path):
    (tmp_path / "broken_plugin.py").write_text('raise RuntimeError("cannot reach the licence server\\n  at line 2")\n')
    (tmp_path / "needs_plugin.py").write_text("import harness_no_such_library\nCATALOGUE = {}\n")
    (tmp_path / "malformed_plugin.py").write_text('CATALOGUE = {"tasks": {"x.y": "x_module:TASK"}}\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("HARNESS_PLUGINS", ",".join([
        "toy_plugin:CATALOG", "toy_plugin:TASK", "broken_plugin:CATALOGUE", "needs_plugin:CATALOGUE",
        "malformed_plugin:CATALOGUE", "toy_plugin", "toy_plugin:CATALOGUE"]))
    registry = fresh_registry()
    assert registry.failed == [
        "HARNESS_PLUGINS entry 'toy_plugin:CATALOG' failed to load: module 'toy_plugin' has no attribute 'CATALOG'",
        "HARNESS_PLUGINS entry 'toy_plugin:TASK' failed to load: toy_plugin:TASK is a Task, not a catalogue (a dict "
        "with sections requires, tasks, datasets, methods, metrics)",
        "HARNESS_PLUGINS entry 'broken_plugin:CATALOGUE' failed to load: importing broken_plugin raised "
        "RuntimeError: cannot reach the licence server",
        "HARNESS_PLUGINS entry 'needs_plugin:CATALOGUE' failed to load: importing needs_plugin raised "
        "ModuleNotFoundError: No module named 'harness_no_such_library'",
        "HARNESS_PLUGINS entry 'toy_plugin' failed to load: expected 'module:attribute', found 'toy_plugin'",
        # a catalogue that imports but is malformed, after those that do not import
        "HARNESS_PLUGINS entry 'malformed_plugin:CATALOGUE' failed to load: task 'x.y' from "
        "malformed_plugin:CATALOGUE: expected {target: 'module:attr', ...}",
    ]
    assert registry.names("tasks", None).count("toy.guess") == 1  # the good one registered, once
    assert "x.y" not in registry.names("tasks")  # a faulty catalogue is left out whole


def test_a_broken_entry_point_is_reported_and_the_rest_register(toy_env, monkeypatch, fresh_registry, capsys):
    eps = [importlib.metadata.EntryPoint("toy", "toy_plugn:CATALOGUE", "harness.catalogue")]
    monkeypatch.setattr(importlib.metadata, "entry_points",
                        lambda group=None: [ep for ep in eps if group in (None, ep.group)])
    registry = fresh_registry()
    line = ("entry point 'toy' (toy_plugn:CATALOGUE) in group 'harness.catalogue' failed to load: "
            "No module named 'toy_plugn'")
    assert registry.failed == [line]
    assert registry.entry("tasks", "toy.guess")  # HARNESS_PLUGINS still registers
    with pytest.raises(LookupError, match="unknown method 'toy-sleeper'.*; " + re.escape(line)):
        registry.entry("methods", "toy-sleeper")
    assert capsys.readouterr().err.count("failed to load") == 1


def test_commands_go_on_and_a_spec_that_needs_the_plugin_is_refused_naming_it(toy_env, monkeypatch, tmp_path):
    spec = tmp_path / "toy.yaml"
    spec.write_text(TOY_SPEC)
    monkeypatch.setenv("HARNESS_PLUGINS", TYPO)
    for args in (["list", "tasks"], ["list"], ["--help"]):
        listed = harness_cli(*args)
        assert listed.returncode == 0, listed.stderr
        assert "Traceback" not in listed.stderr
    assert harness_cli("list", "tasks").stderr == f"harness: {NO_MODULE}; its names are not available\n"
    refused = harness_cli("validate", spec)
    assert refused.returncode == 2, refused.stderr
    assert "Traceback" not in refused.stderr
    problem = [line for line in refused.stderr.splitlines() if "$.task" in line]
    assert len(problem) == 1 and problem[0].startswith(f"{spec}:5:7: $.task: unknown task 'toy.guess'"), refused.stderr
    assert problem[0].endswith(NO_MODULE), problem[0]


def test_a_run_reports_the_failed_plugin_once_not_once_per_worker(toy_env, monkeypatch, tmp_path):
    spec = tmp_path / "toy.yaml"
    spec.write_text(textwrap.dedent("""\
        spec: 1
        name: toy
        title: one plugin of two
        task: toy.guess
        datasets: [{name: toy-target, id: easy}]
        methods: [{name: toy-constant, kind: baseline}]
        metrics: {primary: toy_score}
        seeds: [0, 1, 2, 3]
        hardware: {device: cpu, threads: 1, timeout_s: 60}
        """))
    monkeypatch.setenv("HARNESS_PLUGINS", f"toy_plugin:CATALOGUE,{TYPO}")
    run = harness_cli("run", spec, "--out", tmp_path / "out", "--jobs", "2", "--no-progress")
    assert run.returncode == 0, run.stderr
    assert run.stderr.count("failed to load") == 1, run.stderr
    assert os.path.exists(tmp_path / "out" / "toy" / "runs.jsonl")
