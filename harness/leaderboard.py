"""Leaderboards, computed only from a results folder (``spec.yaml`` + ``runs.jsonl``).

Per dataset: methods ranked by the primary metric's direction, mean and 95% t-interval
over seeds for every reported metric. A dataset where no method's primary metric varies
across seeds is flagged: the seed does not change its instance, so it has no interval.
Across datasets: the mean win rate. Outputs Markdown, CSV and a static HTML page with a
plot; the claims' verdicts go to ``claims.json`` for the index.

Goals, units and arrows come from the folder's own metric table (``metrics.json``, see
:func:`harness.metrics.read_metric_table`), never from the plugins registered in this
process, so any folder can be rebuilt anywhere.
"""
from __future__ import annotations

import csv
import html
import io
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.claims import check_claim
from harness.metrics import Metric, read_metric_table
from harness.stats import mean_and_half_width
from harness.store import newest_code_only, read_runs, write_atomic

FORMATS = ("md", "csv", "html")


class NoResults(FileNotFoundError):
    pass


@dataclass
class Cell:
    mean: float
    half_width: float | None  # of the 95% t-interval; None with one seed, 0.0 when every seed gave the same value
    n: int

    @property
    def no_spread(self) -> bool:
        """Two or more seeds, all with the same value: a mean, but no interval."""
        return self.n >= 2 and self.half_width == 0.0


@dataclass
class Row:
    dataset: str
    method: str
    kind: str
    metrics: dict[str, Cell]
    seeds_ok: int
    seeds_failed: int
    rank: int = 0
    devices: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()


def summarise(values: list[float]) -> Cell:
    mean, half_width = mean_and_half_width(values)
    return Cell(mean, half_width, len(values))


def read_folder(folder: Path) -> tuple[dict[str, Any], list[dict]]:
    """The folder's resolved spec and its current rows (latest per dataset, method, seed)."""
    import yaml

    folder = Path(folder)
    if not (folder / "spec.yaml").exists():
        raise NoResults(f"{folder}: no results here (expected spec.yaml and runs.jsonl from `harness run`)")
    meta = yaml.safe_load((folder / "spec.yaml").read_text())
    latest: dict[tuple, dict] = {}
    for row in newest_code_only([r for r in read_runs(folder) if r.get("spec_hash") == meta["spec_hash"]
                                 and r.get("split") == "test"]):
        latest[(row["dataset"], row["method"], row["seed"])] = row
    return meta, list(latest.values())


def build_rows(meta: dict, rows: list[dict], metrics: dict[str, Metric]) -> dict[str, list[Row]]:
    """Per dataset, its rows ranked by the primary metric; ``metrics`` is the folder's metric table."""
    spec = meta["spec"]
    primary = spec["metrics"]["primary"]
    goal = metrics[primary].goal
    dataset_order = [d.get("id", d["name"]) for d in spec["datasets"]]
    method_order = [m.get("id", m["name"]) for m in spec["methods"]]
    tables: dict[str, list[Row]] = {}
    groups: dict[tuple[str, str], list[dict]] = {}
    for row in rows:
        groups.setdefault((row["dataset"], row["method"]), []).append(row)
    for (dataset, method), group in groups.items():
        ok = [r for r in group if r["status"] == "ok"]
        metrics = {}
        for name in spec["metrics"]["report"]:
            values = [r["metrics"][name] for r in ok if name in r["metrics"]]
            if values:
                metrics[name] = summarise(values)
        tables.setdefault(dataset, []).append(Row(
            dataset, method, group[0]["kind"], metrics, len(ok),
            sum(r["status"] in ("failed", "timed-out") for r in group),
            devices=tuple(sorted({r["device"] for r in group if r.get("device")})),
            errors=tuple(dict.fromkeys(f"{r['status']}: {r['error']}" for r in group if r["status"] in ("failed", "timed-out"))),
        ))
    sign = -1 if goal == "max" else 1
    for table in tables.values():
        table.sort(key=lambda r: (primary not in r.metrics, sign * r.metrics[primary].mean if primary in r.metrics else 0,
                                  method_order.index(r.method) if r.method in method_order else 0))
        for i, row in enumerate(table):
            row.rank = i + 1 if primary in row.metrics else 0
    return {d: tables[d] for d in sorted(tables, key=lambda d: dataset_order.index(d) if d in dataset_order else 1e9)}


