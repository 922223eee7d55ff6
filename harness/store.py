"""The results store: ``runs.jsonl``, append-only, one JSON object per finished cell.

Each line is written with one ``write`` on a file opened for appending, the moment its cell
is recorded: the kernel holds it from then on, so a crash of the process, even SIGKILL,
loses no recorded cell (at most the cells in flight). Against a power cut the file is
flushed to disk (``fsync``) at most :data:`SYNC_INTERVAL_S` after a line is written, by a
background thread, and when the run ends: a power cut loses at most the last second of
finished cells. (An ``fsync`` per cell cost up to 1.2 ms each on a contended disk, 43% of a
10,000-cell run's main process.) A half-written last line (a crash inside the write) is cut
off before the next append.
"""
from __future__ import annotations

import errno
import fcntl
import json
import os
import threading
from pathlib import Path
from typing import Any, Callable, Iterator, Literal, NotRequired, TypedDict

RUNS_FILE = "runs.jsonl"
SUPERSEDED_FILE = "superseded.jsonl"  # rows a newer version of the code replaced: kept, never shown
DAMAGED_FILE = "damaged.jsonl"  # lines `harness repair` moved out of runs.jsonl, byte for byte
SKIPPED_DATASETS_FILE = "skipped.json"  # datasets the latest run did not plan (no real data, no GPU)
TUNING_FILE = "tuning.json"  # per tuned pair: the params chosen and how each validation seed alone ranks them
# a cell with one of these statuses is finished and never run again; "skipped" cells
# (missing data or device) run again once the data or device is there
FINISHED = ("ok", "failed", "timed-out")
SYNC_INTERVAL_S = 1.0  # the most a recorded line waits for fsync: what a power cut can lose


class StoreLocked(RuntimeError):
    pass


class WriteFailed(OSError):
    """A results file that could not be written (a full disk, most often), in one line for people: which file, how
    much was to be written, that what was written before is kept. ``harness`` exits 2 with it (:func:`write_failed`)."""

    def __init__(self, message: str, errno_: int | None = None):
        super().__init__(errno_ or errno.EIO, message)
        self.message = message

    def __str__(self) -> str:
        return self.message


