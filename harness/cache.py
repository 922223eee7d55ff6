"""A small cache on disk of what a run derives from files and would otherwise derive again every time: a module's
syntax-tree digest and imports (:mod:`harness.code`), a spec that passed every check (:mod:`harness.spec.load`),
the facts of a task that planning needs (:mod:`harness.plan`).

Every entry is named by a digest of all it was derived from, read in full (content, never a timestamp): a changed
input is another name, so an entry is never stale, only unused. An entry that cannot be read or decoded (damaged,
half written by a process that was killed, another format) is a miss; a cache folder that cannot be written is no
cache; two processes writing one entry write the same bytes. Entries are JSON, never pickles.

Where: ``$HARNESS_CACHE_DIR``, else ``$XDG_CACHE_HOME/harness``, else ``~/.cache/harness``. Not in a results folder:
an entry holds for every results folder and every checkout of the same code (it is keyed by content), results
folders are committed and hold results only, ``--fresh`` moves them aside, and a read-only one still benefits.
Deleting the folder at any time is safe: the next run derives everything again.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

CACHE_VARIABLE = "HARNESS_CACHE_DIR"
FORMAT = "v1"  # a folder per format: entries of another format are never read
MAX_ENTRIES = 20_000  # per kind of entry; past it the oldest quarter goes (only a run that writes one looks)


def cache_dir() -> Path:
    """The cache folder (which may not exist yet)."""
    given = os.environ.get(CACHE_VARIABLE)
    if given:
        return Path(given) / FORMAT
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "harness" / FORMAT


def digest(*parts: bytes | str) -> str:
    """sha256 over ``parts``, each length-prefixed (so that no two lists of parts give the same bytes)."""
    h = hashlib.sha256()
    for part in parts:
        data = part.encode("utf-8", "surrogatepass") if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little") + data)
    return h.hexdigest()


def get(kind: str, key: str) -> Any | None:
    """The entry ``kind/key``, or None when there is none or it cannot be read."""
    try:
        return json.loads((cache_dir() / kind / key).read_bytes())
    except (OSError, ValueError):  # missing, unreadable, damaged (UnicodeDecodeError is a ValueError)
        return None


def put(kind: str, key: str, value: Any) -> None:
    """Store ``value`` (plain JSON data) as ``kind/key``; silently nothing when the cache cannot be written."""
    folder = cache_dir() / kind
    try:
        data = json.dumps(value, separators=(",", ":"), allow_nan=True).encode()
    except (TypeError, ValueError):
        return  # not plain data: not cached
    tmp = folder / f".{key}.{os.getpid()}.tmp"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(data)
        os.replace(tmp, folder / key)  # whole or nothing: a reader never sees half an entry
    except OSError:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        return
    _prune(folder)


def _prune(folder: Path) -> None:
    try:
        entries = [e for e in os.scandir(folder) if not e.name.startswith(".")]
        if len(entries) <= MAX_ENTRIES:
            return
        entries.sort(key=lambda e: e.stat().st_mtime_ns)
        for entry in entries[: len(entries) // 4]:
            os.unlink(entry.path)
    except OSError:
        pass  # another process pruned it first


_INSTALLED = (".dist-info", ".egg-info", ".egg-link", ".pth")


def environment_digest() -> str:
    """What is installed where this process imports from: the Python, and along ``sys.path``, in order, each folder
    that holds a distribution's record (``*.dist-info``: its name and version, with its entry points) or an import
    hook (``.pth``, an editable install's finder), with each of them and its identity on disk. Installing,
    upgrading or removing a package, or reinstalling one in place, changes it; the folder a command is typed in
    (on ``sys.path`` under ``python -m``) does not, unless it holds such records."""
    return _environment_digest(sys.version, sys.executable, tuple(sys.path), os.getcwd())


@lru_cache(maxsize=8)
def _environment_digest(version: str, executable: str, path: tuple[str, ...], cwd: str) -> str:
    parts: list[str] = [version, executable]
    for folder in path:
        where = os.path.abspath(os.path.join(cwd, folder))  # "" is the current folder
        try:
            with os.scandir(where) as scan:
                found = sorted((e.name, e.path) for e in scan
                               if e.name.endswith(_INSTALLED) or e.name.startswith("__editable__"))
        except OSError:
            continue
        if found:
            parts.append("\0" + where)
        for name, where in found:
            parts.append(f"{name} {_identity(where)}")
            if name.endswith((".dist-info", ".egg-info")):
                parts.append(_identity(os.path.join(where, "entry_points.txt")))
    return digest(*parts)


def _identity(path: str) -> str:
    try:
        info = os.stat(path)
    except OSError:
        return "-"
    return f"{info.st_size} {info.st_mtime_ns} {info.st_ino}"


ENTRY_POINTS = "entry-points"  # the cache's kind of entry: one group's entry points in one environment


def entry_points(group: str) -> list[tuple[str | None, str, str, str, str | None]]:
    """(distribution or None, name, value, module, attribute) of every entry point of ``group``, in the order
    :func:`importlib.metadata.entry_points` gives them.

    Importing :mod:`importlib.metadata` and reading every distribution's entry points was a tenth of a run
    with nothing to do: the list is kept under :func:`environment_digest`, which every install changes. Where
    an import hook other than :class:`importlib.machinery.PathFinder` lists distributions (its own, which
    the digest does not see), they are read every time.
    """
    from importlib.machinery import PathFinder

    key = digest(group, environment_digest())
    hooks = [f for f in sys.meta_path if f is not PathFinder and getattr(f, "find_distributions", None) is not None]
    found = None if hooks else get(ENTRY_POINTS, key)
    if isinstance(found, list) and all(isinstance(row, list) and len(row) == 5 for row in found):
        return [tuple(row) for row in found]
    import importlib.metadata

    found = [(ep.dist.name if ep.dist is not None else None, ep.name, ep.value, ep.module, ep.attr)
             for ep in importlib.metadata.entry_points(group=group)]
    if not hooks:
        put(ENTRY_POINTS, key, found)
    return found


@lru_cache(maxsize=1)
def engine_digest() -> str:
    """The content of every source file of the ``harness`` package and of its schema (what checks a spec, plans its
    cells, writes its folder), the task contract (``harness/tasks/*.py``) included and the task families left out:
    a family's code counts through the fingerprints of what a spec names, its catalogue through the registry."""
    root = Path(__file__).resolve().parent
    families = root / "tasks"
    parts: list[bytes | str] = []
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = sorted(d for d in subfolders if d != "__pycache__" and not d.startswith(".")
                               and Path(folder) != families)
        for name in sorted(files):
            if name.endswith((".py", ".json")):
                path = os.path.join(folder, name)
                parts += [os.path.relpath(path, root), Path(path).read_bytes()]
    return digest(*parts)
