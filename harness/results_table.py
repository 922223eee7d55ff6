"""A results folder's rows as one table: a pandas DataFrame, cached beside ``runs.jsonl`` as Parquet.

Every reader of a folder's results (the leaderboard's grouping, the claims, ``harness check``,
:func:`harness.read_results`) reads this table; ``runs.jsonl`` stays the append-only source of truth.

- :func:`read_table`: every complete row of ``runs.jsonl`` in the order written, one row per line;
- :func:`current_cells`: the rows a leaderboard shows (the newest row per cell of the spec's hash and code);
- :func:`texts`, :func:`metric_values`, :func:`decoded`: a column as Python values (None where a row lacks it).

Columns: each text field (:data:`TEXT_FIELDS`) is a pandas Categorical (categories in order of first appearance,
NaN where a row lacks the field), ``seed`` an int64; ``code``, ``versions`` and ``dataset_params`` Categoricals of
their raw JSON text (a few distinct values over many rows, decoded once each by :func:`decoded`); each metric a
float64 column ``metric.<name>`` (NaN: the row lacks it or recorded null), with a bool column ``integer.<name>``
where some row recorded it as an integer (so ``3 - 1`` is given back as ``2``, not ``2.0``); ``curves`` the
row's curves (a dict, or None).

The table is saved as :data:`CACHE` (Parquet, readable by pandas, polars or DuckDB) once ``runs.jsonl`` is
:data:`CACHE_MIN_BYTES` or more, with what it was built from in its metadata; the next read takes it and decodes
only the lines appended since. It is used only while ``runs.jsonl`` is the file it was built from, unchanged (its
inode, size and time) or only grown: a file rewritten in place at the same size is read afresh, and so is one
whose bytes before the saved end differ in one of 33 samples (``harness repair``, a superseded row moved aside and
a merge write a new file, with every line after the first change shifted, the last sample included). A damaged
line is reported with its number every time, as :func:`harness.runs_file.read_runs` does.

Why Parquet and not the pickle this replaced: a file other tools read, columns loaded without Python objects per
row; a million rows load in about 0.5 s (the pickle took 0.1 s) and take 54 MB on disk (the pickle 114 MB).
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from harness.devices import device_class, several_classes

CACHE = ".runs.parquet"
CACHE_MIN_BYTES = 64 << 20  # a smaller runs.jsonl is decoded in well under a second: no file to keep
PARALLEL_MIN_BYTES = 256 << 20  # less is decoded by this process alone: starting others would cost what they save
_FORMAT = "1"  # of the saved file; a saved table of another format is built again
TEXT_FIELDS = ("status", "dataset", "method", "split", "spec_hash", "device", "kind", "git_commit", "task_version",
               "error")
RAW_FIELDS = ("code", "versions", "dataset_params")  # raw JSON text: compared, decoded once per distinct value
CATEGORIES = (*TEXT_FIELDS, *RAW_FIELDS)
METRIC, INTEGER = "metric.", "integer."  # column prefixes: a metric's values; whether a row recorded an integer
NO_CLASS = "\0"  # the device class key of a row without one, while picking the current cells
_SAMPLES, _SAMPLE_BYTES = 32, 4096  # the covered bytes compared before a saved table is used
_META = b"harness"  # the Parquet metadata key of what the saved table was built from
_OLD_CACHE = ".runs.columns"  # the pickled columns that versions before this table kept beside runs.jsonl
_SPEC = b"harness.spec"  # and of the folder's spec.yaml parsed (JSON), kept apart: the state is read first


def empty_table():
    """A table of no rows, with every field's column."""
    import numpy as np
    import pandas as pd

    data = {name: pd.Categorical([]) for name in CATEGORIES}
    data["seed"] = np.empty(0, dtype=np.int64)
    data["curves"] = np.empty(0, dtype=object)
    return pd.DataFrame(data)


