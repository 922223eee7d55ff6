"""``json.dumps(value, indent=k)``, the same text, faster for long lists of flat records: ``claims.json``.

With an indent, :mod:`json` encodes in Python, a generator per container (its C encoder takes no indent in this
Python): the 1M-row folder's claims.json (16,667 per-dataset records of one claim) took 0.6 s. Here a container is
written by one function call that appends to a list, and a list of records that all have the same keys and only
scalar values (a claim's ``per_dataset``) is written a field at a time: each field's texts (strings by json's own C
escaper) put into one template per record. Scalars are written as json writes them (``ensure_ascii``, NaN and
Infinity allowed); anything else (a key json would refuse, an object it cannot encode) goes to :func:`json.dumps`,
whose text or error is then the answer.
"""
from __future__ import annotations

import json
import math
from json.encoder import encode_basestring_ascii as _quoted
from typing import Any

RECORDS = 8  # a list of at least this many flat records with the same keys is written a field at a time


class _Other(Exception):
    """Something :func:`dumps` leaves to :func:`json.dumps`."""


def dumps(value: Any, indent: int) -> str:
    """``json.dumps(value, indent=indent)``."""
    out: list[str] = []
    try:
        _write(value, out, "\n", " " * indent)
    except (_Other, RecursionError):
        return json.dumps(value, indent=indent)
    return "".join(out)


def _scalar(value) -> str:
    """A scalar as json writes it (the order of json's own checks: a bool is an int, a str subclass a str)."""
    if isinstance(value, str):
        return _quoted(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        if value != value:
            return "NaN"
        if value in (_INFINITY, -_INFINITY):
            return "Infinity" if value > 0 else "-Infinity"
        return float.__repr__(value)
    raise _Other


_INFINITY = float("inf")


def _key(key) -> str:
    """A dict key as json writes it (a str as it is; a float, bool, None or int as its scalar text)."""
    if isinstance(key, str):
        return _quoted(key)
    if isinstance(key, (float, int)) or key is None:  # bool is an int
        return '"' + _scalar(key) + '"'
    raise _Other


def _write(value, out: list[str], newline: str, step: str) -> None:
    """Append ``value``'s text at the depth whose line break (with its indent) is ``newline``."""
    if isinstance(value, (list, tuple)):
        if not value:
            out.append("[]")
            return
        inner = newline + step
        if len(value) >= RECORDS and _flat_records(value):
            out.append("[" + inner + ("," + inner).join(_records(value, inner, step)) + newline + "]")
            return
        out.append("[" + inner)
        for k, item in enumerate(value):
            if k:
                out.append("," + inner)
            _write(item, out, inner, step)
        out.append(newline + "]")
    elif isinstance(value, dict):
        if not value:
            out.append("{}")
            return
        inner = newline + step
        out.append("{" + inner)
        for k, (key, item) in enumerate(value.items()):
            out.append(("," + inner if k else "") + _key(key) + ": ")
            _write(item, out, inner, step)
        out.append(newline + "}")
    else:
        out.append(_scalar(value))


_SCALARS = (str, int, float, type(None))  # bool is an int


def _flat_records(values) -> bool:
    """Whether ``values`` are dicts of one key order whose values are all scalars."""
    first = values[0]
    if type(first) is not dict or not first:
        return False
    keys = list(first)
    return all(type(v) is dict and list(v) == keys and all(isinstance(x, _SCALARS) for x in v.values())
               for v in values)


def _records(values: list[dict], newline: str, step: str) -> list[str]:
    """Each flat record's text at the depth of ``newline``, written a field at a time into one template."""
    inner = newline + step
    keys = list(values[0])
    template = "{" + inner + ("," + inner).join(_key(key).replace("%", "%%") + ": %s" for key in keys) + newline + "}"
    fields = [_column([v[key] for v in values]) for key in keys]
    return [template % texts for texts in zip(*fields)]


def _column(values: list) -> list[str]:
    """Each scalar's text; a column of one plain type (finite floats, strs, ints, bools) by one mapped call."""
    kinds = set(map(type, values))
    if kinds == {float} and all(map(math.isfinite, values)):
        return list(map(float.__repr__, values))
    if kinds == {str}:
        return list(map(_quoted, values))
    if kinds == {int}:
        return list(map(int.__repr__, values))
    if kinds == {bool}:
        return ["true" if value else "false" for value in values]
    return list(map(_scalar, values))
