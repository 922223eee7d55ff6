"""Name → object resolution for tasks, datasets, methods and metrics.

The engine holds no list of papers. Every task family declares its names in a catalogue, a
plain dict of ``module:attr`` strings. The families of this repository are found by scanning
their package: every ``harness/tasks/<family>/catalogue.py`` with a ``CATALOGUE`` registers,
with no ``pyproject.toml`` line and no reinstall. Outside packages register theirs through the
``harness.catalogue`` entry-point group, and ``HARNESS_PLUGINS`` adds catalogues of packages
that are not installed. Listing names imports nothing heavy (a catalogue is plain data);
objects are imported on first use. A catalogue looks like::

    CATALOGUE = {
        "requires": {"extra": "fam", "modules": ["a_library"]},   # optional
        "tasks":    {"fam.task":  {"target": "pkg.module:TASK", "about": "..."}},
        "datasets": {"a-loader":  {"task": "fam.task", "target": "pkg.module:loader", "about": "..."}},
        "methods":  {"a-method":  {"task": "fam.task", "target": "pkg.module:Class", "about": "..."}},
        "metrics":  {"a_metric":  {"goal": "max", "unit": "%", "about": "..."}},
    }

``metrics`` declares, with its goal and unit, every metric the family's tasks report (each task
class lists the names it reports in ``Task.metrics``; a name its own family does not declare is
refused when the task loads). A metric may be declared by several families when they agree on
its goal and unit. A metric that measures the spread of another one (a per-cell interval's
half-width) says so with ``"spread_of": "that_metric"``: a leaderboard shows it, like timings,
in its second table. ``"role"`` tells ``harness audit`` what a metric is: ``budget`` (the unit of
work the task's methods spend), ``certificate`` (holds by construction: a claim on it is a
check), ``failure-share`` (the share of failed or degenerate fits in a cell) or
``training-objective`` (the objective a method trains, recorded as a curve of the same name by
:class:`harness.tasks.training.TrainingLog`, with ``"tolerance"``: how much the last fifth of the
budget may still improve it for the training to count as converged).

A method entry may say ``"trivial": true``: it is its task's trivial answer (the majority class, the prior
mean, always "possible"), which knows nothing of the instance a real method could not also know. A spec lists
such a method with ``kind: trivial`` (and no other method so); the leaderboard marks every method that does not
beat it, and ``harness audit`` flags a spec of the task that runs none (``missing-trivial-row``).

``requires`` names the libraries the family's code imports beyond the harness's own
dependencies (import names, checked with :func:`importlib.util.find_spec`, never imported) and
the optional extra of its distribution that installs them: a spec of a family whose libraries
are missing is refused with the ``pip install`` command (:meth:`Registry.missing_extra`).
"""
from __future__ import annotations

import difflib
import importlib
import importlib.util
import inspect
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from harness.metrics import GOALS, ROLES, Metric

KINDS = ("tasks", "datasets", "methods")
SECTIONS = ("requires", *KINDS, "metrics")
ENTRY_POINT_GROUP = "harness.catalogue"
FAMILIES_PACKAGE = "harness.tasks"  # in-repo families: each subpackage with a catalogue.py, found by scanning
CATALOGUE_MODULE = "catalogue"
PLUGINS_VARIABLE = "HARNESS_PLUGINS"  # comma-separated module:attr catalogues, for plugins not installed as packages


class RegistryError(LookupError):
    pass


@dataclass(frozen=True)
class Entry:
    kind: str
    name: str
    target: str
    task: str | None
    about: str
    origin: str  # the scanned family package ("harness.tasks.graph"), "distribution:entry point", or the HARNESS_PLUGINS target
    trivial: bool = False  # a method that is its task's trivial answer (``"trivial": true``)


@dataclass(frozen=True)
class Requirement:
    """A family's libraries beyond the harness's own dependencies, and the extra that installs them."""

    extra: str
    modules: tuple[str, ...]  # import names (causallearn, not causal-learn)

    def missing(self) -> list[str]:
        """The modules not installed here, found without importing any (:func:`importlib.util.find_spec`)."""
        return [m for m in self.modules if not _installed(m)]


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a dotted name whose parent is missing
        return False


def suggest(name: str, candidates) -> str:
    close = difflib.get_close_matches(name, list(candidates), n=3, cutoff=0.5)
    return f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""


def listing(names, limit: int = 20) -> str:
    """Names for a message, comma-separated; past ``limit`` (a grid's thousands of datasets) the first ones and the count."""
    names = list(names)
    shown = ", ".join(names[:limit])
    return shown if len(names) <= limit else f"{shown}, ... ({len(names):,} in all)"