def win_rates(tables: dict[str, list[Row]], primary: str, metrics: dict[str, Metric]) -> dict[str, tuple[float, int]]:
    """Mean over datasets of the share of other methods beaten on the primary mean (ties count ½)."""
    goal = metrics[primary].goal
    per_method: dict[str, list[float]] = {}
    for table in tables.values():
        scored = [r for r in table if primary in r.metrics]
        for row in scored:
            others = [o for o in scored if o is not row]
            if not others:
                continue
            wins = 0.0
            for other in others:
                a, b = row.metrics[primary].mean, other.metrics[primary].mean
                wins += 0.5 if a == b else float(a > b if goal == "max" else a < b)
            per_method.setdefault(row.method, []).append(wins / len(others))
    return {m: (sum(v) / len(v), len(v)) for m, v in per_method.items()}


def zero_variance(tables: dict[str, list[Row]], primary: str) -> list[str]:
    """Datasets where every method with two or more seeds ok got the same primary value in every seed.

    The seed does not change such a dataset's instance (nor any method's randomness on it), so
    its rows are one measurement each: "± 0" over seeds is no interval.
    """
    flagged = []
    for dataset, table in tables.items():
        cells = [r.metrics[primary] for r in table if primary in r.metrics and r.metrics[primary].n >= 2]
        if cells and all(c.no_spread for c in cells):
            flagged.append(dataset)
    return flagged


def fmt(value: float) -> str:
    if value == 0 or 1e-3 <= abs(value) < 1e4:
        return f"{value:.3f}"
    return f"{value:.3g}"


def fmt_cell(cell: Cell | None) -> str:
    if cell is None:
        return "—"
    if cell.no_spread:
        return f"{fmt(cell.mean)} ({cell.n} seeds, no spread)"
    return fmt(cell.mean) + (f" ± {fmt(cell.half_width)}" if cell.half_width is not None else " (1 seed)")


