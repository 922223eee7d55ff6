"""Dependencies point one way (DESIGN.md), read from the source without importing anything.

* ``baselines/`` never imports ``implementations/``, nor a method its baselines: what they
  share sits in ``components/``;
* ``components/`` (code a method shares with its baselines) imports neither;
* ``benchmarks/`` times public entry points only: no private module or name of the code it
  times (a dotted path with a part starting with ``_``), its own helpers aside;
* the engine's modules (``harness/``, imports inside functions included) form no import cycle, and
  import only modules of their own layer or below (:data:`ENGINE_LAYERS`, bottom first); a task
  family builds on the task contract and the leaves only, and the engine never imports a family.
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


@pytest.mark.parametrize("path", _params("studies"))
def test_studies_use_the_engine_s_public_names_only(path):
    """A script of studies/ (or tools/) that reaches into the engine's private modules or names breaks unseen when they change
    (the one-off refingerprint_results.py did; it went once its work was done)."""
    wrong = [f"line {line}: {name}" for line, name in imported(path) if _top(name) == "harness" and _private(name)]
    assert not wrong, (f"{path.relative_to(ROOT)} imports the engine's private code ({'; '.join(wrong)}): use a "
                       "public name, or make the one it needs public")


def test_the_folders_are_there():
    # a renamed folder would make the parametrised tests above collect nothing and pass
    for folder in ("baselines", "implementations", "components", "benchmarks", "studies"):
        assert _modules(folder), f"no modules under {folder}/"


# the task contract the engine reads: the base classes, and what a task may return besides metrics
ENGINE_CONTRACT_MODULES = {"harness.tasks.base", "harness.tasks.evaluation", "harness.tasks.training",
                           "harness.tasks.timing"}


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


# --- the engine's own import graph ------------------------------------------------------------------------------

def package_modules(package: str = "harness", root: Path = ROOT) -> dict[str, Path]:
    """Dotted name → file of every module of ``package``, sub-packages included (``a/b/__init__.py`` is ``a.b``)."""
    found = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _module_of(dotted: str, modules: dict[str, Path]) -> str | None:
    """The module an import executes: the longest prefix of ``dotted`` that is one (``from a.b import c`` is
    ``a.b.c`` when ``c`` is a module, ``a.b`` when it is a name defined there)."""
    parts = dotted.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in modules:
            return ".".join(parts[:n])
    return None


def import_graph(package: str = "harness", root: Path = ROOT) -> dict[str, dict[str, int]]:
    """module → {module it imports: first line}, for the modules of ``package``, imports inside functions included.

    Naming a module's own ancestor package itself (``import harness.claims as package`` in
    ``harness.claims.registry``, to scan it) adds no edge: Python imports every ancestor before the module
    anyway. Importing a *name* from it (``from harness.claims import check_claim``) does.
    """
    modules = package_modules(package, root)
    graph: dict[str, dict[str, int]] = {}
    for name, path in modules.items():
        edges: dict[str, int] = {}
        for line, dotted in imported(path, root):
            target = _module_of(dotted, modules)
            if target is None or target == name or (dotted == target and name.startswith(target + ".")):
                continue
            edges.setdefault(target, line)
        graph[name] = edges
    return graph


def import_cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """One cycle (``[a, b, ..., a]``) through each group of modules that import each other, directly or not."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def connect(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    cycles = []
    for group in sorted(groups):
        members, start = set(group), group[0]
        came_from: dict[str, str] = {}  # shortest way from start back to itself inside the group (breadth first)
        frontier = [start]
        while start not in came_from:
            reached = []
            for node in frontier:
                for nxt in sorted(graph[node]):
                    if nxt in members and nxt not in came_from:
                        came_from[nxt] = node
                        reached.append(nxt)
            frontier = reached
        path = [start]
        while len(path) == 1 or path[-1] != start:
            path.append(came_from[path[-1]])
        cycles.append(path[::-1])
    return cycles


