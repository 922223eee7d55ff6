"""Load a YAML spec safely, validate it, and resolve a profile into a typed :class:`Spec`.

Every problem is reported with the file, line and column, the JSON path, what was found
and what was expected; nothing runs when a spec has a problem.
"""
from __future__ import annotations

import copy
import json
import pickle
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

import yaml

from harness.spec.model import PROFILES, Spec, expand_grids, from_resolved, grid_members, named_datasets

SCHEMA_PATH = Path(__file__).with_name("schema.json")
Path_ = tuple  # a JSON path: keys and list indices


@dataclass(frozen=True)
class Problem:
    file: str
    line: int
    column: int
    path: Path_
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}: {json_path(self.path)}: {self.message}"


class SpecError(Exception):
    """One or more problems in a spec; ``str()`` lists them one per line."""

    def __init__(self, problems: list[Problem]):
        self.problems = sorted(problems, key=lambda p: (p.file, p.line, p.column))
        super().__init__("\n".join(str(p) for p in self.problems))


class MissingExtra(SpecError):
    """The spec's task belongs to a family whose libraries are not installed: one line, the ``pip install`` command.

    The spec itself may be fine; nothing else of it is checked (its methods' modules would not import)."""


def json_path(path: Path_) -> str:
    out = "$"
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


@lru_cache(maxsize=1)
def schema() -> dict:
    """schema.json, with a claim's schema composed from the claim kinds found now (:func:`harness.claims.claim_schema`:
    the file holds the same for this repository's kinds, for editors; a kind of an outside package adds its keys)."""
    from harness.claims import claim_schema

    found = json.loads(SCHEMA_PATH.read_text())
    found["$defs"]["claim"] = claim_schema()
    return found


_ANNOTATIONS = {"description", "title", "$comment", "examples", "default"}


