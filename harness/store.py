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
from typing import Any, Callable

from harness.runs_file import DAMAGED_FILE, RUNS_FILE, checked_record

SUPERSEDED_FILE = "superseded.jsonl"  # rows a newer version of the code replaced: kept, never shown
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
                record = checked_record(raw)[0]
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
                if not raw.endswith(b"\n") or checked_record(raw)[0] is None:
                    damaged.append(raw if raw.endswith(b"\n") else raw + b"\n")
                    numbers.append(number)
                else:
                    kept.append(raw)
        if damaged:
            _append_raw(self.folder / DAMAGED_FILE, b"".join(damaged))
            self._close_file()
            write_atomic(self.path, b"".join(kept))
        return numbers


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


def write_if_changed(path: Path, content: str | bytes) -> None:
    """:func:`write_atomic`, unless the file already holds exactly these bytes (a run with nothing new rewrote,
    and flushed to the disk, the same small tables every time)."""
    data = content.encode("utf-8") if isinstance(content, str) else content
    try:
        if os.stat(path).st_size == len(data) and Path(path).read_bytes() == data:
            return
    except OSError:
        pass  # no such file yet, or unreadable: written
    write_atomic(path, data)


def write_skipped_datasets(folder: Path, skipped: list[dict[str, str]]) -> None:
    """``folder/skipped.json``: ``[{"dataset": id, "reason": text}]``, the datasets the latest run left out.

    Rewritten by every run (an empty list when it left none out): a dataset skipped before
    planning has no cell, so no row of runs.jsonl can say why it is missing.
    """
    rows = [{"dataset": s["dataset"], "reason": s["reason"]} for s in skipped]
    write_if_changed(Path(folder) / SKIPPED_DATASETS_FILE, json.dumps(rows, indent=1, ensure_ascii=False) + "\n")


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

    _known_yaml.pop(text, None)
    _known_yaml[text] = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    while len(_known_yaml) > _KNOWN_YAML_TEXTS:
        del _known_yaml[next(iter(_known_yaml))]


def write_resolved_spec(spec, folder: Path) -> None:
    """``folder/spec.yaml``: the resolved spec (a :class:`harness.spec.model.Spec`) the folder's runs came from, with
    the profile, the spec hash and the selection; not written again when it already says the same."""
    import yaml

    header = (f"# The resolved spec this folder's runs came from: {spec.path}, profile {spec.profile!r},\n"
              f"# with the command line's overrides applied. spec_hash: {spec.spec_hash}\n")
    body = resolved_spec_body(spec)
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


def resolved_spec_body(spec) -> dict[str, Any]:
    """What ``spec.yaml`` says (below its comment header): :func:`write_resolved_spec`'s value."""
    return {"profile": spec.profile, "source": str(spec.path), "spec_hash": spec.spec_hash,
            "selection": {"datasets": [d.id for d in spec.datasets], "methods": [m.id for m in spec.methods],
                          "seeds": spec.seeds},
            "spec": spec.resolved}


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


RESOLVED_SPEC = "spec.yaml"  # the cache's kind of entry: a spec.yaml text known to say a resolved spec


def write_resolved_spec_when_changed(spec, folder: Path) -> None:
    """:func:`harness.store.write_resolved_spec`, unless ``folder/spec.yaml`` is a text already found to say the same.

    Reading spec.yaml back to compare it imported PyYAML in every run: a digest of its bytes and of what it must
    say (as JSON, which tells every value's type; a spec JSON cannot hold is compared as before), with the engine's
    source and the installed packages (PyYAML's reader), is kept in the cache once they were found equal.
    """
    import json

    from harness.cache import digest, engine_digest, environment_digest, get, put

    def key() -> str | None:
        try:
            return digest(engine_digest(), environment_digest(), body, (folder / "spec.yaml").read_bytes())
        except OSError:  # no spec.yaml yet
            return None

    try:
        body = json.dumps(resolved_spec_body(spec), sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):
        body = None
    if body is not None and (found := key()) is not None and get(RESOLVED_SPEC, found) is True:
        return
    write_resolved_spec(spec, folder)
    if body is not None and (found := key()) is not None:
        put(RESOLVED_SPEC, found, True)
