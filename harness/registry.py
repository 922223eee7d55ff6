"""Name → object resolution for tasks, datasets and methods.

The catalogue holds ``module:attr`` strings, so listing names imports nothing; objects
are imported on first use. Outside packages extend it through the ``harness.catalogue``
entry-point group, each entry point naming a dict shaped like
:data:`harness.catalogue.CATALOGUE`.
"""
from __future__ import annotations

import difflib
import importlib
import inspect
import os
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from harness.metrics import METRICS, Metric

KINDS = ("tasks", "datasets", "methods")
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
    origin: str  # "harness" for the in-repo catalogue, else the distribution providing it


def suggest(name: str, candidates) -> str:
    close = difflib.get_close_matches(name, list(candidates), n=3, cutoff=0.5)
    return f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""


class Registry:
    def __init__(self, catalogues: list[tuple[str, dict]]):
        self._entries: dict[str, dict[str, Entry]] = {kind: {} for kind in KINDS}
        self.metrics: dict[str, Metric] = dict(METRICS)
        for origin, catalogue in catalogues:
            for name, row in catalogue.get("metrics", {}).items():
                if name in self.metrics:
                    raise RegistryError(f"metric {name!r} from {origin} is already defined")
                if row.get("goal") not in ("max", "min"):
                    raise RegistryError(f"metric {name!r} from {origin}: goal must be 'max' or 'min'")
                self.metrics[name] = Metric(name, row["goal"], row.get("unit", ""), row.get("about", ""))
            for kind, rows in catalogue.items():
                if kind == "metrics":
                    continue
                if kind not in self._entries:
                    raise RegistryError(f"catalogue from {origin}: unknown section {kind!r}; expected one of {KINDS}")
                for name, row in rows.items():
                    if name in self._entries[kind]:
                        other = self._entries[kind][name].origin
                        raise RegistryError(f"{kind[:-1]} {name!r} is registered twice: by {other} and by {origin}")
                    self._entries[kind][name] = Entry(
                        kind, name, row["target"], row.get("task"), row.get("about", ""), origin
                    )

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
        return import_target(self.entry(kind, name).target)

    def parameters(self, kind: str, name: str) -> dict[str, Any]:
        """Keyword parameters (name → default) a spec may set for a dataset or method."""
        obj = self.load(kind, name)
        return keyword_parameters(obj.__init__ if inspect.isclass(obj) else obj, skip_first=not inspect.isclass(obj))


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

    from harness.catalogue import CATALOGUE

    catalogues: list[tuple[str, dict]] = [("harness", CATALOGUE)]
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        origin = ep.dist.name if ep.dist is not None else ep.value
        catalogues.append((origin, ep.load()))
    for target in filter(None, (t.strip() for t in os.environ.get(PLUGINS_VARIABLE, "").split(","))):
        catalogues.append((target, import_target(target)))
    return Registry(catalogues)


def metrics() -> dict[str, Metric]:
    """Every metric: the in-repo table plus those plugins add."""
    return default_registry().metrics