@lru_cache(maxsize=None)
def _validator():
    """The schema's validator, built once, with its ``$ref``s to ``$defs`` written out in place.

    The same checks and messages; resolving a ``$ref`` through the ``referencing`` registry for every
    dataset entry was half of validating a 10,000-dataset spec (0.53 s, 0.27 s inlined).
    """
    from jsonschema import Draft202012Validator

    full = schema()
    defs = full.get("$defs", {})

    def inline(node, seen: tuple[str, ...]):
        if isinstance(node, list):
            return [inline(v, seen) for v in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        name = ref[len("#/$defs/"):] if isinstance(ref, str) and ref.startswith("#/$defs/") else None
        if name in defs and name not in seen:  # a definition that refers to itself keeps its $ref
            rest = {k: inline(v, seen) for k, v in node.items() if k != "$ref"}
            target = inline(defs[name], seen + (name,))
            if set(rest) & set(target) <= _ANNOTATIONS:  # a description beside a $ref says nothing to check;
                return {**rest, **target}  # the definition's own, which messages quote, is kept as with the $ref
        return {k: inline(v, seen) if k != "$defs" else v for k, v in node.items()}

    return Draft202012Validator(inline(full, ()))


# --- YAML with positions ---------------------------------------------------------------

class _Positions:
    """Line/column (1-based) of every value and every mapping key, by JSON path."""

    def __init__(self):
        self.values: dict[Path_, tuple[int, int]] = {}
        self.keys: dict[Path_, tuple[int, int]] = {}

    def of(self, path: Path_, key: bool = False) -> tuple[int, int]:
        table = self.keys if key else self.values
        path = tuple(path)
        while path not in table and path:
            path = path[:-1]  # the nearest enclosing node that exists in the file
        return table.get(path) or self.values.get(path, (1, 1))


_MERGE_TAG = "tag:yaml.org,2002:merge"
_STR_TAG = "tag:yaml.org,2002:str"
_STANDARD_TAGS = {
    "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq", "tag:yaml.org,2002:str", "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float", "tag:yaml.org,2002:bool", "tag:yaml.org,2002:null",
}


# A spec is a few kilobytes of plain data. These bounds refuse, in well under a second, what
# would otherwise take the machine down: a large file, or a few hundred bytes of nested YAML
# aliases ("billion laughs") that expand to billions of values.
MAX_BYTES = 1_000_000
MAX_NODES = 100_000  # values after alias expansion
MAX_DEPTH = 50


def _check_expanded_size(root, file: str) -> None:
    """Refuse a node graph whose alias expansion is too large or too deep, without expanding it.

    Aliases make the composed graph share nodes; the size of the expanded tree is computed
    once per node (memoised), so the check is linear in the file, not in its expansion.
    """
    sizes: dict[int, tuple[int, int]] = {}
    visiting: set[int] = set()

    def children(node):
        if isinstance(node, yaml.MappingNode):
            return [n for pair in node.value for n in pair]
        if isinstance(node, yaml.SequenceNode):
            return list(node.value)
        return []

    def measure(node) -> tuple[int, int]:  # (nodes after expansion, depth)
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in visiting:
            raise SpecError([Problem(file, node.start_mark.line + 1, node.start_mark.column + 1, (),
                                     "a YAML alias refers to the node that contains it: a spec is plain data")])
        visiting.add(key)
        count, depth = 1, 1
        for child in children(node):
            child_count, child_depth = measure(child)
            count, depth = min(count + child_count, MAX_NODES + 1), max(depth, child_depth + 1)
        visiting.discard(key)
        sizes[key] = (count, depth)
        return count, depth

    count, depth = measure(root)
    _check_bounds(file, written=len(sizes), expanded=count, depth=depth)


def _check_bounds(file: str, written: int, expanded: int, depth: int) -> None:
    """Refuse a spec of more than :data:`MAX_NODES` values as written or after alias expansion, or nested deeper
    than :data:`MAX_DEPTH`."""
    if written > MAX_NODES:  # as written, before any alias repeats a value
        raise SpecError([Problem(file, 1, 1, (), f"has {written:,} values; a spec has at most {MAX_NODES:,}")])
    if expanded > MAX_NODES:
        raise SpecError([Problem(file, 1, 1, (), f"expands to more than {MAX_NODES:,} values (YAML aliases repeat "
                                                 "what they point to); a spec is small plain data")])
    if depth > MAX_DEPTH:
        raise SpecError([Problem(file, 1, 1, (), f"nested {depth} levels deep; a spec has at most {MAX_DEPTH}")])


def _check_tree_size(root, file: str) -> None:
    """:func:`_check_expanded_size` for a node graph without aliases (every node written once): the same bounds
    and messages from a plain walk, a fifth of the cost of the memoised one on a 10,000-dataset spec."""
    count, depth, level = 0, 0, [root]
    while level:  # breadth first, a level at a time
        depth += 1
        count += len(level)
        below = []
        for node in level:
            if type(node) is yaml.MappingNode:
                for pair in node.value:
                    below.extend(pair)
            elif type(node) is yaml.SequenceNode:
                below.extend(node.value)
        level = below
    _check_bounds(file, written=count, expanded=count, depth=depth)


def parse_yaml(text: str, file: str) -> tuple[Any, _Positions]:
    """Parse YAML with the safe loader, rejecting duplicate keys and non-standard tags."""
    positions = _Positions()
    # libyaml's parser where PyYAML has it (the constructor is Python either way): a 10,000-seed spec parsed in
    # 1.8 s with the pure-Python scanner
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    problems: list[Problem] = []

    def mark(node) -> tuple[int, int]:
        return node.start_mark.line + 1, node.start_mark.column + 1

    def scalar_key(key_node):
        return loader.construct_object(key_node) if isinstance(key_node, yaml.ScalarNode) else None

    def merged_pairs(node, path: Path_) -> list[tuple[str, Any, Any]]:
        """(key, key node, value node) that a mapping's merge keys bring in, resolved here rather than by PyYAML:
        its ``flatten_mapping`` (6.0.x) keeps the first pair of a key across a merged mapping's own merged and
        explicit pairs, so in ``s: &s {<<: *b, t: 1}`` then ``{<<: *s}`` the value of ``t`` came from ``b``, not
        ``s``. Here a merged mapping contributes its effective pairs (its explicit keys over what it merges), and
        of a list of mappings the earlier wins, as the merge-key spec says."""
        found: dict[str, tuple[str, Any, Any]] = {}
        for key_node, value_node in node.value:
            if key_node.tag != _MERGE_TAG:
                continue
            sources = value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
            for source in sources:
                if not isinstance(source, yaml.MappingNode):
                    line, col = mark(source)
                    problems.append(Problem(file, line, col, path, "`<<` merges a mapping (or a list of mappings); "
                                                                   f"found {source.id}"))
                    continue
                for key, key_node_, value_node_ in effective_pairs(source, path):
                    found.setdefault(key, (key, key_node_, value_node_))
        return list(found.values())

    def effective_pairs(node, path: Path_) -> list[tuple[str, Any, Any]]:
        pairs = {key: (key, k, v) for key, k, v in merged_pairs(node, path)}
        for key_node, value_node in node.value:
            key = scalar_key(key_node) if key_node.tag != _MERGE_TAG else None
            if isinstance(key, str):
                pairs[key] = (key, key_node, value_node)
        return list(pairs.values())

    def build(node, path: Path_):
        positions.values[path] = mark(node)
        if node.tag not in _STANDARD_TAGS:
            line, col = mark(node)
            problems.append(Problem(file, line, col, path, f"tag {node.tag!r} is not allowed: a spec is plain data"))
            return None
        if isinstance(node, yaml.MappingNode):
            out: dict[str, Any] = {}
            explicit = [pair for pair in node.value if pair[0].tag != _MERGE_TAG]
            for key, key_node, value_node in merged_pairs(node, path):  # `<<: *anchor` merge keys come first
                positions.keys[path + (key,)] = mark(key_node)
                out[key] = build(value_node, path + (key,))
            inherited = set(out)
            for key_node, value_node in explicit:
                key = loader.construct_object(key_node) if isinstance(key_node, yaml.ScalarNode) else None
                line, col = mark(key_node)
                if not isinstance(key, str):
                    problems.append(Problem(file, line, col, path, f"keys must be strings, found {describe(key)}"))
                    continue
                if key in out and key not in inherited:
                    first = positions.keys[path + (key,)]
                    problems.append(Problem(
                        file, line, col, path + (key,),
                        f"duplicate key {key!r} (first given on line {first[0]}); YAML would silently keep the last one",
                    ))
                    continue
                positions.keys[path + (key,)] = (line, col)
                inherited.discard(key)  # an explicit key overrides a merged one, once
                out[key] = build(value_node, path + (key,))
            return out
        if isinstance(node, yaml.SequenceNode):
            return [build(child, path + (i,)) for i, child in enumerate(node.value)]
        if node.tag == _STR_TAG:  # what the constructor returns for a string, without its bookkeeping
            return node.value
        return loader.construct_object(node, deep=True)

    try:
        root = loader.get_single_node()
        if root is not None:
            if "&" in text:  # maybe anchors, so aliases: their expansion is measured
                _check_expanded_size(root, file)
            else:  # a tree (no anchor, so no alias): its size and depth as written, in one cheap pass
                _check_tree_size(root, file)
        data = build(root, ()) if root is not None else None
    except RecursionError:
        raise SpecError([Problem(file, 1, 1, (), f"nested too deeply for a spec (at most {MAX_DEPTH} levels)")]) from None
    except yaml.MarkedYAMLError as exc:
        if "maximum nesting depth" in str(exc.problem):  # libyaml's own limit, before Python's recursion one
            raise SpecError([Problem(file, 1, 1, (), f"nested too deeply for a spec (at most {MAX_DEPTH} levels)")]) from None
        m = exc.problem_mark or exc.context_mark
        line, col = (m.line + 1, m.column + 1) if m else (1, 1)
        raise SpecError([Problem(file, line, col, (), f"invalid YAML: {exc.problem or exc}")]) from None
    except yaml.YAMLError as exc:
        raise SpecError([Problem(file, 1, 1, (), f"invalid YAML: {exc}")]) from None
    finally:
        loader.dispose()
    if problems:
        raise SpecError(problems)
    return data, positions


# --- messages --------------------------------------------------------------------------

def describe(value: Any) -> str:
    if value is None:
        return "null (an empty value)"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"the string {shown!r}"
    return f"{type(value).__name__} {value!r}"


_NUMBER_LIKE = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)[eE][+-]?\d+$")


