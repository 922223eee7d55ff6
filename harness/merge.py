"""``harness merge OUT DIR...``: one spec's results folders, written on several machines, combined by cell key.

The DIRs may instead be results roots (``results/default``, a folder per spec): :func:`merge_roots` merges
each spec's folders across them into ``OUT/<spec>`` by the rules below.

Every cell is a pure function of its resolved spec (its ``key`` hashes the task, dataset, method,
params, seed, split, profile, requested device and code), so folders that ran different seeds,
methods or datasets of one spec on different machines combine into one folder that reads as if
one run had written it. The rules:

- **One spec, one code.** Every folder's ``spec.yaml`` has the same ``spec_hash`` and profile, and
  for every method the rows a folder shows (its newest code, as the leaderboard reads it) carry the
  same ``code`` fingerprint as every other folder's; otherwise nothing is written (exit 2) and the
  message names the folders and what differs.
- **A key is kept once.** A row whose key, device class (:func:`harness.devices.device_class`) and
  result (status, every metric not read off a clock, curves) equal a row already taken from another
  folder is dropped: the cell was run twice. The same key on two device classes is two results
  (other hardware): both are kept and the leaderboard shows them as separate rows.
- **A conflict stops the merge.** Two folders whose finished rows for one key and device class
  differ in status, a metric not in seconds, or curves: exit 2, naming both files with line numbers
  and the key; nothing is written.
- **Provenance.** Each row taken from a DIR gets ``merged_from``: that DIR as given on the command
  line (a row that already has one, from an earlier merge, keeps it). Rows that OUT already held are
  its own and are left as they are. No field is renamed or dropped.
- **History.** A folder's rows that its leaderboard does not show (an older row of the same cell: a
  failed or timed-out try that a later run retried, a row of an older spec hash or an older version
  of the method's code) are kept, with their provenance, ahead of the shown rows in the merged
  ``runs.jsonl``, so the newest row of each cell is still the one shown; rows of every folder's
  ``superseded.jsonl`` go to OUT's ``superseded.jsonl``. A skipped row (no data, no GPU there) never
  hides a finished row of the same cell from another folder. ``damaged.jsonl`` stays with its folder.

OUT may be new or a results folder of the same spec (then its rows are merged too, never lost).
It gets ``spec.yaml`` (with the union of the folders' selections), ``metrics.json``,
``chance.json``, ``trivial.json``, ``tuning.json``, ``skipped.json``, ``runs.jsonl``, ``superseded.jsonl`` and its
leaderboard, each written atomically, and nothing at all when an input is refused.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.devices import device_class
from harness.metric_tables import CHANCE_TABLE, METRIC_TABLE, TRIVIAL_TABLE
from harness.metrics import WALL_CLOCK_UNITS
from harness.plan import staggered
from harness.spec.model import dataset_entries
from harness.store import (DAMAGED_FILE, FINISHED, RUNS_FILE, SKIPPED_DATASETS_FILE, SUPERSEDED_FILE,
                           TUNING_FILE, checked_record, write_atomic)

MERGED_FROM = "merged_from"
SPEC_FILE = "spec.yaml"
MERGED_HEADER = "# merged by `harness merge` from: "
CONFLICTS_SHOWN = 10  # a message names at most this many conflicting keys, then counts the rest


class MergeError(ValueError):
    """An input the merge refuses (exit 2); nothing was written."""


@dataclass
class Line:
    """One row of a source folder and where it was read."""

    record: dict[str, Any]
    path: Path
    number: int

    @property
    def where(self) -> str:
        return f"{self.path}:{self.number}"

    @property
    def device(self) -> str | None:
        return device_class(self.record.get("device"))


@dataclass
class Source:
    """A results folder to merge, as read (OUT's own, when it exists, comes first)."""

    folder: Path
    is_out: bool
    meta: dict[str, Any]
    spec_text: str
    rows: list[Line]
    superseded: list[Line]
    metrics: dict[str, Any] | None
    chance: dict[str, Any] | None
    trivial: dict[str, Any] | None
    tuning: list[dict[str, Any]]
    skipped: list[dict[str, Any]]

    @property
    def spec_hash(self) -> str:
        return str(self.meta.get("spec_hash"))

    def current_code(self) -> dict[str, tuple[Any, Line]]:
        """Method → (code, the row that says so): the code of its newest test row of this spec hash, as
        :func:`harness.store.newest_code_only` picks it for the leaderboard."""
        code: dict[str, tuple[Any, Line]] = {}
        for line in self.rows:
            r = line.record
            if r.get("spec_hash") == self.spec_hash and r.get("split") == "test":
                code[r["method"]] = (r.get("code"), line)
        return code

    def shown(self) -> set[int]:
        """Indices (into ``rows``) of the rows this folder's leaderboard shows: the newest row of each cell
        (dataset, method, seed, device class) among this spec hash's test rows of the method's newest code."""
        code = {method: c for method, (c, _) in self.current_code().items()}
        latest: dict[tuple, int] = {}
        for i, line in enumerate(self.rows):
            r = line.record
            if r.get("spec_hash") == self.spec_hash and r.get("split") == "test" and r.get("code") == code[r["method"]]:
                latest[(r["dataset"], r["method"], r["seed"], line.device)] = i
        return set(latest.values())


@dataclass
class MergeSummary:
    out: Path
    rows: int = 0  # rows of the merged runs.jsonl
    added: dict[str, int] = field(default_factory=dict)  # DIR → rows taken from it
    kept_once: dict[str, int] = field(default_factory=dict)  # DIR → rows dropped as already there
    device_classes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def merge(out: Path, folders: list[Path]) -> MergeSummary:
    """Merge the results ``folders`` (and OUT's own rows, if it is a results folder) into ``out``.

    Raises :class:`MergeError` for any input it refuses, before writing anything.
    """
    return _write(_prepare(out, folders))


def merge_roots(out: Path, roots: list[Path], found: dict[Path, dict[str, Path]] | None = None) -> list[MergeSummary]:
    """Merge results roots spec by spec: each ``<root>/<spec>`` folder (found as ``harness regress`` finds them)
    goes into ``out/<spec>``, with every root's folder of that name; a spec in only some roots is merged from
    those. Every spec is read and checked before anything is written, so a refusal writes nothing. ``found``: the
    spec folders of roots a caller has already listed, not listed again."""
    out, roots = Path(out), [Path(r) for r in roots]
    if not roots:
        raise MergeError("give at least one results root to merge")
    if _is_results_folder(out):
        raise MergeError(f"{out}: OUT is one spec's results folder, but the inputs are results roots; give a "
                         f"results root as OUT (new, empty, or holding <spec>/ folders), e.g. results/default")
    if out.exists() and not out.is_dir():
        raise MergeError(f"{out}: exists and is not a folder; give a results root as OUT (new, empty, or holding "
                         f"<spec>/ folders)")
    seen: dict[Path, Path] = {}
    for root in roots:
        resolved = root.resolve()
        if resolved in seen:
            raise MergeError(f"{root}: given twice (as {seen[resolved]} and {root}); list each root once")
        if resolved == out.resolve():
            raise MergeError(f"{root} is OUT itself: OUT's own spec folders are always merged; list only the "
                             f"other roots")
        seen[resolved] = root
    by_spec: dict[str, list[Path]] = {}
    for root in roots:
        for name, folder in ((found or {}).get(root) or _spec_folders_of_root(root)).items():
            by_spec.setdefault(name, []).append(folder)
    plans = [_prepare(out / name, folders) for name, folders in sorted(by_spec.items())]
    return [_write(plan) for plan in plans]


def merge_inputs(out: Path, inputs: list[Path]) -> list[MergeSummary]:
    """``harness merge``'s inputs: spec results folders (one merge into ``out``) or results roots
    (:func:`merge_roots`); a mix of the two is refused, naming the first argument of the other kind."""
    from harness.regress import spec_folders

    inputs = [Path(i) for i in inputs]
    found = {i: spec_folders(i) for i in inputs if i.is_dir() and not _is_results_folder(i)}
    roots = [i for i in inputs if found.get(i)]
    if not roots:
        return [merge(out, inputs)]
    other = next((i for i in inputs if i not in roots), None)
    if other is not None:
        if not other.exists():
            raise MergeError(f"{other}: no such folder")
        kind = ("one spec's results folder" if _is_results_folder(other)
                else "neither a spec's results folder (no spec.yaml) nor a results root (no <spec>/spec.yaml)")
        raise MergeError(f"{other}: {kind}, but {roots[0]} is a results root; give only spec results folders "
                         f"(e.g. a/cdfsl b/cdfsl) or only results roots (e.g. a b)")
    return merge_roots(out, inputs, found)


@dataclass
class _Plan:
    """A merge read and checked, ready to write."""

    out: Path
    sources: list[Source]
    summary: MergeSummary
    rows: list[dict]
    superseded: list[dict]
    tuning: list[dict]
    metrics: dict[str, Any] | None
    chance: dict[str, Any] | None
    trivial: dict[str, Any] | None


def _prepare(out: Path, folders: list[Path]) -> _Plan:
    """Read and check OUT (if it is a results folder) and ``folders``: :class:`MergeError` for any refusal."""
    out, folders = Path(out), [Path(f) for f in folders]
    if not folders:
        raise MergeError("give at least one results folder to merge")
    seen: dict[Path, Path] = {}
    for folder in folders:
        resolved = folder.resolve()
        if resolved in seen:
            raise MergeError(f"{folder}: given twice (as {seen[resolved]} and {folder}); list each folder once")
        if resolved == out.resolve():
            raise MergeError(f"{folder} is OUT itself: OUT's own rows are always merged; list only the other folders")
        seen[resolved] = folder
    sources = []
    if _is_results_folder(out):
        sources.append(read_source(out, is_out=True))
    elif out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise MergeError(f"{out}: exists and is not a results folder (no {SPEC_FILE}); give a new folder, an empty "
                         f"one, or a results folder of the same spec as OUT")
    sources += [read_source(folder, is_out=False) for folder in folders]
    _check_same_spec(sources)
    metrics = _merged_table(sources, "metrics", METRIC_TABLE)
    chance = _merged_table(sources, "chance", CHANCE_TABLE)
    trivial = _merged_table(sources, "trivial", TRIVIAL_TABLE)
    _check_same_code(sources)
    clocks = {name for name, m in (metrics or {}).items() if m.get("unit") in WALL_CLOCK_UNITS}
    _check_conflicts(sources, clocks)
    summary = MergeSummary(out)
    history, shown = _combine(sources, clocks, summary)
    rows = history + _in_run_order(shown, sources[0].meta["spec"])
    superseded = _combine_superseded(sources)
    tuning, notes = _merged_tuning(sources)
    summary.notes += notes
    summary.rows = len(rows)
    summary.device_classes = sorted({c for r in rows if (c := device_class(r.get("device")))})
    return _Plan(out, sources, summary, rows, superseded, tuning, metrics, chance, trivial)


def _write(plan: _Plan) -> MergeSummary:
    """Write a checked merge into its OUT, under OUT's lock, and its leaderboard."""
    from harness.store import StoreLocked, lock_folder, unlock_folder

    out, sources, rows, superseded = plan.out, plan.sources, plan.rows, plan.superseded
    metrics, chance, trivial, tuning = plan.metrics, plan.chance, plan.trivial, plan.tuning
    out.mkdir(parents=True, exist_ok=True)
    try:
        lock = lock_folder(out)
    except StoreLocked as exc:
        raise MergeError(str(exc)) from None
    try:
        write_atomic(out / SPEC_FILE, _merged_spec_text(sources, rows))
        if metrics is not None:
            write_atomic(out / METRIC_TABLE, json.dumps(metrics, indent=1, ensure_ascii=False) + "\n")
        if chance is not None:
            write_atomic(out / CHANCE_TABLE, json.dumps(chance, indent=1, ensure_ascii=False) + "\n")
        if trivial is not None:
            write_atomic(out / TRIVIAL_TABLE, json.dumps(trivial, ensure_ascii=False) + "\n")
        write_atomic(out / TUNING_FILE, json.dumps(tuning, indent=1, ensure_ascii=False, allow_nan=False) + "\n")
        write_atomic(out / SKIPPED_DATASETS_FILE, json.dumps(_merged_skipped(sources, rows), indent=1,
                                                             ensure_ascii=False) + "\n")
        if superseded:
            write_atomic(out / SUPERSEDED_FILE, _jsonl(superseded))
        write_atomic(out / RUNS_FILE, _jsonl(rows))
    finally:
        unlock_folder(lock)
    from harness.report.folder import write_leaderboard

    write_leaderboard(out)
    return plan.summary


# --------------------------------------------------------------------------- reading


def _is_results_folder(folder: Path) -> bool:
    return folder.is_dir() and (folder / SPEC_FILE).is_file()


def _spec_folders_of_root(root: Path) -> dict[str, Path]:
    """Spec name → ``root/<spec>``, as ``harness regress`` finds them; :class:`MergeError` if there are none."""
    from harness.regress import spec_folders

    if not root.exists():
        raise MergeError(f"{root}: no such folder")
    if not root.is_dir() or _is_results_folder(root):
        raise MergeError(f"{root}: not a results root (expected a folder holding <spec>/{SPEC_FILE}, e.g. "
                         f"results/default)")
    found = spec_folders(root)
    if not found:
        raise MergeError(f"{root}: not a results root: no <spec>/{SPEC_FILE} in it (expected a folder of spec "
                         f"results folders written by `harness run`, e.g. results/default)")
    return found


def read_source(folder: Path, is_out: bool) -> Source:
    """A results folder, checked line by line; :class:`MergeError` names the file (and line) of any damage."""
    import yaml

    folder = Path(folder)
    role = "OUT" if is_out else "DIR"
    if not folder.exists():
        raise MergeError(f"{folder}: no such folder")
    if not folder.is_dir():
        raise MergeError(f"{folder}: not a folder (expected a spec's results folder, e.g. results/default/cdfsl)")
    spec_path, runs_path = folder / SPEC_FILE, folder / RUNS_FILE
    if not spec_path.is_file():
        also = "" if is_out else ", or a results root holding such folders, e.g. results/default"
        raise MergeError(f"{folder}: not a results folder: no {SPEC_FILE} ({role} must be a spec's results folder "
                         f"written by `harness run`, e.g. results/default/cdfsl{also})")
    try:
        spec_text = spec_path.read_text(encoding="utf-8")
        meta = yaml.safe_load(spec_text)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise MergeError(f"{spec_path}: cannot be read as YAML ({' '.join(str(exc).split())})") from None
    if not isinstance(meta, dict) or not meta.get("spec_hash") or not isinstance(meta.get("spec"), dict):
        raise MergeError(f"{spec_path}: not a results folder's spec.yaml (no spec_hash and resolved spec, as "
                         f"`harness run` writes them)")
    if not runs_path.is_file():
        raise MergeError(f"{folder}: not a results folder: no {RUNS_FILE} beside its {SPEC_FILE}")
    superseded_path = folder / SUPERSEDED_FILE
    return Source(
        folder=folder, is_out=is_out, meta=meta, spec_text=spec_text, rows=_read_lines(runs_path),
        superseded=_read_lines(superseded_path) if superseded_path.is_file() else [],
        metrics=_read_json(folder / METRIC_TABLE, dict), chance=_read_json(folder / CHANCE_TABLE, dict),
        trivial=_read_json(folder / TRIVIAL_TABLE, dict),
        tuning=_read_json(folder / TUNING_FILE, list) or [], skipped=_read_json(folder / SKIPPED_DATASETS_FILE, list) or [],
    )


def _read_lines(path: Path) -> list[Line]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise MergeError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    lines = []
    raws = data.split(b"\n")
    for number, raw in enumerate(raws[:-1], start=1):
        record, problem = checked_record(raw)
        if record is None:
            raise MergeError(f"{path}:{number}: damaged line ({problem}); `harness repair {path.parent}` moves such "
                             f"lines to {DAMAGED_FILE}, then merge again")
        lines.append(Line(record, path, number))
    if raws[-1]:
        raise MergeError(f"{path}:{len(raws)}: the last line is cut off (a run crashed, or is still writing): let "
                         f"`harness run` finish, or resume it (it removes the cut line), then merge again")
    return lines


def _read_json(path: Path, kind: type):
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MergeError(f"{path}: damaged ({' '.join(str(exc).split())}); a new `harness run` of its spec into "
                         f"{path.parent.parent} rewrites it") from None
    if not isinstance(data, kind):
        raise MergeError(f"{path}: expected a JSON {'object' if kind is dict else 'list'}, found {type(data).__name__}")
    return data


# --------------------------------------------------------------------------- checks


def _check_same_spec(sources: list[Source]) -> None:
    first = sources[0]
    for what, get in (("spec_hash", lambda s: s.spec_hash), ("profile", lambda s: str(s.meta.get("profile"))),
                      ("spec name", lambda s: str(s.meta["spec"].get("name")))):
        values = {get(s) for s in sources}
        if len(values) > 1:
            listing = "; ".join(f"{s.folder}: {get(s)}" for s in sources)
            raise MergeError(f"the folders are results of different specs ({what} differs: {listing}); only "
                             f"folders run from one resolved spec at one profile merge: run the others again from "
                             f"{first.folder}'s spec (its spec.yaml names the file) first")


def _merged_table(sources: list[Source], attribute: str, name: str) -> dict[str, Any] | None:
    """The union of the folders' metric (or chance) tables; a name declared differently by two folders is refused."""
    merged: dict[str, Any] = {}
    origin: dict[str, Path] = {}
    found = False
    for source in sources:
        table = getattr(source, attribute)
        if table is None:
            continue
        found = True
        for key, value in table.items():
            if key in merged and merged[key] != value:
                raise MergeError(f"{origin[key] / name} and {source.folder / name} declare {key!r} differently "
                                 f"({json.dumps(merged[key])} against {json.dumps(value)}): these folders were "
                                 f"written by different versions of the task; run the older one again first")
            merged.setdefault(key, value)
            origin.setdefault(key, source.folder)
    if not found:
        return None
    return dict(sorted(merged.items())) if attribute == "metrics" else merged  # metrics.json lists names sorted


def _check_same_code(sources: list[Source]) -> None:
    seen: dict[str, tuple[Any, Source, Line]] = {}
    problems = []
    for source in sources:
        for method, (code, line) in source.current_code().items():
            if method not in seen:
                seen[method] = (code, source, line)
                continue
            other, first, first_line = seen[method]
            if code != other:
                parts = sorted(k for k in set(code or {}) | set(other or {}) if (code or {}).get(k) != (other or {}).get(k))
                changed = ", ".join(f"{k} {(other or {}).get(k)} → {(code or {}).get(k)}" for k in parts) or "none recorded"
                problems.append(f"method {method!r}: {first.folder} ran code {json.dumps(other)} "
                                f"({first_line.where}), {source.folder} ran {json.dumps(code)} ({line.where}); "
                                f"differs in {changed}")
    if problems:
        raise MergeError("the folders ran different code, so their cells are not the same experiment:\n  "
                         + "\n  ".join(problems) + "\nrun the folder with the older code again (`harness run` re-runs "
                         "only the cells whose code changed), then merge")


def _result(record: dict[str, Any], clocks: set[str]) -> tuple:
    """What a cell's key fixes: its status, every metric not read off a clock, its curves."""
    metrics = {k: v for k, v in (record.get("metrics") or {}).items() if k not in clocks}
    return (record.get("status"), json.dumps(metrics, sort_keys=True), json.dumps(record.get("curves"), sort_keys=True))


def _differences(a: dict[str, Any], b: dict[str, Any], clocks: set[str]) -> list[str]:
    out = []
    if a.get("status") != b.get("status"):
        out.append(f"status {a.get('status')} against {b.get('status')}")
    ma, mb = a.get("metrics") or {}, b.get("metrics") or {}
    for name in sorted((set(ma) | set(mb)) - clocks):
        if ma.get(name) != mb.get(name):
            out.append(f"{name} {ma.get(name, 'absent')} against {mb.get(name, 'absent')}")
    if json.dumps(a.get("curves"), sort_keys=True) != json.dumps(b.get("curves"), sort_keys=True):
        out.append("curves")
    return out


def _check_conflicts(sources: list[Source], clocks: set[str]) -> None:
    """Refuse two folders' different finished results for one key on one device class."""
    first_seen: dict[tuple[str, str | None], tuple[Source, Line]] = {}
    conflicts = []
    for source in sources:
        newest: dict[tuple[str, str | None], Line] = {}  # the folder's newest finished row per key and class
        for line in source.rows:
            if line.record.get("spec_hash") == source.spec_hash and line.record.get("status") in FINISHED:
                newest[(line.record["key"], line.device)] = line
        for cell, line in newest.items():
            if cell not in first_seen:
                first_seen[cell] = (source, line)
                continue
            other = first_seen[cell][1]
            differs = _differences(other.record, line.record, clocks)
            if differs:
                conflicts.append(f"key {cell[0]} ({line.record['dataset']} × {line.record['method']}, seed "
                                 f"{line.record['seed']}, {cell[1] or 'no device recorded'}): {other.where} and "
                                 f"{line.where} differ: {'; '.join(differs)}")
    if conflicts:
        more = f"\n  … and {len(conflicts) - CONFLICTS_SHOWN} more" if len(conflicts) > CONFLICTS_SHOWN else ""
        raise MergeError(f"{len(conflicts)} conflicting result(s): one cell key, one device class, two different "
                         f"results (a key fixes the spec, code, params and seed, so one of the two runs is not what "
                         f"its key says); nothing was written:\n  " + "\n  ".join(conflicts[:CONFLICTS_SHOWN]) + more)


# --------------------------------------------------------------------------- combining


def _identity(record: dict[str, Any], clocks: set[str]) -> tuple:
    return (record["key"], device_class(record.get("device")), *_result(record, clocks))


def _combine(sources: list[Source], clocks: set[str], summary: MergeSummary) -> tuple[list[dict], list[dict]]:
    """(history rows, shown rows): every source's rows, those identical to one already taken dropped."""
    taken: dict[tuple, Source] = {}
    history: list[dict] = []
    shown: list[dict] = []
    for source in sources:
        label = str(source.folder)
        current = source.shown()
        added = dropped = 0
        for i, line in enumerate(source.rows):
            identity = _identity(line.record, clocks)
            if identity in taken and taken[identity] is not source:
                dropped += 1
                continue
            taken.setdefault(identity, source)
            record = line.record if source.is_out or MERGED_FROM in line.record else {**line.record, MERGED_FROM: label}
            (shown if i in current else history).append(record)
            added += 1
        if not source.is_out:
            summary.added[label] = added
            summary.kept_once[label] = dropped
    return history, shown


def _in_run_order(rows: list[dict], spec: dict[str, Any]) -> list[dict]:
    """The shown rows in the order one run over every seed writes them (seed, then method, then each method's
    datasets in their staggered order, as :func:`harness.plan.test_cells` plans them), so a mean over seeds adds
    its values in the same order; a skipped row first, so a finished row of the same cell from another folder is
    the one shown. A row of a pair the spec no longer plans goes after the seed's planned rows."""
    methods = [m.get("id", m.get("name")) for m in spec.get("methods", [])]
    datasets = dataset_entries(spec)
    pairs = [(d.get("id", d.get("name")), m) for m in methods for d in datasets
             if not d.get("methods") or m in d["methods"]]
    position = {pair: i for i, pair in enumerate(staggered(pairs, method_of=lambda pair: pair[1]))}
    return sorted(rows, key=lambda r: (r.get("status") in FINISHED, r["seed"],
                                       position.get((r["dataset"], r["method"]), len(position))))


def _combine_superseded(sources: list[Source]) -> list[dict]:
    rows, seen = [], set()
    for source in sources:
        for line in source.superseded:
            plain = json.dumps({k: v for k, v in line.record.items() if k != MERGED_FROM}, sort_keys=True)
            if plain in seen:
                continue
            seen.add(plain)
            rows.append(line.record if source.is_out or MERGED_FROM in line.record
                        else {**line.record, MERGED_FROM: str(source.folder)})
    return rows


def _merged_tuning(sources: list[Source]) -> tuple[list[dict], list[str]]:
    """The folders' tuning.json entries, one per (dataset, method, spec hash, code); a note where two folders
    tuned one pair apart and chose different params (their seeds then ran with different params)."""
    entries: dict[tuple, tuple[dict, Source]] = {}
    notes = []
    for source in sources:
        for entry in source.tuning:
            key = (entry.get("dataset"), entry.get("method"), entry.get("spec_hash"),
                   json.dumps(entry.get("code"), sort_keys=True))
            if key not in entries:
                entries[key] = (entry, source)
                continue
            first, where = entries[key]
            if (first.get("chosen") or {}).get("params") != (entry.get("chosen") or {}).get("params"):
                notes.append(f"{where.folder} and {source.folder} tuned {entry.get('method')} on "
                             f"{entry.get('dataset')} apart and chose different params "
                             f"({(first.get('chosen') or {}).get('params')} against "
                             f"{(entry.get('chosen') or {}).get('params')}); the leaderboard pools seeds run with "
                             f"either and shows {where.folder}'s tuning (one --storage for every machine tunes once)")
    return [entry for entry, _ in entries.values()], notes


def _merged_skipped(sources: list[Source], rows: list[dict]) -> list[dict]:
    """Datasets some folder's latest run left out and no folder ran."""
    ran = {r["dataset"] for r in rows}
    out, seen = [], set()
    for source in sources:
        for entry in source.skipped:
            dataset = entry.get("dataset")
            if dataset not in ran and dataset not in seen:
                seen.add(dataset)
                out.append(entry)
    return out


def _merged_spec_text(sources: list[Source], rows: list[dict]) -> str:
    """OUT's (else the first folder's) spec.yaml, its selection the union of every folder's, and a header line
    naming the folders merged."""
    import yaml

    base = sources[0]
    meta = dict(base.meta)
    spec = meta["spec"]
    picked = {"datasets": set(), "methods": set(), "seeds": set()}
    for source in sources:
        selection = source.meta.get("selection") or {}
        for part in picked:
            picked[part].update(selection.get(part) or [])
    datasets = [d.get("id", d.get("name")) for d in dataset_entries(spec)]
    methods = [m.get("id", m.get("name")) for m in spec.get("methods", [])]
    meta["selection"] = {"datasets": [d for d in datasets if d in picked["datasets"]],
                         "methods": [m for m in methods if m in picked["methods"]],
                         "seeds": sorted(picked["seeds"])}
    header = []
    for line in base.spec_text.splitlines():
        if not line.startswith("#"):
            break
        if not line.startswith(MERGED_HEADER):  # an earlier merge's line: replaced by this one's
            header.append(line)
    origins = sorted({str(r[MERGED_FROM]) for r in rows if r.get(MERGED_FROM)})
    header.append(MERGED_HEADER + ", ".join(origins))
    return "\n".join(header) + "\n" + yaml.safe_dump(meta, sort_keys=False, allow_unicode=True)


def _jsonl(records: list[dict]) -> bytes:
    return "".join(json.dumps(r, sort_keys=False, allow_nan=False) + "\n" for r in records).encode()
