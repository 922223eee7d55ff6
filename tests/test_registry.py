"""Task families: found by scanning their package, each with its own extra of dependencies, and every metric a
task reports declared by its own family."""
from __future__ import annotations

import importlib.metadata
import importlib.util
import subprocess
import sys

import pytest

import harness.tasks
from conftest import ROOT, TOY_SPEC
from harness.registry import Registry, RegistryError, default_registry

FAMILY = "scanfam"  # a family package that exists only in a test's tmp_path

CATALOGUE = '''
_T = "scanfam.guess"
CATALOGUE = {
    REQUIRES
    "tasks": {_T: {"target": "harness.tasks.scanfam.task:TASK", "about": "guess a constant"}},
    "datasets": {"scan-constant": {"task": _T, "target": "harness.tasks.scanfam.task:constant", "about": "a constant"}},
    "methods": {"scan-guesser": {"task": _T, "target": "harness.tasks.scanfam.task:Guesser", "about": "guesses"}},
    "metrics": {"scan_error": {"goal": "min", "unit": "", "about": "|guess - constant|"}},
}
'''

TASK = '''
from typing import Protocol

import harness


class Guessing(Protocol):
    guess: float


def constant(context, *, value=0.25):
    return value


class Guesser:
    def __init__(self, guess=0.0):
        self.guess = guess


class Task(harness.Task):
    name = "scanfam.guess"
    metrics = ("scan_error",)
    protocol = Guessing
    REPORT = {}

    def evaluate(self, method, data, context):
        return {"scan_error": abs(method.guess - data), **self.REPORT}

    def tiny(self, workdir):
        return {"scan-constant": {}}


TASK = Task()
'''

SPEC = """\
spec: 1
name: scan
title: A family found by scanning
task: scanfam.guess
datasets: [{name: scan-constant, params: {value: 0.5}}]
methods:
  - {name: scan-guesser, kind: implementation, params: {guess: 0.5}}
  - {name: scan-guesser, id: zero, kind: baseline}
metrics: {primary: scan_error}
seeds: [0]
tuning: {trials: 0}
hardware: {device: cpu, threads: 1, timeout_s: 20}
"""


@pytest.fixture
def scanned_family(tmp_path, monkeypatch):
    """Write the family package ``harness.tasks.scanfam`` under tmp_path and put that folder on the path the
    registry scans (``harness.tasks.__path__``): nothing is installed. Yields a function that rewrites its
    catalogue (``requires``: the text of a "requires" row)."""
    folder = tmp_path / "families"
    package = folder / FAMILY
    package.mkdir(parents=True)
    (package / "__init__.py").write_text('"""A family written by a test."""\n')
    (package / "task.py").write_text(TASK)

    def write(requires: str = "") -> None:
        (package / "catalogue.py").write_text(CATALOGUE.replace("REQUIRES", requires))
        for name in [m for m in sys.modules if m.startswith(f"harness.tasks.{FAMILY}")]:
            del sys.modules[name]
        importlib.invalidate_caches()
        default_registry.cache_clear()

    monkeypatch.setattr(harness.tasks, "__path__", [*harness.tasks.__path__, str(folder)])
    write()
    yield write
    for name in [m for m in sys.modules if m.startswith(f"harness.tasks.{FAMILY}")]:
        del sys.modules[name]
    default_registry.cache_clear()


# --- families are found by scanning -------------------------------------------------------

def test_a_new_family_package_is_found_without_installing_anything(scanned_family, tmp_path):
    from harness.spec.load import validate_spec

    registry = default_registry()
    assert registry.names("tasks", None).count("scanfam.guess") == 1
    assert registry.names("datasets", "scanfam.guess") == ["scan-constant"]
    assert registry.names("methods", "scanfam.guess") == ["scan-guesser"]
    assert registry.metrics["scan_error"].goal == "min"
    assert registry.entry("methods", "scan-guesser").origin == "harness.tasks.scanfam"
    assert registry.load("tasks", "scanfam.guess").name == "scanfam.guess"
    assert "fewshot.cdfsl" in registry.names("tasks")  # the repository's own families are still there
    (tmp_path / "scan.yaml").write_text(SPEC)
    validate_spec(tmp_path / "scan.yaml")  # every name of the spec resolves