def table_of_cells(cells: list):
    """The table of decoded rows (:func:`harness.runs_file.decoded_chunks`' Structs, shared fields still raw)."""
    import itertools
    import operator

    import numpy as np
    import pandas as pd

    if not cells:
        return empty_table()
    size = len(cells)
    data: dict[str, Any] = {}
    for name in CATEGORIES:
        found = list(map(operator.attrgetter(name), cells))
        if name in RAW_FIELDS:  # msgspec.Raw: its bytes hashed, only the distinct ones made text
            found = [None if raw is None else bytes(raw) for raw in found] if None in found else list(map(bytes, found))
        data[name] = _categorical(found, bytes.decode if name in RAW_FIELDS else None)
    seeds = list(map(operator.attrgetter("seed"), cells))
    try:
        data["seed"] = np.array(seeds, dtype=np.int64)
    except OverflowError:  # a seed beyond int64: kept as Python ints (such a table is not saved)
        data["seed"] = np.array(seeds, dtype=object)
    curves = np.empty(size, dtype=object)
    curves[:] = list(map(operator.attrgetter("curves"), cells))
    data["curves"] = curves
    metrics = [found or {} for found in map(operator.attrgetter("metrics"), cells)]
    for name in dict.fromkeys(itertools.chain.from_iterable(metrics)):
        values = list(map(dict.get, metrics, [name] * size))
        kinds = set(map(type, values))
        if int in kinds:
            data[INTEGER + name] = np.array([type(value) is int for value in values], dtype=bool)
        data[METRIC + name] = np.array(values, dtype=float)  # None (a row without it): NaN
    return pd.DataFrame(data)


def table_of_rows(rows: list[dict]):
    """The table of rows held in memory (dicts as :func:`harness.runs_file.read_runs` yields them; ``key`` and
    ``split`` default to "" and "test"), each checked against the row schema as a line of runs.jsonl is: for a
    comparison built in Python (a notebook, a test) that a claim or a board then reads."""
    import msgspec

    from harness.runs_file import cell_decoder, drop_null_metrics, row_problem

    decoder, cells = cell_decoder(), []
    for at, row in enumerate(rows):
        record = {"key": "", "split": "test", **row}
        try:
            cells.append(decoder.decode(msgspec.json.encode(record)))
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise ValueError(f"row {at}: {row_problem(record, exc)}") from None
    drop_null_metrics(cells)  # a metric recorded as null is missing, as in runs.jsonl
    return table_of_cells(cells)


def _categorical(values: list, convert=None):
    """A Categorical of ``values`` (strings, or bytes made strings by ``convert``; None: missing), its categories
    in order of first appearance."""
    import numpy as np
    import pandas as pd

    array = np.empty(len(values), dtype=object)
    array[:] = values
    codes, uniques = pd.factorize(array, use_na_sentinel=True)
    uniques = list(uniques) if convert is None else list(map(convert, uniques))
    return pd.Categorical.from_codes(codes, categories=pd.Index(uniques, dtype=object))


def concat_tables(tables: list):
    """The rows of ``tables`` one after another: each field's categories joined, a metric a table lacks NaN."""
    import numpy as np
    import pandas as pd
    from pandas.api.types import union_categoricals

    tables = [t for t in tables if len(t)] or tables[:1]
    if len(tables) == 1:
        return tables[0].reset_index(drop=True)
    names = list(dict.fromkeys(name for t in tables for name in t.columns))
    data: dict[str, Any] = {}
    for name in names:
        if name in CATEGORIES:
            data[name] = union_categoricals([pd.Categorical(t[name]) for t in tables])
        elif name.startswith(INTEGER):
            data[name] = np.concatenate([t[name].to_numpy() if name in t else np.zeros(len(t), dtype=bool)
                                         for t in tables])
        elif name.startswith(METRIC):
            data[name] = np.concatenate([t[name].to_numpy() if name in t else np.full(len(t), np.nan)
                                         for t in tables])
        else:
            data[name] = np.concatenate([t[name].to_numpy() for t in tables])
    return pd.DataFrame(data)


def read_table(folder: Path, spec_text: str | None = None):
    """Every complete row of ``folder/runs.jsonl`` as a table (no rows without one), from the saved table and the
    lines appended since.

    ``spec_text``, the folder's ``spec.yaml``, is saved parsed beside the table: where the saved one is of the same
    text, :func:`harness.store.load_yaml` then answers it without parsing (a 16,667-dataset spec.yaml: 0.6 s)."""
    from harness.store import remember_yaml

    table, spec = read_table_and_spec(folder, spec_text)
    if spec is not None:
        remember_yaml(spec_text, spec)
    return table