def _table_text(text: str) -> str:
    """Text for one Markdown table cell: on one line, its pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _header(meta: dict, rows: list[dict]) -> list[str]:
    spec = meta["spec"]
    commits = sorted({r["git_commit"] for r in rows})
    devices = sorted({r["device"] for r in rows if r.get("device")})
    versions = rows[-1]["versions"] if rows else {}
    task_versions = sorted({r["task_version"] for r in rows})
    seeds = sorted({r["seed"] for r in rows})
    return [
        f"- spec `{spec['name']}` (hash `{meta['spec_hash']}`), profile **{meta['profile']}**, task `{spec['task']}` "
        f"version {', '.join(task_versions) or '?'}",
        f"- seeds: {', '.join(map(str, seeds))}; every value is the mean ± the half-width of a 95% t-interval over seeds "
        f"(test split; tuning used only the validation split)",
        f"- hardware: {'; '.join(devices) or 'none recorded'}",
        f"- commit: {', '.join(commits) or 'unknown'}; " + ", ".join(f"{k} {v}" for k, v in versions.items()),
    ]


def render_markdown(meta: dict, rows: list[dict], tables: dict[str, list[Row]], verdicts: list,
                    metrics: dict[str, Metric]) -> str:
    spec = meta["spec"]
    primary = spec["metrics"]["primary"]
    report = spec["metrics"]["report"]
    out = [f"# {spec['title']}", "", f"Leaderboard of `{spec['name']}` — {meta['profile']} profile.", ""]
    if spec.get("description"):
        out += [" ".join(spec["description"].split()), ""]
    if spec.get("paper"):
        paper = spec["paper"]
        out += [f"Paper: {paper['title']}" + (f" ({paper['venue']})" if paper.get("venue") else ""), ""]
    out += _header(meta, rows) + [""]
    others = [v for v in verdicts if getattr(v, "kind", "paired") != "paired"]
    verdicts = [v for v in verdicts if getattr(v, "kind", "paired") == "paired"]
    if verdicts:
        out += ["## Claims", "",
                "Each claim is a paired t-test over independent pairs: by default one per seed, the mean of that "
                "seed's differences over the claim's datasets (they share what the seed drew); one per "
                "(dataset, seed) cell only where the claim declares its datasets independent draws. "
                "Per dataset: the mean difference over seeds ± the half-width of its 95% t-interval.", "",
                "| claim | verdict | says | source | evidence | per dataset |", "|---|---|---|---|---|---|"]
        for v in verdicts:
            evidence = v.reason
            if v.mean_difference is not None:
                lo, hi = v.interval
                evidence = (f"{v.better} − {v.than} on {v.metric} (oriented, + favours {v.better}): "
                            f"{v.mean_difference:+.4g}, 95% CI [{lo:+.4g}, {hi:+.4g}], p = {v.p_value:.3g}, "
                            f"{v.pairs_text()}; {v.reason}")
            cells = [f"`{v.claim}`", f"**{v.verdict}**", v.says, v.provenance(), evidence, v.spread_text() or "—"]
            out.append("| " + " | ".join(_table_text(c) for c in cells) + " |")
        out.append("")
    out += render_other_claims(others)
    rates = win_rates(tables, primary, metrics)
    if rates:
        out += [f"## Mean win rate across datasets ({primary} {metrics[primary].arrow})", "",
                "| method | kind | mean win rate | datasets |", "|---|---|---|---|"]
        kinds = {r.method: r.kind for t in tables.values() for r in t}
        for method, (rate, n) in sorted(rates.items(), key=lambda kv: -kv[1][0]):
            out.append(f"| {method} | {kinds[method]} | {rate:.3f} | {n} |")
        out.append("")
    datasets = {d.get("id", d["name"]): d for d in spec["datasets"]}
    flagged = set(zero_variance(tables, primary))
    for dataset, table in tables.items():
        entry = datasets.get(dataset, {})
        params = ", ".join(f"{k}={v}" for k, v in entry.get("params", {}).items())
        out += [f"## {dataset}", "", f"`{entry.get('name', dataset)}`" + (f" ({params})" if params else ""), ""]
        if dataset in flagged:
            out += [f"**No interval:** {primary} is the same in every seed for every method with two or more seeds "
                    f"here: the seed does not change this dataset's instance, so each row is one measurement, "
                    f"not a mean over independent draws.", ""]
        columns = [f"{m} {metrics[m].arrow}" + (f" [{metrics[m].unit}]" if metrics[m].unit else "") for m in report]
        out += ["| rank | method | kind | " + " | ".join(columns) + " | seeds ok | failed |",
                "|---|---|---|" + "---|" * len(columns) + "---|---|"]
        for row in table:
            cells = [fmt_cell(row.metrics.get(m)) for m in report]
            out.append(f"| {row.rank or '—'} | {row.method} | {row.kind} | " + " | ".join(cells)
                       + f" | {row.seeds_ok} | {row.seeds_failed} |")
        errors = [(row.method, e) for row in table for e in row.errors]
        if errors:
            out += [""] + [f"- {method}: {error}" for method, error in errors]
        out.append("")
    return "\n".join(out)


def render_other_claims(verdicts: list) -> list[str]:
    """The sections of the scaling and bound claims (:mod:`harness.claims`), after the paired ones."""
    out: list[str] = []
    scaling = [v for v in verdicts if v.kind == "scaling"]
    if scaling:
        out += ["## Scaling claims", "",
                "Each method's exponent is the least-squares slope of log(metric) against log(size), fitted per seed "
                "over the claim's datasets (at least 5 sizes spanning 16x), then averaged over seeds ± the half-width "
                "of its 95% t-interval. The claim is a paired t-test over seeds of the difference of two exponents.", "",
                "| claim | verdict | says | source | sizes | exponents | evidence |", "|---|---|---|---|---|---|---|"]
        for v in scaling:
            cells = [f"`{v.claim}`", f"**{v.verdict}**", v.says, v.provenance(), v.sizes_text(),
                     v.spread_text() or "—", v.evidence()]
            out.append("| " + " | ".join(_table_text(c) for c in cells) + " |")
        out.append("")
    bounds = [v for v in verdicts if v.kind == "bound"]
    if bounds:
        out += ["## Bound claims", "",
                "A bound holds on every cell of the named methods; one cell beyond it refutes the claim.", "",
                "| claim | verdict | says | source | evidence | per dataset |", "|---|---|---|---|---|---|"]
        for v in bounds:
            cells = [f"`{v.claim}`", f"**{v.verdict}**", v.says, v.provenance(), v.evidence(), v.spread_text() or "—"]
            out.append("| " + " | ".join(_table_text(c) for c in cells) + " |")
        out.append("")
    return out


def render_csv(meta: dict, tables: dict[str, list[Row]]) -> str:
    report = meta["spec"]["metrics"]["report"]
    flagged = set(zero_variance(tables, meta["spec"]["metrics"]["primary"]))
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["spec", "profile", "dataset", "rank", "method", "kind", "seeds_ok", "seeds_failed"]
                    + [f"{m}_{part}" for m in report for part in ("mean", "ci95", "n")] + ["devices", "zero_variance"])
    for dataset, table in tables.items():
        for row in table:
            values = []
            for m in report:
                cell = row.metrics.get(m)
                values += ["", "", 0] if cell is None else [
                    repr(cell.mean), "" if cell.half_width is None else repr(cell.half_width), cell.n]
            writer.writerow([meta["spec"]["name"], meta["profile"], dataset, row.rank or "", row.method, row.kind,
                             row.seeds_ok, row.seeds_failed, *values, "; ".join(row.devices),
                             "true" if dataset in flagged else "false"])
    return buffer.getvalue()


def render_plot_svg(meta: dict, tables: dict[str, list[Row]], metrics: dict[str, Metric]) -> str:
    """Primary metric per method and dataset, with 95% intervals, as inline SVG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    primary = meta["spec"]["metrics"]["primary"]
    datasets = list(tables)
    methods = list(dict.fromkeys(r.method for t in tables.values() for r in t))
    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(datasets) + 3), 4.0))
    width = 0.8 / max(1, len(methods))
    for j, method in enumerate(methods):
        xs, ys, errs = [], [], []
        for i, dataset in enumerate(datasets):
            row = next((r for r in tables[dataset] if r.method == method and primary in r.metrics), None)
            if row:
                xs.append(i - 0.4 + width * (j + 0.5))
                ys.append(row.metrics[primary].mean)
                errs.append(row.metrics[primary].half_width or 0.0)
        marker = "o" if any(r.kind == "implementation" for t in tables.values() for r in t if r.method == method) else "s"
        ax.errorbar(xs, ys, yerr=errs, fmt=marker, capsize=3, label=method)
    ax.set_xticks(range(len(datasets)), datasets, rotation=30, ha="right")
    ax.set_ylabel(f"{primary} {metrics[primary].arrow}")
    ax.set_title(f"{meta['spec']['name']} ({meta['profile']}): {primary}, mean and 95% interval over seeds")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", bbox_to_anchor=(1.02, 1), loc="upper left")
    fig.tight_layout()
    buffer = io.StringIO()
    # a fixed id salt and no date: rebuilding an unchanged folder rewrites the page byte for byte
    with plt.rc_context({"svg.hashsalt": "harness-leaderboard"}):
        fig.savefig(buffer, format="svg", metadata={"Date": None})
    plt.close(fig)
    svg = buffer.getvalue()
    return svg[svg.index("<svg"):]