def _yaml_hint(value: Any, expected: Any) -> str:
    wants_number = expected in ("number", "integer") or (isinstance(expected, list) and "number" in expected)
    if isinstance(value, str) and wants_number and _NUMBER_LIKE.match(value):
        mantissa, _, exponent = value.lower().partition("e")
        if "." not in mantissa:
            mantissa += ".0"
        return f"; YAML reads {value} as a string: write {mantissa}e{exponent}"
    if isinstance(value, bool) and expected == "string":
        return "; YAML reads yes/no/on/off as booleans: quote the word"
    if isinstance(value, int) and expected == "string":
        return "; quote it to keep it a string (YAML reads 10:30 as 630)"
    return ""


def _close(word: str, options) -> str:
    from harness.registry import suggest

    return suggest(word, options)


def listing(names) -> str:
    from harness.registry import listing

    return listing(names)


def _schema_problems(data: Any, file: str, positions: _Positions, locate: Callable[[Path_], Path_]) -> list[Problem]:
    from jsonschema.exceptions import best_match

    problems = []
    for error in _validator().iter_errors(data):
        while error.validator in ("oneOf", "anyOf") and error.context:
            # the alternative the author meant is the one whose error lies deepest in the value
            error = max(error.context, key=lambda e: (len(e.relative_path), e is best_match(error.context)))
        path = tuple(error.absolute_path)
        value = error.instance
        kind = error.validator
        key_pos = False
        if kind == "additionalProperties":
            allowed = sorted(error.schema.get("properties", {}))
            for key in sorted(set(value) - set(allowed)):
                src = locate(path + (key,))
                line, col = positions.of(src, key=True)
                expected = f"expected one of: {', '.join(allowed)}" if allowed else "no keys are allowed here"
                problems.append(Problem(file, line, col, path + (key,), f"unknown key {key!r}{_close(key, allowed)}; {expected}"))
            continue
        if kind == "type":
            message = f"expected {_expected_type(error.validator_value)}, found {describe(value)}{_yaml_hint(value, error.validator_value)}"
        elif kind == "required":
            missing = re.findall(r"'([^']+)' is a required property", error.message)
            message = f"missing required key {missing[0]!r}" if missing else error.message
            if missing == ["quote"] and isinstance(value, dict) and value.get("source") == "paper":
                message += ": a claim with `source: paper` quotes the paper's sentence, table or figure"
        elif kind == "enum":
            options = error.validator_value
            message = f"expected one of {', '.join(map(str, options))}; found {describe(value)}"
            if isinstance(value, str):
                message += _close(value, [str(o) for o in options])
        elif kind == "const":
            message = f"expected {error.validator_value!r}, found {describe(value)}"
        elif kind == "pattern":
            message = f"expected {error.schema.get('description') or 'text matching ' + error.validator_value}; found {describe(value)}"
        elif kind == "propertyNames":
            message = f"expected a parameter name (a Python identifier), found {describe(value)}"
            key_pos = True
        else:
            message = error.message
        line, col = positions.of(locate(path), key=key_pos)
        problems.append(Problem(file, line, col, path, message))
    return problems


