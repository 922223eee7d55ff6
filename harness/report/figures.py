"""The figure of the primary metric: one panel per dataset, or a rank summary beyond :data:`PANEL_LIMIT` datasets;
written as SVG with stable ids, so a rebuild writes the same bytes.
"""
from __future__ import annotations

import io
import math

from harness.report.blocks import AT_CHANCE
from harness.report.board import Board

PANEL_COLUMNS = 4


PANEL_LIMIT = 48  # datasets (or curve panels) one figure shows panel by panel; beyond, a summary (see plot_figure)


def plot_figure(board: Board):
    """The primary metric per method: one panel per dataset, each on its own y-axis, with 95% intervals and the
    chance level (a dashed line, or a note at the edge where a line would squash the panel's scale).

    Beyond :data:`PANEL_LIMIT` datasets, panels would be unreadable and slow (8 s for 3,000): one panel instead,
    the distribution of each method's rank over the ranked datasets (:func:`plot_rank_summary`).
    """
    if len(board.datasets) > PANEL_LIMIT:
        return plot_rank_summary(board)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    meta, tables, metrics, primary = board.meta, board.tables, board.metrics, board.primary
    datasets = list(tables)
    methods = list(dict.fromkeys(r.label for t in tables.values() for r in t))
    implementations = {r.label for t in tables.values() for r in t if r.kind == "implementation"}
    chance_datasets = set(board.at_chance)
    lines = math.ceil(len(datasets) / PANEL_COLUMNS)
    columns = math.ceil(len(datasets) / lines)  # balanced: 5 panels are 3 + 2, not 4 + 1
    fig, axes = plt.subplots(lines, columns, figsize=(3.2 * columns, 2.5 * lines + 1.3), sharey=False, squeeze=False)
    label = f"{primary} {metrics[primary].arrow}" + (f" [{metrics[primary].unit}]" if metrics[primary].unit else "")
    drew_chance = False
    for k, ax in enumerate(axes.flat):
        if k >= len(datasets):
            ax.set_visible(False)
            continue
        dataset = datasets[k]
        for j, method in enumerate(methods):
            row = next((r for r in tables[dataset] if r.label == method and primary in r.metrics), None)
            if row:
                cell = row.metrics[primary]
                ax.errorbar([j], [cell.mean], yerr=[cell.half_width or 0.0], fmt="o" if method in implementations else "s",
                            color=f"C{j % 10}", capsize=3)
        level = board.chance.get(dataset, {}).get(primary)
        if level is not None:
            low, high = ax.get_ylim()
            if low - 0.5 * (high - low) <= level <= high + 0.5 * (high - low):
                ax.axhline(level, color="0.35", linestyle="--", linewidth=1)
                drew_chance = True
            else:  # far off: a line would squash this panel's own scale into a band
                below = level < low
                ax.annotate(f"chance {level:g} {'↓' if below else '↑'}", xy=(0.02, 0.03 if below else 0.97),
                            xycoords="axes fraction", va="bottom" if below else "top", fontsize="x-small", color="0.35")
        ax.set_title(dataset + (f" ({AT_CHANCE})" if dataset in chance_datasets else ""), fontsize="medium")
        ax.set_xticks([])
        ax.set_xlim(-0.6, len(methods) - 0.4)
        ax.grid(axis="y", alpha=0.3)
        ax.tick_params(axis="y", labelsize="small")
        if k % columns == 0:
            ax.set_ylabel(label)
    handles = [Line2D([], [], color=f"C{j % 10}", marker="o" if m in implementations else "s", linestyle="", label=m)
               for j, m in enumerate(methods)]
    if drew_chance:
        handles.append(Line2D([], [], color="0.35", linestyle="--", linewidth=1, label="chance level"))
    fig.legend(handles=handles, loc="lower center", ncol=min(len(handles), 4), fontsize="small", frameon=False)
    fig.suptitle(f"{meta['spec']['name']} ({meta['profile']}): {primary}, mean and 95% interval over seeds, each "
                 f"panel on its own scale; ● implementation, ■ baseline", fontsize="medium")
    legend_rows = math.ceil(len(handles) / 4)
    fig.tight_layout(rect=(0, (0.25 * legend_rows + 0.1) / fig.get_figheight(), 1, 1))
    return fig


def plot_rank_summary(board: Board):
    """One panel for a folder of many datasets: per method (label), a box plot of its rank on the primary metric
    over the datasets where it was ranked (box: quartiles, whiskers: 5th and 95th percentiles, a dot: the mean)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ranks = ranks_by_label(board)
    methods = list(ranks)
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(methods) + 2.0))
    shown = [m for m in methods if ranks[m]]
    if shown:
        ax.boxplot([ranks[m] for m in shown], orientation="horizontal", whis=(5, 95), showfliers=False,
                   showmeans=True, meanprops={"marker": "o", "markerfacecolor": "C1", "markeredgecolor": "C1"})
        ax.set_yticks(range(1, len(shown) + 1), [f"{m} ({len(ranks[m])})" for m in shown], fontsize="small")
        ax.invert_yaxis()
    ax.set_xlabel(f"rank by {board.primary} {board.metrics[board.primary].arrow} (1 = best)")
    ax.grid(axis="x", alpha=0.3)
    ranked = board.columns.ranked_datasets()
    ax.set_title(f"{board.spec['name']} ({board.meta['profile']}): each method's rank over {ranked} ranked of "
                 f"{len(board.datasets)} datasets (in brackets: datasets where it was ranked); box: quartiles, "
                 f"whiskers: 5th-95th percentile, dot: mean", fontsize="small", wrap=True)
    fig.tight_layout()
    return fig


def ranks_by_label(board: Board) -> dict[str, list[int]]:
    """Each label's ranks over the datasets where it was ranked, every label in order of its first row (computed
    once per board: the figure and the page's table of ranks read it)."""
    if "_ranks_by_label" not in board.__dict__:
        import numpy as np

        columns = board.columns
        labels, codes = columns.labels
        ranked = columns.rank > 0
        order = np.argsort(codes[ranked], kind="stable")  # each label's ranks in the order of its rows
        ranks = columns.rank[ranked][order].tolist()
        sizes = np.bincount(codes[ranked], minlength=len(labels))
        ends = np.cumsum(sizes).tolist()
        board.__dict__["_ranks_by_label"] = {label: ranks[end - size:end]
                                             for label, end, size in zip(labels, ends, sizes.tolist())}
    return board.__dict__["_ranks_by_label"]


def render_plot_svg(board: Board) -> str:
    """:func:`plot_figure` as inline SVG."""
    return figure_svg(plot_figure(board), "harness-leaderboard")


def figure_svg(fig, salt: str) -> str:
    """A matplotlib figure as an ``<svg>`` element, closed after. A fixed id salt and no date: rebuilding an unchanged
    folder rewrites the page byte for byte."""
    import matplotlib.pyplot as plt

    buffer = io.StringIO()
    with plt.rc_context({"svg.hashsalt": salt}):
        fig.savefig(buffer, format="svg", metadata={"Date": None})
    plt.close(fig)
    svg = buffer.getvalue()
    return svg[svg.index("<svg"):]