def test_harness_list_shows_where_each_name_comes_from(scanned_family, capsys):
    from harness.cli import main

    assert main(["list", "methods"]) == 0
    out = capsys.readouterr().out
    line = next(row for row in out.splitlines() if row.startswith("scan-guesser "))
    assert "harness.tasks.scanfam" in line and "needs" not in line
    assert any(row.startswith("recit ") and "harness.tasks.fewshot" in row for row in out.splitlines())


def test_an_old_install_s_entry_points_of_in_repo_families_register_nothing_twice(monkeypatch):
    """An editable install made before the scan still advertises the families' entry points: they are skipped
    (the scan found them), and an outside package's entry point still registers."""
    eps = [importlib.metadata.EntryPoint("graph", "harness.tasks.graph.catalogue:CATALOGUE", "harness.catalogue"),
           importlib.metadata.EntryPoint("toy", "toy_plugin:CATALOGUE", "harness.catalogue")]
    monkeypatch.setattr(importlib.metadata, "entry_points",
                        lambda group=None: [ep for ep in eps if group in (None, ep.group)])
    monkeypatch.syspath_prepend(str(ROOT / "tests" / "plugins"))
    monkeypatch.delenv("HARNESS_PLUGINS", raising=False)
    default_registry.cache_clear()
    try:
        registry = default_registry()
        assert registry.entry("tasks", "graph.constrained-clustering").origin == "harness.tasks.graph"
        assert registry.entry("tasks", "toy.guess").origin == "?:toy"
    finally:
        default_registry.cache_clear()


def test_scanning_imports_only_the_catalogues():
    probe = ("import sys\n"
             "from harness.registry import default_registry\n"
             "registry = default_registry()\n"
             "assert len(registry.names('tasks')) > 10\n"
             "print(sorted(m for m in ('torch', 'numpy', 'scipy', 'pandas', 'sklearn') if m in sys.modules))\n"
             "print(sorted(m for m in sys.modules if m.startswith('harness.tasks.') and m.count('.') == 3 "
             "and not m.endswith('.catalogue')))\n")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["[]", "[]"]


def test_a_catalogue_module_without_a_catalogue_is_named(scanned_family, tmp_path):
    (tmp_path / "families" / FAMILY / "catalogue.py").write_text("NAMES = {}\n")
    for name in [m for m in sys.modules if m.startswith(f"harness.tasks.{FAMILY}")]:
        del sys.modules[name]
    default_registry.cache_clear()
    with pytest.raises(RegistryError, match=r"scanfam/catalogue.py: expected a CATALOGUE dict"):
        default_registry()


# --- each family declares its extra -------------------------------------------------------

MISSING = '"requires": {"extra": "scanfam", "modules": ["harness_test_no_such_module", "numpy"]},'


def test_a_spec_whose_family_lacks_its_extra_is_refused_in_one_line(scanned_family, tmp_path, capsys):
    from harness.cli import main
    from harness.spec.load import MissingExtra, validate_spec

    scanned_family(MISSING)
    spec = tmp_path / "scan.yaml"
    spec.write_text(SPEC)
    expected = ("task 'scanfam.guess' needs the 'scanfam' extra (harness_test_no_such_module not installed): "
                "pip install -e '.[scanfam]'")
    with pytest.raises(MissingExtra, match=r"\$\.task: " + expected.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[").replace("]", r"\]").replace(".", r"\.")):
        validate_spec(spec)
    for command in (["validate", str(spec)], ["run", str(spec), "--out", str(tmp_path / "out"), "--no-progress"]):
        assert main(command) == 2
        captured = capsys.readouterr()
        lines = captured.err.strip().splitlines()
        assert len(lines) == 1 and lines[0].endswith(expected) and str(spec) in lines[0], captured.err
        assert "Traceback" not in captured.err and not captured.out
    assert not (tmp_path / "out").exists()  # nothing ran
    assert main(["list", "tasks"]) == 0  # the family's names are still listed, marked
    line = next(row for row in capsys.readouterr().out.splitlines() if row.startswith("scanfam.guess "))
    assert "harness.tasks.scanfam (needs pip install -e '.[scanfam]')" in line