def no_space(exc: BaseException) -> bool:
    """Whether ``exc`` (or what caused it: SQLAlchemy's wrapped sqlite3 error, Optuna's StorageInternalError) says
    the disk or the quota is full."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if "disk is full" in str(exc) or "No space left" in str(exc):
            return True
        exc = getattr(exc, "orig", None) or exc.__cause__ or exc.__context__
    return False


def _bytes(size: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size} bytes"


def write_failed(path: Path | str, exc: BaseException, size: int | None = None) -> WriteFailed:
    """The :class:`WriteFailed` of a failed write of ``size`` bytes (None: not known) to ``path``."""
    full = no_space(exc)
    why = "no space left on the device" if full else (getattr(exc, "strerror", None) or " ".join(str(exc).split()))
    needs = f" ({_bytes(size)} to write)" if size else ""
    what = "free some space" if full else "fix that"
    return WriteFailed(f"{path}: cannot write{needs}: {why}; everything written before is kept: {what} and run the "
                       "command again (a run resumes where it stopped)", errno.ENOSPC if full else getattr(exc, "errno", None))


class RunStore:
    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.path = self.folder / RUNS_FILE
        self._lock_file = None
        self._fd: int | None = None  # runs.jsonl, opened for appending at the first append
        self._dirty = False  # written since the last fsync
        self._guard = threading.Lock()  # the fd is closed or replaced only while no fsync runs on it
        self._stop = threading.Event()
        self._syncer: threading.Thread | None = None
        self._size = 0  # of runs.jsonl while it is open for appending: where a failed append is cut back to
        self._sync_error: OSError | None = None  # what the background fsync raised, raised by the next append

    def __enter__(self) -> "RunStore":
        self.folder.mkdir(parents=True, exist_ok=True)
        self._lock_file = lock_folder(self.folder)
        self._stop.clear()
        self._syncer = threading.Thread(target=self._sync_loop, name="runs.jsonl fsync", daemon=True)
        self._syncer.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._syncer is not None:
            self._syncer.join()
            self._syncer = None
        try:
            self._close_file()  # fsyncs what is left
        except OSError as error:
            if exc[0] is None:  # else the error in flight is the one to report
                raise write_failed(self.path, error) from None
        finally:
            if self._lock_file is not None:
                unlock_folder(self._lock_file)
                self._lock_file = None

    def _sync_loop(self) -> None:
        while not self._stop.wait(SYNC_INTERVAL_S):
            try:
                self.sync()
            except OSError as exc:  # a full disk: the next append says so, in the main thread
                self._sync_error = exc
                return

    def sync(self) -> None:
        """Flush what was appended to disk (the background thread does it every :data:`SYNC_INTERVAL_S`)."""
        with self._guard:
            if self._fd is not None and self._dirty:
                self._dirty = False
                os.fsync(self._fd)

    def _close_file(self) -> None:
        try:
            self.sync()
        finally:
            with self._guard:
                if self._fd is not None:
                    os.close(self._fd)
                    self._fd = None

    def append(self, record: dict[str, Any]) -> None:
        """Write one record as one line; in the kernel at once, on disk within :data:`SYNC_INTERVAL_S`."""
        line = (json.dumps(record, sort_keys=False, allow_nan=False) + "\n").encode()
        with self._guard:
            if self._sync_error is not None:
                raise write_failed(self.path, self._sync_error)
            try:
                if self._fd is None:  # a line a crash cut in half goes first (`harness repair` moves it, if run before)
                    cut_partial_line(self.path)
                    self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
                    self._size = os.fstat(self._fd).st_size
                written = os.write(self._fd, line)
                while written < len(line):  # a full disk may take part of a line before it refuses the rest
                    written += os.write(self._fd, line[written:])
            except OSError as exc:
                self._cut_back()
                raise write_failed(self.path, exc, len(line)) from None
            self._size += len(line)
            self._dirty = True

    def _cut_back(self) -> None:
        """Cut runs.jsonl back to its last whole line, after an append that failed partway."""
        if self._fd is not None:
            try:
                os.ftruncate(self._fd, self._size)
            except OSError:
                pass  # the half line is cut by the next run, or moved aside by `harness repair`

    def move_aside(self, superseded: Callable[[dict[str, Any]], bool]) -> int:
        """Move the rows ``superseded`` picks from runs.jsonl to superseded.jsonl; return how many.

        They are appended there (and flushed) before runs.jsonl is replaced without them, so
        a crash in between leaves a row in both files, never in neither. Every other line,
        a damaged one included, is kept byte for byte.
        """
        if not self.path.exists():
            return 0
        kept, gone = [], []
        with open(self.path, "rb") as f:
            for raw in f:
                record = _record(raw)
                (gone if record is not None and superseded(record) else kept).append(raw)
        if gone:
            _append_raw(self.folder / SUPERSEDED_FILE, b"".join(gone))
            self._close_file()  # an open descriptor would go on appending to the replaced file
            write_atomic(self.path, b"".join(kept))
        return len(gone)

    def repair(self) -> list[int]:
        """Move runs.jsonl's damaged lines to damaged.jsonl; return their line numbers.

        Only ``harness repair`` calls this: a run reports damaged lines and leaves them. As
        in :meth:`move_aside`, the lines reach damaged.jsonl before runs.jsonl is replaced. A damaged line is
        one that is not JSON, not a cell record, or a row whose fields do not fit the row schema (:func:`row_problem`),
        and a last line that a crash cut in half (no newline; a run cuts it off before its first append): each is
        moved byte for byte, the cut one given the newline it lacks.
        """
        if not self.path.exists():
            return []
        kept, damaged, numbers = [], [], []
        with open(self.path, "rb") as f:
            for number, raw in enumerate(f, start=1):
                if not raw.endswith(b"\n") or _record(raw) is None:
                    damaged.append(raw if raw.endswith(b"\n") else raw + b"\n")
                    numbers.append(number)
                else:
                    kept.append(raw)
        if damaged:
            _append_raw(self.folder / DAMAGED_FILE, b"".join(damaged))
            self._close_file()
            write_atomic(self.path, b"".join(kept))
        return numbers


def _record(raw: bytes) -> dict[str, Any] | None:
    """The row of a line, or None where it is not a valid one (:func:`row_problem`)."""
    return checked_record(raw)[0]


def checked_record(raw: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """(the row, None) for a line that holds a valid row (:func:`_cell_decoder`'s schema, the one every reader
    checks), else (None, what is wrong, in words). A null metric is left out of the row's ``metrics``: a metric
    recorded as null is missing, as in :func:`read_cells`."""
    import msgspec

    try:
        record = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None, NOT_A_RECORD
    try:
        _cell_decoder().decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        return None, row_problem(record, exc)
    metrics = record.get("metrics")
    if metrics and None in metrics.values():
        record["metrics"] = {name: value for name, value in metrics.items() if value is not None}
    return record, None


def lock_folder(folder: Path):
    """Take the results folder's lock (its ``.lock`` file) or raise :class:`StoreLocked`; returns the open file."""
    handle = open(Path(folder) / ".lock", "w")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise StoreLocked(f"another `harness run` is writing to {folder}; wait for it or use another --out") from None
    return handle