def _expected_type(t) -> str:
    names = {"object": "a mapping", "array": "a list", "string": "a string", "number": "a number",
             "integer": "an integer", "boolean": "true or false", "null": "null"}
    if isinstance(t, list):
        return " or ".join(names.get(x, x) for x in t)
    return names.get(t, t)


# --- profiles --------------------------------------------------------------------------

def merge_profile(base: dict, profile: dict, profile_name: str) -> tuple[dict, dict[Path_, Path_], list[tuple[Path_, str]]]:
    """Merge a profile over the base spec.

    Returns the merged dict, a map from each merged path to the path it came from in the
    file (so errors point at the right line), and errors as (source path, message).
    """
    origin: dict[Path_, Path_] = {}
    errors: list[tuple[Path_, str]] = []
    ppath = ("profiles", profile_name)
    # a pickle round trip is deepcopy's copy of plain data (shared aliases stay shared), five times faster
    merged = pickle.loads(pickle.dumps({k: v for k, v in base.items() if k != "profiles"}))

    def record(value, result_path: Path_, source_path: Path_):
        origin[result_path] = source_path
        if isinstance(value, dict):
            for k, v in value.items():
                record(v, result_path + (k,), source_path + (k,))
        elif isinstance(value, list):
            for i, v in enumerate(value):
                record(v, result_path + (i,), source_path + (i,))

    def deep(into: dict, patch: dict, result_path: Path_, source_path: Path_):
        for key, value in patch.items():
            if isinstance(value, dict) and isinstance(into.get(key), dict) and key not in ("params", "args", "search"):
                origin[result_path + (key,)] = source_path + (key,)
                deep(into[key], value, result_path + (key,), source_path + (key,))
            elif isinstance(value, dict) and isinstance(into.get(key), dict):
                # params, sampler args and search spaces merge one name at a time
                for name, v in value.items():
                    into[key][name] = copy.deepcopy(v)
                    record(v, result_path + (key, name), source_path + (key, name))
            else:
                into[key] = copy.deepcopy(value)
                record(value, result_path + (key,), source_path + (key,))

    for key, value in profile.items():
        if key in ("datasets", "methods") and isinstance(value, dict):
            entries = merged.get(key, [])
            ids = [e.get("id", e.get("name")) if isinstance(e, dict) else None for e in entries]
            for entry_id, patch in value.items():
                if entry_id not in ids:
                    errors.append((ppath + (key, entry_id), f"no {key[:-1]} with id {entry_id!r} in the base spec{_close(entry_id, [i for i in ids if i])}; ids: {', '.join(i for i in ids if i)}"))
                    continue
                index = ids.index(entry_id)
                if isinstance(patch, dict):
                    deep(entries[index], patch, (key, index), ppath + (key, entry_id))
        elif isinstance(value, dict) and isinstance(merged.get(key), dict):
            origin[(key,)] = ppath + (key,)
            deep(merged[key], value, (key,), ppath + (key,))
        else:
            merged[key] = copy.deepcopy(value)
            record(value, (key,), ppath + (key,))
    return merged, origin, errors


