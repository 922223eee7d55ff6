"""Curves a task records per cell (an error per round, a loss per epoch): mean over seeds per method, as a figure
(``curves.svg``) and as a short table on the page.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from harness.results_table import classes_apart, texts
from harness.report.blocks import Table
from harness.report.board import Board, row_class, row_label
from harness.report.figures import PANEL_COLUMNS, PANEL_LIMIT, figure_svg
from harness.stats import mean_and_half_width

CURVES_SVG = "curves.svg"


CURVE_TABLE_POINTS = 8  # the page's table of a curve shows at most this many x values


@dataclass
class CurveLine:
    """One method's curve on one dataset: the mean over seeds at each x, its 95% half-width, and the theory."""

    method: str
    x: list[float]
    mean: list[float]
    half_width: list[float | None]
    theory: list[float] | None
    seeds: int


def curve_panels(board: Board) -> dict[tuple[str, str], tuple[str, str, list[CurveLine]]]:
    """(dataset, curve name) → (x label, y label, one line per method), from the rows' ``curves``. A method's seeds
    are averaged where their x values agree with its first seed's; seeds measured at other x are left out."""
    if "_curve_panels" in board.__dict__:  # the page asks three times
        return board.__dict__["_curve_panels"]
    board.__dict__["_curve_panels"] = panels = _curve_panels(board)
    return panels


def _curve_panels(board: Board) -> dict[tuple[str, str], tuple[str, str, list[CurveLine]]]:
    import numpy as np

    method_order = [m.get("id", m["name"]) for m in board.spec["methods"]]
    dataset_order = list(board.datasets) or [d.get("id", d["name"]) for d in board.spec["datasets"]]
    found: dict[tuple[str, str], dict[tuple[str, str | None], list[dict]]] = {}
    labels: dict[tuple[str, str], tuple[str, str]] = {}
    rows = board.rows
    apart = classes_apart(rows)  # then a line per method and device class
    at = np.flatnonzero((rows["status"] == "ok").to_numpy() & rows["curves"].notna().to_numpy())
    for dataset, method, device, curves in zip(texts(rows, "dataset", at), texts(rows, "method", at),
                                               texts(rows, "device", at), rows["curves"].to_numpy()[at].tolist()):
        if not curves:
            continue
        for name, curve in curves.items():
            found.setdefault((dataset, name), {}).setdefault((method, row_class(device, apart)), []).append(curve)
            labels.setdefault((dataset, name), (curve.get("x_label", "step"), curve.get("y_label") or name))
    panels = {}
    place = {d: i for i, d in reversed(list(enumerate(dataset_order)))}
    for key in sorted(found, key=lambda k: (place.get(k[0], len(dataset_order)), k)):
        lines = []
        for method, device in sorted(found[key], key=lambda m: (method_order.index(m[0]) if m[0] in method_order
                                                                else len(method_order), m[1] or "")):
            curves = found[key][(method, device)]
            x = curves[0]["x"]
            same = [c for c in curves if c["x"] == x]
            columns = list(zip(*(c["y"] for c in same)))
            stats = [mean_and_half_width(list(col)) for col in columns]
            theories = [c["theory"] for c in same if c.get("theory") is not None]
            theory = [sum(t) / len(t) for t in zip(*theories)] if theories else None
            lines.append(CurveLine(row_label(method, device), list(x), [m for m, _ in stats], [h for _, h in stats],
                                   theory, len(same)))
        panels[key] = (*labels[key], lines)
    return panels


def curve_blocks(board: Board) -> list:
    panels = curve_panels(board)
    if not panels:
        return []
    blocks: list = [("h2", "Curves"), ("p",
                     "Each method's measured curve is its mean over seeds (the band and ± are the half-width of the "
                     "95% t-interval); a dashed line of the same colour is the theory's prediction for that method, "
                     "averaged over the same seeds."), ("curves-figure",)]
    for (dataset, name), (x_label, y_label, lines) in panels.items():
        xs = sorted({x for line in lines for x in line.x})  # every method's x: curves may differ in length
        step = max(1, math.ceil(len(xs) / CURVE_TABLE_POINTS))
        shown = [xs[i] for i in sorted(set(range(0, len(xs), step)) | {len(xs) - 1})]
        rows = []
        for line in lines:
            at = {x: i for i, x in enumerate(line.x)}
            rows.append([line.method, str(line.seeds),
                         *[_fmt_mean(line.mean[at[x]], line.half_width[at[x]]) if x in at else "—" for x in shown]])
            if line.theory is not None:
                rows.append([f"{line.method} (theory)", str(line.seeds),
                             *[f"{line.theory[at[x]]:.4g}" if x in at else "—" for x in shown]])
        header = ["method", "seeds", *[f"{x_label} {x:g}" for x in shown]]
        blocks.append(("table", Table(header, rows, summary=f"{dataset}: {y_label} against {x_label}")))
    return blocks


