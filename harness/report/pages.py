"""The page as blocks (:mod:`harness.report.blocks`), from a board: the verdicts, the header, one section per dataset
(or a summary beyond :data:`~harness.report.blocks.PAGE_LIMIT` datasets), the claims (each kind's section, from
:mod:`harness.claims`), the audit, the curves, the win rate, the tuning, and the spec's description, folded. Markdown
and HTML are both written from these.
"""
from __future__ import annotations

import math
from typing import Any

from harness.audit.page import audit_blocks
from harness.claims import margin_gaps
from harness.claims import page_blocks as claim_page_blocks
from harness.claims.base import NEAR_SHARE
from harness.metrics import Metric
from harness.report.blocks import AT_CHANCE, BELOW_TRIVIAL, PAGE_BODY_PX, PAGE_LIMIT, Table, verdict_cell
from harness.report.board import TIED, Board, Cell, Row
from harness.report.curves import curve_blocks
from harness.report.figures import ranks_by_label
from harness.results_table import decoded, distinct


def fmt(value: float) -> str:
    if value == 0 or 1e-3 <= abs(value) < 1e4:
        return f"{value:.3f}"
    return f"{value:.3g}"


def fmt_cell(cell: Cell | None, chance: float | None = None) -> str:
    """``mean ± half-width``; "(at chance)" when the interval contains ``chance``."""
    if cell is None:
        return "—"
    notes = []
    if cell.no_spread:
        text = fmt(cell.mean)
        notes.append(f"{cell.n} seeds, no spread")
    elif cell.half_width is None:
        text = fmt(cell.mean)
        notes.append("1 seed")
    else:
        text = f"{fmt(cell.mean)} ± {fmt(cell.half_width)}"
    if chance is not None and cell.contains(chance):
        notes.append(AT_CHANCE)
    return text + (f" ({'; '.join(notes)})" if notes else "")


def table_text(text: str) -> str:
    """Text for one Markdown table cell: on one line, its pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def cell_text(cell) -> str:
    return cell[0] if isinstance(cell, tuple) else cell


def _unit(metric: Metric, value: float) -> str:
    return f"{value:g}{' ' + metric.unit if metric.unit else ''}"


def _header_lines(board: Board) -> list[str]:
    meta, rows, spec, primary = board.meta, board.rows, board.spec, board.primary
    commits = sorted(distinct(rows, "git_commit"))
    devices = sorted({d for d in distinct(rows, "device") if d})
    versions = decoded(rows.tail(1), "versions")[0] if len(rows) else {}
    task_versions = sorted(distinct(rows, "task_version"))
    seeds = sorted(distinct(rows, "seed"))
    lines = [
        f"spec `{spec['name']}` (hash `{meta['spec_hash']}`), profile **{meta['profile']}**, task `{spec['task']}` "
        f"version {', '.join(task_versions) or '?'}",
        f"seeds: {', '.join(map(str, seeds))}; every value is the mean ± the half-width of a 95% t-interval over seeds "
        f"(test split; tuning used only the validation split)",
        f"rank: by {primary} {board.metrics[primary].arrow}; “{TIED}” after a rank: that method's 95% interval of "
        f"{primary} overlaps the best method's, so these seeds do not separate the two",
    ]
    if any(board.chance.values()):
        lines.append(f"chance level: the value a metric takes at chance, as the task declares it (given per "
                     f"dataset below); “{AT_CHANCE}” marks a value whose 95% interval "
                     f"contains it (or, without an interval, whose mean is it); a dataset where every method is at "
                     f"chance on {primary} is not ranked and is left out of the mean win rate")
    if board.below_trivial:
        lines.append(f"trivial rows (kind trivial): the task's trivial answer, run like any method; “{BELOW_TRIVIAL}” "
                     f"after a method: its mean {primary} does not beat the best trivial row of its dataset")
    lines += [
        f"hardware: {'; '.join(devices) or 'none recorded'}",
        f"commit: {', '.join(commits) or 'unknown'}; " + ", ".join(f"{k} {v}" for k, v in versions.items()),
    ]
    return lines


def _win_rate_blocks(board: Board) -> list:
    primary, metrics = board.primary, board.metrics
    left_out = board.at_chance
    rates = board.columns.win_rates(primary, metrics[primary].goal == "max", leave_out=left_out)
    blocks: list = []
    if rates:
        kinds = _last_kinds(board, rates)
        rows = [[method, kinds[method], f"{rate:.3f}", str(n)]
                for method, (rate, n) in sorted(rates.items(), key=lambda kv: -kv[1][0])]
        blocks += [("h2", f"Mean win rate across datasets ({primary} {metrics[primary].arrow})"),
                   ("table", Table(["method", "kind", "mean win rate", "datasets"], rows))]
    if left_out:
        if not rates:
            blocks.append(("h2", f"Mean win rate across datasets ({primary} {metrics[primary].arrow})"))
        blocks.append(("p", f"Left out of the win rate and not ranked: {', '.join(left_out)}: every method's 95% "
                            f"interval of {primary} contains the chance level there."))
    return blocks


def _last_kinds(board: Board, labels) -> dict[str, str]:
    """The kind of each label's last row."""
    import numpy as np

    columns = board.columns
    names, codes = columns.labels
    last = len(codes) - 1 - np.unique(codes[::-1], return_index=True)[1]  # by code
    kinds = {names[code]: columns.kinds[columns.kind[at]] for code, at in enumerate(last.tolist())}
    return {label: kinds[label] for label in labels}


