"""The leaderboard's fast path (issue 15): msgspec's reader, the batched t-intervals and the many-dataset plot
give what the dict reader, scipy's t-test and the per-dataset panels gave. Speed itself is asv's
(benchmarks/leaderboard_scale.py), never a test's."""
from __future__ import annotations

import json
import random
import shutil

import numpy as np
import pytest

from conftest import ROOT
from harness import runs_file
from harness.report.figures import PANEL_LIMIT, plot_figure
from harness.report.folder import compute, write_leaderboard
from harness.report.csv_table import render_csv
from harness.stats import _constant, _nearly_equal_is_fine, mean_and_half_width, means_and_half_widths, no_spread
from harness.runs_file import RECORD_FIELDS, read_cells, read_runs

QUICK = sorted(p.parent for p in (ROOT / "results" / "quick").glob("*/runs.jsonl"))
# the default folders' rebuilds double the quick ones' for the same code paths: slow, run by .ci/run
COMMITTED = QUICK + [pytest.param(p.parent, marks=pytest.mark.slow)
                     for p in sorted((ROOT / "results" / "default").glob("*/runs.jsonl"))]
PAGES = ("leaderboard.md", "leaderboard.csv", "leaderboard.html", "claims.json", "curves.svg")


def fields(row) -> dict:
    """The fields :func:`read_cells` keeps, as the dict reader has them (absent: None)."""
    return {name: row.get(name) for name in (*RECORD_FIELDS, *runs_file._CELL_FIELDS)}


@pytest.mark.parametrize("folder", QUICK, ids=lambda p: p.name)
def test_the_fast_reader_gives_the_dict_readers_rows_on_every_committed_folder(folder):
    cells = list(read_cells(folder))
    rows = list(read_runs(folder))
    assert len(cells) == len(rows) > 0
    assert [fields(c) for c in cells] == [fields(r) for r in rows]
    assert all(c["metrics"] == r["metrics"] and c["status"] == r["status"] for c, r in zip(cells, rows))


@pytest.mark.parametrize("folder", COMMITTED, ids=lambda p: f"{p.parent.name}-{p.name}")
def test_every_committed_page_rebuilds_byte_for_byte(folder, tmp_path):
    """The committed pages were written by the dict reader, scipy's t-test and the per-row grouping and pairing:
    the columnar path writes the same bytes, quick and default profile alike."""
    copy = tmp_path / folder.name
    shutil.copytree(folder, copy)
    write_leaderboard(copy)
    for name in PAGES:
        assert (copy / name).exists() == (folder / name).exists(), name
        if (folder / name).exists():
            assert (copy / name).read_bytes() == (folder / name).read_bytes(), name


def _row(i: int) -> bytes:
    return (json.dumps({"key": f"k{i}", "status": "ok", "dataset": "d", "method": "m", "seed": i, "split": "test",
                        "metrics": {"x": float(i)}, "params": {"deep": [1, {"a": None}]}}) + "\n").encode()


@pytest.mark.parametrize("chunk", [64, 1 << 20], ids=["many-chunks", "one-chunk"])
def test_damaged_lines_are_skipped_and_reported_once_with_their_line_number(tmp_path, capsys, monkeypatch, chunk):
    """Bad JSON, a blank line, bytes that are not UTF-8, a JSON list, a record without ``seed``: each is reported
    once with its line number, the rows around it kept in order; a last line without its newline is left alone,
    in chunks that split lines anywhere as in one chunk."""
    monkeypatch.setattr(runs_file, "_CHUNK", chunk)
    folder = tmp_path / "f"
    folder.mkdir()
    no_seed = json.dumps({"key": "x", "status": "ok", "dataset": "d", "method": "m", "split": "test"}).encode() + b"\n"
    lines = [_row(0), b"{not json\n", _row(1), b"\n", b"\xff\xfe garbage\n", _row(2), b"[1, 2]\n", no_seed, _row(3)]
    (folder / "runs.jsonl").write_bytes(b"".join(lines) + _row(4)[:-1])
    runs_file._reported.clear()
    cells = list(read_cells(folder))
    err = capsys.readouterr().err
    assert [c["seed"] for c in cells] == [0, 1, 2, 3]
    assert [c["metrics"]["x"] for c in cells] == [0.0, 1.0, 2.0, 3.0]
    damaged = [int(line.split(":")[1]) for line in err.splitlines()]
    assert damaged == [2, 4, 5, 7, 8]
    assert "not a cell record" in err and "harness repair" in err
    list(read_cells(folder))  # read again: reported once
    assert capsys.readouterr().err == ""
    runs_file._reported.clear()
    assert [r["seed"] for r in read_runs(folder)] == [0, 1, 2, 3]  # the dict reader agrees
    assert [int(line.split(":")[1]) for line in capsys.readouterr().err.splitlines()] == damaged