def _fmt_mean(mean: float, half: float | None) -> str:
    return f"{mean:.4g}" + ("" if half is None else f" ± {half:.2g}")


def plot_curves(board: Board):
    """One panel per (dataset, curve): each method's mean curve with its 95% band, its theory dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    panels = curve_panels(board)
    total = len(panels)
    if total > PANEL_LIMIT:  # the first panels, in the page's order; every panel's table is on the page
        panels = dict(list(panels.items())[:PANEL_LIMIT])
    methods = list(dict.fromkeys(line.method for _, _, lines in panels.values() for line in lines))
    # up to 20 distinct colours (tab20), then the same colours dash-dotted and dotted: 60 methods stay apart
    palette = matplotlib.colormaps["tab20"].colors if len(methods) > 10 else [f"C{i}" for i in range(10)]
    colour = {m: palette[i % len(palette)] for i, m in enumerate(methods)}
    style = {m: ("-", "-.", ":")[(i // len(palette)) % 3] for i, m in enumerate(methods)}
    rows = math.ceil(len(panels) / PANEL_COLUMNS)
    columns = math.ceil(len(panels) / rows)
    fig, axes = plt.subplots(rows, columns, figsize=(3.6 * columns, 2.8 * rows + 1.3), squeeze=False)
    theory_drawn = False
    for ax, ((dataset, name), (x_label, y_label, lines)) in zip(axes.flat, panels.items()):
        positive = all(v > 0 for line in lines for v in line.mean + (line.theory or []))
        for line in lines:
            ax.plot(line.x, line.mean, color=colour[line.method], linestyle=style[line.method],
                    marker="." if len(line.x) <= 20 else None)
            if any(h is not None for h in line.half_width):
                low = [m - (h or 0.0) for m, h in zip(line.mean, line.half_width)]
                high = [m + (h or 0.0) for m, h in zip(line.mean, line.half_width)]
                ax.fill_between(line.x, low, high, color=colour[line.method], alpha=0.15, linewidth=0)
            if line.theory is not None:
                ax.plot(line.x, line.theory, color=colour[line.method], linestyle="--", linewidth=1)
                theory_drawn = True
        values = [v for line in lines for v in line.mean if v > 0]
        if positive and values and max(values) > 100 * min(values):
            ax.set_yscale("log")  # a curve over orders of magnitude reads as one
        ax.set_title(f"{dataset}: {name}", fontsize="medium")
        ax.set_xlabel(x_label, fontsize="small")
        ax.set_ylabel(y_label, fontsize="small")
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize="small")
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    handles = [Line2D([], [], color=colour[m], linestyle=style[m], label=m) for m in methods]
    if theory_drawn:
        handles.append(Line2D([], [], color="0.35", linestyle="--", linewidth=1, label="theory (method's colour)"))
    fig.legend(handles=handles, loc="lower center", ncol=min(len(handles), 4), fontsize="small", frameon=False)
    fig.suptitle(f"{board.spec['name']} ({board.meta['profile']}): measured curves, mean and 95% band over seeds"
                 + (f" (the first {len(panels)} of {total} panels; each one's table is on the page)"
                    if total > len(panels) else ""), fontsize="medium")
    fig.tight_layout(rect=(0, (0.25 * math.ceil(len(handles) / 4) + 0.1) / fig.get_figheight(), 1, 1))
    return fig


def render_curves_svg(board: Board) -> str:
    """:func:`plot_curves` as SVG."""
    return figure_svg(plot_curves(board), "harness-curves")
