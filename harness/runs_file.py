"""Reading ``runs.jsonl``: the row schema every reader checks, :func:`read_runs` (every row as a dict) and
:func:`read_cells` / :func:`decoded_chunks` (the fields a reader needs, decoded fast by msgspec); a damaged line is
skipped and reported once with its number.

Why msgspec and not pyarrow's JSON reader for the lines: a Struct of the needed fields skips the rest of a line
unread and checks each field's type (the row schema) as it decodes; a line is still a line, so a damaged one is
found and numbered. pyarrow's JSON reader infers one schema per block (the per-task ``metrics`` and ``curves``
become sparse columns), fails a whole block on one bad line, and is not cheaper: 2.4 s of CPU for 100k rows
(128 MiB) against 2.6 s for msgspec and the table built from its rows (3 December 2026). The table
(:mod:`harness.results_table`) is what pyarrow keeps, as Parquet.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator, Literal, NotRequired, TypedDict

RUNS_FILE = "runs.jsonl"
DAMAGED_FILE = "damaged.jsonl"  # lines `harness repair` moved out of runs.jsonl, byte for byte

RECORD_FIELDS = ("key", "status", "dataset", "method", "seed", "split")  # what every cell record has
STATUSES = ("ok", "failed", "timed-out", "skipped")
_reported: set[tuple[str, int]] = set()
NOT_A_RECORD = f"not a cell record (expected a JSON object with {', '.join(RECORD_FIELDS)})"


class _Curve(TypedDict):
    """A row's curve (:func:`harness.tasks.evaluation.curve_record`)."""

    x: list[float | int]
    y: list[float | int]
    x_label: NotRequired[str | None]
    y_label: NotRequired[str | None]
    theory: NotRequired[list[float | int] | None]


# the row schema: each field a reader decodes, and its type (msgspec's: a bool is not a number, a float not an int);
# a field the line lacks is None, except the RECORD_FIELDS, which every row has
_FIELD_TYPES: dict[str, Any] = {
    "key": str, "status": Literal["ok", "failed", "timed-out", "skipped"], "dataset": str, "method": str, "seed": int,
    "split": str, "spec_hash": str | None, "device": str | None, "kind": str | None, "error": str | None,
    "git_commit": str | None, "task_version": str | None, "metrics": dict[str, float | int | None] | None,
    "curves": dict[str, _Curve] | None, "params": dict[str, Any] | None, "spec": str | None,
}
_EXPECTED = {str: "a string", str | None: "a string or null", int: "an integer"}


def row_problem(record: Any, error: Exception | None = None) -> str:
    """What makes a decoded line ``record`` no valid row, in words (``seed is "abc", expected an integer``);
    ``error``, msgspec's, where no field below is found wrong."""
    import math

    def shown(value: Any) -> str:
        text = json.dumps(value, ensure_ascii=False)
        return text if len(text) <= 60 else text[:57] + "..."

    def number(value: Any) -> bool:
        return type(value) is int or (type(value) is float and math.isfinite(value))

    def numbers(values: Any) -> bool:
        return isinstance(values, list) and all(map(number, values))

    if not isinstance(record, dict):
        return NOT_A_RECORD
    missing = [name for name in RECORD_FIELDS if name not in record]
    if missing:
        return f"not a cell record: no {', '.join(missing)} (every row has {', '.join(RECORD_FIELDS)})"
    for name, kind in _FIELD_TYPES.items():
        value = record.get(name)
        if name not in record or (value is None and name not in RECORD_FIELDS):
            continue
        if kind in _EXPECTED:
            if not (type(value) is int if kind is int else isinstance(value, str)):
                return f"{name} is {shown(value)}, expected {_EXPECTED[kind]}"
        elif name == "status":
            if value not in STATUSES:
                return f"status is {shown(value)}, expected one of {', '.join(STATUSES)}"
        elif name in ("params", "metrics", "curves") and not isinstance(value, dict):
            return f"{name} is {shown(value)}, expected an object" + (" of metric values" if name == "metrics" else "")
        elif name == "metrics":
            for metric, found in value.items():
                if found is not None and not number(found):
                    return f"metrics[{shown(metric)}] is {shown(found)}, expected a number or null"
        elif name == "curves":
            for curve, found in value.items():
                where = f"curves[{shown(curve)}]"
                if not isinstance(found, dict):
                    return f"{where} is {shown(found)}, expected an object with x and y"
                for part in ("x", "y", "theory"):
                    if (part in found or part != "theory") and not (part == "theory" and found.get(part) is None) \
                            and not numbers(found.get(part)):
                        return f"{where}.{part} is {shown(found.get(part))}, expected a list of numbers"
                for part in ("x_label", "y_label"):
                    if found.get(part) is not None and not isinstance(found[part], str):
                        return f"{where}.{part} is {shown(found[part])}, expected a string"
    detail = " ".join(str(error).split()) if error is not None else "its fields do not fit the row schema"
    return f"not a cell record ({detail})"


