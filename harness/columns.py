"""A results folder's rows as columns, kept beside ``runs.jsonl`` so a million rows are read in a fraction of a second.

Decoding ``runs.jsonl`` is most of a large leaderboard's cost (a million rows: 6 s of msgspec and Python, most of it
building a Struct and a metrics dict per row), and every rebuild paid it again for rows that have not changed. Here
the rows are read once into columns, numpy arrays and small tables:

- each text field (``status``, ``dataset``, ``method``, ``seed``, ...) and each of ``code``, ``versions``,
  ``dataset_params`` is a category: an int32 code per row and the table of its distinct values;
- each metric is a float64 column, nan where a row lacks it.

The columns are saved beside ``runs.jsonl`` (:data:`SIDECAR`, a pickle this harness writes and reads back, never
a file from elsewhere; git ignores it under ``results/``) once the file is :data:`SIDECAR_MIN_BYTES` or more,
with the folder's ``spec.yaml`` parsed. The next read takes them and decodes only the lines appended since (or,
where a row could not be a column, goes straight to reading rows). They
are used only while ``runs.jsonl`` is the file they were built from, unchanged (its inode, size and time) or only
grown: a file rewritten in place at the same size is read afresh, and so is one whose bytes before the saved end
differ in one of 33 samples (``harness repair``, a superseded row moved aside and a merge write a new file, with
every line after the first change shifted, the last sample included). A damaged line is reported with its number
every time, as :func:`harness.store.read_cells` does.

Only rows the columns represent exactly are read this way: every metric a float or an integer (kept as one: ``3 - 1``
is printed ``2``, not ``2.0``) of at most 2**53, each text field a string or null and each seed an integer. A folder with any other row gets ``None`` here and is read row by row, as before.
"""
from __future__ import annotations

import itertools
import operator
import os
import pickle
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from harness.devices import several_classes

SIDECAR = ".runs.columns"
SIDECAR_MIN_BYTES = 64 << 20  # a smaller runs.jsonl is decoded in well under a second: no file to keep
PARALLEL_MIN_BYTES = 256 << 20  # less is decoded by this process alone: starting others would cost what they save
_FORMAT = 4  # of the saved file; saved columns of another format are built again
TEXT_FIELDS = ("status", "dataset", "method", "split", "spec_hash", "device", "kind", "git_commit", "task_version",
               "error")
RAW_FIELDS = ("code", "versions", "dataset_params")  # JSON values: a category per distinct text, decoded once
CATEGORIES = (*TEXT_FIELDS, "seed", *RAW_FIELDS)
_SAMPLES, _SAMPLE_BYTES = 32, 4096  # the covered bytes compared before saved columns are used


@dataclass
class Columns:
    """Rows as columns: ``codes[name][i]`` is row *i*'s index into ``values[name]``; ``metrics[name][i]`` its value
    of a metric (nan: the row lacks it)."""

    size: int = 0
    codes: dict[str, Any] = field(default_factory=dict)
    values: dict[str, list] = field(default_factory=dict)
    keys: dict[str, dict] = field(default_factory=dict)  # value (the text, for RAW_FIELDS) → its code
    metrics: dict[str, Any] = field(default_factory=dict)
    integers: dict[str, Any] = field(default_factory=dict)  # metric → bool per row: recorded as an integer
    curves: list | None = None  # each row's curves (None: no row has any)

    def code_of(self, name: str, value: Any) -> int:
        """The code of ``value`` in category ``name`` (a text or seed field); -1 where no row has it."""
        return self.keys[name].get(value, -1)

    def extend(self, chunks: list["Columns"]) -> None:
        """Append the rows of ``chunks``, their categories' codes mapped onto this one's (each column joined once)."""
        import numpy as np

        for name in CATEGORIES:
            table, values = self.keys.setdefault(name, {}), self.values.setdefault(name, [])
            parts = [self.codes[name]] if name in self.codes else []
            for chunk in chunks:
                remap = np.empty(len(chunk.values[name]), dtype=np.int32)
                for code, (key, value) in enumerate(zip(chunk.keys[name], chunk.values[name])):
                    if key not in table:
                        table[key] = len(values)
                        values.append(value)
                    remap[code] = table[key]
                parts.append(remap[chunk.codes[name]])
            self.codes[name] = np.concatenate(parts) if parts else np.empty(0, dtype=np.int32)
        for name in dict.fromkeys([*self.metrics, *(m for chunk in chunks for m in chunk.metrics)]):
            parts = [self.metrics[name] if name in self.metrics else np.full(self.size, np.nan)]
            parts += [chunk.metrics[name] if name in chunk.metrics else np.full(chunk.size, np.nan) for chunk in chunks]
            self.metrics[name] = np.concatenate(parts)
        for name in dict.fromkeys([*self.integers, *(m for chunk in chunks for m in chunk.integers)]):
            parts = [self.integers[name] if name in self.integers else np.zeros(self.size, dtype=bool)]
            parts += [chunk.integers[name] if name in chunk.integers else np.zeros(chunk.size, dtype=bool)
                      for chunk in chunks]
            self.integers[name] = np.concatenate(parts)
        if self.curves is not None or any(chunk.curves is not None for chunk in chunks):
            curves = self.curves if self.curves is not None else [None] * self.size
            for chunk in chunks:
                curves.extend(chunk.curves if chunk.curves is not None else [None] * chunk.size)
            self.curves = curves
        self.size += sum(chunk.size for chunk in chunks)


