"""The page as blocks, which Markdown and HTML are both written from: a heading, a paragraph, a list item, a table
(its cells plain text with **bold** and `code`, or (text, CSS class)), the plot. Claim kinds add theirs through
these."""
from __future__ import annotations

import re
from dataclasses import dataclass

AT_CHANCE = "at chance"
BELOW_TRIVIAL = "(≤ trivial)"  # after a method: its mean does not beat the best trivial row of its dataset
PAGE_BODY_PX = 1280  # the HTML page's body is at most this wide; a wider table gives the window a horizontal scrollbar
PAGE_LIMIT = 48  # datasets the page shows table by table (the figure's PANEL_LIMIT); beyond, a summary and the CSV
VERDICT_CLASS = {"reproduced": "reproduced", "not reproduced": "not-reproduced", "inconclusive": "inconclusive",
                 "holds": "reproduced", "fails": "not-reproduced", "unchecked": "inconclusive"}  # a check's as a claim's


@dataclass
class Table:
    header: list[str]
    rows: list[list]  # a cell is its text, or (text, CSS class) for the HTML page
    summary: str | None = None  # a secondary table: under this line in Markdown, collapsed under it in HTML

    def narrowest_px(self) -> float:
        """About how narrow the HTML page can squeeze this table: each column as wide as its longest unbreakable
        word (the page breaks lines at spaces and after "_" and "-"), 7.3 px a character and 27.4 px a column
        (cell padding, border, the bold header): a fit to what headless Chromium measured on the committed pages'
        tables of 4 to 16 columns, within 31 px."""
        words = 0
        for column in zip(self.header, *self.rows):
            words += max((len(word) for cell in column for word in _WORD_BREAK.split(_text(cell)) if word), default=1)
        return 7.3 * words + 27.4 * len(self.header)


_WORD_BREAK = re.compile(r"\s+|(?<=[_-])")


def _text(cell) -> str:
    return (cell[0] if isinstance(cell, tuple) else cell).replace("**", "").replace("`", "")


def verdict_cell(verdict) -> tuple[str, str]:
    """A claim's verdict in a table: bold, the audit's rules that found something in it (see the page's Audit
    section), and its CSS class on the HTML page."""
    found = getattr(verdict, "audit", None)
    said = f" (audit: {', '.join(dict.fromkeys(found))})" if found else ""
    return f"**{verdict.verdict}**{said}", f"verdict {VERDICT_CLASS.get(verdict.verdict, '')}".strip()
