"""What a results folder's pages were last built from (``.pages-stamp``), so that a run with nothing new to run and
nothing changed keeps its pages and reads its verdicts back instead of building them again (which imports scipy and
matplotlib: most of such a run's time)."""
from __future__ import annotations

from pathlib import Path

PAGES_STAMP = ".pages-stamp"  # what the folder's pages were last built from (see pages_stamp)
# the files and the code a folder's pages are built from: another byte in any of them rebuilds the pages
PAGE_INPUTS = ("spec.yaml", "skipped.json", "tuning.json", "metrics.json", "chance.json", "trivial.json")
PAGE_CODE = ("harness.claims", "harness.report", "harness.stats", "harness.metrics", "harness.metric_tables",
              "harness.store", "harness.runs_file", "harness.results_table", "harness.devices", "harness.spec.model",
              "harness.audit", "harness.audit.rules")


def pages_stamp(folder: Path) -> str:
    """A digest of what the pages are made of: the folder's small files, runs.jsonl's identity (an append or a
    rewrite changes its size, time or inode) and the source of the code that renders them."""
    import hashlib
    import importlib.util

    digest = hashlib.sha256()
    for name in PAGE_INPUTS:
        path = folder / name
        digest.update(name.encode() + (path.read_bytes() if path.exists() else b"\0missing"))
    runs = folder / "runs.jsonl"
    if runs.exists():
        info = runs.stat()
        digest.update(f"runs {info.st_size} {info.st_mtime_ns} {info.st_ino}".encode())
    for module in PAGE_CODE:
        origin = Path(importlib.util.find_spec(module).origin)
        # a package counts with every module in it (a claim kind is a module of harness.claims)
        for path in sorted(origin.parent.glob("*.py")) if origin.name == "__init__.py" else [origin]:
            digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()


def read_stamp(folder: Path) -> str | None:
    path = folder / PAGES_STAMP
    return path.read_text().strip() if path.exists() else None


def verdicts_on_file(folder: Path) -> list:
    """The claims' verdicts as claims.json has them (what a run prints of each: its id, verdict and kind)."""
    import json
    from types import SimpleNamespace

    data = json.loads((folder / "claims.json").read_text())
    return ([SimpleNamespace(**entry, noun="claim") for entry in data["claims"]]
            + [SimpleNamespace(**entry, noun="check") for entry in data.get("checks", [])])


def write_stamp(folder: Path, stamp: str) -> None:
    from harness.store import write_atomic

    write_atomic(folder / PAGES_STAMP, stamp + "\n")