def _cycle_text(cycle: list[str], graph: dict[str, dict[str, int]]) -> str:
    return cycle[0] + "".join(f" → {b} (line {graph[a][b]})" for a, b in zip(cycle, cycle[1:]))


def _strongly_connected(cycle: list[str], graph: dict[str, dict[str, int]]) -> list[str]:
    """Every module on some cycle with ``cycle[0]``: the whole knot to untie, not only its shortest loop."""
    def reach(start: str, edges) -> set[str]:
        seen, todo = {start}, [start]
        while todo:
            for nxt in edges(todo.pop()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen
    forward = reach(cycle[0], lambda n: graph[n])
    backward = reach(cycle[0], lambda n: [m for m in graph if n in graph[m]])
    return sorted(forward & backward)


def test_the_import_graph_reader_sees_cycles_in_modules_and_packages(tmp_path):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "leaf.py").write_text("import os\n")
    (package / "a.py").write_text("from pkg import leaf\n"
                                  "def late():\n"
                                  "    from pkg.sub import b\n")           # a function-level import counts
    (package / "sub" / "__init__.py").write_text("from pkg.sub.c import C\n")
    (package / "sub" / "b.py").write_text("from . import c\n")
    (package / "sub" / "c.py").write_text("import pkg.sub as here\n"      # its own package: no edge
                                          "from ..a import late\n")
    graph = import_graph("pkg", tmp_path)
    assert graph["pkg.a"] == {"pkg.leaf": 1, "pkg.sub.b": 3}
    assert graph["pkg.sub.c"] == {"pkg.a": 2}
    assert graph["pkg.sub"] == {"pkg.sub.c": 1}
    assert import_cycles(graph) == [["pkg.a", "pkg.sub.b", "pkg.sub.c", "pkg.a"]]
    assert _cycle_text(import_cycles(graph)[0], graph) == (
        "pkg.a → pkg.sub.b (line 3) → pkg.sub.c (line 1) → pkg.a (line 2)")
    (package / "sub" / "c.py").write_text("import pkg.leaf\n")
    assert import_cycles(import_graph("pkg", tmp_path)) == []


def test_the_engine_has_no_import_cycle():
    graph = import_graph()
    assert len(graph) > 20, "the reader found too few harness modules"
    cycles = import_cycles(graph)
    assert not cycles, ("harness modules import each other (imports inside functions count): "
                        + "; ".join(f"{_cycle_text(c, graph)} (the knot: {', '.join(_strongly_connected(c, graph))})"
                                    for c in cycles)
                        + ". Move what both need down to a module that both import")


# The engine's layers, bottom first: a module imports modules of its own layer or of layers below it, never above.
# A name ending in ".*" stands for every module of that package (the package's __init__ included); the most
# precise name that fits a module places it. A module of the engine that no entry places fails the test below:
# place a new module here, in the lowest layer its imports allow.
ENGINE_LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("leaves: declare, parse or probe, and import nothing of the harness",
     ("harness.devices", "harness.metrics", "harness.code", "harness.stats", "harness.progress", "harness.hardware",
      "harness.optuna_private", "harness.spec.model", "harness.report.blocks", "harness.bench",
      "harness.bench_worker", "harness.bench_session", "harness.cache", "harness.sandbox",
      "harness.sandbox_launcher")),
    ("the task contract (what a task family builds on)",
     ("harness.tasks", "harness.tasks.base", "harness.tasks.evaluation", "harness.tasks.training",
      "harness.tasks.timing", "harness.tasks.parameters", "harness.tasks.memory")),
    ("results on disk, names, the framework adapter, samplers",
     ("harness.runs_file", "harness.store", "harness.registry", "harness.frameworks", "harness.samplers")),
    ("a results folder's rows and tables", ("harness.results_table", "harness.metric_tables")),
    ("claim kinds (their schema fragments, how they read the rows)", ("harness.claims.*",)),
    ("the spec language: loading and validating", ("harness.spec.*",)),
    ("planning, tuning and running cells", ("harness.plan", "harness.tuning", "harness.execute", "harness.executors",
                                            "harness.cluster", "harness.backends")),
    ("pages and comparisons of results folders, and their audit",
     ("harness.report.*", "harness.merge", "harness.regress", "harness.audit.*")),
    ("the orchestrator", ("harness.runner",)),
    ("the skeleton of a new comparison (`harness new`)", ("harness.scaffold.*",)),
    ("the command line and the Python API", ("harness.cli", "harness.cli_arguments", "harness")),
]
TASK_FAMILIES = "harness.tasks.*"  # each family: the task contract and the leaves below it, and its own modules
# a family that imports another's module, each with why; an entry no longer needed fails the test (remove it then)
CROSS_FAMILY: dict[tuple[str, str], str] = {
    ("harness.tasks.robustness.images", "harness.tasks.fewshot.images"):
        "reads ImageFolder-style class folders with the few-shot family's reader (check_images, class_folders, "
        "read_images); moving the reader to a module both share changes both families' code fingerprints",
}


