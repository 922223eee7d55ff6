from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PLUGINS = Path(__file__).resolve().parent / "plugins"

TOY_SPEC = """\
# yaml-language-server: $schema=../harness/spec/schema.json
spec: 1
name: toy
title: Toy comparison
task: toy.guess
datasets:
  - {name: toy-target, id: easy, params: {noise: 0.05}}
  - {name: toy-target, id: hard, params: {noise: 0.3}}
methods:
  - name: toy-tunable
    kind: implementation
    search:
      x: {float: [0.0, 1.0]}
  - {name: toy-constant, kind: baseline, params: {value: 0.0}}
metrics: {primary: toy_score, report: [toy_score, toy_loss]}
seeds: [0, 1, 2]
tuning: {trials: 4, sampler: {name: tpe, args: {n_startup_trials: 2}}}
hardware: {device: cpu, threads: 1, timeout_s: 20}
claims:
  - {id: tunable-wins, says: tuned beats constant, better: toy-tunable, than: toy-constant, metric: toy_score}
profiles:
  quick:
    seeds: [0]
    tuning: {trials: 2}
    datasets: {hard: {params: {noise: 0.2}}}
"""


@pytest.fixture(autouse=True)
def harness_cache(tmp_path_factory, monkeypatch):
    """Each test its own cache folder (:mod:`harness.cache`, through ``HARNESS_CACHE_DIR``, which the subprocesses
    it starts inherit): what one test fakes (entry points, a plugin's code) is never what another reads back."""
    folder = tmp_path_factory.mktemp("harness-cache")
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(folder))
    return folder


@pytest.fixture
def toy_env(monkeypatch):
    """Register the toy plugin for this process and for the workers and subprocesses it starts."""
    from harness.registry import default_registry

    monkeypatch.setenv("HARNESS_PLUGINS", "toy_plugin:CATALOGUE")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(PLUGINS), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.syspath_prepend(str(PLUGINS))
    default_registry.cache_clear()
    yield
    default_registry.cache_clear()


@pytest.fixture
def one_torch_thread():
    """One torch thread, as the specs run cells: on a busy 2-core machine two threads thrash."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def write_spec(tmp_path):
    """Write a spec file named after its ``name`` (or ``stem``) and return its path."""

    def write(text: str, stem: str = "toy") -> Path:
        path = tmp_path / f"{stem}.yaml"
        path.write_text(textwrap.dedent(text))
        return path

    return write


def harness_cli(*args: str, cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run the real `harness` command line in a fresh interpreter."""
    return subprocess.run([sys.executable, "-m", "harness.cli", *map(str, args)], cwd=cwd or ROOT,
                          capture_output=True, text=True, timeout=timeout)