def from_cells(cells: list) -> Columns | None:
    """The columns of decoded rows (:func:`harness.store.decoded_chunks`, shared fields still raw JSON), or None
    where a row holds what columns cannot give back exactly (see the module's docstring)."""
    import numpy as np

    size = len(cells)
    out = Columns(size=size)
    for name in CATEGORIES:
        found = list(map(operator.attrgetter(name), cells))
        kinds = set(map(type, found))
        if name in RAW_FIELDS:
            if type(None) in kinds:
                found = [None if raw is None else bytes(raw) for raw in found]
            else:
                found = list(map(bytes, found))
        elif not kinds <= ({int} if name == "seed" else {str, type(None)}):
            return None
        first: dict[Any, int] = {}
        # each value's number is the row number of its first row (a C pass); ranked, they are the codes 0, 1, ...
        firsts = np.fromiter(map(first.setdefault, found, itertools.count()), dtype=np.int64, count=size)
        at, codes = np.unique(firsts, return_inverse=True)
        keys = [found[i] for i in at.tolist()]
        out.codes[name] = codes.astype(np.int32)
        out.keys[name] = {key: code for code, key in enumerate(keys)}
        out.values[name] = [_decode(key) for key in keys] if name in RAW_FIELDS else keys
    curves = list(map(operator.attrgetter("curves"), cells))
    out.curves = None if curves.count(None) == size else curves
    metrics = list(map(operator.attrgetter("metrics"), cells))
    if not all(map(isinstance, metrics, itertools.repeat(dict))):
        return None
    for name in dict.fromkeys(itertools.chain.from_iterable(metrics)):
        found = list(map(dict.get, metrics, itertools.repeat(name)))
        kinds = set(map(type, found))
        if kinds - {float, int, type(None)}:
            return None  # a boolean, a text, a list: not given back exactly by a float column
        if int in kinds:  # integers are given back as integers (3 - 1 is printed 2, not 2.0), if a float holds them
            integer = [type(value) is int for value in found]
            if any(abs(value) > 2 ** 53 for value, whole in zip(found, integer) if whole):
                return None
            out.integers[name] = np.array(integer, dtype=bool)
        out.metrics[name] = np.array(found, dtype=float)
    return out


def _decode(text: bytes | None) -> Any:
    import msgspec

    return None if text is None else msgspec.json.decode(text)