def render_html(meta: dict, markdown_text: str, tables: dict[str, list[Row]], metrics: dict[str, Metric]) -> str:
    """A static page: the plot, then the Markdown tables rendered as HTML tables."""
    figure = f"<figure>{render_plot_svg(meta, tables, metrics)}</figure>" if tables else "<p>No finished cells yet.</p>"
    body: list[str] = []
    in_table = False
    for line in markdown_text.splitlines():
        if line.startswith("## ") and figure:
            body.append(figure)  # the plot goes after the header, before the first table
            figure = ""
        if line.startswith("|"):
            cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip()[1:-1])]
            if set("".join(cells)) <= set("-"):
                continue
            if not in_table:
                body.append("<table>")
                tag, in_table = "th", True
            else:
                tag = "td"
            body.append("<tr>" + "".join(f"<{tag}>{_inline(c)}</{tag}>" for c in cells) + "</tr>")
            continue
        if in_table:
            body.append("</table>")
            in_table = False
        if line.startswith("# "):
            body.append(f"<h1>{_inline(line[2:])}</h1>")
        elif line.startswith("## "):
            body.append(f"<h2>{_inline(line[3:])}</h2>")
        elif line.startswith("- "):
            body.append(f"<p class='meta'>{_inline(line[2:])}</p>")
        elif line.strip():
            body.append(f"<p>{_inline(line)}</p>")
    if in_table:
        body.append("</table>")
    if figure:
        body.append(figure)
    style = ("body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}"
             "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}"
             "th{background:#f3f3f3}.meta{margin:.2em 0;color:#444}figure{margin:0}svg{max-width:100%;height:auto}")
    title = html.escape(meta["spec"]["title"])
    return (f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>{title}</title>"
            f"<style>{style}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")


