"""Leaderboard numbers and claim verdicts against values computed by hand."""
from __future__ import annotations

import csv
import io
import json

import pytest
import yaml

from conftest import ROOT
from harness.claims import check_claim
from harness.leaderboard import build_rows, read_folder, win_rates, write_index, write_leaderboard
from harness.metrics import read_metric_table

T_975 = {2: 4.302652729911275, 3: 3.182446305284263}  # Student t quantiles, df = n - 1


def make_folder(tmp_path, values: dict[tuple[str, str], list[float]], claims=(), stale=False,
                datasets=("easy", "hard")):
    """A results folder with toy_score values per (dataset, method), one per seed."""
    spec = {
        "name": "toy", "title": "Toy", "task": "toy.guess",
        "datasets": [{"name": "toy-target", "id": d} for d in datasets],
        "methods": [{"name": "toy-constant", "id": "a", "kind": "implementation"},
                    {"name": "toy-constant", "id": "b", "kind": "baseline"},
                    {"name": "toy-constant", "id": "c", "kind": "baseline"}],
        "metrics": {"primary": "toy_score", "report": ["toy_score", "toy_loss"]},
        "seeds": [0, 1, 2], "claims": list(claims),
    }
    folder = tmp_path / "toy"
    folder.mkdir()
    (folder / "spec.yaml").write_text(yaml.safe_dump({"profile": "quick", "spec_hash": "h1", "spec": spec}))
    lines = []
    for (dataset, method), seed_values in values.items():
        for seed, value in enumerate(seed_values):
            status = "failed" if value is None else "ok"
            metrics = {} if value is None else {"toy_score": value, "toy_loss": 1 - value}
            lines.append({"key": f"{dataset}{method}{seed}", "dataset": dataset, "method": method, "seed": seed,
                          "kind": "implementation" if method == "a" else "baseline", "split": "test",
                          "status": status, "error": "boom" if value is None else None, "metrics": metrics,
                          "spec_hash": "h1", "git_commit": "abc", "device": "cpu: test", "task_version": "1",
                          "versions": {"python": "3"}})
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
    assert "| 2 | a | implementation | 2.000 ± 2.484 |" in markdown
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
    row = next(line for line in markdown.splitlines() if line.startswith("| `a-beats-b`"))
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
    assert "| 2 | b | baseline | 0.200 (3 seeds, no spread) |" in hard  # one flat row does not flag a dataset
    table = list(csv.DictReader(io.StringIO((folder / "leaderboard.csv").read_text())))
    assert {(r["dataset"], r["zero_variance"]) for r in table} == {("easy", "true"), ("hard", "false")}
    assert json.loads((folder / "claims.json").read_text())["zero_variance"] == ["easy"]


def test_differences_of_rounding_only_are_a_tie_not_a_win():
    """Two methods equal but for float rounding (1e-16) must not 'reproduce' a claim with p = 1e-50."""
    from harness.stats import mean_and_half_width, one_sided_t

    assert one_sided_t([1e-16, 2e-16, 1e-16, 3e-16]).p_value == 1.0
    assert mean_and_half_width([0.3, 0.3 + 5e-17, 0.3])[1] == 0.0
    assert one_sided_t([0.01, 0.01, 0.01]).p_value == 0.0  # a real constant gain is still one


def test_rebuilding_an_unchanged_folder_rewrites_every_file_byte_for_byte(tmp_path):
    """Committed leaderboards must not churn in git when nothing changed (the plot once carried a date and random ids)."""
    import shutil

    from harness.leaderboard import write_leaderboard

    folder = tmp_path / "constrained-cc"
    shutil.copytree(ROOT / "results" / "quick" / "constrained-cc", folder)
    write_leaderboard(folder)
    first = {f.name: f.read_bytes() for f in folder.iterdir() if f.is_file()}
    write_leaderboard(folder)
    assert {f.name: f.read_bytes() for f in folder.iterdir() if f.is_file()} == first
