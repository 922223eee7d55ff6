"""The page as blocks, which Markdown and HTML are both written from: a heading, a paragraph, a list item, a table
(its cells plain text with **bold** and `code`, or (text, CSS class)), the plot. Claim kinds add theirs through
these."""
from __future__ import annotations

from dataclasses import dataclass

AT_CHANCE = "at chance"
BELOW_TRIVIAL = "(≤ trivial)"  # after a method: its mean does not beat the best trivial row of its dataset
PAGE_LIMIT = 48  # datasets the page shows table by table (the figure's PANEL_LIMIT); beyond, a summary and the CSV
VERDICT_CLASS = {"reproduced": "reproduced", "not reproduced": "not-reproduced", "inconclusive": "inconclusive",
                 "holds": "reproduced", "fails": "not-reproduced", "unchecked": "inconclusive"}  # a check's as a claim's


@dataclass
class Table:
    header: list[str]
    rows: list[list]  # a cell is its text, or (text, CSS class) for the HTML page
    summary: str | None = None  # a secondary table: under this line in Markdown, collapsed under it in HTML


def verdict_cell(verdict) -> tuple[str, str]:
    """A claim's verdict in a table: bold, the audit's rules that found something in it (see the page's Audit
    section), and its CSS class on the HTML page."""
    found = getattr(verdict, "audit", None)
    said = f" (audit: {', '.join(dict.fromkeys(found))})" if found else ""
    return f"**{verdict.verdict}**{said}", f"verdict {VERDICT_CLASS.get(verdict.verdict, '')}".strip()
