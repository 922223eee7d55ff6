"""A results folder in, its pages out: :func:`read_folder` (``spec.yaml`` + ``runs.jsonl``), :func:`compute` (the
board and the claims' verdicts), :func:`write_leaderboard` (``leaderboard.md``, ``.csv``, ``.html``, the figures and
``claims.json``) and :func:`write_index` (a results root's ``index.md``).

Goals, units and arrows come from the folder's own metric table (``metrics.json``, see
:func:`harness.metric_tables.read_metric_table`), chance levels from ``chance.json`` and the datasets a run left out from
``skipped.json``, the params tuning chose from ``tuning.json``, never from the plugins registered in this process
(nor Optuna), so any folder can be rebuilt anywhere (an older folder without the last three simply has no chance
levels, no skipped datasets and no tuning section).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.claims import check_claim
from harness.metric_tables import read_chance_table, read_metric_table, read_trivial_table
from harness.metrics import Metric
from harness.report.board import Board, NoResults, current_tuning
from harness.report.board_columns import build_columns
from harness.report.csv_table import render_csv
from harness.report.curves import CURVES_SVG, curve_panels, render_curves_svg
from harness.report import json_text
from harness.report.html_page import render_html
from harness.report.markdown import render_markdown
from harness.spec.model import claim_entries, expand_grids, grid_members
from harness.results_table import current_cells, read_table_and_spec
from harness.store import load_yaml, read_skipped_datasets, read_tuning_summaries, write_atomic


def read_folder(folder: Path) -> tuple[dict[str, Any], Any]:
    """The folder's resolved spec (a dataset grid written out) and its current cells, the rows the leaderboard
    shows (:func:`harness.results_table.current_cells`: the newest row per dataset, method, seed, and device class
    where the rows span several), as a table."""
    folder = Path(folder)
    if not (folder / "spec.yaml").exists():
        raise NoResults(f"{folder}: no results here (expected spec.yaml and runs.jsonl from `harness run`)")
    text = (folder / "spec.yaml").read_text()
    table, meta = read_table_and_spec(folder, text)  # the saved table may hold the text parsed
    if meta is None:
        meta = load_yaml(text)
    # the pages show each dataset of a grid, and a claim naming a grid is about its datasets
    expansion = expand_grids(meta["spec"]["datasets"])  # once, for both
    meta["spec"]["claims"] = claim_entries(meta["spec"], grid_members(meta["spec"]["datasets"], expansion))
    meta["spec"]["datasets"] = expansion[0]
    return meta, current_cells(table, meta["spec_hash"])


def folder_metrics(folder: Path, spec: dict) -> dict[str, Metric]:
    """The folder's metric table, checked to hold every metric the spec reports or claims."""
    metrics = read_metric_table(folder)
    needed = [spec["metrics"]["primary"], *spec["metrics"]["report"], *(c["metric"] for c in spec.get("claims", [])),
              *(c["precondition"]["metric"] for c in spec.get("claims", []) if c.get("precondition"))]
    missing = sorted(set(needed) - set(metrics))
    if missing:
        raise NoResults(f"{folder}: no goal or unit known for {', '.join(missing)}: the folder has no metrics.json "
                        f"(written by runs of this harness version on) and no registered family declares them; "
                        f"register the plugin that does (e.g. HARNESS_PLUGINS) to rebuild this older folder")
    return metrics


def compute(folder: Path) -> Board:
    """Everything the leaderboard of a results folder shows."""
    meta, rows = read_folder(folder)
    spec = meta["spec"]
    metrics = folder_metrics(folder, spec)
    chance = read_chance_table(folder)
    columns = build_columns(meta, rows, metrics, chance)
    order = [d.get("id", d["name"]) for d in spec["datasets"]]
    goals = {name: metric.goal for name, metric in metrics.items()}
    verdicts = [check_claim(c, rows, metrics[c["metric"]].goal, order, goals) for c in spec.get("claims", [])]
    board = Board(meta, rows, columns, verdicts, metrics, chance, read_skipped_datasets(folder),
                  current_tuning(meta, rows, read_tuning_summaries(folder)), read_trivial_table(folder, spec["task"]))
    audit(board)
    return board


