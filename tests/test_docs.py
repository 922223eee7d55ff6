"""The README and the pages under docs/ hold together: every relative link names a file that exists and, with a
`#anchor`, a heading of that file (GitHub's anchors); docs/index.md and the README's "Documentation" list name every
page."""
from __future__ import annotations

import re
from pathlib import Path

from conftest import ROOT

LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def _lines(text: str) -> list[tuple[str, bool]]:
    """Each line of Markdown text, and whether it belongs to a fenced code block (its fences included)."""
    out, fence = [], None
    for line in text.splitlines():
        opener = re.match(r" {0,3}(```+|~~~+)", line)
        if opener and fence is None:
            fence = opener.group(1)
            out.append((line, True))
        elif opener and opener.group(1).startswith(fence):
            fence = None
            out.append((line, True))
        else:
            out.append((line, fence is not None))
    return out


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lowercase, punctuation but '-' and '_' removed, each space a '-'."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors of a Markdown file's headings; a repeated one gets '-1', '-2', ... as on GitHub."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    for line, code in _lines(path.read_text()):  # a heading's inline code counts: `harness bench` → harness-bench
        heading = re.match(r" {0,3}#{1,6} +(.*?)(?: +#+)? *$", line)
        if heading and not code:
            base = slug(heading.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(path: Path) -> list[tuple[int, str]]:
    """(line number, target) of each link in a Markdown file, leaving out code: fenced blocks and inline spans."""
    found = []
    for number, (line, code) in enumerate(_lines(path.read_text()), 1):
        if not code:
            found += [(number, target) for target in LINK.findall(re.sub(r"(`+)(?:(?!\1).)+\1", "", line))]
    return found


def broken_links(path: Path) -> list[str]:
    """`file:line: target: why` for each relative link of a Markdown file that leads nowhere."""
    problems = []
    for number, target in links(path):
        if re.match(r"[a-z][a-z0-9+.-]*:", target, flags=re.I):  # https:, mailto: ...
            continue
        file_part, _, anchor = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        where = f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{number}: {target}"
        if not linked.exists():
            problems.append(f"{where}: no file {linked}")
        elif anchor and (linked.suffix != ".md" or anchor not in anchors(linked)):
            problems.append(f"{where}: no heading with the anchor #{anchor} in {linked.name}")
    return problems


def pages() -> list[Path]:
    return sorted((ROOT / "docs").glob("*.md"))


def linked_pages(path: Path) -> set[Path]:
    """The docs pages a Markdown file links to."""
    found = set()
    for _, target in links(path):
        linked = (path.parent / target.partition("#")[0]).resolve()
        if linked.parent == (ROOT / "docs").resolve() and linked.suffix == ".md":
            found.add(linked)
    return found


def test_every_relative_link_leads_to_a_file_and_a_heading():
    files = [ROOT / "README.md", *pages()]
    assert len(files) > 2, "no pages under docs/"
    assert [problem for path in files for problem in broken_links(path)] == []


def test_the_index_and_the_readme_list_every_page():
    every = {page.resolve() for page in pages()} - {(ROOT / "docs" / "index.md").resolve()}
    assert linked_pages(ROOT / "docs" / "index.md") >= every, "docs/index.md misses a page"
    readme = ROOT / "README.md"
    assert linked_pages(readme) >= every | {(ROOT / "docs" / "index.md").resolve()}, "README.md misses a page"


def test_a_broken_link_or_anchor_is_found(tmp_path):
    """The check itself: a missing file, a missing anchor and a link in code (not a link) on a page of its own."""
    (tmp_path / "other.md").write_text("# Other page\n\n## Kernels: `harness bench` (asv)\n\n## Same\n\n## Same\n")
    page = tmp_path / "page.md"
    page.write_text("# Page\n\n"
                    "[fine](other.md#kernels-harness-bench-asv) [fine](other.md#same-1) [here](#page)\n"
                    "[gone](missing.md) [no anchor](other.md#nowhere) [web](https://example.org/x.md)\n"
                    "`[in code](missing.md)`\n\n```\n[in a block](missing.md)\n```\n")
    problems = broken_links(page)
    assert len(problems) == 2, problems
    assert problems[0].endswith(f"page.md:4: missing.md: no file {tmp_path / 'missing.md'}")
    assert problems[1].endswith("page.md:4: other.md#nowhere: no heading with the anchor #nowhere in other.md")


def test_the_read_results_example_groups_the_committed_table_as_the_leaderboard_does(monkeypatch):
    """docs/commands.md's pandas example runs as written on the committed results, and its means are the
    leaderboard's (the same cells: the newest row per cell, the ok ones)."""
    import csv

    import harness

    text = (ROOT / "docs" / "commands.md").read_text()
    block = re.search(r"```python\n(frame = harness\.read_results\(.*?)```", text, flags=re.S).group(1)
    monkeypatch.chdir(ROOT)
    lines = block.strip().splitlines()
    scope = {"harness": harness}
    exec("\n".join(lines[:-1]), scope)  # noqa: S102 - the documented example, run as written
    table = eval(lines[-1], scope)  # noqa: S307 - its last line is the expression a reader sees
    assert list(table.columns) == ["mean", "std", "count"] and len(table) > 0
    board = {(row["dataset"], row["method"]): row for row in csv.DictReader(
        (ROOT / "results" / "default" / "cdfsl" / "leaderboard.csv").open())}
    for (dataset, method), got in table.iterrows():
        shown = float(board[dataset, method]["accuracy_5shot_mean"])
        assert abs(got["mean"] - shown) <= 1e-6 * max(1.0, abs(shown)), (dataset, method)
