"""Name → object resolution for tasks, datasets, methods and metrics.

The engine holds no list of papers. Every task family (in this repository or outside it)
declares its names in a catalogue, a plain dict of ``module:attr`` strings, and registers
it through the ``harness.catalogue`` entry-point group; ``HARNESS_PLUGINS`` adds catalogues
of packages that are not installed. Listing names imports nothing heavy; objects are
imported on first use. A catalogue looks like::

    CATALOGUE = {
        "tasks":    {"fam.task":  {"target": "pkg.module:TASK", "about": "..."}},
        "datasets": {"a-loader":  {"task": "fam.task", "target": "pkg.module:loader", "about": "..."}},
        "methods":  {"a-method":  {"task": "fam.task", "target": "pkg.module:Class", "about": "..."}},
        "metrics":  {"a_metric":  {"goal": "max", "unit": "%", "about": "..."}},
    }

A metric may be declared by several families when they agree on its goal and unit. A metric
that measures the spread of another one (a per-cell interval's half-width) says so with
``"spread_of": "that_metric"``: a leaderboard shows it, like timings, in its second table.
"""
from __future__ import annotations

import difflib
import importlib
import inspect
import os
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from harness.metrics import GOALS, Metric

KINDS = ("tasks", "datasets", "methods")
SECTIONS = (*KINDS, "metrics")
ENTRY_POINT_GROUP = "harness.catalogue"
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
    origin: str  # "distribution:entry point" (e.g. "harness:graph"), or the HARNESS_PLUGINS target


def suggest(name: str, candidates) -> str:
    close = difflib.get_close_matches(name, list(candidates), n=3, cutoff=0.5)
    return f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""


def listing(names, limit: int = 20) -> str:
    """Names for a message, comma-separated; past ``limit`` (a grid's thousands of datasets) the first ones and the count."""
    names = list(names)
    shown = ", ".join(names[:limit])
    return shown if len(names) <= limit else f"{shown}, ... ({len(names):,} in all)"


class Registry:
    def __init__(self, catalogues: list[tuple[str, dict]]):
        self._entries: dict[str, dict[str, Entry]] = {kind: {} for kind in KINDS}
        self.metrics: dict[str, Metric] = {}
        self.metric_origins: dict[str, str] = {}
        self._declared: dict[tuple[str, str], Metric] = {}  # (name, origin) → that catalogue's declaration
        self._parameters: dict[tuple[str, str], dict[str, Any]] = {}
        for origin, catalogue in catalogues:
            if not isinstance(catalogue, dict):
                raise RegistryError(f"catalogue from {origin}: expected a dict with sections {', '.join(SECTIONS)}, "
                                    f"found {type(catalogue).__name__}")
            unknown = set(catalogue) - set(SECTIONS)
            if unknown:
                raise RegistryError(f"catalogue from {origin}: unknown section {sorted(unknown)[0]!r}; "
                                    f"expected one of {', '.join(SECTIONS)}")
            for name, row in catalogue.get("metrics", {}).items():
                self._add_metric(origin, name, row)
            for kind in KINDS:
                for name, row in catalogue.get(kind, {}).items():
                    self._add_entry(origin, kind, name, row)

    def _add_metric(self, origin: str, name: str, row: dict) -> None:
        if row.get("goal") not in GOALS:
            raise RegistryError(f"metric {name!r} from {origin}: goal must be 'max' or 'min', found {row.get('goal')!r}")
        metric = Metric(name, row["goal"], row.get("unit", ""), row.get("about", ""), row.get("spread_of", ""))
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

    def task_metrics(self, task: str) -> dict[str, Metric]:
        """The metrics ``task`` reports, each as the task's own family declares it (its ``about`` text: ``rmse``
        over held-out targets for the GP family, over every target for neural processes), else as first declared."""
        origin = self.entry("tasks", task).origin
        return {name: self._declared.get((name, origin), self.metrics[name])
                for name in self.load("tasks", task).metrics}

    def _add_entry(self, origin: str, kind: str, name: str, row: dict) -> None:
        if name in self._entries[kind]:
            other = self._entries[kind][name].origin
            raise RegistryError(f"{kind[:-1]} {name!r} is registered twice: by {other} and by {origin}")
        if not isinstance(row, dict) or ":" not in str(row.get("target", "")):
            raise RegistryError(f"{kind[:-1]} {name!r} from {origin}: expected {{target: 'module:attr', ...}}")
        if kind != "tasks" and not row.get("task"):
            raise RegistryError(f"{kind[:-1]} {name!r} from {origin}: name the task it belongs to ('task': ...)")
        self._entries[kind][name] = Entry(kind, name, row["target"], row.get("task"), row.get("about", ""), origin)

    def names(self, kind: str, task: str | None = None) -> list[str]:
        return sorted(n for n, e in self._entries[kind].items() if task is None or e.task == task)

    def entry(self, kind: str, name: str) -> Entry:
        try:
            return self._entries[kind][name]
        except KeyError:
            raise RegistryError(
                f"unknown {kind[:-1]} {name!r}{suggest(name, self._entries[kind])}; "
                f"`harness list {kind}` shows them all"
            ) from None

    def load(self, kind: str, name: str) -> Any:
        entry = self.entry(kind, name)
        obj = import_target(entry.target)
        if kind == "tasks":
            from harness.tasks.base import Task

            if not isinstance(obj, Task):
                raise RegistryError(f"task {name!r} ({entry.target}, from {entry.origin}) is a {type(obj).__name__}, "
                                    "not an instance of harness.Task: subclass it (see the README's 'Adding a paper')")
        return obj

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


@lru_cache(maxsize=1)
def default_registry() -> Registry:
    from importlib.metadata import entry_points

    catalogues: list[tuple[str, dict]] = []
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: (ep.dist.name if ep.dist else "", ep.name)):
        dist = ep.dist.name if ep.dist is not None else "?"
        try:
            catalogue = ep.load()
        except Exception as exc:  # a broken plugin names itself instead of breaking every command
            raise RegistryError(f"the catalogue {ep.value!r} of {dist} (entry point {ep.name!r} in group "
                                f"{ENTRY_POINT_GROUP!r}) does not load: {type(exc).__name__}: {exc}") from None
        catalogues.append((f"{dist}:{ep.name}", catalogue))
    for target in filter(None, (t.strip() for t in os.environ.get(PLUGINS_VARIABLE, "").split(","))):
        catalogues.append((target, import_target(target)))
    if not catalogues:
        raise RegistryError(f"no catalogue is registered in the {ENTRY_POINT_GROUP!r} entry-point group: "
                            "install the project (`pip install -e .`) so its task families register")
    return Registry(catalogues)


def metrics() -> dict[str, Metric]:
    """Every metric every registered family declares."""
    return default_registry().metrics