def _skipped_blocks(board: Board) -> list:
    if not board.skipped_datasets:
        return []
    return [("h2", "Datasets not run"),
            ("p", "The latest run left these datasets out before planning any cell:")] + [
        ("li", f"`{s['dataset']}`: {s['reason']}") for s in board.skipped_datasets]


def fmt_params(params: dict[str, Any]) -> str:
    """``name=value, ...``; floats to 3 significant digits."""
    return ", ".join(f"{name}={value:.3g}" if isinstance(value, float) else f"{name}={value}"
                     for name, value in params.items())


STABILITY = {True: "stable", False: "differs across seeds"}


def _seed_text(entry: dict[str, Any]) -> str:
    """What each validation seed alone would have picked, beside the chosen params."""
    chosen = entry["chosen"]["params"]
    return "; ".join(f"seed {s['seed']}: same (rank {s['rank']})" if s["best_params"] == chosen else
                     f"seed {s['seed']}: would pick {fmt_params(s['best_params'])} "
                     f"(chosen ranks {s['rank']} of {s['of']})" for s in entry["by_seed"]) or "—"


def _verdict_text(entry: dict[str, Any]) -> str:
    if entry["stable"] is not None:
        return STABILITY[entry["stable"]]
    return "one seed: cannot tell" if len(entry["by_seed"]) == 1 else "per-seed values not recorded"


def _tuned_on(entry: dict[str, Any], board: Board) -> str:
    """`` (on METRIC ↓)`` where the pair was tuned on another metric than the primary one, else nothing."""
    metric = entry.get("metric", board.primary)
    if metric == board.primary:
        return ""
    arrow = board.metrics[metric].arrow if metric in board.metrics else "↑" if entry.get("goal") == "max" else "↓"
    return f" (on {metric} {arrow})"


def _tuning_blocks(board: Board) -> list:
    if not board.tuning:
        return []
    primary, metric = board.primary, board.metrics[board.primary]
    rows = [[e["dataset"], e["method"], fmt_params(e["chosen"]["params"]) or "—",
             fmt(e["chosen"]["value"]) + _tuned_on(e, board), str(e["trials"]), _seed_text(e), _verdict_text(e)]
            for e in board.tuning]
    chooses = "maximises" if metric.goal == "max" else "minimises"
    others = sorted({e["metric"] for e in board.tuning if e.get("metric", primary) != primary})
    # a pair tuned on its dataset's own metric (tuning: {metric: ...}) says so beside its value
    elsewhere = (f", or, where the value says “on” another metric ({', '.join(others)}: its dataset's tuning "
                 f"metric), optimises that metric's mean in the direction its catalogue declares") if others else ""
    return [("h2", "Tuning"),
            ("p", f"The params tuning chose for each tuned pair, used on every test seed. The chosen trial {chooses} "
                  f"the mean of {primary} over the validation seeds (the validation value){elsewhere}; each seed "
                  f"alone could pick another trial. Per validation seed: “same” when that seed alone picks the "
                  f"chosen params, else the params it would pick and the chosen trial's rank among the completed "
                  f"trials on that seed (1 = best). “stable”: every seed alone picks the chosen params."),
            ("table", Table(["dataset", "method", "chosen params",
                             f"validation {primary} {metric.arrow}" + (" (unless said)" if others else ""), "trials",
                             "per validation seed", "verdict"], rows))]