def read_table_and_spec(folder: Path, spec_text: str | None = None):
    """:func:`read_table`, and ``spec_text`` parsed where that came with it (the saved table's copy, or the parse
    made to save it: a value of its own, for the caller to change), else None."""
    import hashlib

    from harness.runs_file import RUNS_FILE, report_damaged
    from harness.store import load_yaml

    folder = Path(folder)
    path = folder / RUNS_FILE
    if not path.exists():
        return empty_table(), None
    digest = None if spec_text is None else hashlib.sha256(spec_text.encode()).hexdigest()
    saved = _load(folder, path)
    offset, line, damaged, parts, spec = 0, 1, [], [], None
    if saved is not None:
        table, state = saved
        parts, offset, line, damaged = [table], state["offset"], state["line"], [tuple(d) for d in state["damaged"]]
        for number, problem in damaged:
            report_damaged(path, number, problem)
        if digest is not None and state.get("spec_digest") == digest and state["spec"]:
            spec = json.loads(state["spec"])
    start = offset
    new, offset, line = _decoded(path, start, line, damaged)
    table = concat_tables(parts + new) if parts or new else empty_table()
    if offset != start and os.stat(path).st_size >= CACHE_MIN_BYTES:
        if spec_text is not None and spec is None:  # parsed once, for the file and for the caller
            spec = load_yaml(spec_text)
        _save(folder, path, table, {"offset": offset, "line": line, "damaged": damaged, "spec_digest": digest,
                                    "spec": None if spec is None else json.dumps(spec)})
    return table, spec


def _decoded(path: Path, start: int, first: int, damaged: list) -> tuple[list, int, int]:
    """The tables of the lines from byte ``start`` (line number ``first``) on, in parts, with the byte offset and
    line number after the last complete line.

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
    return _chunk_tables(path, start, first, damaged)


def _cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _chunk_tables(path: Path, start: int, first: int, damaged: list, stop: int | None = None,
                  report: bool = True) -> tuple[list, int, int]:
    """The table of each 32 MiB chunk of the lines from byte ``start`` (line ``first``) to ``stop``, with the
    offset and line number after the last complete line."""
    import gc

    from harness.runs_file import decoded_chunks

    parts, offset, line = [], start, first
    collecting = gc.isenabled()
    gc.disable()  # a million new containers would start as many collections; the Structs hold no cycle
    try:
        for cells, offset, line in decoded_chunks(path, start=start, first=first, damaged=damaged, stop=stop,
                                                  report=report):
            parts.append(table_of_cells(cells))
    finally:
        if collecting:
            gc.enable()
    return parts, offset, line


def _decoded_in_processes(path: Path, start: int, first: int, damaged: list, workers: int) -> tuple[list, int, int]:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from harness.runs_file import report_damaged

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
        results = list(pool.map(range_table, [str(path)] * len(ranges), *zip(*ranges)))
    parts, offset, line = [], start, first
    for part, end, lines, bad in results:
        for number, problem in bad:  # numbered within the range: in the file, line + number - 1
            report_damaged(path, line + number - 1, problem)
            damaged.append((line + number - 1, problem))
        parts.append(part)
        offset, line = end, line + lines
    return parts, offset, line


def range_table(path: str, start: int, stop: int) -> tuple[Any, int, int, list]:
    """The table of the complete lines of ``path`` between bytes ``start`` and ``stop`` (each a line's start, or
    the end), in a process of :func:`_decoded`'s: (the table; the byte offset after the last complete line; the
    number of lines; the damaged lines' (number, what is wrong), numbered from 1 in the range)."""
    damaged: list = []
    parts, offset, line = _chunk_tables(Path(path), start, 1, damaged, stop, report=False)
    return concat_tables(parts or [empty_table()]), offset, line - 1, damaged