class Registry:
    def __init__(self, catalogues: list[tuple[str, dict]], dists: dict[str, str] | None = None,
                 failed: list[str] | None = None, outside: dict[str, str] | None = None):
        """``catalogues``: (origin, catalogue) pairs; ``dists``: origin → the distribution that installs it (for the
        ``pip install`` command of a missing extra; a family scanned in this checkout needs none).

        ``failed``: one line per outside catalogue that did not load (``HARNESS_PLUGINS entry 'x' failed to load:
        ...``); ``outside``: origin → such a line's label, for the catalogues of plugins (entry points,
        ``HARNESS_PLUGINS``) whose faults are recorded in :attr:`failed` instead of raised, the plugin left out. An
        unknown name's error names every failed plugin, which might have provided it."""
        self._entries: dict[str, dict[str, Entry]] = {kind: {} for kind in KINDS}
        self.metrics: dict[str, Metric] = {}
        self.metric_origins: dict[str, str] = {}
        self._declared: dict[tuple[str, str], Metric] = {}  # (name, origin) → that catalogue's declaration
        self.requirements: dict[str, Requirement] = {}  # origin → its family's extra
        self._dists = dict(dists or {})
        self._parameters: dict[tuple[str, str], dict[str, Any]] = {}
        self.failed: list[str] = list(failed or [])
        outside = outside or {}
        for origin, catalogue in catalogues:
            if origin not in outside:
                self._add_catalogue(origin, catalogue)
                continue
            saved = self._state()
            try:
                self._add_catalogue(origin, catalogue)
            except Exception as exc:  # a faulty plugin is left out whole, not half registered
                self._restore(saved)
                reason = str(exc) if isinstance(exc, RegistryError) else f"its catalogue is malformed: {_one_line(exc)}"
                self.failed.append(f"{outside[origin]} failed to load: {reason}")

    def _state(self) -> tuple:
        return ({kind: dict(entries) for kind, entries in self._entries.items()}, dict(self.metrics),
                dict(self.metric_origins), dict(self._declared), dict(self.requirements))

    def _restore(self, state: tuple) -> None:
        self._entries, self.metrics, self.metric_origins, self._declared, self.requirements = state

    def _add_catalogue(self, origin: str, catalogue: Any) -> None:
        if not isinstance(catalogue, dict):
            raise RegistryError(f"catalogue from {origin}: expected a dict with sections {', '.join(SECTIONS)}, "
                                f"found {type(catalogue).__name__}")
        unknown = set(catalogue) - set(SECTIONS)
        if unknown:
            raise RegistryError(f"catalogue from {origin}: unknown section {sorted(unknown)[0]!r}; "
                                f"expected one of {', '.join(SECTIONS)}")
        if "requires" in catalogue:
            self.requirements[origin] = _requirement(origin, catalogue["requires"])
        for name, row in catalogue.get("metrics", {}).items():
            self._add_metric(origin, name, row)
        for kind in KINDS:
            for name, row in catalogue.get(kind, {}).items():
                self._add_entry(origin, kind, name, row)

    def failed_note(self) -> str:
        """``; <each failed plugin's line>`` for an unknown name's error, or nothing when every plugin loaded."""
        return "".join(f"; {line}" for line in self.failed)

    def _add_metric(self, origin: str, name: str, row: dict) -> None:
        if not isinstance(row, dict) or row.get("goal") not in GOALS:
            found = row.get("goal") if isinstance(row, dict) else row
            raise RegistryError(f"metric {name!r} from {origin}: goal must be 'max' or 'min', found {found!r}")
        if row.get("role", "") not in ("", *ROLES):
            raise RegistryError(f"metric {name!r} from {origin}: role must be one of {', '.join(ROLES)}, "
                                f"found {row['role']!r}")
        tolerance = row.get("tolerance")
        if (row.get("role") == "training-objective") != (tolerance is not None) or not (
                tolerance is None or (isinstance(tolerance, (int, float)) and tolerance >= 0)):
            raise RegistryError(f"metric {name!r} from {origin}: a training objective (role training-objective) "
                                f"states its tolerance, a number ≥ 0, and no other metric does; found {tolerance!r}")
        metric = Metric(name, row["goal"], row.get("unit", ""), row.get("about", ""), row.get("spread_of", ""),
                        row.get("role", ""), None if tolerance is None else float(tolerance))
        known = self.metrics.get(name)
        if known is not None:
            if (known.goal, known.unit) != (metric.goal, metric.unit):
                raise RegistryError(f"metric {name!r} is declared twice with different goal or unit: "
                                    f"{known.goal} [{known.unit}] by {self.metric_origins[name]}, "
                                    f"{metric.goal} [{metric.unit}] by {origin}")
            self._declared[(name, origin)] = metric  # the same metric, in another family's words
            return
        self.metrics[name] = metric
        self.metric_origins[name] = origin
        self._declared[(name, origin)] = metric

    def task_metrics(self, task: str, listed=None) -> dict[str, Metric]:
        """The metrics ``task`` reports (its ``Task.metrics``, or ``listed``, what a caller read of it before), each
        as the task's own family declares it (its ``about`` text: ``rmse`` over held-out targets for the GP family,
        over every target for neural processes)."""
        origin = self.entry("tasks", task).origin
        names = self.load("tasks", task).metrics if listed is None else listed
        return {name: self._declared[(name, origin)] for name in names}

    def unlisted_metrics(self, task: str, reported) -> str | None:
        """None when every name in ``reported`` (what a cell's ``evaluate`` returned) is one ``task`` lists in its
        ``metrics``, each declared by its family; else what is wrong, for the cell's error."""
        listed = list(self.task_metrics(task))
        extra = [name for name in reported if name not in listed]
        if not extra:
            return None
        return (f"task {task!r} returned {listing(repr(n) for n in extra)}, which it does not list in its `metrics` "
                f"({', '.join(listed)}): list each there and declare it, with its goal, unit and about, in its "
                f"family's catalogue ({self.entry('tasks', task).origin})")

    def requirement(self, kind: str, name: str) -> Requirement | None:
        """The extra the family that registers ``name`` needs, if it declares one."""
        return self.requirements.get(self.entry(kind, name).origin)

    def missing_extra(self, task: str) -> str | None:
        """None when the libraries ``task``'s family requires are installed; else one line with the command that
        installs them (``task 'x' needs the 'causal' extra (pgmpy not installed): pip install -e '.[causal]'``)."""
        origin = self.entry("tasks", task).origin
        need = self.requirements.get(origin)
        missing = need.missing() if need else []
        if not missing:
            return None
        return (f"task {task!r} needs the {need.extra!r} extra ({', '.join(missing)} not installed): "
                f"{self.install_command(origin)}")

    def install_command(self, origin: str) -> str:
        need = self.requirements[origin]
        dist = self._dists.get(origin)
        if origin.startswith(FAMILIES_PACKAGE + "."):
            return f"pip install -e '.[{need.extra}]'"  # a family of this checkout: the README's editable install
        if dist:
            return f"pip install '{dist}[{need.extra}]'"
        return f"install {', '.join(need.modules)} (import names; {origin} belongs to no distribution here)"

    def _add_entry(self, origin: str, kind: str, name: str, row: dict) -> None:
        if name in self._entries[kind]:
            other = self._entries[kind][name].origin
            raise RegistryError(f"{kind[:-1]} {name!r} is registered twice: by {other} and by {origin}")
        if not isinstance(row, dict) or ":" not in str(row.get("target", "")):
            raise RegistryError(f"{kind[:-1]} {name!r} from {origin}: expected {{target: 'module:attr', ...}}")
        if kind != "tasks" and not row.get("task"):
            raise RegistryError(f"{kind[:-1]} {name!r} from {origin}: name the task it belongs to ('task': ...)")
        trivial = row.get("trivial", False)
        if trivial not in (True, False) or (trivial and kind != "methods"):
            raise RegistryError(f"{kind[:-1]} {name!r} from {origin}: 'trivial' is true or false, and only a method "
                                f"says it; found {trivial!r}")
        self._entries[kind][name] = Entry(kind, name, row["target"], row.get("task"), row.get("about", ""), origin,
                                          trivial)

    def names(self, kind: str, task: str | None = None) -> list[str]:
        return sorted(n for n, e in self._entries[kind].items() if task is None or e.task == task)

    def trivial_methods(self, task: str) -> list[str]:
        """The methods ``task``'s catalogue declares its trivial answers."""
        return sorted(n for n, e in self._entries["methods"].items() if e.task == task and e.trivial)

    def entry(self, kind: str, name: str) -> Entry:
        try:
            return self._entries[kind][name]
        except KeyError:
            raise RegistryError(
                f"unknown {kind[:-1]} {name!r}{suggest(name, self._entries[kind])}; "
                f"`harness list {kind}` shows them all{self.failed_note()}"
            ) from None

    def load(self, kind: str, name: str) -> Any:
        entry = self.entry(kind, name)
        obj = import_target(entry.target)
        if kind == "tasks":
            from harness.tasks.base import Task

            if not isinstance(obj, Task):
                raise RegistryError(f"task {name!r} ({entry.target}, from {entry.origin}) is a {type(obj).__name__}, "
                                    "not an instance of harness.Task: subclass it (see docs/adding-a-paper.md)")
            listed = getattr(obj, "metrics", None)
            if isinstance(listed, str) or not isinstance(listed, (tuple, list)) or not listed:
                raise RegistryError(f"task {name!r} ({entry.target}): `metrics` must list the names its evaluate() "
                                    f"returns, e.g. metrics = ('accuracy',); found {listed!r}")
            undeclared = [m for m in listed if (m, entry.origin) not in self._declared]
            if undeclared:
                raise RegistryError(f"task {name!r} ({entry.target}) reports {listing(repr(m) for m in undeclared)}, "
                                    f"which its family's catalogue ({entry.origin}) does not declare: add each to the "
                                    "catalogue's 'metrics' section with its goal, unit and about")
        return obj

    def digest(self) -> str:
        """A digest of every name, target, metric, requirement and failed plugin registered: what a spec is checked
        against, besides the code of the objects it names."""
        import hashlib

        state = ([list(self._entries[kind].items()) for kind in KINDS], list(self._declared.items()),
                 list(self.metrics.items()), list(self.metric_origins.items()), list(self.requirements.items()),
                 list(self._dists.items()), self.failed)
        return hashlib.sha256(repr(state).encode()).hexdigest()

    def parameters(self, kind: str, name: str) -> dict[str, Any]:
        """Keyword parameters (name → default) a spec may set for a dataset or method."""
        key = (kind, name)
        if key not in self._parameters:  # a spec of 10,000 entries of one loader reads its signature once
            obj = self.load(kind, name)
            self._parameters[key] = keyword_parameters(obj.__init__ if inspect.isclass(obj) else obj,
                                                       skip_first=not inspect.isclass(obj))
        return dict(self._parameters[key])