def _dataset_blocks(board: Board, dataset: str, table: list[Row]) -> list:
    spec, metrics, primary = board.spec, board.metrics, board.primary
    report = spec["metrics"]["report"]
    entry = board.dataset_entries.get(dataset, {})
    params = ", ".join(f"{k}={v}" for k, v in entry.get("params", {}).items())
    levels = board.chance.get(dataset, {})
    shown = sorted((m for m in levels if m in metrics), key=lambda m: report.index(m) if m in report else len(report))
    blocks: list = [("h2", dataset), ("p", f"`{entry.get('name', dataset)}`" + (f" ({params})" if params else "")
                                           + ("; chance level: " + ", ".join(f"{m} {_unit(metrics[m], levels[m])}"
                                                                             for m in shown) if shown else ""))]
    if dataset in board.at_chance:
        blocks.append(("p", f"**Not ranked, at chance:** every method's 95% interval of {primary} contains its chance "
                            f"level ({_unit(metrics[primary], levels[primary])}): no method does better than "
                            f"guessing here, so the order below is noise and the dataset is left out of the win rate."))
    if dataset in board.zero_variance:
        blocks.append(("p", f"**No interval:** {primary} is the same in every seed for every method with two or more "
                            f"seeds here: the seed does not change this dataset's instance, so each row is one "
                            f"measurement, not a mean over independent draws."))

    def column(m: str) -> str:
        return f"{m} {metrics[m].arrow}" + (f" [{metrics[m].unit}]" if metrics[m].unit else "")

    apart = any(row.device_class for row in table)  # then each device class is ranked on its own
    trivial = board.below_trivial.get(dataset, [])
    below = {id(row) for _, rows_below in trivial for row in rows_below}

    def main_table(shown: list[str]) -> Table:
        rows = []
        for row in table:
            rank = "—" if not row.rank else f"{row.rank} {TIED}" if row.tied else str(row.rank)
            method = f"{row.method} {BELOW_TRIVIAL}" if id(row) in below else row.method
            rows.append([rank, method, *([row.device_class] if apart else []), row.kind,
                         *(fmt_cell(row.metrics.get(m), levels.get(m)) for m in shown),
                         str(row.seeds_ok), str(row.seeds_failed), str(row.seeds_skipped)])
        return Table(["rank", "method", *(["device class"] if apart else []), "kind", *map(column, shown),
                      "seeds ok", "failed", "skipped"], rows)

    # timings and spreads go to the collapsed table; so do the last reported metrics while the table would be wider
    # than the page's body (the primary metric always stays)
    main = [m for m in report if m == primary or not metrics[m].secondary]
    ranked = main_table(main)
    while ranked.narrowest_px() > PAGE_BODY_PX and len(main) > 1:
        main.remove([m for m in main if m != primary][-1])
        ranked = main_table(main)
    extra = [m for m in report if m not in main]
    blocks.append(("table", ranked))
    for best, rows_below in trivial:
        level = _unit(metrics[primary], float(f"{best.metrics[primary].mean:.4g}"))
        where = f" on {best.device_class}" if best.device_class else ""
        blocks.append(("p", f"**Below the trivial answer{where}:** "
                            + (f"{', '.join(row.method for row in rows_below)} "
                               f"{'does' if len(rows_below) == 1 else 'do'} not beat {best.method} ({primary} {level})."
                               if rows_below else f"every method beats {best.method} ({primary} {level}).")))
    if apart:
        blocks.append(("p", "Each device class is ranked on its own: its timings and its cells are never pooled "
                            "with another class's."))
    if extra or len({d for row in table for d in row.devices}) > 1:  # one device for all is in the page's header
        details = [[row.label, *(fmt_cell(row.metrics.get(m), levels.get(m)) for m in extra),
                    "; ".join(row.devices) or "—"] for row in table]
        blocks.append(("table", Table(["method", *map(column, extra), "devices"], details,
                                      summary=f"More columns of {dataset}: " + ", ".join([*extra, "devices"]))))
    blocks += [("li", f"{row.label}: {error}") for row in table for error in row.errors]
    skips: dict[str, list[Row]] = {}
    for row in table:
        for reason in row.skips:
            skips.setdefault(reason, []).append(row)
    blocks += [("li", f"skipped ({', '.join(f'{r.label} × {r.seeds_skipped}' for r in hit)}): {reason}")
               for reason, hit in skips.items()]
    return blocks