def layer_of(module: str) -> int | None:
    """The index in :data:`ENGINE_LAYERS` of the most precise entry that names ``module``; None for a task family's
    module or one no entry names."""
    best: tuple[int, int] | None = None  # (precision, layer)
    for layer, (_, names) in enumerate(ENGINE_LAYERS):
        for name in names:
            if name == module:
                precision = 1 << 16
            elif name.endswith(".*") and (module == name[:-2] or module.startswith(name[:-1])):
                precision = len(name)
            else:
                continue
            if best is None or precision > best[0]:
                best = (precision, layer)
    return None if best is None else best[1]


def _family(module: str) -> str | None:
    """``harness.tasks.gp`` for ``harness.tasks.gp.regression``; None outside a family."""
    parts = module.split(".")
    return ".".join(parts[:3]) if module.startswith(TASK_FAMILIES[:-1]) and len(parts) >= 3 \
        and layer_of(module) is None else None


def upward_imports(graph: dict[str, dict[str, int]], allowed=CROSS_FAMILY) -> list[str]:
    """Every import from a lower layer to a higher one, from the engine into a task family, and from a task family
    to anything but the leaves, the task contract and its own modules (``allowed`` aside)."""
    contract = max(layer for layer, (_, names) in enumerate(ENGINE_LAYERS) if "harness.tasks.base" in names)
    wrong = []
    for module, edges in sorted(graph.items()):
        family = _family(module)
        for target, line in sorted(edges.items(), key=lambda edge: edge[1]):
            where = f"{module} (line {line}) imports {target}"
            target_family = _family(target)
            if (family is None and layer_of(module) is None) or (target_family is None and layer_of(target) is None):
                continue  # not placed: test_every_engine_module_has_a_layer names it
            if family is not None:
                if (module, target) in allowed:
                    continue
                if target_family != family and (target_family is not None or layer_of(target) > contract):
                    wrong.append(f"{where}: a task family builds on the task contract and the leaves only")
            elif target_family is not None:
                wrong.append(f"{where}: the engine never imports a task family")
            elif layer_of(target) > layer_of(module):
                wrong.append(f"{where}, a layer above it ({ENGINE_LAYERS[layer_of(target)][0]})")
    return wrong