def import_target(target: str) -> Any:
    module_name, _, attr = target.partition(":")
    obj = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def keyword_parameters(func, skip_first: bool) -> dict[str, Any]:
    params = list(inspect.signature(func).parameters.values())
    if params and params[0].name == "self":
        params = params[1:]
    elif skip_first and params:
        params = params[1:]  # a loader's ``context``
    return {
        p.name: (None if p.default is inspect.Parameter.empty else p.default)
        for p in params
        if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
    }


def scanned_catalogues() -> list[tuple[str, dict]]:
    """The catalogues of the in-repo families: ``<family>/catalogue.py``'s ``CATALOGUE`` in every folder of the
    families package's search path (``harness.tasks.__path__``), by family name; origin ``harness.tasks.<family>``.

    Only the catalogue modules (plain data) and their packages' ``__init__`` are imported."""
    package = importlib.import_module(FAMILIES_PACKAGE)
    found: dict[str, Path] = {}
    for folder in map(Path, package.__path__):
        if not folder.is_dir():
            continue
        for child in sorted(folder.iterdir()):
            if child.name.isidentifier() and (child / f"{CATALOGUE_MODULE}.py").is_file():
                found.setdefault(child.name, child)  # the first folder on the path wins, as for an import
    catalogues = []
    for family in sorted(found):
        module_name = f"{FAMILIES_PACKAGE}.{family}.{CATALOGUE_MODULE}"
        where = found[family] / f"{CATALOGUE_MODULE}.py"
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:  # a broken family names itself instead of breaking every command
            raise RegistryError(f"{where}: the family's catalogue does not import: {type(exc).__name__}: {exc}") from None
        if not isinstance(getattr(module, "CATALOGUE", None), dict):
            raise RegistryError(f"{where}: expected a CATALOGUE dict (sections {', '.join(SECTIONS)}) in the "
                                "family's catalogue module")
        catalogues.append((f"{FAMILIES_PACKAGE}.{family}", module.CATALOGUE))
    return catalogues