def page_blocks(board: Board) -> list:
    """The leaderboard page, as the blocks :func:`render_markdown` and :func:`render_html` write (computed once per
    board: read-only tuples and tables)."""
    if "_page_blocks" not in board.__dict__:
        board.__dict__["_page_blocks"] = _page_blocks(board)
    return board.__dict__["_page_blocks"]


def _page_blocks(board: Board) -> list:
    """The page opens with what a reader came for, the verdicts and the tables; the evidence behind each verdict
    follows, and the spec's description (what runs, the decisions and their history: often forty lines) comes
    last, folded."""
    spec = board.spec
    blocks: list = [("h1", spec["title"]), ("p", f"Leaderboard of `{spec['name']}` — {board.meta['profile']} profile.")]
    if spec.get("paper"):
        paper = spec["paper"]
        blocks.append(("p", f"Paper: {paper['title']}" + (f" ({paper['venue']})" if paper.get("venue") else "")))
    blocks += _verdict_summary_blocks(board)
    blocks += [("li", line) for line in _header_lines(board)]
    blocks.append(("figure",))
    if len(board.datasets) > PAGE_LIMIT:
        blocks += _many_datasets_blocks(board)
    else:
        for dataset, table in board.tables.items():
            blocks += _dataset_blocks(board, dataset, table)
    blocks += (claim_page_blocks(board.verdicts, board) + audit_blocks(board.findings) + curve_blocks(board)
               + _win_rate_blocks(board) + _skipped_blocks(board))
    blocks += _tuning_blocks(board)
    if spec.get("description"):
        blocks += [("h2", "About this comparison"),
                   ("details", "What runs, the decisions behind it and their history (the spec's description)",
                    " ".join(spec["description"].split()))]
    return blocks


def _verdict_summary_blocks(board: Board) -> list:
    """Each claim's verdict in one row at the top of the page, with how far its interval sits from its margin (a
    verdict whose interval ends near it can flip on another CPU or seed draw); its evidence is in the claims'
    sections below."""
    if not board.verdicts:
        return []
    claims = {c["id"]: c for c in board.spec.get("claims", [])}
    rows, near = [], False
    for v in board.verdicts:
        gaps = margin_gaps(v, claims[v.claim]) if v.claim in claims else []
        near = near or any(g.near for g in gaps)
        rows.append([f"`{v.claim}`" + (" (check)" if v.noun == "check" else ""), verdict_cell(v),
                     "; ".join(g.text() for g in gaps) or "—", " ".join(str(v.says).split())])
    about = ("Each claim's test, numbers and source are in its section below; a check is an assertion that holds by "
             "construction or theorem unless there is a bug. The column 'from the margin': how far the nearer end of "
             "each 95% interval that decided the verdict lies from the claim's margin (or bound), and that distance as a "
             f"share of the interval's width; under {NEAR_SHARE:.0%} it is marked near")
    about += (": such a verdict can flip with another draw of seeds or on another CPU, whose floating-point "
              "kernels move an interval by a small part of its width." if near else ".")
    return [("h2", "Verdicts"), ("p", about),
            ("table", Table(["claim", "verdict", "from the margin", "says"], rows))]