def audit(board: Board) -> None:
    """The audit's findings on the board (``board.findings``), and on each verdict the rules that found something in
    its claim (what the page shows beside it)."""
    from harness.audit.base import audit_board
    from harness.audit.page import mark_verdicts

    board.findings = audit_board(board)
    mark_verdicts(board.verdicts, board.findings)


def write_leaderboard(folder: Path) -> list:
    """(Re)write leaderboard.md, .csv, .html and claims.json of a results folder.

    Python's cyclic garbage collector is off meanwhile: a million rows keep a million metric dicts alive, and every
    collection the grouping's and the pages' new objects started walked all of them (3 s of CPU of a 1M-row
    rebuild). The board holds no reference cycle; what the figures leave is collected once it is back on."""
    import gc

    collecting = gc.isenabled()
    gc.disable()
    try:
        return _write_leaderboard(Path(folder))
    finally:
        if collecting:
            gc.enable()


def _write_leaderboard(folder: Path) -> list:
    board = compute(folder)
    write_atomic(folder / "leaderboard.md", render_markdown(board))
    write_atomic(folder / "leaderboard.csv", render_csv(board))
    write_atomic(folder / "leaderboard.html", render_html(board))
    if curve_panels(board):
        write_atomic(folder / CURVES_SVG, render_curves_svg(board))
    elif (folder / CURVES_SVG).exists():
        (folder / CURVES_SVG).unlink()  # a re-run without curves leaves no stale figure
    write_atomic(folder / "claims.json", json_text.dumps(claims_record(board), 1) + "\n")  # json.dumps(indent=1)
    return board.verdicts


def claims_record(board: Board) -> dict:
    """What claims.json holds: the claims' verdicts, the checks' apart (``checks``, only when the spec has one: a
    check is never counted among the claims), and the audit's findings (``audit``)."""
    from harness.claims import kind_of_verdict

    claims = [v.to_dict() for v in board.verdicts if not kind_of_verdict(v).is_check]
    checks = [v.to_dict() for v in board.verdicts if kind_of_verdict(v).is_check]
    record = {"spec": board.spec["name"], "profile": board.meta["profile"], "title": board.spec["title"],
              "zero_variance": board.zero_variance, "at_chance": board.at_chance, "claims": claims}
    if checks:
        record["checks"] = checks
    record["audit"] = [f.to_dict() for f in board.findings]
    return record


def write_index(root: Path) -> None:
    """``root/index.md``: every spec's results folder below ``root`` with its claims' verdicts."""
    root = Path(root)
    found = sorted(p.parent for p in root.glob("*/claims.json")) + sorted(p.parent for p in root.glob("*/*/claims.json"))
    lines = ["# Results", "", "Every spec's leaderboard in this folder, with its claims' verdicts "
             "(`harness check` prints the numbers behind each).", "",
             "| profile | spec | title | claims | leaderboard |", "|---|---|---|---|---|"]
    for folder in found:
        if any(part.startswith(".") for part in folder.relative_to(root).parts):
            continue  # archived runs
        data = json.loads((folder / "claims.json").read_text())
        claims = "<br>".join(f"`{c['claim']}`: **{c['verdict']}**" for c in data["claims"]) or "none"
        if data.get("checks"):
            held = sum(c["verdict"] == "holds" for c in data["checks"])
            claims += f"<br>checks: {held} of {len(data['checks'])} hold"
        link = (folder / "leaderboard.md").relative_to(root).as_posix()
        lines.append(f"| {data['profile']} | {data['spec']} | {data['title']} | {claims} | [{link}]({link}) |")
    write_atomic(root / "index.md", "\n".join(lines) + "\n")