def read_runs(folder: Path) -> Iterator[dict[str, Any]]:
    """Every complete cell record of ``folder/runs.jsonl``, in the order written.

    A damaged line (not JSON, not a cell record, a row whose fields have the wrong types, bytes a power loss
    left) is skipped and reported once on stderr with its line number and what is wrong; the file is never
    rewritten here. A metric recorded as null is left out of its row's ``metrics`` (missing, everywhere).
    """
    path = Path(folder) / RUNS_FILE
    if not path.exists():
        return
    with open(path, "rb") as f:
        for number, raw in enumerate(f, start=1):
            if not raw.endswith(b"\n"):
                return  # a line cut by a crash; the next run removes it
            record, problem = checked_record(raw)
            if record is None:
                report_damaged(path, number, problem)
                continue
            yield record


_CELL_FIELDS = ("spec_hash", "code", "device", "kind", "metrics", "error", "git_commit", "versions", "task_version",
                "curves", "dataset_params")  # besides RECORD_FIELDS: what a leaderboard or a claim reads
_SHARED_FIELDS = ("code", "versions", "dataset_params")  # a few distinct values over many rows: decoded once each,
# shared (read_cells): a million rows of 16,667 datasets hold 16,667 dataset_params dicts, not a million
_CHUNK = 32 << 20  # bytes of runs.jsonl decoded at once
_decoders: dict[str, Any] = {}


def cell_decoder(extra: tuple[str, ...] = ()):
    """A msgspec decoder of the fields :data:`RECORD_FIELDS`, :data:`_CELL_FIELDS` and ``extra`` of a row, other
    keys skipped.

    The Struct answers ``row["metrics"]`` and ``row.get("device")`` as the dict :func:`read_runs` yields does,
    so the leaderboard and the claims read either; a field the line lacks (or holds null) is None.

    This is the row schema (:data:`_FIELD_TYPES`): a line whose fields have other types (``seed`` a text, ``metrics``
    a list, a metric ``"high"``) raises msgspec's ValidationError, and every reader leaves it out as a damaged line
    (:func:`row_problem` says what is wrong). ``code``, ``versions`` and ``dataset_params`` are kept as raw JSON,
    unchecked: a few distinct values that are compared, never computed with.
    """
    name = "cell" + "".join(f"+{field}" for field in extra)
    if name not in _decoders:
        import msgspec

        def get(self, name: str, default: Any = None) -> Any:
            value = getattr(self, name)
            return default if value is None else value

        fields = [(field, _FIELD_TYPES[field]) for field in RECORD_FIELDS] + [
            (field, msgspec.Raw if field in _SHARED_FIELDS else _FIELD_TYPES.get(field, Any), None)
            for field in (*_CELL_FIELDS, *(f for f in extra if f not in _CELL_FIELDS))]
        # row["x"] is the attribute lookup itself (a C slot, no Python frame: it runs millions of times)
        cell = msgspec.defstruct("CellRecord", fields, gc=False, module=__name__,
                                 namespace={"__getitem__": object.__getattribute__, "get": get})
        _decoders[name] = msgspec.json.Decoder(cell)
    return _decoders[name]


class _Decoded(dict):
    """Raw JSON text → its one decoded object, decoded on first sight: the few distinct ``code``, ``versions``,
    ``dataset_params`` values that a million rows repeat."""

    def __missing__(self, text: bytes) -> Any:
        import msgspec

        value = self[text] = msgspec.json.decode(text)
        return value


def _share(cells: list, name: str, decoded: _Decoded) -> None:
    """Replace each cell's raw ``name`` (a ``msgspec.Raw``, or None) by the one decoded object of its text, in C
    passes (``map`` of ``attrgetter``, ``bytes``, the dict's lookup, ``setattr``): a per-row Python loop was 1.9 s
    of a million rows."""
    import operator
    from collections import deque
    from itertools import repeat

    raws = list(map(operator.attrgetter(name), cells))
    if None in raws:  # rows without it (skipped before it was known) keep None
        values = [None if raw is None else decoded[bytes(raw)] for raw in raws]
    else:
        values = map(decoded.__getitem__, map(bytes, raws))
    deque(map(setattr, cells, repeat(name), values), maxlen=0)


