"""Fingerprints of the code behind a cell, so that a result can never be silently stale.

A cell's key includes the fingerprint of its task, its dataset loader and its method: a
hash of the source of the module each ``module:attr`` target lives in and of every module
of the same source tree it imports, directly or not (found statically, nothing is
imported). Comments, docstrings and formatting do not count: the fingerprint is taken
over the syntax tree with docstrings removed, so editing a docstring re-runs nothing and
changing a line of code re-runs the cells it can affect.

Why a fingerprint and not only a ``version`` the author bumps (as asv does): a forgotten
bump silently mixes old and new numbers in one leaderboard, which is the failure this
prevents. Tasks keep their explicit ``version`` for changes of meaning. The engine
(``harness`` outside ``harness.tasks``) is not part of the fingerprint: its changes are
tracked by the git commit each record carries, and its tests pin its behaviour.
"""
from __future__ import annotations

import ast
import hashlib
import sys
from functools import lru_cache
from importlib.machinery import ModuleSpec
from pathlib import Path

from harness import cache

ENGINE = "harness"
ENGINE_CONTRACT = "harness.tasks"  # the part of the engine a task's code is built on


def fingerprint(target: str) -> str:
    """12 hex digits naming the code of ``module:attr`` and of the in-tree modules it imports."""
    module = target.partition(":")[0]
    digest = hashlib.sha256()
    for name in sorted(import_closure(module)):
        digest.update(name.encode() + b"\0" + _module_digest(name).encode() + b"\0")
    return digest.hexdigest()[:12]


@lru_cache(maxsize=None)
def import_closure(module: str) -> frozenset[str]:
    """``module`` and every module it imports (transitively) that lives in the same source tree."""
    origin = _source_file(module)
    if origin is None:
        return frozenset({module})
    root = _tree_root(module, origin)
    seen: set[str] = set()
    stack = [module]
    global _walk_specs
    _walk_specs = {}  # this walk's: a package is found once, not once per name below it
    try:
        while stack:
            name = stack.pop()
            if name in seen or not _counts(name):  # an engine module is not followed, wherever it is
                continue
            path = _source_file(name)
            if path is None or not _inside(path, root):
                continue
            seen.add(name)
            stack.extend(_imports(name, path))
    finally:
        _walk_specs = None
    return frozenset(seen)


_walk_specs: dict[str, ModuleSpec | None] | None = None  # name → spec, while import_closure walks (see there)


def _counts(name: str) -> bool:
    return name.split(".")[0] != ENGINE or name == ENGINE_CONTRACT or name.startswith(ENGINE_CONTRACT + ".")


@lru_cache(maxsize=None)
def _source_file(module: str) -> Path | None:
    """The module's .py file, found as ``import`` would find it, without importing it or its packages."""
    search = None
    spec = None
    found = _walk_specs if _walk_specs is not None else {}
    for i, part in enumerate(module.split(".")):
        name = ".".join(module.split(".")[: i + 1])
        if name not in found:  # a name's search path is its parent's: the same parent, the same spec
            found[name] = _find_spec(name, search)
        spec = found[name]
        if spec is None:
            return None
        search = spec.submodule_search_locations
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    return Path(spec.origin).resolve()


def _find_spec(name: str, search) -> ModuleSpec | None:
    """Ask every finder on ``sys.meta_path`` in turn, as the import system does, with the parent's search path.

    ``PathFinder`` alone sees only ``sys.path``: under the ``harness`` console script of an editable install
    (``pip install -e .``, the README's) the repository is not on it, only setuptools' finder knows it, and every
    fingerprint was the digest of a module name: changed code never ran again.
    """
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        if find is None:
            continue
        try:
            spec = find(name, search, None)  # (name, path, target) as the import system passes them: some
        except (ImportError, ValueError):  # finders (asv's benchmark importer) take no default for target
            continue
        if spec is not None:
            return spec
    return None


def _tree_root(module: str, origin: Path) -> Path:
    """The folder holding the module's top-level package (the repository root, for this project)."""
    depth = module.count(".") + (1 if origin.name == "__init__.py" else 0)
    return origin.parents[depth]


def _inside(path: Path, root: Path) -> bool:
    return path.is_relative_to(root) and "site-packages" not in path.relative_to(root).parts


def _imports(module: str, path: Path) -> list[str]:
    return _analysis(module, path)[1]


def _imports_in(tree: ast.AST, module: str, path: Path) -> list[str]:
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")
                parent = parent[: len(parent) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            found.append(base)
            found += [f"{base}.{alias.name}" for alias in node.names]  # `from pkg import module`
    # parent packages' __init__ modules are not followed: here they only re-export names
    return found


ANALYSIS = "code"  # the cache's kind of entry: a module's source digest and imports


def _analysis(module: str, path: Path) -> tuple[str, list[str]]:
    """(:func:`source_digest`, the modules it imports) of ``module``'s file ``path``.

    Parsing is most of a fingerprint's cost, and every run took every fingerprint again: the two are kept in the
    cache (:mod:`harness.cache`) under a digest of the file's bytes, the module's name and file name (which
    resolve its relative imports), the Python (whose syntax trees they are) and this module's own source (how
    they are computed). A file that changes in any byte is parsed again.
    """
    source = path.read_bytes()
    key = cache.digest(_analysis_salt(), module, path.name, source)
    entry = cache.get(ANALYSIS, key)
    if (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str) and isinstance(entry[1], list)
            and all(isinstance(name, str) for name in entry[1])):
        return entry[0], entry[1]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    imports = _imports_in(tree, module, path)
    digest = _tree_digest(tree)
    cache.put(ANALYSIS, key, [digest, imports])
    return digest, imports


@lru_cache(maxsize=1)
def _analysis_salt() -> str:
    return cache.digest(sys.version, Path(__file__).read_bytes())


@lru_cache(maxsize=None)
def _module_digest(module: str) -> str:
    path = _source_file(module)
    if path is None:  # no source file to read (a compiled or generated module): its name stands in
        return "no-source"
    return _analysis(module, path)[0]


def source_digest(source: str) -> str:
    """The digest a module's fingerprint takes of its source: its syntax tree, docstrings and comments left out."""
    return _tree_digest(ast.parse(source))


def _tree_digest(tree: ast.AST) -> str:
    return hashlib.sha256(_canonical(_without_docstrings(tree)).encode()).hexdigest()


def _without_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
    return tree


def _canonical(node) -> str:
    """A serialisation of the syntax tree that does not depend on the Python version's ast.dump format.

    Fields that are None or empty are left out, so a field a newer Python adds (such as
    ``type_params`` in 3.12) does not change the fingerprint of code that does not use it.
    """
    if isinstance(node, ast.AST):
        fields = []
        for name in node._fields:
            value = getattr(node, name, None)
            if value is None or value == []:
                continue
            fields.append(f"{name}={_canonical(value)}")
        return f"{type(node).__name__}({','.join(fields)})"
    if isinstance(node, list):
        return "[" + ",".join(_canonical(v) for v in node) + "]"
    return repr(node)


def entry_point_code(group: str) -> list[str]:
    """The name, value and module fingerprint of every entry point of ``group`` (outside packages' code that the
    engine loads by name: claim kinds, catalogues), for digests of what depends on that code."""
    from harness.cache import entry_points

    found: list[str] = []
    for _, name, value, module, _ in entry_points(group):
        found += [name, value, fingerprint(module)]
    return found