def test_the_layer_reader_finds_upward_imports():
    graph = {"harness.store": {"harness.runner": 3, "harness.devices": 4},
             "harness.claims.paired": {"harness.claims.base": 1, "harness.report.blocks": 2},
             "harness.report.board": {"harness.tasks.gp.regression": 9},
             "harness.tasks.gp.regression": {"harness.tasks.base": 1, "harness.tasks.gp.kernels": 2,
                                             "harness.tasks.fewshot.images": 3, "harness.store": 4},
             "harness.tasks.gp.kernels": {}, "harness.tasks.fewshot.images": {}, "harness.tasks.base": {},
             "harness.runner": {}, "harness.devices": {}, "harness.claims.base": {}, "harness.report.blocks": {}}
    assert layer_of("harness.claims") == layer_of("harness.claims.paired") == layer_of("harness.claims.base")
    assert layer_of("harness.report.blocks") == 0 < layer_of("harness.report.board")
    assert layer_of("harness.tasks.gp.regression") is None and layer_of("harness.nowhere") is None
    assert upward_imports(graph, allowed={}) == [
        "harness.report.board (line 9) imports harness.tasks.gp.regression: the engine never imports a task family",
        "harness.store (line 3) imports harness.runner, a layer above it (the orchestrator)",
        "harness.tasks.gp.regression (line 3) imports harness.tasks.fewshot.images: a task family builds on the "
        "task contract and the leaves only",
        "harness.tasks.gp.regression (line 4) imports harness.store: a task family builds on the task contract and "
        "the leaves only"]


def test_every_engine_module_has_a_layer():
    unplaced = [m for m in import_graph() if layer_of(m) is None and _family(m) is None]
    assert not unplaced, f"add each to ENGINE_LAYERS in {Path(__file__).name}: {', '.join(unplaced)}"


ENGINE_MODULE_MAX_LINES = 600  # issue 25: a module that outgrows it does more than one job; split it


def test_no_engine_module_is_over_600_lines():
    """The engine's modules (harness/, the task families aside: their size is the paper's) stay small enough to read
    as one job each."""
    long = [f"{path.relative_to(ROOT)} ({n} lines)" for module, path in package_modules().items()
            if _family(module) is None and (n := len(path.read_text(encoding="utf-8").splitlines()))
            > ENGINE_MODULE_MAX_LINES]
    assert not long, f"engine modules over {ENGINE_MODULE_MAX_LINES} lines: {', '.join(long)}; split each by its jobs"


def test_no_module_imports_upward():
    graph = import_graph()
    wrong = upward_imports(graph)
    assert not wrong, "imports against the layers (ENGINE_LAYERS):\n" + "\n".join(wrong)
    stale = [f"{a} → {b}" for a, b in CROSS_FAMILY if b not in graph.get(a, {})]
    assert not stale, f"CROSS_FAMILY lists imports that are gone: {'; '.join(stale)}; remove them"


# what builds a folder's pages but is not part of its stamp, each with why
NOT_IN_PAGES_STAMP = {
    "harness.registry": "read only for a folder written before runs recorded metrics.json",
    "harness.tasks.base": "imported by the registry alone",
    "harness.cache": "imported by the registry alone (its entry points, the same list importlib.metadata gives)",
}


def _assigned_tuple(name: str) -> tuple[str, tuple[str, ...]] | None:
    """(module, value) of the engine module that assigns the tuple of strings ``name`` at its top level."""
    for module, path in package_modules().items():
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
                    and isinstance(node.value, ast.Tuple)):
                return module, tuple(ast.literal_eval(node.value))
    return None


def test_the_pages_stamp_covers_every_module_that_builds_the_pages():
    """A folder's pages are rebuilt when the code that renders them changes (``PAGE_CODE``, a package standing for
    its modules): every module ``harness.report.folder`` imports, directly or not, is in it. (device_class moved
    from harness.hardware to harness.devices: a stamp still naming hardware would miss a change to it.)"""
    found = _assigned_tuple("PAGE_CODE")
    assert found is not None, "no engine module assigns PAGE_CODE (the code a folder's pages are stamped with)"
    owner, stamped = found
    graph = import_graph()
    reached, todo = set(), ["harness.report.folder"]
    while todo:
        module = todo.pop()
        if module not in reached:
            reached.add(module)
            todo.extend(graph[module])
    covered = {m for m in reached if any(m == s or m.startswith(s + ".") for s in stamped)}
    missing = sorted(reached - covered - set(NOT_IN_PAGES_STAMP))
    assert not missing, f"{owner}.PAGE_CODE misses {', '.join(missing)}, which the pages are built with"