def unlock_folder(handle) -> None:
    fcntl.flock(handle, fcntl.LOCK_UN)
    handle.close()


def cut_partial_line(path: Path) -> None:
    """Drop the last line of an append-only file when a crash cut it in half (it has no newline)."""
    if not path.exists() or path.stat().st_size == 0:
        return
    with open(path, "rb+") as f:
        f.seek(-1, os.SEEK_END)
        if f.read(1) == b"\n":
            return
        f.seek(0)
        f.truncate(f.read().rfind(b"\n") + 1)


def _append_raw(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        size = os.fstat(fd).st_size
        try:
            written = os.write(fd, data)
            while written < len(data):
                written += os.write(fd, data[written:])
            os.fsync(fd)
        except OSError as exc:
            try:
                os.ftruncate(fd, size)  # the lines stay in the file they came from: none is lost or doubled
            except OSError:
                pass
            raise write_failed(path, exc, len(data)) from None
    finally:
        os.close(fd)


def write_atomic(path: Path, content: str | bytes) -> None:
    """Write a whole file or nothing: a reader never sees a half-written leaderboard."""
    tmp = path.with_name(f".{path.name}.tmp")
    data = content.encode("utf-8") if isinstance(content, str) else content
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as exc:  # a full disk: the file as it was stays, and no half-written copy beside it
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        if no_space(exc):
            raise write_failed(path, exc, len(data)) from None
        raise


def write_skipped_datasets(folder: Path, skipped: list[dict[str, str]]) -> None:
    """``folder/skipped.json``: ``[{"dataset": id, "reason": text}]``, the datasets the latest run left out.

    Rewritten by every run (an empty list when it left none out): a dataset skipped before
    planning has no cell, so no row of runs.jsonl can say why it is missing.
    """
    rows = [{"dataset": s["dataset"], "reason": s["reason"]} for s in skipped]
    write_atomic(Path(folder) / SKIPPED_DATASETS_FILE, json.dumps(rows, indent=1, ensure_ascii=False) + "\n")


def read_skipped_datasets(folder: Path) -> list[dict[str, str]]:
    """The datasets the latest run left out; none for a folder written before runs recorded them."""
    path = Path(folder) / SKIPPED_DATASETS_FILE
    if not path.exists():
        return []
    return [{"dataset": str(s["dataset"]), "reason": str(s["reason"])} for s in json.loads(path.read_text(encoding="utf-8"))]


def write_tuning_summaries(folder: Path, summaries: list[dict[str, Any]],
                           failed: list[tuple[str, str]] | tuple = ()) -> None:
    """Merge this run's tuning summaries (:meth:`harness.tuning.StudyRun.summary`) into ``folder/tuning.json``.

    One entry per (dataset, method): a pair tuned again replaces its entry where it stood, a new
    pair is added at the end, a pair in ``failed`` (tuned again, no trial completed) loses its
    entry, and the others (pairs whose params earlier runs froze) are kept.
    """
    fresh, gone = {(s["dataset"], s["method"]): s for s in summaries}, set(failed)
    kept = [fresh.pop((e["dataset"], e["method"]), e) for e in read_tuning_summaries(folder)
            if (e["dataset"], e["method"]) not in gone]
    text = json.dumps(kept + list(fresh.values()), indent=1, ensure_ascii=False, allow_nan=False)
    write_atomic(Path(folder) / TUNING_FILE, text + "\n")


def read_tuning_summaries(folder: Path) -> list[dict[str, Any]]:
    """The tuning summaries of ``folder/tuning.json``; none for a folder written before runs recorded them."""
    path = Path(folder) / TUNING_FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else []


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


def _cell_decoder(extra: tuple[str, ...] = ()):
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


# the longest strings that every row repeats: one object per distinct value saves 0.35 GB of 1M rows' 1.5 GB, for
# 1.1 s of CPU (the short ones, status, split, kind, task_version, would cost 0.9 s more for 0.2 GB)
_REPEATED_FIELDS = ("dataset", "method", "device", "spec_hash", "git_commit")


def _intern(cells: list, name: str) -> None:
    """Make each cell's string ``name`` the one interned string of its value (``sys.intern``), in C passes (``map``
    of ``attrgetter``, ``intern``, ``setattr``): a million rows hold one string per distinct value, not a million
    strings, and the grouping's hashing and comparisons hit cached hashes. A value that is not a string (None
    where a row lacks the field) is left as it is."""
    import operator
    import sys
    from collections import deque
    from itertools import repeat

    values = list(map(operator.attrgetter(name), cells))
    try:
        deque(map(setattr, cells, repeat(name), map(sys.intern, values)), maxlen=0)
    except TypeError:  # a row without it (None) or with another type: sys.intern takes only str
        shared = [sys.intern(value) if type(value) is str else value for value in values]
        deque(map(setattr, cells, repeat(name), shared), maxlen=0)


def read_cells(folder: Path, extra: tuple[str, ...] = (), intern: bool = False) -> Iterator[Any]:
    """:func:`read_runs` with only the fields a leaderboard, a claim or ``harness check`` reads (and ``extra``: the
    runner adds ``params`` and ``spec``), decoded fast. With ``intern`` (the leaderboard, which keeps every row), the
    long strings every row repeats (:data:`_REPEATED_FIELDS`) are one object per distinct value: 1M rows in 1.17
    GB instead of 1.54 GB, for about 1 s of CPU that a reader streaming the rows (the runner's planning) is spared.

    The same rows in the same order, each a small msgspec Struct instead of a dict (``row["x"]``, ``row.get("x")``):
    the file is decoded 32 MiB at a time by msgspec (the other keys of a row, ``params``, ``traceback``, ..., are
    skipped unread), so a million rows take seconds and a fraction of the memory of their dicts. A damaged line is
    skipped and reported once, with its line number, exactly as :func:`read_runs` does: a chunk that does not decode
    as a whole is decoded again line by line.

    Why msgspec: a 0.2 MB wheel with no dependency; a Struct of the needed fields skips the rest of a line unread
    and takes ``metrics``, ``curves``, ``dataset_params`` of any shape (each task has its own); a line is still a
    line, so a damaged one is found and numbered. pyarrow's JSON reader is a 100+ MB install, infers one schema
    per block (the per-task ``metrics`` and ``curves`` become sparse columns) and fails a whole block on one bad
    line; orjson builds every row's full dict, the memory this replaces.
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
            for name in _REPEATED_FIELDS if intern else ():  # one string object per distinct value
                _intern(cells, name)
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

    decoder = _cell_decoder(tuple(extra))
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
            _drop_null_metrics(cells)
            offset += end
            first += lines
            yield cells, offset, first


def _drop_null_metrics(cells: list) -> None:
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


_known_yaml: dict[str, bytes] = {}  # text this process wrote or read (remember_yaml) → its value, pickled
_KNOWN_YAML_TEXTS = 4


def load_yaml(text: str) -> Any:
    """``yaml.safe_load`` through libyaml where PyYAML has it: a 16,667-dataset spec.yaml in 1 s instead of 11 s.

    A text this process has just written or read (:func:`remember_yaml`: the runner's ``spec.yaml``, which the
    leaderboard reads back) is not parsed again: its value is a copy of the remembered one (a 10,000-dataset
    spec.yaml: 0.66 s of PyYAML's Python constructor, 20 ms here)."""
    import pickle

    import yaml

    known = _known_yaml.get(text)
    if known is not None:
        return pickle.loads(known)
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def remember_yaml(text: str, value: Any) -> None:
    """Let :func:`load_yaml` answer ``text`` with a copy of ``value`` (what ``text`` parses to: the caller has just
    dumped ``value`` to it, or parsed it), for the few most recent texts."""
    import pickle

    remember_yaml_pickled(text, pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))


def remember_yaml_pickled(text: str, pickled: bytes) -> None:
    """:func:`remember_yaml` with the value already pickled (as :mod:`harness.columns` saves a spec.yaml)."""
    _known_yaml.pop(text, None)
    _known_yaml[text] = pickled
    while len(_known_yaml) > _KNOWN_YAML_TEXTS:
        del _known_yaml[next(iter(_known_yaml))]


class CellRows(list):
    """A results folder's current rows (a list), with a ``memo`` for what its readers derive from them once: the
    claims of a folder index its rows by method once (:func:`harness.claims.paired_cells`), not once per claim."""

    def __init__(self, rows=()):
        super().__init__(rows)
        self.memo: dict[str, Any] = {}


def newest_code_only(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows whose code (task, dataset and method fingerprints) is that of the method's newest row.

    A leaderboard never mixes two versions of a method's code: when a method changed and
    only some of its cells ran again (a ``--seeds`` subset), its older rows drop out.
    """
    methods, codes = column(rows, "method"), column(rows, "code")
    newest = dict(zip(methods, codes))  # in the order written: the last one wins
    # read_cells shares one code object among the rows that have it: mostly an identity test
    return [row for row, method, code in zip(rows, methods, codes)
            if code is newest[method] or code == newest[method]]


def column(rows: list, name: str) -> list:
    """Every row's ``name`` (None where a row lacks it), for a list of :func:`read_cells` Structs or of dicts: a
    C call per Struct (``operator.attrgetter``), not a Python method call (a million rows: 0.1 s, not 1 s).
    :func:`harness.columns.column` takes :class:`harness.columns.ColumnRows` too."""
    import operator

    if not rows or isinstance(rows[0], dict):
        return [row.get(name) for row in rows]
    return list(map(operator.attrgetter(name), rows))


def write_resolved_spec(spec, folder: Path) -> None:
    """``folder/spec.yaml``: the resolved spec (a :class:`harness.spec.model.Spec`) the folder's runs came from, with
    the profile, the spec hash and the selection; not written again when it already says the same."""
    import yaml


    header = (f"# The resolved spec this folder's runs came from: {spec.path}, profile {spec.profile!r},\n"
              f"# with the command line's overrides applied. spec_hash: {spec.spec_hash}\n")
    body = {"profile": spec.profile, "source": str(spec.path), "spec_hash": spec.spec_hash,
            "selection": {"datasets": [d.id for d in spec.datasets], "methods": [m.id for m in spec.methods],
                          "seeds": spec.seeds},
            "spec": spec.resolved}
    path = folder / "spec.yaml"
    if path.exists():  # the same spec again: libyaml reads it back far faster than PyYAML's emitter writes it
        try:
            text = path.read_text(encoding="utf-8")
            if load_yaml(text) == body:
                remember_yaml(text, body)  # the leaderboard reads it next
                return
        except (yaml.YAMLError, UnicodeDecodeError):
            pass  # damaged: written again
    text = header + dump_yaml(body)
    write_atomic(path, text)
    remember_yaml(text, body)


def dump_yaml(body: Any) -> str:
    """``body`` as PyYAML's safe emitter writes it, through libyaml's where that gives the same text.

    libyaml writes every character outside the Basic Multilingual Plane (𝒳, an emoji) as an escape,
    where the pure-Python emitter writes it as it is: a spec with one is written by the latter. For a
    10,000-dataset spec the C emitter takes 0.1 s where the Python one took 1.3 s.
    """
    import json
    import re

    import yaml

    dumper = getattr(yaml, "CSafeDumper", None)
    if dumper is None or re.search("[\U00010000-\U0010FFFF]", json.dumps(body, ensure_ascii=False)):
        dumper = yaml.SafeDumper
    return yaml.dump(body, Dumper=dumper, sort_keys=False, allow_unicode=True)