def _one_line(exc: BaseException) -> str:
    """``Type: message`` on one line (a message's first line; a traceback is never shown for a plugin's fault)."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def load_catalogue(module_name: str, attr: str) -> tuple[Any, str | None]:
    """(the catalogue ``module_name:attr``, None), or (None, what failed, in one line): no module, an exception
    while importing it, no attribute, not a dict. Never raises (a ``BaseException`` that is no ``Exception``,
    KeyboardInterrupt, still does)."""
    if not module_name or not attr:
        return None, f"expected 'module:attribute', found {module_name + (':' if attr else '') + attr!r}"
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if missing and (module_name == missing or module_name.startswith(missing + ".")):
            return None, f"No module named {missing!r}"
        return None, f"importing {module_name} raised {_one_line(exc)}"
    except Exception as exc:
        return None, f"importing {module_name} raised {_one_line(exc)}"
    except SystemExit as exc:  # a plugin that exits while importing names itself too
        return None, f"importing {module_name} raised SystemExit({exc.code!r})"
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            return None, f"module {module_name!r} has no attribute {attr!r}"
        except Exception as exc:  # a module's __getattr__ that raises
            return None, f"reading {attr} of {module_name} raised {_one_line(exc)}"
    if not isinstance(obj, dict):
        return None, (f"{module_name}:{attr} is a {type(obj).__name__}, not a catalogue (a dict with sections "
                      f"{', '.join(SECTIONS)})")
    return obj, None


def _report_failed(lines: list[str]) -> None:
    """Each plugin that failed to load, one line on stderr, once per command: a worker process (its parent
    reported them) stays silent."""
    if not lines:
        return  # multiprocessing is not imported for nothing to say
    import multiprocessing
    import sys

    if multiprocessing.parent_process() is not None:
        return
    for line in lines:
        print(f"harness: {line}; its names are not available", file=sys.stderr)


@lru_cache(maxsize=1)
def default_registry() -> Registry:
    """The families scanned in this checkout, then the ``harness.catalogue`` entry points, then
    ``HARNESS_PLUGINS``. An outside plugin that fails to load (no module, an exception while importing, no such
    attribute, not a dict, a malformed catalogue) is reported once on stderr and left out; the others register,
    and a spec that names what is missing is refused naming the failed plugin (:meth:`Registry.entry`)."""
    from harness.cache import entry_points  # read once per installed environment, not by every command

    catalogues = scanned_catalogues()
    dists: dict[str, str] = {}
    outside: dict[str, str] = {}  # origin → its label in a failure's line
    failed: list[str] = []
    for dist_name, name, value, module, attr in sorted(entry_points(ENTRY_POINT_GROUP),
                                                       key=lambda ep: (ep[0] or "", ep[1])):
        if module.startswith(FAMILIES_PACKAGE + "."):
            continue  # an in-repo family (an old install's metadata still lists it): the scan has it already
        dist = dist_name if dist_name is not None else "?"
        label = (f"entry point {name!r} ({value})" + (f" of {dist}" if dist_name is not None else "")
                 + f" in group {ENTRY_POINT_GROUP!r}")
        catalogue, why = load_catalogue(module, attr or "")
        if why is not None:
            failed.append(f"{label} failed to load: {why}")
            continue
        origin = f"{dist}:{name}"
        catalogues.append((origin, catalogue))
        outside[origin] = label
        if dist_name is not None:
            dists[origin] = dist
    for target in filter(None, (t.strip() for t in os.environ.get(PLUGINS_VARIABLE, "").split(","))):
        label = f"{PLUGINS_VARIABLE} entry {target!r}"
        module_name, _, attr = target.partition(":")
        catalogue, why = load_catalogue(module_name.strip(), attr.strip())
        if why is not None:
            failed.append(f"{label} failed to load: {why}")
            continue
        catalogues.append((target, catalogue))
        outside[target] = label
    registry = Registry(catalogues, dists, failed=failed, outside=outside)
    _report_failed(registry.failed)
    return registry


def _requirement(origin: str, row: Any) -> Requirement:
    shape = "{'extra': 'name', 'modules': ['import_name', ...]}"
    if not isinstance(row, dict) or set(row) != {"extra", "modules"}:
        raise RegistryError(f"catalogue from {origin}: 'requires' must be {shape}, found {row!r}")
    extra, modules = row["extra"], row["modules"]
    if not isinstance(extra, str) or not extra or not isinstance(modules, (list, tuple)) or not modules \
            or not all(isinstance(m, str) and m for m in modules):
        raise RegistryError(f"catalogue from {origin}: 'requires' must be {shape} (a non-empty extra and list of "
                            f"modules), found {row!r}")
    return Requirement(extra, tuple(modules))


def metrics() -> dict[str, Metric]:
    """Every metric every registered family declares."""
    return default_registry().metrics