def read_columns(folder: Path, spec_text: str | None = None) -> Columns | None:
    """The columns of every complete row of ``folder/runs.jsonl`` (an empty :class:`Columns` without one), from
    the saved columns and the lines appended since; None where a row cannot be a column (read row by row).

    ``spec_text``, the folder's ``spec.yaml``, is saved parsed beside the columns: where the saved one is of the
    same text, :func:`harness.store.load_yaml` then answers it without parsing (a 16,667-dataset spec.yaml: 0.6 s).
    """
    import hashlib

    from harness.store import RUNS_FILE, load_yaml, remember_yaml_pickled, report_damaged

    folder = Path(folder)
    path = folder / RUNS_FILE
    columns = Columns()
    for name in CATEGORIES:
        columns.keys[name], columns.values[name] = {}, []
    if not path.exists():
        return columns
    saved = _load(folder, path)
    offset, line, damaged = 0, 1, []
    digest = None if spec_text is None else hashlib.sha256(spec_text.encode()).hexdigest()
    if saved is not None and saved["columns"] is None:
        return None  # a row before the saved end cannot be a column: no need to decode them all to find it again
    if saved is not None:
        columns, offset, line, damaged = Columns(**saved["columns"]), saved["offset"], saved["line"], saved["damaged"]
        for number, problem in damaged:
            report_damaged(path, number, problem)
        if digest is not None and saved["spec"] is not None and saved["spec"][0] == digest:
            remember_yaml_pickled(spec_text, saved["spec"][1])
    start = offset
    chunks, offset, line = _decoded(path, start, line, damaged)
    if chunks is None:  # the caller reads the rows; a large file remembers it (the rows up to here decide it)
        if os.stat(path).st_size >= SIDECAR_MIN_BYTES:
            _save(folder, path, {"columns": None, "offset": offset, "line": line, "damaged": [], "spec": None})
        return None
    if chunks:
        columns.extend(chunks)
    if offset != start and os.stat(path).st_size >= SIDECAR_MIN_BYTES:
        spec = None
        if spec_text is not None:  # parsed once: the caller's load_yaml of the same text is answered from memory
            spec = (digest, pickle.dumps(load_yaml(spec_text), protocol=pickle.HIGHEST_PROTOCOL))
            remember_yaml_pickled(spec_text, spec[1])
        _save(folder, path, {"columns": {f.name: getattr(columns, f.name) for f in fields(Columns)}, "offset": offset,
                             "line": line, "damaged": damaged, "spec": spec})
    return columns


def _decoded(path: Path, start: int, first: int, damaged: list[tuple[int, str]]) -> tuple[list[Columns] | None, int, int]:
    """The columns of the lines from byte ``start`` (line number ``first``) on, in parts, with the byte offset and
    line number after the last complete line; None for the parts where a row cannot be a column.

    :data:`PARALLEL_MIN_BYTES` or more are split at line ends and decoded by as many processes as there are cores
    (up to 4): a first read of a million rows is mostly msgspec and building columns, which split cleanly.
    Anything that stops the processes (a sandbox without them) leaves it to this process alone."""
    remaining = os.stat(path).st_size - start
    workers = min(4, _cores())
    if workers > 1 and remaining >= PARALLEL_MIN_BYTES:
        try:
            return _decoded_in_processes(path, start, first, damaged, workers)
        except (OSError, RuntimeError):  # BrokenProcessPool is a RuntimeError; damaged lines are added only after
            pass
    return _chunk_columns(path, start, first, damaged)


def _cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _chunk_columns(path: Path, start: int, first: int, damaged: list[tuple[int, str]], stop: int | None = None,
                   report: bool = True) -> tuple[list[Columns] | None, int, int]:
    """The columns of each 32 MiB chunk of the lines from byte ``start`` (line ``first``) to ``stop``, with the
    offset and line number after the last complete line; None (and where it stopped) at a row that cannot be one."""
    from harness.store import decoded_chunks

    chunks, offset, line = [], start, first
    for cells, offset, line in decoded_chunks(path, start=start, first=first, damaged=damaged, stop=stop,
                                              report=report):
        chunk = from_cells(cells)
        if chunk is None:
            return None, offset, line
        chunks.append(chunk)
    return chunks, offset, line