def _inline(text: str) -> str:
    text = html.escape(text)
    text = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", text)
    return re.sub(r"`(.+?)`", r"<code>\1</code>", text)


def folder_metrics(folder: Path, spec: dict) -> dict[str, Metric]:
    """The folder's metric table, checked to hold every metric the spec reports or claims."""
    metrics = read_metric_table(folder)
    needed = [spec["metrics"]["primary"], *spec["metrics"]["report"], *(c["metric"] for c in spec.get("claims", []))]
    missing = sorted(set(needed) - set(metrics))
    if missing:
        raise NoResults(f"{folder}: no goal or unit known for {', '.join(missing)}: the folder has no metrics.json "
                        f"(written by runs of this harness version on) and no registered family declares them; "
                        f"register the plugin that does (e.g. HARNESS_PLUGINS) to rebuild this older folder")
    return metrics


def compute(folder: Path):
    """(meta, rows, tables, verdicts, metrics) of a results folder."""
    meta, rows = read_folder(folder)
    spec = meta["spec"]
    metrics = folder_metrics(folder, spec)
    tables = build_rows(meta, rows, metrics)
    order = [d.get("id", d["name"]) for d in spec["datasets"]]
    verdicts = [check_claim(c, rows, metrics[c["metric"]].goal, order) for c in spec.get("claims", [])]
    return meta, rows, tables, verdicts, metrics


def write_leaderboard(folder: Path) -> list:
    """(Re)write leaderboard.md, .csv, .html and claims.json of a results folder."""
    folder = Path(folder)
    meta, rows, tables, verdicts, metrics = compute(folder)
    markdown_text = render_markdown(meta, rows, tables, verdicts, metrics)
    write_atomic(folder / "leaderboard.md", markdown_text + "\n")
    write_atomic(folder / "leaderboard.csv", render_csv(meta, tables))
    write_atomic(folder / "leaderboard.html", render_html(meta, markdown_text, tables, metrics))
    write_atomic(folder / "claims.json", json.dumps(
        {"spec": meta["spec"]["name"], "profile": meta["profile"], "title": meta["spec"]["title"],
         "zero_variance": zero_variance(tables, meta["spec"]["metrics"]["primary"]),
         "claims": [v.to_dict() for v in verdicts]}, indent=1) + "\n")
    return verdicts


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
        link = (folder / "leaderboard.md").relative_to(root).as_posix()
        lines.append(f"| {data['profile']} | {data['spec']} | {data['title']} | {claims} | [{link}]({link}) |")
    write_atomic(root / "index.md", "\n".join(lines) + "\n")