def _samples(path: Path, offset: int) -> list[str]:
    """Blocks of ``path``'s first ``offset`` bytes, spread over them (as hex digests): a rewritten file (a line
    removed or changed anywhere before the last block) differs in one of them."""
    import hashlib

    with open(path, "rb") as f:
        blocks = []
        for k in range(_SAMPLES):
            f.seek(offset * k // _SAMPLES)
            blocks.append(hashlib.sha256(f.read(min(_SAMPLE_BYTES, offset))).hexdigest())
        f.seek(max(0, offset - _SAMPLE_BYTES))
        blocks.append(hashlib.sha256(f.read(min(_SAMPLE_BYTES, offset))).hexdigest())
    return blocks


def _load(folder: Path, path: Path):
    """The saved (table, state), if it is this version's and of ``runs.jsonl`` as it is (or only grown); else None,
    and a stale file is removed (a folder that shrank below :data:`CACHE_MIN_BYTES` would keep one otherwise)."""
    cache = folder / CACHE
    if not cache.exists():
        return None
    try:
        import pandas as pd
        import pyarrow.parquet as pq

        with open(cache, "rb") as handle:
            stored = pq.ParquetFile(handle)
            meta = stored.schema_arrow.metadata or {}
            state = json.loads(meta[_META])
            current = _current(state, path)
            arrow = stored.read() if current else None
        if current:
            state["spec"] = meta.get(_SPEC, b"").decode() or None
            table = arrow.to_pandas()
            table["curves"] = _curves(table["curves"], json.loads)  # a row without curves: None
            for name in CATEGORIES:  # categories of Python strings, as built (an all-null field is read back plain)
                column = table[name]
                if isinstance(column.dtype, pd.CategoricalDtype):
                    table[name] = pd.Categorical.from_codes(column.cat.codes.to_numpy(), categories=pd.Index(
                        column.cat.categories.tolist(), dtype=object))
                else:
                    table[name] = _categorical([v if isinstance(v, str) else None for v in column.tolist()])
            return table, state
    except Exception:  # noqa: BLE001 - whatever a damaged or foreign file raises, the table is built again
        pass
    cache.unlink(missing_ok=True)
    return None


def _curves(column, convert):
    """``convert`` of each row's curves (None, or NaN as pandas reads a missing text back: None), in a Python call
    only for the rows that have curves."""
    import numpy as np

    out = np.full(len(column), None, dtype=object)
    present = column.notna().to_numpy()
    if present.any():
        out[present] = [convert(value) for value in column[present].tolist()]
    return out


def _current(state: Any, path: Path) -> bool:
    """Whether a saved table's state is this version's, of ``runs.jsonl`` unchanged or only appended to."""
    if not isinstance(state, dict) or state.get("format") != _FORMAT:
        return False  # written by another version of this module
    now = os.stat(path)
    if [now.st_ino, now.st_size, now.st_mtime_ns] == state["stat"]:
        return True
    if now.st_size == state["stat"][1] or now.st_size < state["offset"]:
        return False  # the same size, other bytes: rewritten in place
    return _samples(path, state["offset"]) == state["samples"]  # else a line removed, added or changed


def _save(folder: Path, path: Path, table, state: dict[str, Any]) -> None:
    """Write the table whole or not at all (a rename), without an fsync: lost, it is only built again."""
    import tempfile

    now = os.stat(path)
    state = {"format": _FORMAT, "stat": [now.st_ino, now.st_size, now.st_mtime_ns],
             "samples": _samples(path, state["offset"]), **state}
    tmp = None
    try:  # a file of its own per writer: two leaderboards built at once never write into one
        import pyarrow as pa
        import pyarrow.parquet as pq

        stored = table.copy(deep=False)
        stored["curves"] = _curves(table["curves"], json.dumps)
        arrow = pa.Table.from_pandas(stored, preserve_index=False)
        spec = state.pop("spec", None)
        arrow = arrow.replace_schema_metadata({**(arrow.schema.metadata or {}), _META: json.dumps(state).encode(),
                                               **({_SPEC: spec.encode()} if spec else {})})
        with tempfile.NamedTemporaryFile(dir=folder, prefix=f"{CACHE}.", suffix=".tmp", delete=False) as f:
            tmp = Path(f.name)
        pq.write_table(arrow, tmp)
        os.chmod(tmp, 0o644)  # as runs.jsonl (a temporary file is the owner's only)
        os.replace(tmp, folder / CACHE)
        (folder / _OLD_CACHE).unlink(missing_ok=True)  # what it replaces: nothing reads that file any more
    except Exception:  # noqa: BLE001 - a read-only or full folder, a seed pyarrow cannot store: read in full next time
        if tmp is not None:
            tmp.unlink(missing_ok=True)


def _per_row(column, values: list, at=None) -> list:
    """Each row's entry of ``values`` (one per category of ``column``), None where a row has none; ``at``: only
    the rows at these positions."""
    import numpy as np

    lookup = np.empty(len(values) + 1, dtype=object)
    lookup[:-1] = values
    lookup[-1] = None  # code -1: the row lacks it
    codes = column.cat.codes.to_numpy()
    return lookup[codes if at is None else codes[at]].tolist()


def texts(table, name: str, at=None) -> list:
    """Every row's ``name`` (a text field, or ``seed``) as Python values, None where a row lacks it; ``at``: only
    the rows at these positions (an index array), without copying the table."""
    column = table[name]
    if name not in CATEGORIES:
        values = column.to_numpy()
        return (values if at is None else values[at]).tolist()
    return _per_row(column, column.cat.categories.tolist(), at)


def used_codes(column):
    """The codes a categorical ``column`` uses, sorted (-1 where a row lacks it): hashed, not sorted, a million
    rows in a few milliseconds."""
    import numpy as np
    import pandas as pd

    return np.sort(pd.unique(column.cat.codes.to_numpy()))


def distinct(table, name: str) -> set:
    """The distinct values of ``name`` (a text field, or ``seed``) over the rows, None where a row lacks it."""
    import pandas as pd

    column = table[name]
    if name not in CATEGORIES:
        return set(pd.unique(column.to_numpy()).tolist())
    categories = column.cat.categories.tolist() + [None]  # code -1: last
    return {categories[code] for code in used_codes(column).tolist()}


def codes_of(table, name: str, wanted) -> list[int]:
    """The codes of category ``name`` whose value is in ``wanted`` (to compare a column's codes, not its texts)."""
    categories = table[name].cat.categories
    if len(wanted) * 8 < len(categories):  # a few of many (a claim's datasets): looked up, not scanned
        try:
            found = categories.get_indexer(list(wanted))
        except TypeError:  # a value that is no category's kind
            found = None
        if found is not None:
            return sorted(int(code) for code in found if code >= 0)
    return [code for code, value in enumerate(categories.tolist()) if value in wanted]


def is_in(table, name: str, wanted):
    """A bool array: whether each row's ``name`` (a text field) is one of ``wanted``."""
    import numpy as np

    codes = table[name].cat.codes.to_numpy()
    found = codes_of(table, name, set(wanted))
    if len(found) > 8:
        return np.isin(codes, found)
    mask = np.zeros(len(codes), dtype=bool)
    for code in found:  # a comparison of small integers each: a million rows in well under a millisecond
        mask |= codes == code
    return mask


def decoded(table, name: str, at=None) -> list:
    """Every row's ``code``, ``versions`` or ``dataset_params`` decoded (equal texts give one shared object);
    ``at`` as in :func:`texts`."""
    import msgspec
    import numpy as np

    column = table[name]
    codes = column.cat.codes.to_numpy()
    used = set(np.unique(codes if at is None else codes[at]).tolist())
    values = [msgspec.json.decode(text) if code in used else None  # only the values these rows hold
              for code, text in enumerate(column.cat.categories.tolist())]
    return _per_row(column, values, at)


def metric_array(table, name: str, at=None):
    """Every row's value of metric ``name`` as float64, NaN where a row lacks it; ``at`` as in :func:`texts`."""
    import numpy as np

    column = METRIC + name
    if column not in table:
        return np.full(len(table) if at is None else len(at), np.nan)
    values = table[column].to_numpy(dtype=float)
    return values if at is None else values[at]


def metric_values(table, name: str, at=None) -> list:
    """Every row's value of metric ``name`` as the row recorded it (an int where it was an integer, else a float);
    None where a row lacks it; ``at`` as in :func:`texts`."""
    import numpy as np

    found = metric_array(table, name, at)
    values = found.tolist()
    if INTEGER + name in table:
        whole = table[INTEGER + name].to_numpy()
        values = [int(v) if w else v for v, w in zip(values, (whole if at is None else whole[at]).tolist())]
    absent = np.isnan(found)
    if absent.any():
        values = [None if gone else v for v, gone in zip(values, absent.tolist())]
    return values


def metric_names(table) -> list[str]:
    """The metrics some row of the table recorded, in order of first appearance."""
    return [name[len(METRIC):] for name in table.columns if name.startswith(METRIC)]


def classes_apart(table) -> bool:
    """Whether the rows span more than one device class (:func:`harness.devices.device_class`): then a leaderboard
    shows a row per (method, class) and a claim pairs cells only within one class (a GPU's time is never compared
    with a CPU's)."""
    column = table["device"]
    if not several_classes(column.cat.categories.tolist()):  # nor do the rows (most folders: one device)
        return False
    used = used_codes(column)
    return several_classes(column.cat.categories[used[used >= 0]].tolist())


def device_classes(table, at=None) -> list:
    """Every row's device class (None where a row has no device); ``at`` as in :func:`texts`."""
    column = table["device"]
    return _per_row(column, [device_class(d) for d in column.cat.categories.tolist()], at)


def select(table, mask):
    """The rows of ``table`` where ``mask``, renumbered from 0 (categories kept)."""
    return table[mask].reset_index(drop=True)


def current_cells(table, spec_hash: str):
    """The rows a leaderboard shows: the test rows of ``spec_hash`` whose code is their method's newest, the last
    row of each (dataset, method, seed) in the place of its first.

    A leaderboard never mixes two versions of a method's code: when a method changed and only some of its cells
    ran again (a ``--seeds`` subset), its older rows drop out. Where the rows span several device classes, the last
    row per dataset, method, seed and device class: each class keeps its own cells; a row without a device (skipped
    before a device was chosen) gives way to its cell's rows on a device. Where every row is current, the table
    itself (not a copy)."""
    import numpy as np
    import pandas as pd

    if not len(table):
        return table
    mask = is_in(table, "spec_hash", (spec_hash,)) & is_in(table, "split", ("test",))
    rows = table if mask.all() else select(table, mask)  # most folders: every row (no copy)
    if not len(rows):
        return rows
    method = rows["method"].cat.codes.to_numpy().astype(np.int64)
    code = rows["code"].cat.codes.to_numpy().astype(np.int64)
    # each method's newest code: that of its last row
    last = np.full(len(rows["method"].cat.categories), -1, dtype=np.int64)
    np.maximum.at(last, method, np.arange(len(method)))
    newest = np.where(last >= 0, code[last], -1)
    same = code == newest[method]
    if not same.all():
        texts_ = rows["code"].cat.categories.tolist() + [None]
        import msgspec

        def value(c: int) -> Any:
            return None if texts_[c] is None else msgspec.json.decode(texts_[c])

        for m, c in {(int(m), int(c)) for m, c in zip(method[~same].tolist(), code[~same].tolist())}:
            if value(c) == value(int(newest[m])):  # another text of an equal code (keys in another order)
                same |= (method == m) & (code == c)
        rows = select(rows, same)
    apart = classes_apart(rows)
    # one number per (dataset, method, seed[, device class]), numbered in order of first appearance
    key = (rows["dataset"].cat.codes.to_numpy().astype(np.int64) * (len(rows["method"].cat.categories) + 1)
           + rows["method"].cat.codes.to_numpy())
    for part in ([rows["seed"].to_numpy()] + ([[NO_CLASS if c is None else c for c in device_classes(rows)]]
                                             if apart else [])):
        codes, uniques = pd.factorize(np.asarray(part, dtype=object) if isinstance(part, list) else part)
        key, _ = pd.factorize(key * len(uniques) + codes)  # renumbered: the product stays small
    last = np.full(key.max() + 1 if len(key) else 0, -1, dtype=np.int64)
    np.maximum.at(last, key, np.arange(len(key)))  # each key's last row, keys in order of their first
    if len(last) != len(rows) or (last != np.arange(len(rows))).any():  # else every row is its cell's last
        rows = rows.take(last).reset_index(drop=True)
    if apart:  # a row without a device gives way to its cell's rows on a device
        classless = np.array([c is None for c in device_classes(rows)], dtype=bool)
        cell = pd.MultiIndex.from_arrays([rows["dataset"].cat.codes, rows["method"].cat.codes, rows["seed"]])
        rows = select(rows, ~(classless & cell.isin(cell[~classless])))
    return rows