def _rank_rows(board: Board) -> list[tuple[str, str, list[int], list[int]]]:
    """Per label, by mean rank (the never ranked last): its kind (its first row's), its ranks, and its rows, rows
    tied with the best, seeds ok, failed and skipped, counted over the datasets."""
    import numpy as np

    columns = board.columns
    labels, codes = columns.labels
    ranks = ranks_by_label(board)  # every label, in order of its first row
    first = np.unique(codes, return_index=True)[1].tolist()

    def total(values) -> list[int]:
        return np.bincount(codes, weights=values, minlength=len(labels)).astype(np.int64).tolist()

    counts = zip(np.bincount(codes, minlength=len(labels)).tolist(),
                 *map(total, (columns.tied, columns.seeds_ok, columns.seeds_failed, columns.seeds_skipped)))
    found = [(label, columns.kinds[columns.kind[at]], got, list(seen))
             for (label, got), at, seen in zip(ranks.items(), first, counts)]
    return sorted(found, key=lambda entry: sum(entry[2]) / len(entry[2]) if entry[2] else math.inf)


SHOWN_NAMES = 10  # beyond PAGE_LIMIT, a list of datasets (no spread, at chance) names this many, then counts


def _names(datasets: list[str]) -> str:
    shown = ", ".join(f"`{d}`" for d in datasets[:SHOWN_NAMES])
    return shown + (f" and {len(datasets) - SHOWN_NAMES} more" if len(datasets) > SHOWN_NAMES else "")


def _many_datasets_blocks(board: Board) -> list:
    """Beyond :data:`PAGE_LIMIT` datasets, instead of a section per dataset: each method's ranks over the datasets,
    the flagged datasets and the failures counted, and where every table is (leaderboard.csv, complete).

    A page of thousands of tables (46 MB of HTML for 16,667 datasets) is neither readable nor cheap to write; the
    CSV has every dataset × method row with every column those tables show."""
    primary, metrics = board.primary, board.metrics
    blocks: list = [("h2", f"Per dataset ({len(board.datasets)} datasets)"), ("p",
                     f"**The per-dataset tables are in `leaderboard.csv`**: with more than {PAGE_LIMIT} datasets this "
                     f"page shows each method's ranks over them instead. The CSV has one row per dataset and method "
                     f"with everything a table here would show: the rank (and `tied_with_best`, the “{TIED}”), the "
                     f"mean, 95% half-width and number of seeds of every reported metric, seeds ok, failed and "
                     f"skipped, the devices, the chance level and the `zero_variance` and `at_chance` flags.")]
    table = [[label, kind, str(seen[0]), str(len(got)), f"{sum(got) / len(got):.2f}" if got else "—",
              str(got.count(1)), *map(str, seen[1:])] for label, kind, got, seen in _rank_rows(board)]
    blocks.append(("table", Table(["method", "kind", "datasets", "ranked", f"mean rank ({primary} "
                                   f"{metrics[primary].arrow})", "ranked 1", f"tied with the best ({TIED})",
                                   "seeds ok", "failed", "skipped"], table)))
    if board.zero_variance:
        blocks.append(("p", f"**No interval** on {len(board.zero_variance)} datasets ({_names(board.zero_variance)}): "
                            f"{primary} is the same in every seed for every method with two or more seeds there "
                            f"(`zero_variance` in the CSV)."))
    if board.at_chance:
        blocks.append(("p", f"**Not ranked, at chance** on {len(board.at_chance)} datasets "
                            f"({_names(board.at_chance)}): every method's 95% interval of {primary} contains its "
                            f"chance level there (`at_chance` in the CSV)."))
    errors: dict[str, int] = {}  # message → dataset × method rows that gave it
    skips: dict[str, int] = {}
    for messages in board.columns.errors.values():  # by row, in order
        for error in messages:
            errors[error] = errors.get(error, 0) + 1
    for messages in board.columns.skips.values():
        for reason in messages:
            skips[reason] = skips.get(reason, 0) + 1
    blocks += [("li", f"{error} (on {count} dataset × method rows)") for error, count in errors.items()]
    blocks += [("li", f"skipped ({count} dataset × method rows): {reason}") for reason, count in skips.items()]
    return blocks
