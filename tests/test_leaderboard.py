"""Leaderboard numbers and claim verdicts against values computed by hand."""
from __future__ import annotations

import csv
import io
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, TOY_SPEC
from harness.claims import check_claim
from harness.report.board import at_chance, build_rows, win_rates
from harness.report.folder import read_folder, write_index, write_leaderboard
from harness.metric_tables import read_chance_table, read_metric_table

T_975 = {2: 4.302652729911275, 3: 3.182446305284263}  # Student t quantiles, df = n - 1


SKIP_REASON = "toy-local: target.txt not found in the data folder"


def make_folder(tmp_path, values: dict[tuple[str, str], list[float]], claims=(), stale=False,
                datasets=("easy", "hard"), report=("toy_score", "toy_loss"), extra=None):
    """A results folder with toy_score values per (dataset, method), one per seed (None: failed, "skip": skipped).

    ``extra``: more metrics of every ok cell, name → value.
    """
    spec = {
        "name": "toy", "title": "Toy", "task": "toy.guess",
        "datasets": [{"name": "toy-target", "id": d} for d in datasets],
        "methods": [{"name": "toy-constant", "id": "a", "kind": "implementation"},
                    {"name": "toy-constant", "id": "b", "kind": "baseline"},
                    {"name": "toy-constant", "id": "c", "kind": "baseline"}],
        "metrics": {"primary": "toy_score", "report": list(report)},
        "seeds": [0, 1, 2], "claims": list(claims),
    }
    folder = tmp_path / "toy"
    folder.mkdir()
    (folder / "spec.yaml").write_text(yaml.safe_dump({"profile": "quick", "spec_hash": "h1", "spec": spec}))
    lines = []
    for (dataset, method), seed_values in values.items():
        for seed, value in enumerate(seed_values):
            status = "failed" if value is None else "skipped" if value == "skip" else "ok"
            metrics = {"toy_score": value, "toy_loss": 1 - value, **(extra or {})} if status == "ok" else {}
            lines.append({"key": f"{dataset}{method}{seed}", "dataset": dataset, "method": method, "seed": seed,
                          "kind": "implementation" if method == "a" else "baseline", "split": "test",
                          "status": status, "error": {"failed": "boom", "skipped": SKIP_REASON}.get(status),
                          "metrics": metrics, "spec_hash": "h1", "git_commit": "abc", "device": "cpu: test",
                          "task_version": "1", "versions": {"python": "3"}})
    if stale:  # an older spec's line for the same cell must not count
        lines.insert(0, {**lines[0], "spec_hash": "old", "metrics": {"toy_score": 100.0, "toy_loss": 0.0}})
    (folder / "runs.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return folder


def test_means_intervals_ranks_and_csv(toy_env, tmp_path):
    folder = make_folder(tmp_path, {
        ("easy", "a"): [1.0, 2.0, 3.0],
        ("easy", "b"): [0.5, 0.5, 0.5],
        ("easy", "c"): [4.0, None, 6.0],
        ("hard", "a"): [0.0, 0.0, 0.3],
        ("hard", "b"): [0.1, 0.2, 0.3],
    }, stale=True)
    meta, rows = read_folder(folder)
    tables = build_rows(meta, rows, read_metric_table(folder))
    easy = {r.method: r for r in tables["easy"]}
    assert easy["a"].metrics["toy_score"].mean == pytest.approx(2.0)
    assert easy["a"].metrics["toy_score"].half_width == pytest.approx(T_975[2] * 1.0 / 3 ** 0.5)
    assert easy["b"].metrics["toy_score"].half_width == 0.0
    assert easy["c"].metrics["toy_score"].mean == pytest.approx(5.0) and easy["c"].seeds_failed == 1
    assert easy["c"].metrics["toy_score"].half_width == pytest.approx(12.706204736174707 * 2 ** 0.5 / 2 ** 0.5)
    assert [r.method for r in tables["easy"]] == ["c", "a", "b"] and [r.rank for r in tables["easy"]] == [1, 2, 3]
    # win rate: easy: c beats 2/2, a 1/2, b 0/2; hard: b (0.2) beats a (0.1)
    rates = win_rates(tables, "toy_score", read_metric_table(folder))
    assert rates["c"] == (1.0, 1) and rates["a"] == (pytest.approx(0.25), 2) and rates["b"] == (pytest.approx(0.5), 2)

    write_leaderboard(folder)
    table = list(csv.DictReader(io.StringIO((folder / "leaderboard.csv").read_text())))
    row = next(r for r in table if r["dataset"] == "easy" and r["method"] == "a")
    assert float(row["toy_score_mean"]) == pytest.approx(2.0) and row["rank"] == "2" and row["kind"] == "implementation"
    assert float(row["toy_loss_mean"]) == pytest.approx(-1.0)
    markdown = (folder / "leaderboard.md").read_text()
    assert "| 2 ≈ | a | implementation | 2.000 ± 2.484 |" in markdown  # c's interval, 5 ± 12.7, overlaps a's
    assert "profile **quick**" in markdown and "cpu: test" in markdown and "abc" in markdown
    assert "- c: failed: boom" in markdown
    page = (folder / "leaderboard.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page and "<table>" in page and "http" not in page.split("<svg")[0]


def claim(**kw):
    return {"id": "a-beats-b", "says": "a is better", "better": "a", "than": "b", "metric": "toy_score", **kw}


@pytest.mark.parametrize("a, b, verdict", [
    ([0.6, 0.65, 0.7], [0.5, 0.5, 0.5], "reproduced"),
    ([0.4, 0.35, 0.3], [0.5, 0.5, 0.5], "not reproduced"),
    ([0.6, 0.4, 0.55], [0.5, 0.5, 0.5], "inconclusive"),
    ([0.6, 0.7], [0.5, 0.5], "inconclusive"),  # too few pairs, even though a is always better
])
def test_claim_verdicts(toy_env, tmp_path, a, b, verdict):
    folder = make_folder(tmp_path, {("easy", "a"): a, ("easy", "b"): b})
    _, rows = read_folder(folder)
    result = check_claim(claim(), rows, "max")
    assert result.verdict == verdict
    if verdict == "reproduced":
        # differences 0.1, 0.15, 0.2: mean 0.15, sd 0.05
        half = T_975[2] * 0.05 / 3 ** 0.5
        assert result.mean_difference == pytest.approx(0.15) and result.pairs == 3
        assert result.interval == (pytest.approx(0.15 - half), pytest.approx(0.15 + half))
        assert 0 < result.p_value < 0.025
    if len(a) == 2:
        assert "only 2 independent pairs (seeds; one dataset)" in result.reason


def test_claim_pairs_over_datasets_and_respects_the_metric_direction(toy_env, tmp_path):
    folder = make_folder(tmp_path, {("easy", "a"): [0.6, 0.7], ("easy", "b"): [0.5, 0.5],
                                    ("hard", "a"): [0.9, 0.8], ("hard", "b"): [0.5, 0.6]})
    _, rows = read_folder(folder)
    by_seed = check_claim(claim(), rows, "max")
    assert (by_seed.pairs, by_seed.cells, by_seed.unit) == (2, 4, "seeds; each the mean over 2 datasets")
    assert check_claim(claim(replicate="dataset-seed"), rows, "max").pairs == 4
    assert check_claim(claim(datasets=["hard"]), rows, "max").pairs == 2
    # on a metric to minimise, higher values are worse, so the same numbers refute the claim
    cells = dict(replicate="dataset-seed")  # two seeds alone are too few pairs
    assert check_claim(claim(metric="toy_loss", **cells), rows, "min").verdict == "reproduced"
    assert check_claim(claim(metric="toy_score", **cells), rows, "min").verdict == "not reproduced"
    assert check_claim(claim(margin=0.5, **cells), rows, "max").verdict == "not reproduced"


def test_index_lists_every_spec_with_verdicts(toy_env, tmp_path):
    folder = make_folder(tmp_path, {("easy", "a"): [0.6, 0.65, 0.7], ("easy", "b"): [0.5, 0.5, 0.5]}, claims=[claim()])
    write_leaderboard(folder)
    write_index(tmp_path)
    index = (tmp_path / "index.md").read_text()
    assert "| quick | toy | Toy | `a-beats-b`: **reproduced** | [toy/leaderboard.md](toy/leaderboard.md) |" in index


def test_no_spread_is_decided_without_scipy_nan():
    from harness.stats import mean_and_half_width, one_sided_t

    assert mean_and_half_width([0.1, 0.1, 0.1]) == (0.1, 0.0)
    assert mean_and_half_width([0.3]) == (0.3, None)
    above = one_sided_t([0.2, 0.2, 0.2], margin=0.1)
    assert (above.interval, above.p_value) == ((0.2, 0.2), 0.0)
    assert one_sided_t([0.2, 0.2, 0.2], margin=0.2).p_value == 1.0
    with pytest.raises(ValueError, match="at least 2 values, found 1"):
        one_sided_t([0.2])


def test_claim_counts_seeds_not_the_cells_that_share_a_seed(toy_env, tmp_path):
    """cdfsl's shape: one source model per seed, evaluated on five targets, so the five differences of a
    seed share that seed's draw (here a seed effect of -0.15 to +0.3, plus ±0.02 per target). Pooled over
    the 40 cells the test sees 40 pairs and p = 0.002; the seeds give 8 pairs and p = 0.12."""
    seed_effect = [0.3, -0.1, 0.25, 0.05, -0.05, 0.2, -0.15, 0.1]
    targets = [f"t{k}" for k in range(5)]
    values = {}
    for k, target in enumerate(targets):
        values[(target, "a")] = [0.5 + u + 0.01 * (k - 2) for u in seed_effect]
        values[(target, "b")] = [0.5] * len(seed_effect)
    folder = make_folder(tmp_path, values, claims=[claim()], datasets=targets)
    _, rows = read_folder(folder)

    verdict = check_claim(claim(), rows, "max")
    assert (verdict.pairs, verdict.cells, verdict.replicate) == (8, 40, "seed")
    assert verdict.verdict == "inconclusive" and verdict.p_value == pytest.approx(0.1222, abs=1e-4)
    assert verdict.mean_difference == pytest.approx(0.075)
    assert "more seeds could decide it" in verdict.reason
    # what the old pooling said, now only on the claim's own word that the datasets are independent draws
    pooled = check_claim(claim(replicate="dataset-seed"), rows, "max")
    assert (pooled.pairs, pooled.verdict) == (40, "reproduced") and pooled.p_value == pytest.approx(0.00242, abs=1e-5)

    assert check_claim(claim(min_pairs=9), rows, "max").reason.startswith("only 8 independent pairs (seeds;")
    write_leaderboard(folder)
    markdown = (folder / "leaderboard.md").read_text()
    assert "p = 0.122, 8 independent pairs (seeds; each the mean over 5 datasets)" in markdown
    (saved,) = json.loads((folder / "claims.json").read_text())["claims"]
    assert (saved["pairs"], saved["cells"], saved["unit"]) == (8, 40, "seeds; each the mean over 5 datasets")


def test_claim_reports_each_dataset_beside_the_pooled_verdict(toy_env, tmp_path):
    """One large gain and four ties pool into a win; the per-dataset evidence shows what it is made of."""
    datasets = [f"d{k}" for k in range(5)]
    values = {("d0", "a"): [0.9, 0.95, 0.9, 0.95], ("d0", "b"): [0.5] * 4}
    for dataset in datasets[1:]:
        values[(dataset, "a")] = [0.5, 0.6, 0.7, 0.8]
        values[(dataset, "b")] = [0.5, 0.6, 0.7, 0.8]
    folder = make_folder(tmp_path, values, claims=[claim()], datasets=datasets)
    _, rows = read_folder(folder)
    verdict = check_claim(claim(), rows, "max", order=datasets)
    assert verdict.verdict == "reproduced" and verdict.mean_difference == pytest.approx(0.085)
    gain, *ties = verdict.per_dataset
    assert (gain.dataset, gain.seeds, gain.mean_difference) == ("d0", 4, pytest.approx(0.425))
    assert gain.half_width == pytest.approx(T_975[3] * (0.025 * 2 / 3 ** 0.5) / 4 ** 0.5)  # differences 0.4, 0.45 ×2
    assert [(t.dataset, t.mean_difference, t.no_spread) for t in ties] == [(d, 0.0, True) for d in datasets[1:]]

    write_leaderboard(folder)
    markdown = (folder / "leaderboard.md").read_text()
    claims = markdown[markdown.index("## Claims"):]  # the claims' own section (the verdicts at the top have no numbers)
    row = next(line for line in claims.splitlines() if line.startswith("| `a-beats-b`"))
    assert row.endswith("| d0 +0.425 ± 0.0459; d1 +0 (the same in all 4 seeds); d2 +0 (the same in all 4 seeds); "
                        "d3 +0 (the same in all 4 seeds); d4 +0 (the same in all 4 seeds) |")
    (saved,) = json.loads((folder / "claims.json").read_text())["claims"]
    assert [e["dataset"] for e in saved["per_dataset"]] == datasets


def test_claims_say_where_they_come_from(toy_env, tmp_path):
    claims = [claim(id="from-paper", source="paper", quote="Table 2: a | b is 61.98 vs 47.57"),
              claim(id="from-harness", source="harness", quote="the paper proves a theorem but runs no experiment"),
              claim(id="unsourced")]
    folder = make_folder(tmp_path, {("easy", "a"): [0.6, 0.65, 0.7], ("easy", "b"): [0.5, 0.5, 0.5]}, claims=claims)
    write_leaderboard(folder)
    markdown = (folder / "leaderboard.md").read_text()
    rows = {line.split("|")[1].strip(): line for line in markdown.splitlines() if line.startswith("| `")}
    assert "| from the paper: Table 2: a \\| b is 61.98 vs 47.57 |" in rows["`from-paper`"]
    assert ("| a hypothesis this harness tests; the paper proves a theorem but runs no experiment |"
            in rows["`from-harness`"])
    assert "| source not stated |" in rows["`unsourced`"]
    page = (folder / "leaderboard.html").read_text()
    assert "<td>from the paper: Table 2: a | b is 61.98 vs 47.57</td>" in page  # the escaped pipe is no column
    saved = json.loads((folder / "claims.json").read_text())["claims"]
    assert [(c["source"], c["quote"]) for c in saved][:2] == [(c["source"], c["quote"]) for c in claims[:2]]


def test_dataset_whose_seeds_change_nothing_is_flagged(toy_env, tmp_path):
    """On `easy` every method with two or more seeds gets one value in every seed: no interval, flagged."""
    folder = make_folder(tmp_path, {
        ("easy", "a"): [0.7, 0.7, 0.7],
        ("easy", "b"): [0.5, 0.5, 0.5],
        ("easy", "c"): [0.9, None, None],  # one seed ok: says nothing about spread
        ("hard", "a"): [0.1, 0.2, 0.3],
        ("hard", "b"): [0.2, 0.2, 0.2],
    })
    write_leaderboard(folder)
    markdown = (folder / "leaderboard.md").read_text()
    assert "± 0.000" not in markdown
    easy = markdown.split("## easy", 1)[1].split("## hard", 1)[0]
    hard = markdown.split("## hard", 1)[1]
    assert "**No interval:** toy_score is the same in every seed" in easy and "No interval" not in hard
    assert "| 2 | a | implementation | 0.700 (3 seeds, no spread) | 0.300 (3 seeds, no spread) |" in easy
    # one flat row does not flag a dataset (b's 0.2 lies inside a's interval: tied with the best)
    assert "| 2 ≈ | b | baseline | 0.200 (3 seeds, no spread) |" in hard
    table = list(csv.DictReader(io.StringIO((folder / "leaderboard.csv").read_text())))
    assert {(r["dataset"], r["zero_variance"]) for r in table} == {("easy", "true"), ("hard", "false")}
    assert json.loads((folder / "claims.json").read_text())["zero_variance"] == ["easy"]


def test_differences_of_rounding_only_are_a_tie_not_a_win():
    """Two methods equal but for float rounding (1e-16) must not 'reproduce' a claim with p = 1e-50."""
    from harness.stats import mean_and_half_width, one_sided_t

    assert one_sided_t([1e-16, 2e-16, 1e-16, 3e-16]).p_value == 1.0
    assert mean_and_half_width([0.3, 0.3 + 5e-17, 0.3])[1] == 0.0
    assert one_sided_t([0.01, 0.01, 0.01]).p_value == 0.0  # a real constant gain is still one


@pytest.mark.parametrize("spec", ["constrained-cc", "signed-laplacian"])
def test_rebuilding_an_unchanged_folder_rewrites_every_file_byte_for_byte(tmp_path, spec):
    """Committed leaderboards must not churn in git when nothing changed (the plot once carried a date and random ids)."""
    from harness.metric_tables import write_chance_table

    folder = tmp_path / spec
    shutil.copytree(ROOT / "results" / "quick" / spec, folder)
    if spec == "signed-laplacian":  # chance levels too: dashed lines and notes in the plot
        write_chance_table(folder, {"sbm-n400-q0.15": {"ari": 0.0}, "rgg-sep0.1": {"ari": 0.0}})
    write_leaderboard(folder)
    first = {f.name: f.read_bytes() for f in folder.iterdir() if f.is_file()}
    write_leaderboard(folder)
    assert {f.name: f.read_bytes() for f in folder.iterdir() if f.is_file()} == first


def section(markdown: str, dataset: str) -> str:
    """The Markdown of one dataset's section, up to the next heading."""
    return markdown.split(f"## {dataset}\n", 1)[1].split("\n## ", 1)[0]


def test_a_dataset_where_every_method_is_at_chance_is_marked_and_not_ranked(toy_env, tmp_path):
    """On `easy` both intervals of toy_score contain the chance level 0.2: no ranks there, and no share of the win rate."""
    from harness.metric_tables import write_chance_table

    folder = make_folder(tmp_path, {
        ("easy", "a"): [0.18, 0.20, 0.22],  # 0.2 ± 0.05
        ("easy", "b"): [0.21, 0.19, 0.25],  # 0.217 ± 0.08: the higher mean, but no better than guessing
        ("hard", "a"): [0.60, 0.65, 0.70],
        ("hard", "b"): [0.21, 0.20, 0.22],  # at chance here too, but a is not
    })
    write_chance_table(folder, {"easy": {"toy_score": 0.2}, "hard": {"toy_score": 0.2}})
    write_leaderboard(folder)

    meta, rows = read_folder(folder)
    tables = build_rows(meta, rows, read_metric_table(folder), read_chance_table(folder))
    assert [r.rank for r in tables["easy"]] == [0, 0] and [r.rank for r in tables["hard"]] == [1, 2]
    assert at_chance(tables, "toy_score", read_chance_table(folder)) == ["easy"]
    assert win_rates(tables, "toy_score", read_metric_table(folder), leave_out=["easy"]) == {"a": (1.0, 1), "b": (0.0, 1)}

    markdown = (folder / "leaderboard.md").read_text()
    easy, hard = section(markdown, "easy"), section(markdown, "hard")
    assert "chance level: toy_score 0.2" in easy and "chance level: toy_score 0.2" in hard
    assert "**Not ranked, at chance:** every method's 95% interval of toy_score contains its chance level" in easy
    assert "| — | b | baseline | 0.217 ± 0.076 (at chance) |" in easy and "| — | a | implementation |" in easy
    assert "Not ranked" not in hard and "| 1 | a | implementation | 0.650 ± 0.124 |" in hard
    assert "| 2 | b | baseline | 0.210 ± 0.025 (at chance) |" in hard
    assert "| a | implementation | 1.000 | 1 |" in markdown and "| b | baseline | 0.000 | 1 |" in markdown
    assert "Left out of the win rate and not ranked: easy" in markdown
    table = list(csv.DictReader(io.StringIO((folder / "leaderboard.csv").read_text())))
    assert {(r["dataset"], r["method"], r["rank"], r["chance"], r["at_chance"]) for r in table} == {
        ("easy", "a", "", "0.2", "true"), ("easy", "b", "", "0.2", "true"),
        ("hard", "a", "1", "0.2", "false"), ("hard", "b", "2", "0.2", "false")}
    assert json.loads((folder / "claims.json").read_text())["at_chance"] == ["easy"]


def test_without_an_interval_only_a_mean_at_chance_is_at_chance():
    from harness.report.board import Cell

    assert Cell(0.0, None, 1).contains(0.0) and not Cell(0.01, None, 1).contains(0.0)  # one seed
    assert Cell(0.2, 0.0, 3).contains(0.2) and not Cell(0.25, 0.0, 3).contains(0.2)  # no spread
    assert Cell(0.25, 0.05, 3).contains(0.2) and not Cell(0.25, 0.049, 3).contains(0.2)


def test_a_folder_without_chance_levels_ranks_every_dataset(toy_env, tmp_path):
    """Folders written before runs recorded chance.json (and skipped.json) build as before."""
    folder = make_folder(tmp_path, {("easy", "a"): [0.18, 0.20, 0.22], ("easy", "b"): [0.21, 0.19, 0.25]})
    write_leaderboard(folder)
    markdown = (folder / "leaderboard.md").read_text()
    assert "| 1 | b | baseline |" in markdown and "chance level" not in markdown and "Datasets not run" not in markdown
    assert not (folder / "chance.json").exists() and not (folder / "skipped.json").exists()


def test_methods_whose_interval_overlaps_the_best_are_marked_tied(toy_env, tmp_path):
    folder = make_folder(tmp_path, {
        ("easy", "c"): [3.0, 3.1, 2.9],  # 3.0 ± 0.248: the best
        ("easy", "a"): [1.0, 2.0, 3.0],  # 2.0 ± 2.48: reaches 4.48, overlaps the best
        ("easy", "b"): [0.5, 0.5, 0.5],  # 0.5, no spread: below 2.75
    })
    write_leaderboard(folder)
    meta, rows = read_folder(folder)
    table = build_rows(meta, rows, read_metric_table(folder))["easy"]
    assert [(r.method, r.rank, r.tied) for r in table] == [("c", 1, False), ("a", 2, True), ("b", 3, False)]
    markdown = (folder / "leaderboard.md").read_text()
    assert "| 1 | c |" in markdown and "| 2 ≈ | a |" in markdown and "| 3 | b |" in markdown
    assert "“≈” after a rank: that method's 95% interval of toy_score overlaps the best method's" in markdown
    rows = {r["method"]: r["tied_with_best"] for r in csv.DictReader(io.StringIO((folder / "leaderboard.csv").read_text()))}
    assert rows == {"c": "false", "a": "true", "b": "false"}


def test_skipped_cells_are_counted_and_skipped_datasets_named(toy_env, tmp_path):
    from harness.store import write_skipped_datasets

    folder = make_folder(tmp_path, {("easy", "a"): [0.5, "skip", "skip"], ("easy", "b"): [0.4, 0.4, "skip"]})
    write_skipped_datasets(folder, [{"dataset": "hard", "reason": "it needs a GPU, and no GPU is visible"}])
    write_leaderboard(folder)
    meta, rows = read_folder(folder)
    table = {r.method: r for r in build_rows(meta, rows, read_metric_table(folder))["easy"]}
    assert (table["a"].seeds_ok, table["a"].seeds_failed, table["a"].seeds_skipped) == (1, 0, 2)
    assert table["a"].skips == (SKIP_REASON,)
    markdown = (folder / "leaderboard.md").read_text()
    assert "| seeds ok | failed | skipped |" in markdown
    assert "| a | implementation | 0.500 (1 seed) | 0.500 (1 seed) | 1 | 0 | 2 |" in markdown
    assert markdown.count(SKIP_REASON) == 1 and f"- skipped (a × 2, b × 1): {SKIP_REASON}" in markdown
    assert "## Datasets not run" in markdown and "- `hard`: it needs a GPU, and no GPU is visible" in markdown
    counts = {r["method"]: r["seeds_skipped"] for r in csv.DictReader(io.StringIO((folder / "leaderboard.csv").read_text()))}
    assert counts == {"a": "2", "b": "1"}
    assert "<code>hard</code>: it needs a GPU" in (folder / "leaderboard.html").read_text()


def test_a_run_records_chance_levels_and_the_datasets_it_left_out(toy_env, write_spec, tmp_path, monkeypatch):
    """The runner writes the task's chance levels (chance.json) and the datasets it skipped before planning
    (skipped.json) into the folder, so the leaderboard reads both from the folder alone."""
    import harness
    from toy_plugin import Task as ToyTask

    monkeypatch.setattr(ToyTask, "chance", lambda self, dataset, params: {"toy_score": 0.5 - params.get("noise", 0)},
                        raising=False)
    text = TOY_SPEC.replace("  - {name: toy-target, id: hard, params: {noise: 0.3}}",
                            "  - {name: toy-target, id: hard, params: {noise: 0.3}, requires: gpu}")
    harness.run(write_spec(text), tmp_path / "o", progress=False, profile="quick")
    folder = tmp_path / "o" / "toy"
    assert json.loads((folder / "chance.json").read_text()) == {"easy": {"toy_score": 0.45}, "hard": {"toy_score": 0.3}}
    reason = "it needs a GPU, and the run is on the CPU (--device cpu)"  # the toy spec's hardware.device
    assert json.loads((folder / "skipped.json").read_text()) == [{"dataset": "hard", "reason": reason}]
    markdown = (folder / "leaderboard.md").read_text()
    assert "chance level: toy_score 0.45" in section(markdown, "easy")
    assert f"- `hard`: {reason}" in markdown


def test_timings_and_spreads_go_to_a_collapsed_second_table(toy_env, tmp_path):
    """The main table keeps the metrics a reader compares; timings (unit s) and the spread of another metric
    (declared with spread_of, kept in metrics.json) go to a second table, collapsed on the page."""
    from harness.metric_tables import write_metric_table
    from harness.metrics import Metric

    folder = make_folder(tmp_path, {("easy", "a"): [0.6, 0.7, 0.8], ("easy", "b"): [0.5, 0.5, 0.6]},
                         report=("toy_score", "toy_loss", "toy_score_ci95", "runtime_s"),
                         extra={"toy_score_ci95": 0.05, "runtime_s": 1.5})
    table = read_metric_table(folder)  # the toy plugin's: toy_score, toy_loss, runtime_s
    write_metric_table(folder, {**table, "toy_score_ci95": Metric("toy_score_ci95", "min", "", "half-width",
                                                                  spread_of="toy_score")})
    assert read_metric_table(folder)["toy_score_ci95"].spread_of == "toy_score"
    assert "spread_of" not in json.loads((folder / "metrics.json").read_text())["toy_score"]  # only where declared
    write_leaderboard(folder)
    markdown = (folder / "leaderboard.md").read_text()
    assert "| rank | method | kind | toy_score ↑ | toy_loss ↓ | seeds ok | failed | skipped |" in markdown
    assert "More columns of easy: toy_score_ci95, runtime_s, devices:" in markdown
    assert "| method | toy_score_ci95 ↓ | runtime_s ↓ [s] | devices |" in markdown
    page = (folder / "leaderboard.html").read_text()
    main, collapsed = page.split("<details>", 1)
    assert "runtime" not in main.split("<h2>easy</h2>", 1)[1]
    assert collapsed.startswith("<summary>More columns of easy: toy_score_ci95, runtime_s, devices</summary>")
    assert "<th>runtime_<wbr>s ↓ [s]</th>" in collapsed.split("</details>", 1)[0]


def test_metrics_that_would_make_the_main_table_wider_than_the_page_go_to_the_second_table(toy_env, tmp_path):
    """Twelve reported metrics with long names cannot share one row of a 1280 px body: the last ones in the report's
    order move to the collapsed table until the main one fits; the primary metric stays whatever its place."""
    from harness.metric_tables import write_metric_table
    from harness.metrics import Metric
    from harness.report.blocks import PAGE_BODY_PX, Table

    long_names = [f"a_rather_long_metric_name_number_{i:02d}" for i in range(12)]
    folder = make_folder(tmp_path, {("easy", "a"): [0.6, 0.7, 0.8], ("easy", "b"): [0.5, 0.5, 0.6]},
                         report=(*long_names, "toy_score"), extra={name: 0.123456 for name in long_names})
    table = read_metric_table(folder)
    write_metric_table(folder, {**table, **{name: Metric(name, "max", "nats", "a long one") for name in long_names}})
    write_leaderboard(folder)
    markdown = section((folder / "leaderboard.md").read_text(), "easy")
    header = next(line for line in markdown.splitlines() if line.startswith("| rank |"))
    shown = [name for name in long_names if name in header]
    assert "toy_score ↑" in header and 0 < len(shown) < len(long_names)
    assert shown == long_names[:len(shown)]  # the first ones in the report's order stay
    moved = long_names[len(shown):]
    assert f"More columns of easy: {', '.join(moved)}, devices:" in markdown
    columns = header.strip("|").split(" | ")
    ranked = Table(columns, [["1", "toy-constant", "implementation", *["0.1235 ± 0.0000"] * (len(columns) - 3)]])
    assert ranked.narrowest_px() <= PAGE_BODY_PX


def test_a_tables_narrowest_width_counts_its_longest_unbreakable_words():
    from harness.report.blocks import Table

    one = Table(["a_b"], [["xxxxxxxxxx"]])  # ten characters, no break
    assert one.narrowest_px() == pytest.approx(7.3 * 10 + 27.4)
    broken = Table(["a_b"], [["xxxxx-xxxx yy"]])  # breaks after the hyphen (kept on its line) and at the space
    assert broken.narrowest_px() == pytest.approx(7.3 * len("xxxxx-") + 27.4)
    bold = Table(["h", "v"], [[("**verdict**", "verdict"), "1"]])  # markup is not text
    assert bold.narrowest_px() == pytest.approx(7.3 * (7 + 1) + 2 * 27.4)


def test_verdicts_are_coloured_on_the_page(toy_env, tmp_path):
    claims = [claim(id="wins"), claim(id="loses", better="b", than="a"), claim(id="too-few", min_pairs=9)]
    folder = make_folder(tmp_path, {("easy", "a"): [0.6, 0.65, 0.7], ("easy", "b"): [0.5, 0.5, 0.5]}, claims=claims)
    write_leaderboard(folder)
    page = (folder / "leaderboard.html").read_text()
    # three seeds: the audit's finding stands beside each verdict, inside its coloured cell
    said = " (audit: too-few-independent-pairs)"
    assert f"<td class='verdict reproduced'><b>reproduced</b>{said}</td>" in page
    assert f"<td class='verdict not-reproduced'><b>not reproduced</b>{said}</td>" in page
    assert f"<td class='verdict inconclusive'><b>inconclusive</b>{said}</td>" in page
    style = page.split("<style>", 1)[1].split("</style>", 1)[0]
    colours = {name: re.search(r"\." + name + r"\{background:#(\w+);color:#(\w+)\}", style) for name in
               ("reproduced", "not-reproduced", "inconclusive")}
    assert all(colours.values()), style

    def rgb(hex_colour: str) -> tuple[int, ...]:
        return tuple(int(hex_colour[i:i + 2], 16) for i in (0, 2, 4))

    green, red, amber = (rgb(colours[n].group(1)) for n in ("reproduced", "not-reproduced", "inconclusive"))
    assert green[1] > green[0] and green[1] > green[2]  # green
    assert red[0] > red[1] and red[0] > red[2]  # red
    assert amber[0] > amber[2] and amber[1] > amber[2]  # amber: red and green over blue


def test_the_plot_has_one_panel_per_dataset_each_on_its_own_scale(toy_env, tmp_path):
    """A target at 80% must not squash the others into a band: every dataset gets a panel and its own y-axis,
    with the chance level as a dashed line where it lies near the panel's values."""
    import matplotlib.pyplot as plt

    from harness.report.folder import compute

    from harness.report.figures import plot_figure
    from harness.metric_tables import write_chance_table

    datasets = ("near", "far", "texture")
    folder = make_folder(tmp_path, {
        ("near", "a"): [0.30, 0.32, 0.34], ("near", "b"): [0.24, 0.25, 0.26],
        ("far", "a"): [0.21, 0.20, 0.22], ("far", "b"): [0.19, 0.20, 0.21],
        ("texture", "a"): [0.80, 0.82, 0.78], ("texture", "b"): [0.79, 0.81, 0.80],
    }, datasets=datasets)
    write_chance_table(folder, {d: {"toy_score": 0.2} for d in datasets})
    fig = plot_figure(compute(folder))
    try:
        panels = [ax for ax in fig.axes if ax.get_visible()]
        assert [ax.get_title() for ax in panels] == ["near", "far (at chance)", "texture"]
        assert all(ax.get_shared_y_axes().get_siblings(ax) == [ax] for ax in panels)
        near, far, texture = (ax.get_ylim() for ax in panels)
        assert texture[0] > 0.7 and near[1] < 0.4 and far[1] < 0.3  # each panel spans its own values
        dashed = [[line.get_ydata()[0] for line in ax.get_lines() if line.get_linestyle() == "--"] for ax in panels]
        assert dashed == [[0.2], [0.2], []]  # texture's is 0.6 below its values: a note, not a line
        assert any("chance 0.2 ↓" in text.get_text() for text in panels[2].texts)
    finally:
        plt.close(fig)


CHROMIUM = Path("/usr/bin/chromium")  # Debian's package; .ci/run installs it
WINDOW_WIDTH = 1400
# opens every collapsed table (a reader will), then writes the page's widths into its title for --dump-dom
PROBE = ("<script>document.querySelectorAll('details').forEach(d => d.open = true);"
         "const e = document.documentElement;"
         "document.title = `widths ${e.scrollWidth} ${e.clientWidth} height ${e.scrollHeight}`;</script>")
COMMITTED = sorted(p.parent for p in (ROOT / "results").glob("*/*/spec.yaml"))


def chromium(profile_dir: Path, *args: str) -> str:
    done = subprocess.run([str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile_dir}",
                           *args], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.slow
@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium: apt-get install chromium")
@pytest.mark.parametrize("committed", COMMITTED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_page_fits_1400_px_without_a_horizontal_scrollbar(committed, tmp_path):
    """Each committed results folder's page, rebuilt, every table open, in a 1400 px wide headless Chromium:
    nothing wider than the window. A screenshot of the whole page is left beside it for a person to look at
    (pytest keeps the last three runs' tmp_path: /tmp/pytest-of-$USER/pytest-current/...)."""
    from PIL import Image

    folder = tmp_path / committed.name
    shutil.copytree(committed, folder)
    write_leaderboard(folder)
    page = folder / "leaderboard.html"
    probe = folder / "probe.html"
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"), encoding="utf-8")
    dom = chromium(tmp_path / "chromium", f"--window-size={WINDOW_WIDTH},1000", "--dump-dom", probe.as_uri())
    found = re.search(r"<title>widths (\d+) (\d+) height (\d+)</title>", dom)
    assert found, f"the probe did not run: {dom[:300]}"
    scroll_width, client_width, height = map(int, found.groups())

    screenshot = tmp_path / f"{committed.parent.name}-{committed.name}.png"
    chromium(tmp_path / "chromium", f"--window-size={WINDOW_WIDTH},{min(height, 16000)}",
             f"--screenshot={screenshot}", page.as_uri())
    with Image.open(screenshot) as image:
        assert image.width == WINDOW_WIDTH and image.height > 500
    assert client_width > WINDOW_WIDTH - 40  # the window really was 1400 px wide (less a vertical scrollbar)
    assert scroll_width <= client_width, (f"{committed.parent.name}/{committed.name}: the page is {scroll_width} px "
                                          f"wide in a {client_width} px window; see {screenshot}")


def test_curves_are_kept_per_cell_and_drawn_with_their_theory(toy_env, write_spec, tmp_path):
    """A task that returns an Evaluation with curves: runs.jsonl keeps them per cell, the page tabulates each
    method's mean curve over seeds (and its theory) and writes curves.svg; a bad curve fails its cell."""
    import json

    from harness.runner import run
    from harness.tasks.evaluation import Curve, curve_record

    text = TOY_SPEC.replace("params: {noise: 0.05}", "params: {noise: 0.05, curve: theory}")
    out = tmp_path / "out"
    run(write_spec(text), out=out)
    rows = [json.loads(line) for line in (out / "toy" / "runs.jsonl").read_text().splitlines()]
    easy = [r for r in rows if r["dataset"] == "easy" and r["split"] == "test"]
    assert easy and all(r["curves"]["loss_by_step"]["x"] == [1.0, 2.0, 4.0, 8.0] for r in easy)
    assert all("curves" not in r for r in rows if r["dataset"] == "hard")  # a cell without curves adds no field
    row = easy[0]
    loss = row["metrics"]["toy_loss"]
    assert row["curves"]["loss_by_step"]["y"] == pytest.approx([loss, loss / 2, loss / 4, loss / 8])
    page = (out / "toy" / "leaderboard.md").read_text()
    assert "## Curves" in page and "![curves](curves.svg)" in page
    assert "easy: loss_by_step against step" in page and "toy-constant (theory)" in page
    assert (out / "toy" / "curves.svg").read_text().startswith("<svg")
    assert "<h2>Curves</h2>" in (out / "toy" / "leaderboard.html").read_text()
    with pytest.raises(ValueError, match="curve 'c': x has 2 values, y 3; expected the same number"):
        curve_record("c", Curve([1, 2], [1, 2, 3]))
    with pytest.raises(ValueError, match=r"curve 'c': y holds nan \(not a finite number\)"):
        curve_record("c", Curve([1, 2], [1, float("nan")]))


def test_a_curve_table_shows_every_methods_x():
    """Curves of different lengths (two passes against five): the table's columns are the union of their x, the
    shorter curve's missing points a dash; before, every row was cut to the first method's x."""
    from types import SimpleNamespace

    from harness.report.curves import curve_blocks
    from harness.results_table import table_of_rows

    def row(method, xs):
        return {"status": "ok", "dataset": "d", "method": method, "seed": 0,
                "curves": {"excess": {"x": xs, "y": [float(x) for x in xs], "x_label": "pass", "y_label": "excess",
                                      "theory": None}}}

    board = SimpleNamespace(spec={"methods": [{"name": "short"}, {"name": "long"}], "datasets": [{"name": "d"}]},
                            datasets=[], rows=table_of_rows([row("short", [1, 2]), row("long", [1, 2, 3, 4, 5])]))
    table = next(b[1] for b in curve_blocks(board) if b[0] == "table")
    assert table.header == ["method", "seeds", "pass 1", "pass 2", "pass 3", "pass 4", "pass 5"]
    assert table.rows[0] == ["short", "1", "1", "2", "—", "—", "—"]
    assert table.rows[1][-1] == "5"


@pytest.mark.parametrize("index", ["results", "results/default", "results/quick"])
def test_committed_indexes_are_what_the_committed_folders_make(index, tmp_path):
    """results/index.md (every profile) and each profile's index.md list every committed folder with its verdicts:
    a run writes only its own --out root's index, so results/index.md once went stale for two specs."""
    root = tmp_path / "results"
    shutil.copytree(ROOT / index, root, ignore=shutil.ignore_patterns(".archive", "runs.jsonl", "*.html", "*.svg"))
    write_index(root)
    assert (root / "index.md").read_text() == (ROOT / index / "index.md").read_text(), (
        f"{index}/index.md is stale: rebuild it with harness.report.folder.write_index(Path('{index}'))")
