"""Load a YAML spec safely, validate it, and resolve a profile into a typed :class:`Spec`.

Every problem is reported with the file, line and column, the JSON path, what was found
and what was expected; nothing runs when a spec has a problem.
"""
from __future__ import annotations

import copy
import pickle
import re
from pathlib import Path
from typing import Any, Callable


from harness.spec.checks import suggestion, semantic_problems
from harness.spec.errors import MissingExtra, MissingProfile, Path_, Problem, SpecError, describe
from harness.spec.schema import validator
from harness.spec.model import PROFILES, Spec, from_resolved
from harness.spec.yamlread import MAX_BYTES, Positions, parse_yaml


# --- messages --------------------------------------------------------------------------

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


def _schema_problems(data: Any, file: str, positions: Positions, locate: Callable[[Path_], Path_]) -> list[Problem]:
    from jsonschema.exceptions import best_match

    problems = []
    for error in validator().iter_errors(data):
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
                problems.append(Problem(file, line, col, path + (key,), f"unknown key {key!r}{suggestion(key, allowed)}; {expected}"))
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
                message += suggestion(value, [str(o) for o in options])
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
                    errors.append((ppath + (key, entry_id), f"no {key[:-1]} with id {entry_id!r} in the base spec{suggestion(entry_id, [i for i in ids if i])}; ids: {', '.join(i for i in ids if i)}"))
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


# --- entry points ----------------------------------------------------------------------

def _read(path: Path) -> tuple[Any, Positions]:
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


def _refuse_missing_extra(data: dict, file: str, positions: Positions) -> None:
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


def _reporter(file: str, positions: Positions, locate: Callable[[Path_], Path_], into: list[Problem]):
    def report(path: Path_, message: str) -> None:
        source = locate(tuple(path))
        line, col = positions.of(source)
        into.append(Problem(file, line, col, source, message))
    return report


def _check(path: Path, data: Any, positions: Positions) -> dict[str, dict]:
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
    semantic_problems(data, _reporter(file, positions, lambda p: p, problems))
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
                semantic_problems(merged, _reporter(file, positions, locate, collect))
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
    _refuse_missing_profile(path, data, positions, profile)
    return from_resolved(resolved[profile], profile, path)


def _refuse_missing_profile(path: Path, data: dict, positions: Positions, profile: str) -> None:
    """SpecError when ``profile`` is neither ``default`` (the base spec, with ``profiles.default`` merged over it if
    the spec has one) nor a profile the spec writes: ``--profile paper`` on a spec without one ran the base spec."""
    written = list(data.get("profiles") or {})
    if profile == "default" or profile in written:
        return
    base = "default (the base spec" + (" with its profiles.default)" if "default" in written else ")")
    has = ", ".join([base, *(p for p in written if p != "default")])
    where = ("profiles",) if written else ()
    line, col = positions.of(where, key=True) if written else (1, 1)
    lacks = f"has no {profile!r} profile" if written else f"has no profiles, so no {profile!r}"
    raise MissingProfile([Problem(str(path), line, col, where,
                                  f"the spec {lacks}; its profiles: {has}: run one of them, or add "
                                  f"`profiles: {{{profile}: ...}}` to the spec")])