def _locator(origin: dict[Path_, Path_]) -> Callable[[Path_], Path_]:
    def locate(path: Path_) -> Path_:
        path = tuple(path)
        for cut in range(len(path), -1, -1):
            if path[:cut] in origin:
                return origin[path[:cut]] + path[cut:]
        return path
    return locate


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

def _semantic_problems(spec: dict, report: Callable[[Path_, str], None]) -> None:
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
    try:
        allowed = registry.parameters(section, name)
    except Exception as exc:  # an import error in a plugin is the spec author's to see
        report((section, i, "name"), f"cannot import {reg_entry.target}: {exc}")
        return
    for param in entry.get("params", {}):
        if param not in allowed:
            report((section, i, "params", param), f"{name!r} has no parameter {param!r}{_close(param, allowed)}; its parameters: {', '.join(allowed) or 'none'}")
    for param in entry.get("grid", {}):
        if param not in allowed:
            report((section, i, "grid", param), f"cannot sweep {param!r}: {name!r} has no such parameter{_close(param, allowed)}; its parameters: {', '.join(allowed) or 'none'}")
        elif param in entry.get("params", {}):
            report((section, i, "grid", param), f"{param!r} is both fixed in params and swept in grid; keep one")
    for param, space in entry.get("search", {}).items():
        if param not in allowed:
            report((section, i, "search", param), f"cannot tune {param!r}: {name!r} has no such parameter{_close(param, allowed)}; its parameters: {', '.join(allowed) or 'none'}")
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