def read_cells(folder: Path, extra: tuple[str, ...] = ()) -> Iterator[Any]:
    """:func:`read_runs` with only the fields a run's planning reads (:data:`RECORD_FIELDS`, :data:`_CELL_FIELDS`
    and ``extra``: the runner adds ``params`` and ``spec``), decoded fast.

    The same rows in the same order, each a small msgspec Struct instead of a dict (``row["x"]``, ``row.get("x")``):
    the file is decoded 32 MiB at a time by msgspec (the other keys of a row, ``traceback``, ..., are skipped
    unread), so a million rows take seconds and a fraction of the memory of their dicts. A damaged line is skipped
    and reported once, with its line number, exactly as :func:`read_runs` does: a chunk that does not decode as a
    whole is decoded again line by line. The readers of results read the table built from them
    (:func:`harness.results_table.read_table`).
    """
    import gc

    path = Path(folder) / RUNS_FILE
    if not path.exists():
        return
    decoded = _Decoded()
    collecting = gc.isenabled()
    gc.disable()  # a million new containers would start as many collections; Structs hold no cycle
    try:
        for cells, _, _ in decoded_chunks(path, tuple(extra)):
            for name in _SHARED_FIELDS:  # a million rows hold a few distinct code, versions, dataset_params
                _share(cells, name, decoded)
            yield from cells
    finally:
        if collecting:
            gc.enable()


def decoded_chunks(path: Path, extra: tuple[str, ...] = (), start: int = 0, first: int = 1,
                   damaged: list[int] | None = None, stop: int | None = None,
                   report: bool = True) -> Iterator[tuple[list, int, int]]:
    """The complete lines of ``path`` from byte ``start`` (the start of line number ``first``) to byte ``stop`` (the
    end, if None), decoded 32 MiB at a time: (the chunk's cell Structs, the byte offset after its last line, the
    number of the line after it). ``code``, ``versions`` and ``dataset_params`` are left as raw JSON
    (``msgspec.Raw``); a damaged line (or one whose fields do not fit the row schema) is skipped, reported once
    (:func:`read_cells`) unless ``report`` is false, and its (number, what is wrong) appended to ``damaged``."""
    import msgspec

    decoder = cell_decoder(tuple(extra))
    offset = start
    with open(path, "rb") as f:
        f.seek(start)
        rest = b""
        while True:
            block = f.read(_CHUNK if stop is None else max(0, min(_CHUNK, stop - f.tell())))
            data = rest + block
            end = data.rfind(b"\n") + 1
            if not block:
                break  # data (if any) is a last line cut by a crash; the next run removes it
            chunk, rest = memoryview(data)[:end], data[end:]  # a view: no copy of 32 MiB
            if not end:
                continue
            lines = data.count(b"\n", 0, end)
            try:
                cells = decoder.decode_lines(chunk)
            except (msgspec.DecodeError, msgspec.ValidationError):
                cells = None
            if cells is None or len(cells) != lines:  # decode_lines skips blank lines: a damaged line too
                cells = []
                for number, raw in enumerate(data[:end].split(b"\n")[:-1], start=first):
                    try:
                        cells.append(decoder.decode(raw))
                    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                        problem = line_problem(raw, exc)
                        if report:
                            report_damaged(path, number, problem)
                        if damaged is not None:
                            damaged.append((number, problem))
            drop_null_metrics(cells)
            offset += end
            first += lines
            yield cells, offset, first


def drop_null_metrics(cells: list) -> None:
    """Leave a metric recorded as null out of its row's ``metrics``: it is missing, for the pages and the claims
    alike. Looked for in C passes (``map`` of ``dict.values`` and ``contains``); a row is rewritten only if it has one."""
    import operator
    from itertools import repeat

    metrics = list(filter(None, map(operator.attrgetter("metrics"), cells)))
    if any(map(operator.contains, map(dict.values, metrics), repeat(None))):
        for found in metrics:
            for name in [name for name, value in found.items() if value is None]:
                del found[name]


def line_problem(raw: bytes, error: Exception) -> str:
    """What is wrong with a line msgspec did not decode as a row (``error``), in words."""
    try:
        record = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return NOT_A_RECORD
    return row_problem(record, error)


def report_damaged(path: Path, number: int, problem: str | None = None) -> None:
    """Say once on stderr that line ``number`` of ``path`` is not a valid cell record (``problem``: what is wrong
    with it, :func:`row_problem`) and is ignored."""
    _report(path, number, problem or NOT_A_RECORD)


def _report(path: Path, number: int, what: str) -> None:
    import sys

    if (str(path), number) not in _reported:
        _reported.add((str(path), number))
        print(f"{path}:{number}: {what}; the line is ignored (`harness repair {path.parent}` moves such lines "
              f"to {DAMAGED_FILE})", file=sys.stderr)


def _record(raw: bytes) -> dict[str, Any] | None:
    """The row of a line, or None where it is not a valid one (:func:`row_problem`)."""
    return checked_record(raw)[0]


def checked_record(raw: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """(the row, None) for a line that holds a valid row (:func:`cell_decoder`'s schema, the one every reader
    checks), else (None, what is wrong, in words). A null metric is left out of the row's ``metrics``: a metric
    recorded as null is missing, as in :func:`read_cells`."""
    import msgspec

    try:
        record = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None, NOT_A_RECORD
    try:
        cell_decoder().decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        return None, row_problem(record, exc)
    metrics = record.get("metrics")
    if metrics and None in metrics.values():
        record["metrics"] = {name: value for name, value in metrics.items() if value is not None}
    return record, None
