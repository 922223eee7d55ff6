"""Dependencies point one way (DESIGN.md), read from the source without importing anything.

* ``baselines/`` never imports ``implementations/``, nor a method its baselines: what they
  share sits in ``components/``;
* ``components/`` (code a method shares with its baselines) imports neither;
* ``benchmarks/`` times public entry points only: no private module or name of the code it
  times (a dotted path with a part starting with ``_``), its own helpers aside.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conftest import ROOT


PENDING: dict[str, str] = {}  # known violations, each a strict xfail until fixed


def _modules(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


def _params(folder: str) -> list:
    out = []
    for path in _modules(folder):
        name = path.relative_to(ROOT).as_posix()
        marks = [pytest.mark.xfail(strict=True, reason=PENDING[name])] if name in PENDING else []
        out.append(pytest.param(path, id=name, marks=marks))
    return out


def imported(path: Path, root: Path = ROOT) -> list[tuple[int, str]]:
    """(line, dotted path) of every import in ``path``, anywhere in the file (functions included).

    ``from a.b import c`` counts as ``a.b.c`` (``c`` may be a module or a name in it);
    relative imports are resolved against the module's package under ``root``.
    """
    package = list(path.relative_to(root).parent.parts)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            found.extend((node.lineno, f"{module}.{alias.name}" if alias.name != "*" else module) for alias in node.names)
    return found


def _top(dotted: str) -> str:
    return dotted.split(".")[0]


def test_the_reader_sees_every_kind_of_import(tmp_path):
    package = tmp_path / "baselines" / "sub"
    package.mkdir(parents=True)
    module = package / "sample.py"
    module.write_text("import implementations.recit as r\n"
                      "from . import vit\n"
                      "from .. import spectral\n"
                      "def late():\n"
                      "    from implementations.dfn import _net\n")
    assert sorted(name for _, name in imported(module, tmp_path)) == [
        "baselines.spectral", "baselines.sub.vit", "implementations.dfn._net", "implementations.recit"]
    assert _private("implementations.dfn._net") and not _private("__future__.annotations")


@pytest.mark.parametrize("path", _params("baselines"))
def test_baselines_never_import_implementations(path):
    wrong = [f"line {line}: {name}" for line, name in imported(path) if _top(name) == "implementations"]
    assert not wrong, (f"{path.relative_to(ROOT)} imports a paper's method ({'; '.join(wrong)}): move what both "
                       "share to components/ and import it from there")


@pytest.mark.parametrize("path", _params("implementations"))
def test_implementations_never_import_baselines(path):
    wrong = [f"line {line}: {name}" for line, name in imported(path) if _top(name) == "baselines"]
    assert not wrong, (f"{path.relative_to(ROOT)} imports a baseline ({'; '.join(wrong)}): move what the method "
                       "shares with it to components/ and import it from there")


@pytest.mark.parametrize("path", _params("components"))
def test_components_import_neither_implementations_nor_baselines(path):
    wrong = [f"line {line}: {name}" for line, name in imported(path) if _top(name) in ("implementations", "baselines")]
    assert not wrong, f"{path.relative_to(ROOT)} is shared code and must import neither side: {'; '.join(wrong)}"


def _private(dotted: str) -> bool:
    return any(part.startswith("_") for part in dotted.split(".") if part != "__future__")


@pytest.mark.parametrize("path", _params("benchmarks"))
def test_benchmarks_use_public_entry_points_only(path):
    wrong = [f"line {line}: {name}" for line, name in imported(path)
             if _top(name) != "benchmarks" and _private(name)]  # the suite's own helpers (benchmarks._common) aside
    assert not wrong, (f"{path.relative_to(ROOT)} imports private code ({'; '.join(wrong)}): export it from the "
                       "package's __init__ and import it from there")


def test_the_folders_are_there():
    # a renamed folder would make the parametrised tests above collect nothing and pass
    for folder in ("baselines", "implementations", "components", "benchmarks"):
        assert _modules(folder), f"no modules under {folder}/"


# the task contract the engine reads: the base classes, and what a task may return besides metrics
ENGINE_CONTRACT_MODULES = {"harness.tasks.base", "harness.tasks.evaluation"}


@pytest.mark.parametrize("path", _params("harness"))
def test_the_engine_and_tasks_never_import_methods(path):
    """The engine never imports a task's code, and a task never imports a method or a baseline:
    a task's scorer (OPT, the reference LP) is its own, so one solver bug cannot move a method
    and its reference together."""
    wrong = [f"line {line}: {name}" for line, name in imported(path)
             if _top(name) in ("implementations", "baselines", "components")]
    assert not wrong, f"{path.relative_to(ROOT)} imports a method's code: {'; '.join(wrong)}"
    if "tasks" not in path.relative_to(ROOT).parts:
        tasks = [f"line {line}: {name}" for line, name in imported(path)
                 if name.startswith("harness.tasks.")
                 and not any(name == m or name.startswith(m + ".") for m in ENGINE_CONTRACT_MODULES)]
        assert not tasks, f"{path.relative_to(ROOT)} is engine code and imports a task family: {'; '.join(tasks)}"


def test_every_expected_exception_names_its_message():
    """`pytest.raises(E)` alone passes for any E raised anywhere: each one says which message it expects."""
    loose = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "raises"
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "pytest"
                    and not any(k.arg == "match" for k in node.keywords)):
                loose.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not loose, f"pytest.raises without match=: {', '.join(loose)}"


@pytest.mark.parametrize("path", [p for p in _params("harness") if "tasks" not in p.values[0].relative_to(ROOT).parts
                                  and p.values[0].name != "frameworks.py"])
def test_the_engine_is_framework_neutral(path):
    """Only the framework adapter (harness/frameworks.py) and the tasks touch torch."""
    wrong = [f"line {line}: {name}" for line, name in imported(path) if _top(name) in ("torch", "jax", "tensorflow")]
    assert not wrong, f"{path.relative_to(ROOT)} calls a framework directly: put it behind harness/frameworks.py"