def _scipy(values):
    """The t-interval as :func:`harness.stats.mean_and_half_width` computed it before it was batched."""
    from scipy import stats

    data = np.asarray(values, dtype=float)
    if data.size < 2:
        return float(data[0]), None
    if no_spread(values):
        return _constant(data), 0.0
    with _nearly_equal_is_fine():
        low, high = stats.ttest_1samp(data, 0.0).confidence_interval(0.95)
    return float(data.mean()), float(high - low) / 2


def test_batched_intervals_are_scipys():
    """The batched half-widths (t quantile × standard error, scipy.stats.t and scipy.stats.sem along axis 1) are
    scipy's ttest_1samp confidence intervals of each sample to rounding (1e-12 relative); means and the samples
    without spread are exact."""
    draw = random.Random(15)
    samples = []
    for _ in range(1500):
        n = draw.choice([1, 2, 3, 5, 8, 10, 17, 100])
        base = draw.uniform(-1e3, 1e3) * 10 ** draw.randint(-8, 8)
        kind = draw.random()
        if kind < 0.1:
            samples.append([base] * n)
        elif kind < 0.2:
            samples.append([base * (1 + 1e-15 * draw.random()) for _ in range(n)])
        elif kind < 0.3:
            samples.append([draw.randint(0, 5) for _ in range(n)])
        else:
            samples.append([base + draw.gauss(0, 1) * abs(base) for _ in range(n)])
    found, expected = means_and_half_widths(samples), [_scipy(s) for s in samples]
    assert [mean for mean, _ in found] == [mean for mean, _ in expected]
    for (_, half), (_, want) in zip(found, expected):
        assert (half is None) == (want is None) and (half == want if not want else half == pytest.approx(want, rel=1e-12))
    assert mean_and_half_width([1.0, 2.0, 4.0]) == pytest.approx(_scipy([1.0, 2.0, 4.0]), rel=1e-12)
    with pytest.raises(ValueError, match="no values to summarise"):
        means_and_half_widths([[1.0], []])


def _synthetic(tmp_path, datasets: int):
    """benchmarks/synthetic_runs.py's folder: ``datasets`` × 6 methods × 3 seeds."""
    import importlib.util

    # the file alone: the benchmarks package's __init__ would set thread variables in this process
    found = importlib.util.spec_from_file_location("synthetic_runs", ROOT / "benchmarks" / "synthetic_runs.py")
    synthetic = importlib.util.module_from_spec(found)
    found.loader.exec_module(synthetic)
    return synthetic.write_folder(tmp_path / "many", rows=datasets * 6 * 3, seeds=3)


def test_many_datasets_get_one_rank_summary_panel_not_one_panel_each(tmp_path):
    """Beyond PANEL_LIMIT datasets the figure is one panel, a box of ranks per method, which still names them all."""
    import matplotlib.pyplot as plt

    folder = _synthetic(tmp_path, datasets=PANEL_LIMIT + 2)
    board = compute(folder)
    assert len(board.tables) == PANEL_LIMIT + 2
    fig = plot_figure(board)
    axes = [ax for ax in fig.axes if ax.get_visible()]
    labels = [t.get_text() for t in axes[0].get_yticklabels()]
    plt.close(fig)
    assert len(axes) == 1
    methods = {r.method for t in board.tables.values() for r in t}
    assert len(labels) == len(methods) == 6 and all(label.split(" (")[0] in methods for label in labels)
    assert "rank over" in axes[0].get_title()
    assert render_csv(board).count("\n") == 1 + (PANEL_LIMIT + 2) * 6


