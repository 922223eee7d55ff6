"""Give results recorded with the broken code fingerprints of an editable install their real fingerprints, where
git shows that the code behind them has not changed since they ran.

Before the fix in ``harness.code._find_spec``, ``harness`` run as the console script of an editable install
(``pip install -e .``) could not see the repository's modules, so every row's ``code`` was the digest of a module
name and its key was taken over it. With the fix, such rows no longer match the plan: the next ``harness run``
would move every one of them to ``superseded.jsonl`` and run it again. This tool rewrites a row's ``code`` and
``key`` to today's only when, for its task, dataset loader and method, every module the fingerprint reads
(``harness.code.import_closure``) has the same code (its syntax tree, docstrings aside: what a fingerprint hashes)
at the row's ``git_commit`` as in the working tree; the old
fingerprints are kept in the row's new ``code_fixed_from``. A row that ran on a dirty tree (``+dirty``) is
checked against the commit it names (its uncommitted change, if it touched that code, was committed after it and
shows as a difference). Any other row is left as it is, and runs again. ``tuning.json`` entries move with their
rows. Nothing is run; the pages are rebuilt by ``harness leaderboard`` afterwards.

    python tools/refingerprint_results.py results/quick results/default   # then: harness leaderboard DIR
"""
from __future__ import annotations

import json
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import yaml

from harness.code import _module_digest, _source_file, fingerprint, import_closure, source_digest
from harness.plan import key_fields
from harness.registry import default_registry
from harness.spec.model import stable_hash
from harness.store import RUNS_FILE, TUNING_FILE, write_atomic

ROOT = Path(__file__).resolve().parents[1]


def key_of(row: dict, code: dict, device: str, precision: str) -> str:
    """:attr:`harness.plan.Cell.key` from a row's fields."""
    return stable_hash(key_fields(row["task"], row["task_version"], row["dataset_name"], row["dataset_params"],
                                  row["method_name"], row["params"], row["seed"], row["split"], row["profile"],
                                  device, precision, code))[:20]


def git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)


@lru_cache(maxsize=None)
def unchanged_since(commit: str, target: str) -> bool:
    """Every module of ``target``'s fingerprint has, at ``commit``, the syntax tree (docstrings aside) it has in
    the working tree: the fingerprint ``commit``'s code would have had, had it been seen, is today's."""
    for module in import_closure(target.partition(":")[0]):
        path = _source_file(module)
        if path is None or not path.is_relative_to(ROOT):
            return False
        then = git("show", f"{commit}:{path.relative_to(ROOT)}")
        if then.returncode != 0 or source_digest(then.stdout) != _module_digest(module):
            return False  # the module did not exist then, or its code differs
    return True


def fix_folder(folder: Path) -> tuple[int, int, int]:
    """Rewrite ``folder``'s rows that can be shown to come from today's code; (fixed, already right, left)."""
    registry = default_registry()
    meta = yaml.safe_load((folder / "spec.yaml").read_text(encoding="utf-8"))
    hardware = meta["spec"].get("hardware", {})
    settings = [(device, hardware.get("precision", "fp32")) for device in
                dict.fromkeys([hardware.get("device", "auto"), "auto", "cpu", "cuda"])]
    lines = (folder / RUNS_FILE).read_bytes().splitlines(keepends=True)
    out, fixed, right, left = [], 0, 0, 0
    moved: dict[tuple[str, str, str], dict] = {}  # (dataset, method, old code) → new code
    for raw in lines:
        row = json.loads(raw)
        if "code" not in row or "task_version" not in row:
            out.append(raw)
            continue
        targets = {"task": registry.entry("tasks", row["task"]).target,
                   "dataset": registry.entry("datasets", row["dataset_name"]).target,
                   "method": registry.entry("methods", row["method_name"]).target}
        today = {part: fingerprint(target) for part, target in targets.items()}
        if row["code"] == today:
            right += 1
            out.append(raw)
            continue
        found = [s for s in settings if key_of(row, row["code"], *s) == row["key"]]
        commit = str(row.get("git_commit", "unknown")).removesuffix("+dirty")
        if not found or commit == "unknown" or not all(unchanged_since(commit, t) for t in targets.values()):
            left += 1
            out.append(raw)
            continue
        moved[(row["dataset"], row["method"], json.dumps(row["code"], sort_keys=True))] = today
        row = {**row, "key": key_of(row, today, *found[0]), "code": today, "code_fixed_from": row["code"]}
        out.append((json.dumps(row, allow_nan=False) + "\n").encode())
        fixed += 1
    if fixed:
        write_atomic(folder / RUNS_FILE, b"".join(out))
        tuning = folder / TUNING_FILE
        if tuning.exists():
            entries = json.loads(tuning.read_text(encoding="utf-8"))
            for entry in entries:
                new = moved.get((entry["dataset"], entry["method"], json.dumps(entry.get("code"), sort_keys=True)))
                if new is not None:
                    entry["code"] = new
            write_atomic(tuning, json.dumps(entries, indent=1, ensure_ascii=False, allow_nan=False) + "\n")
    return fixed, right, left


def main(roots: list[str]) -> int:
    for root in roots:
        for folder in sorted(p.parent for p in Path(root).glob(f"*/{RUNS_FILE}")):
            fixed, right, left = fix_folder(folder)
            print(f"{folder}: {fixed} row(s) given today's fingerprints, {right} already right, {left} left to run again")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
