"""What a spec means beyond its schema: every name resolved (task, datasets, methods, metrics, tuned parameters,
sampler arguments), ids unique, grids well formed, and each claim checked by its kind. Task and method modules are
imported, never torch."""
from __future__ import annotations

import re
from typing import Callable

from harness.spec.errors import Path_
from harness.spec.schema import schema
from harness.spec.model import expand_grids, grid_members


def suggestion(word: str, options) -> str:
    from harness.registry import suggest

    return suggest(word, options)


def listing(names) -> str:
    from harness.registry import listing

    return listing(names)


# --- dataset grids ---------------------------------------------------------------------

def _grid_problems(compact: list[dict], expanded: list[dict], sources: list[int], report) -> None:
    """A grid's ids: each an identifier (the schema's), like one written by hand (its first bad one is reported,
    once)."""
    identifier = schema()["$defs"]["identifier"]
    pattern, longest = re.compile(identifier["pattern"]), identifier["maxLength"]
    told: set[int] = set()
    for entry, index in zip(expanded, sources):
        if index in told or "grid" not in compact[index] or pattern.match(entry["id"]) and len(entry["id"]) <= longest:
            continue
        told.add(index)
        why = f"longer than {longest} characters" if pattern.match(entry["id"]) else \
            f"not an identifier ({identifier['description'].rstrip('.')})"
        report(("datasets", index, "grid"), f"the grid names a dataset {entry['id']!r}, {why}; a grid's ids are its "
                                            "id (or name) and each key with its value: use lower-case string "
                                            "values and a short `id`")


# --- names, parameters, metrics --------------------------------------------------------

def semantic_problems(spec: dict, report: Callable[[Path_, str], None]) -> None:
    """Resolve every name the spec uses; import task and method modules, never torch.

    The steps: the task, each dataset and method entry (its name, parameters and search
    space), unique ids, the metrics, the tuning settings, the claims.
    """
    from harness.registry import default_registry

    registry = default_registry()
    task = _task_or_report(spec, registry, report)
    if task is None:
        return
    for section in ("datasets", "methods"):
        for i, entry in enumerate(spec.get(section, [])):
            _entry_problems(section, i, entry, spec["task"], registry, report)
    datasets, sources = expand_grids(spec.get("datasets", []))
    _grid_problems(spec.get("datasets", []), datasets, sources, report)
    dataset_ids = _unique_ids(datasets, "datasets", report, sources)
    members = grid_members(spec.get("datasets", []), (datasets, sources))
    for i, entry in enumerate(spec.get("datasets", [])):
        if "grid" in entry and entry.get("id", entry["name"]) in dataset_ids:
            report(("datasets", i, "id"), f"{entry.get('id', entry['name'])!r} names this grid and a dataset; a claim or "
                                          "--datasets naming it would mean both: give the grid another `id`")
    method_ids = _unique_ids(spec.get("methods", []), "methods", report)
    _metric_problems(spec, tuple(task.metrics), report)
    _tuning_problems(spec, report)
    _tuning_metric_problems(spec, tuple(task.metrics), report)
    _claim_problems(spec, datasets, members, tuple(task.metrics), dataset_ids, method_ids, report)


def _task_or_report(spec: dict, registry, report):
    from harness.registry import RegistryError

    try:
        return registry.load("tasks", spec["task"])
    except RegistryError as exc:
        report(("task",), str(exc))
        return None


def _unique_ids(entries: list[dict], section: str, report, sources: list[int] | None = None) -> list[str]:
    """The entries' ids, each reported where it repeats one; ``sources``: the written entry of each (a grid's)."""
    seen: dict[str, int] = {}
    ids = []
    for i, entry in enumerate(entries):
        entry_id = entry.get("id", entry.get("name"))
        at = sources[i] if sources else i
        if entry_id in seen:
            report((section, at), f"{section[:-1]} id {entry_id!r} is used twice (also at {section}[{seen[entry_id]}]); give each entry its own `id`")
        seen[entry_id] = at
        ids.append(entry_id)
    return ids