def test_beyond_the_panel_limit_the_curves_figure_draws_the_first_panels_and_says_so(tmp_path):
    """Every (dataset, curve) keeps its table on the page; the figure shows the first PANEL_LIMIT of them."""
    import matplotlib.pyplot as plt

    from harness.report.curves import curve_panels, plot_curves

    folder = _synthetic(tmp_path, datasets=PANEL_LIMIT + 2)
    path = folder / "runs.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for row in rows:
        row["curves"] = {"loss": {"x": [1.0, 2.0, 3.0], "y": [3.0 + row["seed"], 2.0, 1.0]}}
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    board = compute(folder)
    assert len(curve_panels(board)) == PANEL_LIMIT + 2
    fig = plot_curves(board)
    drawn = [ax for ax in fig.axes if ax.get_visible()]
    title = fig._suptitle.get_text()
    plt.close(fig)
    assert len(drawn) == PANEL_LIMIT
    assert f"the first {PANEL_LIMIT} of {PANEL_LIMIT + 2} panels" in title


@pytest.mark.long
def test_beyond_the_page_limit_the_page_summarises_and_points_to_the_complete_csv(tmp_path):
    """Above PAGE_LIMIT datasets the Markdown and HTML pages carry no per-dataset table but say the CSV has them;
    the CSV keeps every dataset × method row, claims.json every dataset's difference."""
    from harness.report.blocks import PAGE_LIMIT

    folder = _synthetic(tmp_path, datasets=PAGE_LIMIT + 1)
    write_leaderboard(folder)
    markdown = (folder / "leaderboard.md").read_text()
    html = (folder / "leaderboard.html").read_text()
    for page in (markdown, html):
        assert "per-dataset tables are in" in page and "leaderboard.csv" in page
        assert f"Per dataset ({PAGE_LIMIT + 1} datasets)" in page
        # no section per dataset (the claims and the tuning, after the summary, may name a dataset)
        assert "## kin-m8-000005" not in page and "<h2>kin-m8-000005</h2>" not in page
    assert "## kin-m8-000005" not in markdown and "## snelson-m5\n" not in markdown
    summary = markdown.split("| method | kind | datasets | ranked |")[1].split("\n\n")[0]
    # every row has the template's first row's shape; each method's kind is the spec's (2 implementations, 4 baselines)
    assert summary.count("| implementation |") == 2 and summary.count("| baseline |") == 4
    csv_rows = (folder / "leaderboard.csv").read_text().splitlines()
    assert len(csv_rows) == 1 + (PAGE_LIMIT + 1) * 6
    assert {line.split(",")[2] for line in csv_rows[1:]} == {d for d in compute(folder).tables}
    claims = json.loads((folder / "claims.json").read_text())["claims"]
    pooled = next(c for c in claims if not c.get("datasets") and c["claim"] == "pooled")
    assert len(pooled["per_dataset"]) == PAGE_LIMIT + 1
    assert f"{PAGE_LIMIT + 1} datasets: + on" in markdown and "every dataset's difference is in claims.json" in markdown
    assert "synthetic failure (on " in markdown


@pytest.mark.long
def test_at_the_page_limit_every_dataset_keeps_its_table(tmp_path):
    from harness.report.blocks import PAGE_LIMIT

    folder = _synthetic(tmp_path, datasets=PAGE_LIMIT)
    write_leaderboard(folder)
    markdown = (folder / "leaderboard.md").read_text()
    assert "per-dataset tables are in" not in markdown
    assert sum(line.startswith("## ") for line in markdown.splitlines()) >= PAGE_LIMIT
    assert "## diabetes-m8-000047" in markdown


@pytest.mark.long
def test_a_folder_with_damaged_lines_builds_the_pages_of_the_same_folder_without_them(tmp_path, capsys):
    """The columnar path skips a damaged line, reports it once with its line number and builds every page as from
    the folder without it (the pages above the page limit included)."""
    from harness.report.blocks import PAGE_LIMIT

    clean = _synthetic(tmp_path / "clean", datasets=PAGE_LIMIT + 1)
    damaged = tmp_path / "damaged"
    shutil.copytree(clean, damaged)
    lines = (clean / "runs.jsonl").read_bytes().splitlines(keepends=True)
    broken = lines[:5] + [b"{not json\n"] + lines[5:100] + [b"\xff\xfe\n", b"[1]\n"] + lines[100:]
    (damaged / "runs.jsonl").write_bytes(b"".join(broken))
    runs_file._reported.clear()
    write_leaderboard(clean)
    assert capsys.readouterr().err == ""
    write_leaderboard(damaged)
    err = capsys.readouterr().err
    assert [int(line.split(":")[1]) for line in err.splitlines()] == [6, 102, 103]
    for name in ("leaderboard.md", "leaderboard.csv", "leaderboard.html", "claims.json"):
        assert (damaged / name).read_bytes() == (clean / name).read_bytes(), name


