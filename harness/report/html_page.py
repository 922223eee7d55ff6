"""``leaderboard.html``: the page's blocks as a static HTML page, with the figures inline.
"""
from __future__ import annotations

import html
import re

from harness.report.blocks import PAGE_BODY_PX, Table
from harness.report.board import Board
from harness.report.curves import render_curves_svg
from harness.report.figures import render_plot_svg
from harness.report.pages import page_blocks

STYLE = (
    f"body{{font-family:system-ui,sans-serif;max-width:{PAGE_BODY_PX}px;margin:2em auto;padding:0 1em;line-height:1.35}}"
    "table{border-collapse:collapse;margin:1em 0;font-size:.92em}"
    "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}"
    "th{background:#f3f3f3}"
    ".meta{margin:.2em 0;color:#444}figure{margin:0}svg{max-width:100%;height:auto}"
    "details{margin:.5em 0 1em}summary{cursor:pointer;color:#444}details table{margin-top:.5em}"
    ".verdict{font-weight:bold}"
    ".reproduced{background:#dcf2dc;color:#14551b}"
    ".not-reproduced{background:#fadcdc;color:#8a1414}"
    ".inconclusive{background:#fdf0d0;color:#7a5200}"
)


def render_html(board: Board) -> str:
    """A static page: the header, the plot, then the tables (secondary ones collapsed)."""
    body: list[str] = []
    for block in page_blocks(board):
        kind = block[0]
        if kind == "figure":
            body.append(f"<figure>{render_plot_svg(board)}</figure>" if board.datasets else "<p>No finished cells yet.</p>")
        elif kind == "curves-figure":
            body.append(f"<figure>{render_curves_svg(board)}</figure>")
        elif kind == "h1":
            body.append(f"<h1>{_inline(block[1])}</h1>")
        elif kind == "h2":
            body.append(f"<h2>{_inline(block[1])}</h2>")
        elif kind == "p":
            body.append(f"<p>{_inline(block[1])}</p>")
        elif kind == "li":
            body.append(f"<p class='meta'>{_inline(block[1])}</p>")
        elif kind == "details":
            body.append(f"<details><summary>{_inline(block[1])}</summary>\n<p>{_inline(block[2])}</p>\n</details>")
        elif kind == "table":
            body.append(_html_table(block[1]))
    title = html.escape(board.spec["title"])
    return (f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>{title}</title>"
            f"<style>{STYLE}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")


def _html_table(table: Table) -> str:
    def cell(tag: str, value) -> str:
        text, cls = (value if isinstance(value, tuple) else (value, ""))
        text = _inline(text).replace("_", "_<wbr>")  # long metric names may break after an underscore
        return f"<{tag} class='{cls}'>{text}</{tag}>" if cls else f"<{tag}>{text}</{tag}>"

    rows = ["<tr>" + "".join(cell("th", h) for h in table.header) + "</tr>"]
    rows += ["<tr>" + "".join(cell("td", c) for c in row) + "</tr>" for row in table.rows]
    text = "<table>\n" + "\n".join(rows) + "\n</table>"
    if table.summary:
        return f"<details><summary>{_inline(table.summary)}</summary>\n{text}\n</details>"
    return text


def _inline(text: str) -> str:
    text = html.escape(text)
    if "*" not in text and "`" not in text:
        return text  # most table cells: nothing to mark up
    text = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", text)
    return re.sub(r"`(.+?)`", r"<code>\1</code>", text)