def _metric_problems(spec: dict, task_metrics: tuple[str, ...], report) -> None:
    from harness.registry import metrics as metric_table

    task_name = spec["task"]
    metrics = spec["metrics"]
    for path, metric in [(("metrics", "primary"), metrics["primary"])] + [
        (("metrics", "report", i), m) for i, m in enumerate(metrics.get("report", []))
    ]:
        if metric not in metric_table():
            report(path, f"unknown metric {metric!r}{_close(metric, metric_table())}; `harness list metrics` shows them")
        elif metric not in task_metrics:
            report(path, f"task {task_name!r} does not report {metric!r}; it reports: {', '.join(task_metrics)}")


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
                       f"{_close(arg, allowed)}; its arguments: {', '.join(sorted(allowed - {'seed'}))}")


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
                report(("datasets", i, "methods", j), f"no method with id {method_id!r}{_close(method_id, method_ids)}; method ids: {', '.join(method_ids)}")
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
                report(path + where, f"no method with id {method_id!r}{_close(method_id, method_ids)}; method ids: "
                                     f"{', '.join(method_ids)}")
        if claim["metric"] not in task_metrics:
            report(path + ("metric",), f"task {task_name!r} does not report {claim['metric']!r}; it reports: {', '.join(task_metrics)}")
        compared = [claim[k] for k in ("better", "than") if k in kind.method_keys and claim.get(k) is not None]
        for j, name in enumerate(claim.get("datasets", [])):
            if name not in dataset_ids and name not in members:
                report(path + ("datasets", j), f"no dataset with id {name!r}{_close(name, [*members, *dataset_ids])}"
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
            report(("claims", i, "precondition", key), f"no method with id {pre[key]!r}{_close(pre[key], method_ids)}; "
                                                       f"method ids: {', '.join(method_ids)}")
    if pre["better"] == pre["than"]:
        report(("claims", i, "precondition", "than"), "a precondition compares two different methods")
    if pre["metric"] not in task_metrics:
        report(("claims", i, "precondition", "metric"), f"task {task_name!r} does not report {pre['metric']!r}; it "
                                                        f"reports: {', '.join(task_metrics)}")
    for j, dataset_id in enumerate(pre.get("datasets", [])):
        if dataset_id not in dataset_ids:
            report(("claims", i, "precondition", "datasets", j), f"no dataset with id {dataset_id!r}"
                                                                  f"{_close(dataset_id, dataset_ids)}; dataset ids: {listing(dataset_ids)}")


# --- entry points ----------------------------------------------------------------------

def _read(path: Path) -> tuple[Any, _Positions]:
    file = str(path)
    if path.is_dir():
        raise SpecError([Problem(file, 1, 1, (), "is a folder; expected a spec file (specs/NAME.yaml)")])
    if not path.is_file():
        raise SpecError([Problem(file, 1, 1, (), "no such spec file")])
    size = path.stat().st_size
    if size > MAX_BYTES:
        raise SpecError([Problem(file, 1, 1, (), f"{size:,} bytes; a spec is at most {MAX_BYTES:,} bytes of plain data")])
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError([Problem(file, 1, 1, (), f"cannot read the file: {exc}")]) from None
    return parse_yaml(text, file)


def _refuse_missing_extra(data: dict, file: str, positions: _Positions) -> None:
    """Raise :class:`MissingExtra` when the task's family requires libraries that are not installed (found by
    :func:`importlib.util.find_spec`, nothing imported)."""
    from harness.registry import RegistryError, default_registry

    try:
        missing = default_registry().missing_extra(data["task"])
    except RegistryError:
        return  # an unknown task: the semantic checks report it, with suggestions
    if missing:
        line, col = positions.of(("task",))
        raise MissingExtra([Problem(file, line, col, ("task",), missing)])


def _reporter(file: str, positions: _Positions, locate: Callable[[Path_], Path_], into: list[Problem]):
    def report(path: Path_, message: str) -> None:
        source = locate(tuple(path))
        line, col = positions.of(source)
        into.append(Problem(file, line, col, source, message))
    return report


def _check(path: Path, data: Any, positions: _Positions) -> dict[str, dict]:
    """All problems of the file, over the base and every profile; returns each profile merged."""
    file = str(path)
    problems: list[Problem] = []

    if not isinstance(data, dict):
        raise SpecError([Problem(file, 1, 1, (), f"expected a mapping of spec keys, found {describe(data)}")])
    problems += _schema_problems(data, file, positions, lambda p: p)
    if problems:
        raise SpecError(problems)
    _refuse_missing_extra(data, file, positions)
    if data["name"] != path.stem:
        line, col = positions.of(("name",))
        problems.append(Problem(file, line, col, ("name",), f"expected the file's stem {path.stem!r}, found {data['name']!r}: the name names the results folder"))
    _semantic_problems(data, _reporter(file, positions, lambda p: p, problems))
    resolved = {}
    for profile in PROFILES:
        overlay = data.get("profiles", {}).get(profile, {})
        merged, origin, merge_errors = merge_profile(data, overlay, profile)
        for src, message in merge_errors:
            line, col = positions.of(src, key=True)
            problems.append(Problem(file, line, col, src, message))
        if overlay and not merge_errors:
            locate = _locator(origin)
            base_messages = {p.message for p in problems}
            found = _schema_problems(merged, file, positions, locate)
            if not found:
                collect: list[Problem] = []
                _semantic_problems(merged, _reporter(file, positions, locate, collect))
                found = collect
            # a problem of the base shows up again in every profile that inherits it
            problems += [p for p in found if p.message not in base_messages]
        merged.setdefault("metrics", {}).setdefault("report", [])
        if merged["metrics"]["primary"] not in merged["metrics"]["report"]:
            merged["metrics"]["report"].insert(0, merged["metrics"]["primary"])
        resolved[profile] = merged
    # the same problem can surface in several profiles that inherit it
    unique = list(dict.fromkeys(problems))
    if unique:
        raise SpecError(unique)
    return resolved


def validate_spec(path: str | Path) -> None:
    """Raise :class:`SpecError` listing every problem of the spec file (all profiles)."""
    path = Path(path)
    data, positions = _read(path)
    _check(path, data, positions)


def load_spec(path: str | Path, profile: str = "default") -> Spec:
    """Load, validate and resolve one profile of a spec file."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; expected one of {', '.join(PROFILES)}")
    path = Path(path)
    data, positions = _read(path)
    resolved = _check(path, data, positions)
    return from_resolved(resolved[profile], profile, path)
