"""The claim kinds, found the way task families are: every module of this package that sets ``KIND``, and the
``harness.claim_kinds`` entry points of outside packages (``name = "package.module:KIND"``). A new kind is one
module; nothing else in the engine lists kinds."""
from __future__ import annotations

import copy
import importlib
import pkgutil
from functools import lru_cache

from harness.claims.base import COMMON_PROPERTIES, COMMON_RULES, DEFAULT_KIND, ClaimKind

ENTRY_POINT_GROUP = "harness.claim_kinds"
_NOT_KINDS = {"base", "registry", "checking"}  # this package's modules that define no kind


class ClaimKindError(LookupError):
    pass


@lru_cache(maxsize=1)
def kinds() -> dict[str, ClaimKind]:
    """Every claim kind by name, in the order their sections stand on the page."""
    import harness.claims as package

    found: dict[str, tuple[ClaimKind, str]] = {}

    def add(kind, origin: str) -> None:
        if not isinstance(kind, ClaimKind):
            raise ClaimKindError(f"claim kind from {origin}: KIND is a {type(kind).__name__}, not a ClaimKind")
        if kind.name in found:
            raise ClaimKindError(f"claim kind {kind.name!r} is defined twice: by {found[kind.name][1]} and by {origin}")
        found[kind.name] = (kind, origin)

    for module in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if module.name.startswith("_") or module.name in _NOT_KINDS:
            continue
        name = f"{package.__name__}.{module.name}"
        kind = getattr(importlib.import_module(name), "KIND", None)
        if kind is not None:
            add(kind, name)
    from importlib.metadata import entry_points

    for point in entry_points(group=ENTRY_POINT_GROUP):
        if point.value.startswith(package.__name__ + "."):
            continue  # an old install's record of an in-repo kind: the scan found it
        add(point.load(), f"{point.dist.name if point.dist else '?'}:{point.name}")
    ordered = sorted(found.values(), key=lambda pair: (pair[0].order, pair[0].name))
    return {kind.name: kind for kind, _ in ordered}


def kind_of(claim: dict) -> ClaimKind:
    """The kind a claim names (``paired`` when it names none)."""
    name = claim.get("kind", DEFAULT_KIND)
    known = kinds()
    if name not in known:
        raise ClaimKindError(f"claim {claim.get('id')!r}: kind {name!r}; expected one of {', '.join(known)}")
    return known[name]


def kind_of_verdict(verdict) -> ClaimKind:
    """The kind of a verdict (one :meth:`ClaimKind.check` returned, or read back from claims.json): its ``kind``,
    ``paired`` when it has none (a paired verdict's record predates kinds)."""
    return kinds()[getattr(verdict, "kind", DEFAULT_KIND)]


def claim_schema() -> dict:
    """The JSON Schema of a claim: the keys every claim has, each kind's own keys, and each kind's rules, applied
    when the claim names that kind (the default kind's also when it names none). ``harness/spec/schema.json``
    holds this for the kinds in this repository, for editors; the loader validates with this, so a kind from an
    outside package is checked as well."""
    properties: dict[str, dict] = {}
    descriptions: dict[str, list[tuple[str, str]]] = {}
    for kind in kinds().values():
        for key, schema in kind.properties.items():
            bare = {k: v for k, v in schema.items() if k != "description"}
            if key in properties and {k: v for k, v in properties[key].items() if k != "description"} != bare:
                raise ClaimKindError(f"claim kind {kind.name!r} defines the key {key!r} unlike another kind does; "
                                     "a key shared by kinds has one schema")
            properties.setdefault(key, dict(schema))
            if schema.get("description"):
                descriptions.setdefault(key, []).append((kind.name, schema["description"]))
    for key, said in descriptions.items():  # one text where the kinds share it, each kind's where they differ
        texts = list(dict.fromkeys(text for _, text in said))
        properties[key]["description"] = texts[0] if len(texts) == 1 else " ".join(texts)
    common = dict(COMMON_PROPERTIES)
    ordered = {"id": common.pop("id"),
               "kind": {"enum": list(kinds()), "description": " ".join(k.summary for k in kinds().values())},
               **{k: common.pop(k) for k in ("says",)}, **properties, **common}
    rules = list(COMMON_RULES)
    for kind in kinds().values():
        if not kind.rules:
            continue
        named = {"properties": {"kind": {"const": kind.name}}, "required": ["kind"]}
        condition = {"anyOf": [{"not": {"required": ["kind"]}}, named]} if kind.name == DEFAULT_KIND else named
        rules.append({"if": condition, "then": {"allOf": copy.deepcopy(kind.rules)}})
    return {"type": "object", "additionalProperties": False, "required": ["id", "says", "metric"],
            "properties": ordered, "allOf": rules}
