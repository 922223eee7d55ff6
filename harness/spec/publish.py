"""Writes the claim definition of ``harness/spec/schema.json`` from the claim kinds of this repository, so that
editors check claims as the loader does: ``python -m harness.spec.publish`` after adding or changing a kind (a test
fails until the file says what the kinds say)."""
from __future__ import annotations

import json

from harness.spec.schema import SCHEMA_PATH
WIDTH = 120


def compact(value, indent: int = 0) -> str:
    """JSON with each object or list on one line where its structure (strings aside: a long description stays on
    its line) fits in :data:`WIDTH` columns, else one member a line."""
    flat = json.dumps(value, ensure_ascii=False)
    if not isinstance(value, (dict, list)) or not value or indent + len(json.dumps(_shape(value))) <= WIDTH:
        return flat
    inner = " " * (indent + 2)
    if isinstance(value, dict):
        members = [f"{inner}{json.dumps(k, ensure_ascii=False)}: {compact(v, indent + 2)}" for k, v in value.items()]
        return "{\n" + ",\n".join(members) + "\n" + " " * indent + "}"
    return "[\n" + ",\n".join(inner + compact(v, indent + 2) for v in value) + "\n" + " " * indent + "]"


def _shape(value):
    """``value`` with its long texts emptied: what decides whether it is written on one line."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(v) for v in value]
    return "" if isinstance(value, str) and len(value) > 40 else value


def published_claim() -> dict:
    """What schema.json holds as a claim's definition."""
    return json.loads(SCHEMA_PATH.read_text())["$defs"]["claim"]


def write() -> bool:
    """Rewrite schema.json's claim definition from :func:`harness.claims.claim_schema`; whether it changed."""
    from harness.claims import claim_schema

    text = SCHEMA_PATH.read_text()
    start = text.index('\n    "claim": {') + 1
    end = text.index('\n    "profile": {', start)
    block = '    "claim": ' + compact(claim_schema(), 4) + ","
    new = text[:start] + block + text[end:]
    json.loads(new)  # still one JSON document
    if new == text:
        return False
    SCHEMA_PATH.write_text(new)
    return True


if __name__ == "__main__":
    print(f"{SCHEMA_PATH}: {'rewritten' if write() else 'already up to date'}")