def _decoded_in_processes(path: Path, start: int, first: int, damaged: list[tuple[int, str]],
                          workers: int) -> tuple[list[Columns] | None, int, int]:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from harness.store import report_damaged

    bounds = [start]
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        for k in range(1, workers):
            f.seek(start + (size - start) * k // workers)
            f.readline()  # to the start of the next line
            if bounds[-1] < f.tell() < size:
                bounds.append(f.tell())
    bounds.append(size)
    ranges = list(zip(bounds, bounds[1:]))
    # spawned, not forked: the caller may hold threads (a run's fsync thread) whose locks a fork would copy held;
    # every range in a process of the pool, so a pool that cannot start (a __main__ it cannot import again) says so
    # at once, before this process has decoded anything
    with ProcessPoolExecutor(len(ranges), mp_context=multiprocessing.get_context("spawn")) as pool:
        results = list(pool.map(range_columns, [str(path)] * len(ranges), *zip(*ranges)))
    parts, offset, line = [], start, first
    for part, end, lines, bad in results:
        for number, problem in bad:  # numbered within the range: in the file, line + number - 1
            report_damaged(path, line + number - 1, problem)
            damaged.append((line + number - 1, problem))
        if part is None:
            return None, end, line + lines
        parts.append(part)
        offset, line = end, line + lines
    return parts, offset, line


def range_columns(path: str, start: int, stop: int) -> tuple[Columns | None, int, int, list[tuple[int, str]]]:
    """The columns of the complete lines of ``path`` between bytes ``start`` and ``stop`` (each a line's start, or
    the end), in a process of :func:`_decoded`'s: (the columns, or None where a row cannot be one; the byte offset
    after the last complete line; the number of lines; the damaged lines' (number, what is wrong), numbered from 1
    in the range)."""
    damaged: list[tuple[int, str]] = []
    chunks, offset, line = _chunk_columns(Path(path), start, 1, damaged, stop, report=False)
    if chunks is None:
        return None, offset, line - 1, damaged
    out = Columns()
    for name in CATEGORIES:
        out.keys[name], out.values[name] = {}, []
    out.extend(chunks)
    return out, offset, line - 1, damaged


def _samples(path: Path, offset: int) -> list[bytes]:
    """Blocks of ``path``'s first ``offset`` bytes, spread over them: a rewritten file (a line removed or changed
    anywhere before the last block) differs in one of them."""
    with open(path, "rb") as f:
        blocks = []
        for k in range(_SAMPLES):
            f.seek(offset * k // _SAMPLES)
            blocks.append(f.read(min(_SAMPLE_BYTES, offset)))
        f.seek(max(0, offset - _SAMPLE_BYTES))
        blocks.append(f.read(min(_SAMPLE_BYTES, offset)))
    return blocks


_HEADER = ("format", "stat", "offset", "samples")  # pickled first, so a stale file is known before its columns load


def _load(folder: Path, path: Path) -> dict[str, Any] | None:
    """The saved state, if it is this version's and of ``runs.jsonl`` as it is (or only grown); else None, and a
    stale file is removed (a folder that shrank below :data:`SIDECAR_MIN_BYTES` would keep one otherwise)."""
    sidecar = folder / SIDECAR
    if not sidecar.exists():
        return None
    try:
        with open(sidecar, "rb") as f:
            header = pickle.load(f)
            if _current_header(header, path):
                saved = {**header, **pickle.load(f)}
                if saved["columns"] is None or set(saved["columns"]) == {f.name for f in fields(Columns)}:
                    return saved
    except Exception:  # noqa: BLE001 - whatever a damaged or foreign file raises, the columns are built again
        pass
    sidecar.unlink(missing_ok=True)
    return None


def _current_header(header: Any, path: Path) -> bool:
    """Whether a saved file's header is this version's, of ``runs.jsonl`` unchanged or only appended to."""
    if not isinstance(header, dict) or header.get("format") != _FORMAT:
        return False  # written by another version of this module
    now = os.stat(path)
    if (now.st_ino, now.st_size, now.st_mtime_ns) == header["stat"]:
        return True
    if now.st_size == header["stat"][1] or now.st_size < header["offset"]:
        return False  # the same size, other bytes: rewritten in place
    return _samples(path, header["offset"]) == header["samples"]  # else a line removed, added or changed


def _save(folder: Path, path: Path, state: dict[str, Any]) -> None:
    """Write the columns whole or not at all (a rename), without an fsync: lost, they are only built again."""
    import tempfile

    now = os.stat(path)
    header = {"format": _FORMAT, "stat": (now.st_ino, now.st_size, now.st_mtime_ns), "offset": state["offset"],
              "samples": _samples(path, state["offset"])}
    body = {key: value for key, value in state.items() if key not in _HEADER}
    tmp = None
    try:  # a file of its own per writer: two leaderboards built at once never write into one
        with tempfile.NamedTemporaryFile(dir=folder, prefix=f"{SIDECAR}.", suffix=".tmp", delete=False) as f:
            tmp = Path(f.name)
            f.write(pickle.dumps(header, protocol=pickle.HIGHEST_PROTOCOL))
            f.write(pickle.dumps(body, protocol=pickle.HIGHEST_PROTOCOL))
        os.chmod(tmp, 0o644)  # as runs.jsonl (a temporary file is the owner's only)
        os.replace(tmp, folder / SIDECAR)
    except OSError:  # a read-only or full folder: read in full next time
        if tmp is not None:
            tmp.unlink(missing_ok=True)


class ColumnRows:
    """A folder's current rows (:func:`harness.report.folder.read_folder`) as positions into its :class:`Columns`.

    It stands for the list of rows: ``len``, a row by position and iteration give each row as a dict of the fields
    :func:`harness.store.read_cells` keeps (``key`` aside), and :func:`harness.store.column` and
    :meth:`metric` give a field of every row without building the rows, which is what the leaderboard's grouping,
    its header and the claims (:meth:`narrow`) read. Going through every row builds a dict each (a million rows:
    3 s, where the rows of :func:`harness.store.read_cells` take 0.1 s): a new reader of many rows reads columns."""

    def __init__(self, columns: Columns, index):
        self.columns, self.index = columns, index
        self.memo: dict[str, Any] = {}

    def __len__(self) -> int:
        return len(self.index)

    def column(self, name: str) -> list:
        """Every row's ``name``, as the rows would give it."""
        if name in CATEGORIES:
            return list(map(self.columns.values[name].__getitem__, self.columns.codes[name][self.index].tolist()))
        if name == "metrics":
            return [self._metrics(i) for i in self.index.tolist()]
        if name == "curves" and self.columns.curves is not None:
            return list(map(self.columns.curves.__getitem__, self.index.tolist()))
        return [None] * len(self.index)  # no curves; key (not kept)

    def codes(self, name: str):
        """Every row's code in category ``name`` (:class:`Columns`)."""
        return self.columns.codes[name][self.index]

    def distinct(self, name: str) -> list:
        """The values of category ``name`` that its rows take, without building the column."""
        import numpy as np

        return [self.columns.values[name][code] for code in np.unique(self.codes(name)).tolist()]

    def values_at(self, name: str, positions) -> list:
        """Category ``name``'s value on each row at ``positions`` (indices into these rows)."""
        return list(map(self.columns.values[name].__getitem__, self.columns.codes[name][self.index[positions]].tolist()))

    def metric(self, name: str):
        """Every row's value of metric ``name`` (float64, nan where a row lacks it)."""
        import numpy as np

        found = self.columns.metrics.get(name)
        return np.full(len(self.index), np.nan) if found is None else found[self.index]

    def metric_values(self, name: str, at) -> list:
        """The values of metric ``name`` at positions ``at`` (of these rows) as the rows hold them: a float, or an
        int where the row recorded an integer."""
        found = self.metric(name)[at].tolist()
        integer = self.columns.integers.get(name)
        if integer is None:
            return found
        return [int(value) if whole else value for value, whole in zip(found, integer[self.index[at]].tolist())]

    def narrow(self, fields: tuple[str, ...], metric: str, methods=None, datasets=None,
               measured: bool = False) -> list[list]:
        """Of the rows of ``methods`` and ``datasets`` (None: all), in order: each of ``fields`` as a list, then
        their values of ``metric`` (None where a row lacks it), as :func:`harness.claims.claim_columns` gives them
        from rows. ``measured``: only the ok rows that have the metric."""
        import numpy as np

        columns = self.columns
        keep = np.ones(len(self.index), dtype=bool)
        if measured:
            keep &= (self.codes("status") == columns.code_of("status", "ok")) & ~np.isnan(self.metric(metric))
        for name, allowed in (("method", methods), ("dataset", datasets)):
            if allowed is not None:
                keep &= np.isin(self.codes(name), [code for code in map(columns.keys[name].get, allowed)
                                                   if code is not None])
        view = ColumnRows(columns, self.index[np.flatnonzero(keep)])
        values = view.metric_values(metric, slice(None))
        absent = np.isnan(view.metric(metric))
        if absent.any():  # None where a row lacks it, as a row's metrics.get gives
            values = [None if gone else value for value, gone in zip(values, absent.tolist())]
        return [*(view.column(name) for name in fields), values]

    def _metrics(self, at: int) -> dict[str, float]:
        import math

        columns = self.columns
        out = {}
        for name, values in columns.metrics.items():
            value = float(values[at])
            if not math.isnan(value):
                out[name] = int(value) if name in columns.integers and columns.integers[name][at] else value
        return out

    def _row(self, at: int) -> dict[str, Any]:
        columns = self.columns
        row = {name: columns.values[name][columns.codes[name][at]] for name in CATEGORIES}
        row.update(key=None, metrics=self._metrics(at),
                   curves=None if columns.curves is None else columns.curves[at])
        return row

    def __getitem__(self, position: int) -> dict[str, Any]:
        return self._row(int(self.index[position]))

    def __iter__(self):
        return map(self._row, self.index.tolist())


def current_rows(columns: Columns, spec_hash: str) -> ColumnRows | None:
    """:func:`harness.report.folder.read_folder`'s current rows from columns: the test rows of ``spec_hash`` whose
    code is their method's newest (:func:`harness.store.newest_code_only`), the last row of each (dataset, method,
    seed) in the place of its first; None where the rows span several device classes (read row by row)."""
    import numpy as np

    codes = columns.codes
    if not columns.size:
        return ColumnRows(columns, np.empty(0, dtype=np.int64))
    at = np.flatnonzero((codes["spec_hash"] == columns.code_of("spec_hash", spec_hash))
                        & (codes["split"] == columns.code_of("split", "test")))
    method, code = codes["method"][at], codes["code"][at]
    # each method's newest code: that of its last row
    methods, last = np.unique(method[::-1], return_index=True)
    newest = np.full(len(columns.values["method"]), -1)
    newest[methods] = code[::-1][last]
    same = code == newest[method]
    values = columns.values["code"]
    for m, c in {(int(m), int(c)) for m, c in zip(method[~same].tolist(), code[~same].tolist())}:
        if values[c] == values[newest[m]]:  # another text of an equal code (keys in another order)
            same |= (method == m) & (code == c)
    at = at[same]
    devices = columns.values["device"]
    if several_classes(devices[d] for d in np.unique(codes["device"][at]).tolist()):
        return None
    seeds = len(columns.values["seed"])
    key = ((codes["dataset"][at].astype(np.int64) * len(columns.values["method"]) + codes["method"][at])
           * seeds + codes["seed"][at])
    _, first = np.unique(key, return_index=True)
    _, last = np.unique(key[::-1], return_index=True)
    last = len(key) - 1 - last  # each key's last row, keys in the same (sorted) order as ``first``
    return ColumnRows(columns, at[last[np.argsort(first, kind="stable")]])


def column(rows, name: str) -> list:
    """Every row's ``name`` (None where a row lacks it), for :class:`ColumnRows` (from its columns, no row built)
    or a list of :func:`harness.store.read_cells` Structs or of dicts (:func:`harness.store.column`)."""
    from harness.store import column as row_column

    return rows.column(name) if isinstance(rows, ColumnRows) else row_column(rows, name)


_DEVICE = operator.attrgetter("device")


def classes_apart(rows) -> bool:
    """Whether result rows span more than one device class (:func:`harness.devices.device_class`): then a
    leaderboard shows a row per (method, class) and a claim pairs cells only within one class (a GPU's time is
    never compared with a CPU's). ``rows``: :class:`ColumnRows`, :func:`harness.store.read_cells` Structs or dicts."""
    if isinstance(rows, ColumnRows):  # the distinct devices of its rows
        return several_classes(rows.distinct("device"))
    try:
        devices = set(map(_DEVICE, rows))  # the Structs of harness.store.read_cells: no Python call per row
    except AttributeError:
        devices = {r.get("device") for r in rows}  # dicts
    return several_classes(devices)
