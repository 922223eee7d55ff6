"""``leaderboard.md``: the page's blocks as Markdown.
"""
from __future__ import annotations

from harness.report.blocks import Table
from harness.report.board import Board
from harness.report.curves import CURVES_SVG
from harness.report.pages import cell_text, page_blocks, table_text


def render_markdown(board: Board) -> str:
    out: list[str] = []
    previous = None
    for block in page_blocks(board):
        kind = block[0]
        if kind == "figure":
            continue
        if kind == "curves-figure":
            block = ("p", f"![curves]({CURVES_SVG})")
            kind = "p"
        if out and not (kind == "li" and previous == "li"):
            out.append("")
        if kind == "h1":
            out.append(f"# {block[1]}")
        elif kind == "h2":
            out.append(f"## {block[1]}")
        elif kind == "p":
            out.append(block[1])
        elif kind == "li":
            out.append(f"- {block[1]}")
        elif kind == "details":  # folded on GitHub's and most Markdown viewers' pages
            out += [f"<details><summary>{block[1]}</summary>", "", block[2], "", "</details>"]
        elif kind == "table":
            table: Table = block[1]
            if table.summary:
                out += [f"{table.summary}:", ""]
            out.append("| " + " | ".join(table_text(h) for h in table.header) + " |")
            out.append("|" + "---|" * len(table.header))
            out += ["| " + " | ".join(table_text(cell_text(c)) for c in row) + " |" for row in table.rows]
        previous = kind
    return "\n".join(out) + "\n"
