"""A spec's problems: each one a file, a line and column, a JSON path and a message for people."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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


class MissingProfile(SpecError):
    """The profile asked for (``--profile paper``) is one the spec does not write: one line naming those it has.

    The spec itself may be fine; it is the command line that asks for what it lacks."""


def json_path(path: Path_) -> str:
    out = "$"
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


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