def _entry_problems(section: str, i: int, entry: dict, task_name: str, registry, report) -> None:
    """One dataset or method entry: a name of this task, known parameters, a sound search space."""
    from harness.registry import RegistryError

    name = entry["name"]
    try:
        reg_entry = registry.entry(section, name)
    except RegistryError as exc:
        report((section, i, "name"), str(exc))
        return
    if reg_entry.task != task_name:
        others = registry.names(section, task_name)
        report((section, i, "name"), f"{section[:-1]} {name!r} belongs to task {reg_entry.task!r}, not {task_name!r}; {section} of this task: {', '.join(others)}")
        return
    if section == "methods" and (entry.get("kind") == "trivial") != reg_entry.trivial:
        trivial = registry.trivial_methods(task_name)
        report((section, i, "kind"), f"{name!r} is its task's trivial answer: list it with kind: trivial"
               if reg_entry.trivial else
               f"kind: trivial is for a method the task's catalogue declares its trivial answer, and {name!r} is "
               f"not one; trivial methods of {task_name!r}: {', '.join(trivial) or 'none'}")
    try:
        allowed = registry.parameters(section, name)
    except Exception as exc:  # an import error in a plugin is the spec author's to see
        report((section, i, "name"), f"cannot import {reg_entry.target}: {exc}")
        return
    for param in entry.get("params", {}):
        if param not in allowed:
            report((section, i, "params", param), f"{name!r} has no parameter {param!r}{suggestion(param, allowed)}; its parameters: {', '.join(allowed) or 'none'}")
    for param in entry.get("grid", {}):
        if param not in allowed:
            report((section, i, "grid", param), f"cannot sweep {param!r}: {name!r} has no such parameter{suggestion(param, allowed)}; its parameters: {', '.join(allowed) or 'none'}")
        elif param in entry.get("params", {}):
            report((section, i, "grid", param), f"{param!r} is both fixed in params and swept in grid; keep one")
    for param, space in entry.get("search", {}).items():
        if param not in allowed:
            report((section, i, "search", param), f"cannot tune {param!r}: {name!r} has no such parameter{suggestion(param, allowed)}; its parameters: {', '.join(allowed) or 'none'}")
        elif param in entry.get("params", {}):
            report((section, i, "search", param), f"{param!r} is both fixed in params and tuned in search; keep one")
        _space_problems((section, i, "search", param), space, report)


def _space_problems(path: Path_, space: dict, report) -> None:
    for bound_kind in ("float", "int"):
        if bound_kind in space:
            low, high = space[bound_kind]
            if not low < high:
                report(path + (bound_kind,), f"expected low < high, found [{low}, {high}]")
            elif space.get("log") and low <= 0:
                report(path + (bound_kind,), f"a log scale needs a positive low bound, found {low}")


def _metric_problem(metric: str, task_name: str, task_metrics: tuple[str, ...]) -> str | None:
    """What is wrong with naming ``metric`` in a spec of ``task_name``, or None."""
    from harness.registry import metrics as metric_table

    if metric not in metric_table():
        return f"unknown metric {metric!r}{suggestion(metric, metric_table())}; `harness list metrics` shows them"
    if metric not in task_metrics:
        return f"task {task_name!r} does not report {metric!r}; it reports: {', '.join(task_metrics)}"
    return None


def _metric_problems(spec: dict, task_metrics: tuple[str, ...], report) -> None:
    metrics = spec["metrics"]
    for path, metric in [(("metrics", "primary"), metrics["primary"])] + [
        (("metrics", "report", i), m) for i, m in enumerate(metrics.get("report", []))
    ]:
        problem = _metric_problem(metric, spec["task"], task_metrics)
        if problem:
            report(path, problem)


def _tuning_metric_problems(spec: dict, task_metrics: tuple[str, ...], report) -> None:
    """The tuning metric of the spec and of each dataset: a metric the task reports (its goal gives the direction)."""
    named = [(("tuning", "metric"), spec.get("tuning", {}).get("metric"))]
    named += [(("datasets", i, "tuning", "metric"), entry.get("tuning", {}).get("metric"))
              for i, entry in enumerate(spec.get("datasets", []))]
    for path, metric in named:
        problem = metric is not None and _metric_problem(metric, spec["task"], task_metrics)
        if problem:
            report(path, f"cannot tune on it: {problem}")


def _tuning_problems(spec: dict, report) -> None:
    has_search = any(m.get("search") for m in spec["methods"])
    tuning = spec.get("tuning", {})
    if has_search and tuning.get("trials", 0) > 0 and "sampler" not in tuning:
        report(("tuning",), "methods have search spaces: name the Optuna sampler and its arguments, e.g. sampler: {name: tpe, args: {n_startup_trials: 5}}")
    sampler = tuning.get("sampler", {})
    if sampler.get("args"):
        from harness.registry import keyword_parameters
        from harness.samplers import sampler_class

        allowed = set(keyword_parameters(sampler_class(sampler["name"]).__init__, skip_first=False))
        for arg in sampler["args"]:
            if arg == "seed":
                report(("tuning", "sampler", "args", arg), "set the sampler's seed with tuning.sampler_seed, not in args")
            elif arg not in allowed:
                report(("tuning", "sampler", "args", arg), f"Optuna's {sampler['name']} sampler has no argument {arg!r}"
                       f"{suggestion(arg, allowed)}; its arguments: {', '.join(sorted(allowed - {'seed'}))}")


