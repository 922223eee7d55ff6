"""Load a YAML spec safely, validate it, and resolve a profile into a typed :class:`Spec`.

Every problem is reported with the file, line and column, the JSON path, what was found
and what was expected; nothing runs when a spec has a problem.
"""
from __future__ import annotations

import copy
import pickle
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable


from harness.spec.errors import MissingExtra, MissingProfile, Path_, Problem, SpecError, describe
from harness.spec.model import PROFILES, Spec, from_resolved

# imported where they are used, not here: a spec checked before is neither parsed nor checked again (see _checked)
#   harness.spec.checks (suggestion, semantic_problems), harness.spec.schema (validator), harness.spec.yamlread
if TYPE_CHECKING:
    from harness.spec.yamlread import Positions


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

    from harness.spec.checks import suggestion
    from harness.spec.schema import validator

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
    from harness.spec.checks import suggestion

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
    from harness.spec.yamlread import parse_yaml

    return parse_yaml(_read_text(path), str(path))


def _read_text(path: Path) -> str:
    from harness.spec.yamlread import MAX_BYTES

    file = str(path)
    if path.is_dir():
        raise SpecError([Problem(file, 1, 1, (), "is a folder; expected a spec file (specs/NAME.yaml)")])
    if not path.is_file():
        raise SpecError([Problem(file, 1, 1, (), "no such spec file")])
    size = path.stat().st_size
    if size > MAX_BYTES:
        raise SpecError([Problem(file, 1, 1, (), f"{size:,} bytes; a spec is at most {MAX_BYTES:,} bytes of plain data")])
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError([Problem(file, 1, 1, (), f"cannot read the file: {exc}")]) from None


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


def _check(path: Path, data: Any, positions: Positions, extra: Callable | None = None) -> dict[str, dict]:
    """All problems of the file, over the base and every profile; returns each profile merged. ``extra``: more
    checks of a (merged) spec, ``spec → [(path in it, message)]``, from a layer above this one."""
    from harness.spec.checks import semantic_problems

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
    if extra is not None:
        report = _reporter(file, positions, lambda p: p, problems)
        for place, message in extra(data):
            report(place, message)
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
                if extra is not None:
                    report = _reporter(file, positions, locate, collect)
                    for place, message in extra(merged):
                        report(place, message)
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


def validate_spec(path: str | Path, extra: Callable | None = None) -> None:
    """Raise :class:`SpecError` listing every problem of the spec file (all profiles); ``extra`` as for
    :func:`_check` (``harness validate`` passes the audit's check of the acknowledgements' rule names)."""
    path = Path(path)
    data, positions = _read(path)
    _check(path, data, positions, extra)


def load_spec(path: str | Path, profile: str = "default") -> Spec:
    """Load, validate and resolve one profile of a spec file.

    A spec that passed every check is not checked again while nothing the checks read has changed
    (:func:`_checked`): its text, its file name, the engine, the installed packages, the registry and the code of
    every task, loader and method it names."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; expected one of {', '.join(PROFILES)}")
    path = Path(path)
    text = _read_text(path)
    resolved = _checked(path, text, profile)
    if resolved is None:
        from harness.spec.yamlread import parse_yaml

        data, positions = parse_yaml(text, str(path))
        resolved = _check(path, data, positions)
        _refuse_missing_profile(path, data, positions, profile)
        _remember_checked(path, text, data, resolved)
    return from_resolved(resolved[profile], profile, path)


# --- specs already checked ---------------------------------------------------------------
#
# Loading a spec was most of a run with nothing to do: the schema (jsonschema's import and validation), and the
# checks of its names, which import the task's, loaders' and methods' modules (numpy with them). The outcome of
# all of it, the resolved profiles, is kept in the cache (harness.cache) under the digest of the spec's text and
# file name, with a digest of everything the checks read besides: the engine's source (the schema, the checks,
# the claim kinds, the task families' catalogues), the installed packages (jsonschema, Optuna's samplers, plugins
# and their entry points), the registry's names, targets and metrics, and the fingerprint of every task, loader and
# method the spec names (whose signatures and metrics the checks read). Only a spec that passed is kept; any
# difference is a miss, and the spec is read and checked in full as before.

CHECKED = "spec"  # the cache's kind of entry
CLAIM_KINDS = "harness.claim_kinds"  # harness.claims.registry's entry-point group, named here not to import the kinds


def _checked_key(path: Path, text: str) -> str:
    from harness.cache import digest

    return digest(text, path.stem)


def _dependencies(names: dict[str, list[str]]) -> str | None:
    """The digest of what the checks of a spec naming ``names`` (kind → names) read besides its text; None when a
    name is not registered now (the full checks say so)."""
    from harness.cache import digest, engine_digest, environment_digest
    from harness.code import entry_point_code, fingerprint
    from harness.registry import RegistryError, default_registry

    registry = default_registry()
    parts = [engine_digest(), environment_digest(), registry.digest()]
    try:
        for kind in ("tasks", "datasets", "methods"):
            for name in names[kind]:
                target = registry.entry(kind, name).target
                parts += [kind, name, fingerprint(target)]
    except RegistryError:
        return None
    parts += entry_point_code(CLAIM_KINDS)  # an outside package's claim kinds: their code
    return digest(*parts)


def _names(resolved: dict[str, dict]) -> dict[str, list[str]]:
    """The task, loaders and methods every profile of the spec names."""
    names: dict[str, dict[str, None]] = {"tasks": {}, "datasets": {}, "methods": {}}
    for merged in resolved.values():
        names["tasks"][merged["task"]] = None
        for kind in ("datasets", "methods"):
            for entry in merged.get(kind, []):
                names[kind][entry["name"]] = None
    return {kind: list(found) for kind, found in names.items()}


def _checked(path: Path, text: str, profile: str) -> dict[str, dict] | None:
    """The resolved profiles of a spec that passed every check with this text and everything else as it is now;
    None when it has not (or the profile is not one the spec writes, or its family's libraries are missing now:
    the full checks then say so, with the line)."""
    from harness.cache import get

    entry = get(CHECKED, _checked_key(path, text))
    if not (isinstance(entry, dict) and isinstance(entry.get("resolved"), dict) and isinstance(entry.get("names"), dict)
            and isinstance(entry.get("profiles"), list) and isinstance(entry.get("dependencies"), str)):
        return None
    resolved, names = entry["resolved"], entry["names"]
    if set(resolved) != set(PROFILES) or set(names) != {"tasks", "datasets", "methods"} \
            or not all(isinstance(found, list) for found in names.values()):
        return None
    if profile != "default" and profile not in entry["profiles"]:
        return None
    if _dependencies(names) != entry["dependencies"]:
        return None
    from harness.registry import default_registry

    if default_registry().missing_extra(resolved["default"]["task"]):  # find_spec, nothing imported
        return None
    return resolved


def _remember_checked(path: Path, text: str, data: dict, resolved: dict[str, dict]) -> None:
    """Keep the outcome of a spec that passed every check, when JSON gives back exactly the same profiles."""
    import json

    from harness.cache import put

    try:
        if json.loads(json.dumps(resolved, allow_nan=False)) != resolved:  # a key or value JSON would change
            return
    except (TypeError, ValueError):
        return
    names = _names(resolved)
    dependencies = _dependencies(names)
    if dependencies is not None:
        put(CHECKED, _checked_key(path, text), {"dependencies": dependencies, "names": names, "resolved": resolved,
                                                "profiles": list(data.get("profiles") or {})})


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