def test_rows_with_and_without_a_shared_field_read_as_the_dict_reader_reads_them(tmp_path):
    """A row skipped before its code was known has no ``code`` (null or absent) beside rows that have one: each
    keeps its own, and equal texts are one object."""
    lines = []
    for i in range(6):
        row = json.loads(_row(i))
        if i % 3:
            row["code"] = {"task": "t", "method": f"m{i % 2}"}
        if i == 3:
            row["code"] = None
        lines.append((json.dumps(row) + "\n").encode())
    (tmp_path / "runs.jsonl").write_bytes(b"".join(lines))
    cells = list(read_cells(tmp_path))
    assert [c["code"] for c in cells] == [r.get("code") for r in read_runs(tmp_path)]
    assert cells[1]["code"] is cells[5]["code"] and cells[2]["code"] is not cells[1]["code"]


def test_the_table_holds_each_distinct_repeated_value_once(tmp_path):
    """dataset_params, code, versions and the long repeated strings are categories of the table: a million rows
    hold each distinct value once, and give back every row's value as the dict reader reads it."""
    from harness.results_table import decoded, read_table, texts

    folder = _synthetic(tmp_path, datasets=8)
    table = read_table(folder)
    rows = list(read_runs(folder))
    assert len(table) == len(rows)
    for name in ("dataset", "method", "device", "spec_hash", "git_commit", "status"):
        assert texts(table, name) == [r.get(name) for r in rows], name
        assert len(table[name].cat.categories) == len({r.get(name) for r in rows} - {None}), name
    for name in ("dataset_params", "versions", "code"):
        assert decoded(table, name) == [r.get(name) for r in rows], name
    assert len(table["dataset_params"].cat.categories) < len(rows)
    assert texts(table, "seed") == [r["seed"] for r in rows]


def test_the_one_sided_test_is_scipys_bit_for_bit_without_importing_scipy_stats():
    """``one_sided_t`` computes ``ttest_1samp``'s interval and one-sided p-value from scipy.special (scipy.stats
    costs 0.75 s to import, most of a 100k-row leaderboard's fixed cost): the same floats, margins included."""
    import warnings

    from scipy import stats

    from harness.stats import one_sided_t

    draw = random.Random(71)
    compared = 0
    for _ in range(1500):
        n = draw.choice([2, 3, 5, 10, 17, 100])
        base = draw.uniform(-1e3, 1e3) * 10 ** draw.randint(-8, 8)
        kind = draw.random()
        if kind < 0.2:
            values = [base * (1 + 1e-13 * draw.random()) for _ in range(n)]
        elif kind < 0.3:
            values = [draw.randint(0, 5) for _ in range(n)]
        else:
            values = [base + draw.gauss(0, 1) * abs(base) for _ in range(n)]
        if no_spread(values):
            continue
        margin = draw.choice([0.0, base * 0.1, -0.5, 1e-3])
        data = np.asarray(values, dtype=float)
        with _nearly_equal_is_fine(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            low, high = stats.ttest_1samp(data, 0.0).confidence_interval(0.95)
            p_value = stats.ttest_1samp(data, popmean=margin, alternative="greater").pvalue
        result = one_sided_t(values, margin)
        assert (result.mean, result.interval, result.p_value) == (
            float(data.mean()), (float(low), float(high)), float(p_value)), (values, margin)
        compared += 1
    assert compared > 1000


def test_a_chunk_where_some_rows_lack_a_field_keeps_them_none_in_the_table(tmp_path):
    from harness.results_table import read_table, texts

    folder = tmp_path / "f"
    folder.mkdir()
    lines = []
    for i in range(6):
        row = json.loads(_row(i))
        if i % 2:
            row["device"] = "cpu: " + "x" * 40
        lines.append(json.dumps(row) + "\n")
    (folder / "runs.jsonl").write_text("".join(lines))
    table = read_table(folder)
    assert texts(table, "device") == [r.get("device") for r in read_runs(folder)]
    assert list(table["device"].cat.categories) == ["cpu: " + "x" * 40]