def test_a_real_family_without_its_libraries_names_its_extra(monkeypatch):
    """find_spec (nothing imported) decides: with pgmpy and causallearn hidden, local-causal is refused."""
    from harness.spec.load import MissingExtra, validate_spec

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a, **k: None if name in ("pgmpy", "causallearn") else real(name, *a, **k))
    with pytest.raises(MissingExtra, match=r"specs/local-causal.yaml:\d+:\d+: \$\.task: task 'causal.pairwise' "
                                           r"needs the 'causal' extra \(pgmpy, causallearn not installed\): "
                                           r"pip install -e '\.\[causal\]'$"):
        validate_spec(ROOT / "specs" / "local-causal.yaml")
    assert default_registry().missing_extra("gp.regression") is None
    assert default_registry().requirement("methods", "exact-gp").modules == ("gpytorch", "linear_operator")


def test_a_cluster_executor_without_submitit_names_the_cluster_extra(toy_env, write_spec, tmp_path, monkeypatch,
                                                                     capsys):
    from harness.cli import main

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a, **k: None if name == "submitit" else real(name, *a, **k))
    code = main(["run", str(write_spec(TOY_SPEC)), "--executor", "local-submitit", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err == ("harness run: --executor local-submitit needs the 'cluster' extra (submitit not "
                                 "installed): pip install -e '.[cluster]'")


def test_the_extras_in_pyproject_install_what_the_catalogues_require():
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    assert "entry-points" not in project, "in-repo families are scanned, not registered by entry point"
    core = " ".join(project["dependencies"])
    registry = default_registry()
    for origin, need in registry.requirements.items():
        assert need.extra in extras, f"{origin} requires the extra {need.extra!r}, which pyproject.toml lacks"
        assert need.extra in extras["all"][0], f"'all' installs the {need.extra!r} extra"
        for module in need.modules:
            assert module.split("_")[0] not in core, f"{module} is a core dependency and in the {need.extra!r} extra"
    assert any(r.startswith("submitit") for r in extras["cluster"]) and "harness[all]" in extras["test"]


def test_the_install_command_names_the_distribution_that_registered_the_family():
    catalogue = {"requires": {"extra": "deep", "modules": ["harness_test_no_such_module"]},
                 "tasks": {"fam.task": {"target": "m:TASK"}}}
    by_package = Registry([("fampkg:fam", catalogue)], dists={"fampkg:fam": "fampkg"})
    assert by_package.missing_extra("fam.task") == ("task 'fam.task' needs the 'deep' extra (harness_test_no_such_module "
                                                    "not installed): pip install 'fampkg[deep]'")
    loose = Registry([("fam.catalogue:CATALOGUE", catalogue)])  # HARNESS_PLUGINS: no distribution to name
    assert loose.missing_extra("fam.task").endswith(
        "install harness_test_no_such_module (import names; fam.catalogue:CATALOGUE belongs to no distribution here)")


def test_a_method_may_be_its_task_s_trivial_answer_and_only_a_method_says_so():
    catalogue = {"tasks": {"fam.t": {"target": "m:T"}},
                 "methods": {"always-yes": {"task": "fam.t", "target": "m:Yes", "trivial": True},
                             "real": {"task": "fam.t", "target": "m:Real"}}}
    registry = Registry([("fam", catalogue)])
    assert registry.trivial_methods("fam.t") == ["always-yes"] and not registry.entry("methods", "real").trivial
    with pytest.raises(RegistryError, match="'trivial' is true or false, and only a method says it; found 'yes'"):
        Registry([("fam", {**catalogue, "methods": {"m": {"task": "fam.t", "target": "m:M", "trivial": "yes"}}})])
    with pytest.raises(RegistryError, match="dataset 'd' from fam: 'trivial'"):
        Registry([("fam", {**catalogue, "datasets": {"d": {"task": "fam.t", "target": "m:d", "trivial": True}}})])


def test_a_requires_row_of_the_wrong_shape_is_refused():
    with pytest.raises(RegistryError, match=r"catalogue from fam: 'requires' must be \{'extra'"):
        Registry([("fam", {"requires": {"extra": "x", "module": ["y"]}})])


# --- every metric a task reports is its family's ------------------------------------------

def test_a_metric_the_family_does_not_declare_is_refused_with_what_to_write(scanned_family, tmp_path):
    from harness.execute import execute_cell
    from harness.spec.load import SpecError, validate_spec

    registry = default_registry()
    task = registry.load("tasks", "scanfam.guess")
    assert list(registry.task_metrics("scanfam.guess")) == ["scan_error"]
    cell = {"task": "scanfam.guess", "dataset_id": "scan-constant", "dataset_name": "scan-constant",
            "dataset_params": {}, "method_name": "scan-guesser", "params": {"guess": 0.5}, "seed": 0, "split": "test",
            "device": "cpu", "threads": 1, "timeout_s": 20, "data_dir": None}
    assert execute_cell(cell)["metrics"] == {"scan_error": 0.25}
    type(task).metrics = ("scan_error", "runtime_s")  # runtime_s: declared by other families, not by this one
    expected = ("task 'scanfam.guess' (harness.tasks.scanfam.task:TASK) reports 'runtime_s', which its family's "
                "catalogue (harness.tasks.scanfam) does not declare: add each to the catalogue's 'metrics' section "
                "with its goal, unit and about")
    with pytest.raises(RegistryError, match=r"reports 'runtime_s', which its family's catalogue"):
        registry.load("tasks", "scanfam.guess")
    spec = tmp_path / "scan.yaml"
    spec.write_text(SPEC)
    with pytest.raises(SpecError, match=r"scan.yaml:4:7: \$\.task: " + expected.replace("(", r"\(").replace(")", r"\)")
                       .replace(".", r"\.")):
        validate_spec(spec)
    assert execute_cell(cell)["error"] == "RegistryError: " + expected


def test_a_metric_the_task_does_not_list_fails_the_cell_with_a_clear_error(scanned_family):
    from harness.execute import execute_cell

    task = default_registry().load("tasks", "scanfam.guess")
    cell = {"task": "scanfam.guess", "dataset_id": "scan-constant", "dataset_name": "scan-constant",
            "dataset_params": {}, "method_name": "scan-guesser", "params": {"guess": 0.5}, "seed": 0, "split": "test",
            "device": "cpu", "threads": 1, "timeout_s": 20, "data_dir": None}
    type(task).REPORT = {"surprise": 1.0}
    result = execute_cell(cell)
    assert result["status"] == "failed"
    assert result["error"] == ("RegistryError: task 'scanfam.guess' returned 'surprise', which it does not list in its "
                               "`metrics` (scan_error): list each there and declare it, with its goal, unit and about, "
                               "in its family's catalogue (harness.tasks.scanfam)")


def test_a_task_without_a_list_of_metrics_is_refused(scanned_family):
    task = default_registry().load("tasks", "scanfam.guess")
    type(task).metrics = "scan_error"
    with pytest.raises(RegistryError, match=r"`metrics` must list the names its evaluate\(\) returns"):
        default_registry().load("tasks", "scanfam.guess")