def _claim_problems(spec: dict, expanded: list[dict], members: dict[str, list[str]], task_metrics: tuple[str, ...],
                    dataset_ids: list[str], method_ids: list[str], report) -> None:
    """What the schema cannot see of a claim: the names it uses, then its kind's own checks. ``expanded``: the
    spec's datasets with their grids written out, which the claims name, each by its id or through its grid's
    (``members``)."""
    from harness.claims import ClaimKindError, kind_of
    from harness.claims.base import SpecContext

    task_name = spec["task"]
    datasets = {d.get("id", d["name"]): d for d in expanded}
    context = SpecContext(task_name, task_metrics, datasets, members, method_ids)
    for i, dataset in enumerate(spec.get("datasets", [])):
        for j, method_id in enumerate(dataset.get("methods", [])):
            if method_id not in method_ids:
                report(("datasets", i, "methods", j), f"no method with id {method_id!r}{suggestion(method_id, method_ids)}; method ids: {', '.join(method_ids)}")
    claim_ids: set[str] = set()
    for i, claim in enumerate(spec.get("claims", [])):
        path = ("claims", i)
        if claim["id"] in claim_ids:
            report(path + ("id",), f"claim id {claim['id']!r} is used twice")
        claim_ids.add(claim["id"])
        try:
            kind = kind_of(claim)
        except ClaimKindError as exc:
            report(path + ("kind",), str(exc))
            continue
        for key in dict.fromkeys(kind.stray_keys(claim)):
            report(path + (key,), kind.stray_key_message(key, claim))
        for where, method_id in kind.named_methods(claim):
            if method_id not in method_ids:
                report(path + where, f"no method with id {method_id!r}{suggestion(method_id, method_ids)}; method ids: "
                                     f"{', '.join(method_ids)}")
        if claim["metric"] not in task_metrics:
            report(path + ("metric",), f"task {task_name!r} does not report {claim['metric']!r}; it reports: {', '.join(task_metrics)}")
        compared = [claim[k] for k in ("better", "than") if k in kind.method_keys and claim.get(k) is not None]
        for j, name in enumerate(claim.get("datasets", [])):
            if name not in dataset_ids and name not in members:
                report(path + ("datasets", j), f"no dataset with id {name!r}{suggestion(name, [*members, *dataset_ids])}"
                                               f"; dataset ids: {listing(dataset_ids)}")
            elif "methods" not in claim:
                left_out = [method for method in compared for dataset_id in members.get(name, [name])[:1]
                            if datasets[dataset_id].get("methods") and method not in datasets[dataset_id]["methods"]]
                if left_out:
                    report(path + ("datasets", j), f"dataset {name!r} does not run {', '.join(map(repr, left_out))} "
                                                   f"(its `methods` leave it out), so the claim has no pair there")
        if claim.get("precondition"):
            _precondition_problems(claim["precondition"], i, task_name, task_metrics, [*members, *dataset_ids],
                                   method_ids, report)
        kind.problems(claim, path, context, report)


def _precondition_problems(pre: dict, i: int, task_name: str, task_metrics: tuple[str, ...], dataset_ids: list[str],
                           method_ids: list[str], report) -> None:
    """A claim's precondition names methods, a metric and datasets of the spec, like a paired claim."""
    for key in ("better", "than"):
        if pre[key] not in method_ids:
            report(("claims", i, "precondition", key), f"no method with id {pre[key]!r}{suggestion(pre[key], method_ids)}; "
                                                       f"method ids: {', '.join(method_ids)}")
    if pre["better"] == pre["than"]:
        report(("claims", i, "precondition", "than"), "a precondition compares two different methods")
    if pre["metric"] not in task_metrics:
        report(("claims", i, "precondition", "metric"), f"task {task_name!r} does not report {pre['metric']!r}; it "
                                                        f"reports: {', '.join(task_metrics)}")
    for j, dataset_id in enumerate(pre.get("datasets", [])):
        if dataset_id not in dataset_ids:
            report(("claims", i, "precondition", "datasets", j), f"no dataset with id {dataset_id!r}"
                                                                  f"{suggestion(dataset_id, dataset_ids)}; dataset ids: {listing(dataset_ids)}")
