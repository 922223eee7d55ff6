"""`harness regress`: two results roots compared spec by spec, on copies of the committed quick results."""
from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import PLUGINS, ROOT, TOY_SPEC, harness_cli
from harness.cli import main

QUICK = ROOT / "results" / "quick"
SPECS = sorted(p.stem for p in (ROOT / "specs").glob("*.yaml") if (QUICK / p.stem / "leaderboard.csv").exists())


@pytest.fixture
def roots(tmp_path):
    """(baseline, current): two identical copies of results/quick (leaderboards, claims, spec.yaml)."""
    made = []
    for name in ("baseline", "current"):
        root = tmp_path / name
        for spec in ("signed-laplacian", "constrained-cc"):
            folder = root / spec
            folder.mkdir(parents=True)
            for file in ("leaderboard.csv", "claims.json", "spec.yaml"):
                shutil.copy(QUICK / spec / file, folder / file)
        made.append(root)
    return tuple(made)


def edit_row(folder: Path, dataset: str, method: str, **values) -> dict:
    """Set columns of one leaderboard.csv row; return the row as it was."""
    path = folder / "leaderboard.csv"
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    (row,) = [r for r in rows if r["dataset"] == dataset and r["method"] == method]
    before = dict(row)
    row.update({k: str(v) for k, v in values.items()})
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return before


def set_verdict(folder: Path, claim: str, verdict: str) -> None:
    path = folder / "claims.json"
    data = json.loads(path.read_text())
    for c in data["claims"]:
        if c["claim"] == claim:
            c["verdict"] = verdict
    path.write_text(json.dumps(data))


def test_identical_roots(roots, capsys):
    assert main(["regress", *map(str, roots)]) == 0
    out = capsys.readouterr().out
    assert "nothing moved" in out and "2 spec(s), 38 leaderboard row(s), 7 claim(s) compared" in out


def test_dropped_primary_metric(roots, capsys):
    """ARI (higher is better) of CC++ on the SBM drops: a regression, named; the run fails."""
    baseline, current = roots
    before = edit_row(current / "signed-laplacian", "sbm-n400-q0.15", "cc++-normalised", ari_mean=0.70)
    assert float(before["ari_mean"]) > 0.70
    assert main(["regress", str(baseline), str(current)]) == 1
    out = capsys.readouterr().out
    line = next(l for l in out.splitlines() if "sbm-n400-q0.15 · cc++-normalised " in l)
    assert "ari" in line and "regressed" in line and "0.753458" in line and "0.7 " in line
    assert "1 regression(s): signed-laplacian sbm-n400-q0.15 · cc++-normalised ari 0.753458 → 0.7" in out


def test_direction_follows_the_metric_goal(roots, capsys):
    """cost_over_opt is lower-is-better: a rise regresses, a fall is an improvement (exit 0, shown)."""
    baseline, current = roots
    edit_row(current / "constrained-cc", "n10-noise0.3-free", "pivot", cost_over_opt_mean=1.2)  # was 1.2405
    assert main(["regress", str(baseline), str(current)]) == 0
    out = capsys.readouterr().out
    assert "improved" in out and "commit the new results as the baseline" in out
    edit_row(current / "constrained-cc", "n10-noise0.3-free", "pivot", cost_over_opt_mean=1.3)
    assert main(["regress", str(baseline), str(current)]) == 1
    assert "worse by 0.0594974 (4.8%), beyond exact" in capsys.readouterr().out


def test_flipped_claim(roots, capsys):
    baseline, current = roots
    set_verdict(current / "signed-laplacian", "ccpp-normalised-beats-sc-hard-band", "not reproduced")
    assert main(["regress", str(baseline), str(current)]) == 1
    out = capsys.readouterr().out
    assert "claim ccpp-normalised-beats-sc-hard-band  verdict" in out and "reproduced  not reproduced  regressed" in out
    # losing a reproduced verdict to "inconclusive" counts too; gaining one does not
    set_verdict(current / "signed-laplacian", "ccpp-normalised-beats-sc-hard-band", "inconclusive")
    assert main(["regress", str(baseline), str(current)]) == 1
    set_verdict(current / "signed-laplacian", "ccpp-normalised-beats-sc-hard-band", "reproduced")
    set_verdict(current / "constrained-cc", "cluster-lp-beats-pivot", "reproduced")
    assert main(["regress", str(baseline), str(current)]) == 0
    assert "inconclusive  reproduced  improved" in capsys.readouterr().out


def test_a_claim_on_wall_time_is_listed_not_failed_unless_asked(roots, capsys):
    """A timing claim inherits wall time's noise: losing its verdict on another (or a busy) machine is listed only."""
    for root, verdict in zip(roots, ("reproduced", "inconclusive")):
        path = root / "signed-laplacian" / "claims.json"
        data = json.loads(path.read_text())
        data["claims"].append({"claim": "ccpp-faster-than-cc", "verdict": verdict, "metric": "runtime_s"})
        path.write_text(json.dumps(data))
    assert main(["regress", *map(str, roots)]) == 0
    out = capsys.readouterr().out
    assert "claim ccpp-faster-than-cc" in out and "a claim on runtime_s, read off a clock" in out and "listed only" in out
    assert main(["regress", *map(str, roots), "--tolerance", "runtime_s=1.0"]) == 1
    assert "reproduced  inconclusive  regressed" in capsys.readouterr().out


def test_clock_readings_in_any_unit_are_not_compared_unless_asked(tmp_path, capsys):
    """fsm-mcmc ranks by ln(wall time) (unit "ln s") and reports samples per second ("1/s"): both are read off
    a clock, so a busy machine moves them; like seconds they are compared only when named."""
    import harness.metrics as metrics

    assert {"s", "ln s", "1/s"} <= set(metrics.WALL_CLOCK_UNITS)
    roots = []
    for name in ("baseline", "current"):
        folder = tmp_path / name / "fsm-mcmc"
        folder.mkdir(parents=True)
        for file in ("leaderboard.csv", "claims.json", "spec.yaml", "metrics.json"):
            shutil.copy(QUICK / "fsm-mcmc" / file, folder / file)
        table = json.loads((folder / "metrics.json").read_text())
        table["log_wall_s"]["unit"] = "ln s"  # as the catalogue declares it
        (folder / "metrics.json").write_text(json.dumps(table))
        roots.append(tmp_path / name)
    row = next(csv.DictReader(open(roots[1] / "fsm-mcmc" / "leaderboard.csv", newline="")))
    edit_row(roots[1] / "fsm-mcmc", row["dataset"], row["method"],
             log_wall_s_mean=float(row["log_wall_s_mean"]) + 0.5, ess_per_s_mean=float(row["ess_per_s_mean"]) / 2)
    assert main(["regress", *map(str, roots)]) == 0
    assert "nothing moved" in capsys.readouterr().out
    assert main(["regress", *map(str, roots), "--tolerance", "log_wall_s=0.01"]) == 1
    assert "regressed" in capsys.readouterr().out


def test_runtime_not_compared_unless_asked(roots, capsys):
    baseline, current = roots
    before = edit_row(current / "signed-laplacian", "rgg-sep0.1", "cc-normalised", runtime_s_mean=1.0)  # several times slower
    assert float(before["runtime_s_mean"]) < 0.2  # so 1.0 s is more than 2× (the tolerance below) slower
    assert main(["regress", str(baseline), str(current)]) == 0
    assert "nothing moved" in capsys.readouterr().out
    assert main(["regress", str(baseline), str(current), "--tolerance", "runtime_s=1.0"]) == 1
    out = capsys.readouterr().out
    assert "rgg-sep0.1 · cc-normalised " in out and "runtime_s: 1 × baseline" in out
    edit_row(current / "signed-laplacian", "rgg-sep0.1", "cc-normalised", runtime_s_mean=float(before["runtime_s_mean"]) * 1.5)
    assert main(["regress", str(baseline), str(current), "--tolerance", "runtime_s=1.0"]) == 0


def test_tolerance_share_and_interval(roots, capsys):
    """CC++'s ARI on the SBM is 0.7535 ± 0.0451 (3 seeds): a drop to 0.74 is within 5 % and within the
    interval; a drop to 0.70 is outside both; a global tolerance leaves seconds alone."""
    baseline, current = roots
    edit_row(current / "signed-laplacian", "sbm-n400-q0.15", "cc++-normalised", ari_mean=0.74, runtime_s_mean=9.0)
    assert main(["regress", str(baseline), str(current)]) == 1
    assert main(["regress", str(baseline), str(current), "--tolerance", "0.05"]) == 0
    assert main(["regress", str(baseline), str(current), "--tolerance", "interval"]) == 0
    edit_row(current / "signed-laplacian", "sbm-n400-q0.15", "cc++-normalised", ari_mean=0.70)
    capsys.readouterr()
    assert main(["regress", str(baseline), str(current), "--tolerance", "0.05"]) == 1
    assert main(["regress", str(baseline), str(current), "--tolerance", "ari=interval"]) == 1
    assert "outside the baseline's 95% interval (± 0.0451295)" in capsys.readouterr().out


def test_lost_seeds_rows_and_specs(roots, capsys):
    baseline, current = roots
    edit_row(current / "constrained-cc", "n10-noise0.1", "pivot", seeds_ok=0, seeds_failed=1, cost_over_opt_mean="")
    assert main(["regress", str(baseline), str(current)]) == 1
    out = capsys.readouterr().out
    assert "seeds ok" in out and "cost_over_opt" in out and "no value in the current run" in out
    shutil.rmtree(current / "constrained-cc")
    assert main(["regress", str(baseline), str(current)]) == 1
    assert "has no constrained-cc/ folder" in capsys.readouterr().out
    # one spec's folder on each side works too
    assert main(["regress", str(baseline / "signed-laplacian"), str(current / "signed-laplacian")]) == 0


def test_usage_errors_exit_2(roots, tmp_path):
    baseline, current = roots
    done = harness_cli("regress", baseline, tmp_path / "nowhere")
    assert done.returncode == 2 and "no such folder" in done.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    assert harness_cli("regress", empty, current).returncode == 2
    done = harness_cli("regress", baseline, current, "--tolerance", "ari=lots")
    assert done.returncode == 2 and "--tolerance 'ari=lots'" in done.stderr


def test_toy_results_rebuild_and_compare_without_the_plugin(toy_env, write_spec, tmp_path):
    """A run records its metric table (metrics.json) in its folder: a process where the toy plugin is not
    registered rebuilds the leaderboard and compares two roots with the goals and units the run declared."""
    done = harness_cli("run", write_spec(TOY_SPEC), "--profile", "quick", "--out", tmp_path / "baseline", "--no-progress")
    assert done.returncode == 0, done.stderr
    table = json.loads((tmp_path / "baseline" / "toy" / "metrics.json").read_text())
    assert {name: row["goal"] for name, row in table.items()} == {"toy_score": "max", "toy_loss": "min", "runtime_s": "min"}
    baseline, current = tmp_path / "baseline", tmp_path / "current"
    shutil.copytree(baseline, current)

    env = {k: v for k, v in os.environ.items() if k != "HARNESS_PLUGINS"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and Path(p) != PLUGINS)

    def without_plugin(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)

    probe = without_plugin("-c", "from harness.registry import metrics; print(sorted(metrics()))")
    assert probe.returncode == 0 and "toy_score" not in probe.stdout, probe.stdout + probe.stderr
    rebuilt = without_plugin("-m", "harness.cli", "leaderboard", str(current / "toy"))
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert "| toy_score ↑ | toy_loss ↓ |" in rebuilt.stdout and "## Mean win rate across datasets (toy_score ↑)" in rebuilt.stdout
    same = without_plugin("-m", "harness.cli", "regress", str(baseline), str(current))
    assert same.returncode == 0 and "nothing moved" in same.stdout, same.stdout + same.stderr
    # the direction of a move comes from the folder's table: toy_score is to be maximised
    before = edit_row(current / "toy", "easy", "toy-constant", toy_score_mean=2.0)
    improved = without_plugin("-m", "harness.cli", "regress", str(baseline), str(current))
    assert improved.returncode == 0 and "improved" in improved.stdout, improved.stdout
    edit_row(current / "toy", "easy", "toy-constant", toy_score_mean=float(before["toy_score_mean"]) - 0.5)
    dropped = without_plugin("-m", "harness.cli", "regress", str(baseline), str(current))
    assert dropped.returncode == 1 and "worse by 0.5" in dropped.stdout, dropped.stdout


@pytest.mark.slow
def test_quick_profile_is_deterministic(tmp_path):
    """Both specs' quick profiles, run twice, give identical leaderboards and verdicts, and the
    committed results/quick (what .ci/run checks)."""
    specs = [ROOT / "specs" / f"{s}.yaml" for s in SPECS]
    for name in ("first", "second"):
        done = harness_cli("run", *specs, "--profile", "quick", "--out", tmp_path / name, "--no-progress")
        assert done.returncode == 0, done.stderr
    done = harness_cli("regress", tmp_path / "first", tmp_path / "second")
    assert done.returncode == 0 and "nothing moved" in done.stdout, done.stdout
    done = harness_cli("regress", QUICK, tmp_path / "first")
    assert done.returncode == 0, done.stdout


def _set_devices(folder: Path, device: str) -> None:
    path = folder / "leaderboard.csv"
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    for row in rows:
        row["devices"] = device
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def test_other_hardware_is_compared_within_the_interval_not_exactly(roots, capsys):
    """The same code gives other floating-point results on another CPU: within the baseline's
    interval it is not a regression there, and beyond it it still is."""
    baseline, current = roots
    folder = current / "signed-laplacian"
    with open(folder / "leaderboard.csv", newline="") as f:
        row = next(r for r in csv.DictReader(f) if float(r["ari_ci95"] or 0) > 0)  # a row with spread
    dataset, method = row["dataset"], row["method"]
    mean, half = float(row["ari_mean"]), float(row["ari_ci95"])
    edit_row(folder, dataset, method, ari_mean=mean - half / 2)  # worse, inside the interval
    assert main(["regress", str(baseline), str(current)]) == 1  # same hardware: exact, so a regression
    capsys.readouterr()
    _set_devices(folder, "cpu: Some Other CPU (2 cores)")
    assert main(["regress", str(baseline), str(current)]) == 0
    assert "the runs used other hardware" in capsys.readouterr().out
    edit_row(folder, dataset, method, ari_mean=mean - 2 * half)  # beyond the interval
    assert main(["regress", str(baseline), str(current)]) == 1
    assert main(["regress", str(baseline), str(current), "--tolerance", "0"]) == 1


def test_a_leaderboard_in_todays_format_compares_with_one_in_an_older_format(tmp_path, capsys):
    """`harness regress` reads leaderboard.csv by column name: a folder rebuilt today (new columns: seeds_skipped,
    tied_with_best, chance, at_chance; chance.json written) compares with the committed older one, both ways."""
    from harness.report.folder import write_leaderboard
    from harness.metric_tables import write_chance_table

    baseline, current = tmp_path / "baseline", tmp_path / "current"
    for spec in ("signed-laplacian", "cdfsl"):
        shutil.copytree(QUICK / spec, baseline / spec)
        shutil.copytree(QUICK / spec, current / spec)
    write_chance_table(current / "signed-laplacian", {"sbm-n400-q0.15": {"ari": 0.0}, "rgg-sep0.1": {"ari": 0.0}})
    for spec in ("signed-laplacian", "cdfsl"):
        write_leaderboard(current / spec)
    with open(current / "cdfsl" / "leaderboard.csv", newline="") as f:
        assert {"seeds_skipped", "tied_with_best", "chance", "at_chance"} <= set(next(csv.DictReader(f)))
    assert main(["regress", str(baseline), str(current)]) == 0
    assert "nothing moved" in capsys.readouterr().out
    assert main(["regress", str(current), str(baseline)]) == 0
    assert "nothing moved" in capsys.readouterr().out


def test_the_csv_rows_are_those_of_csv_dictreader_short_and_long_rows_included():
    """``read_spec_folder`` reads leaderboard.csv with csv.reader (faster at 100k rows): a row short of the header
    or longer than it reads as csv.DictReader reads it."""
    import csv
    import io

    from harness.regress import _padded

    text = "a,b,c\n1,2,3\n4,5\n6,7,8,9\n"
    expected = list(csv.DictReader(io.StringIO(text)))
    lines = csv.reader(io.StringIO(text))
    header = next(lines)
    got = [dict(zip(header, values)) if len(values) == len(header) else _padded(header, values) for values in lines]
    assert got == expected
    assert got[1] == {"a": "4", "b": "5", "c": None} and got[2][None] == ["9"]


def test_markdown_summary_when_nothing_moved(roots, tmp_path, capsys):
    """--markdown appends (a CI job's summary collects every step's) a heading and one line; the text and the exit
    code are those of a run without it."""
    assert main(["regress", *map(str, roots)]) == 0
    text = capsys.readouterr().out
    summary = tmp_path / "summary.md"
    summary.write_text("an earlier step's summary\n")
    assert main(["regress", *map(str, roots), "--markdown", str(summary)]) == 0
    assert capsys.readouterr().out == text
    baseline, current = roots
    assert summary.read_text() == (
        f"an earlier step's summary\n### Leaderboards: `{baseline}` → `{current}`\n\nnothing moved\n\n"
        "2 spec(s), 38 leaderboard row(s), 7 claim(s) compared; tolerance: exact for metrics without a unit, clock "
        "readings (s, ln s, 1/s) not compared.\n\n")


def test_markdown_summary_of_a_moved_metric_and_a_changed_claim(roots, tmp_path, capsys):
    """A table of the rows that moved (a regressed primary metric, an improvement) and one of the claims whose verdict
    changed, each with why it counts; exit 1 as without --markdown."""
    baseline, current = roots
    before = edit_row(current / "signed-laplacian", "sbm-n400-q0.15", "cc++-normalised", ari_mean=0.70)
    edit_row(current / "constrained-cc", "n10-noise0.3-free", "pivot", cost_over_opt_mean=1.2)
    set_verdict(current / "signed-laplacian", "ccpp-normalised-beats-sc-hard-band", "not reproduced")
    summary = tmp_path / "summary.md"
    assert main(["regress", str(baseline), str(current), "--markdown", str(summary)]) == 1
    assert "2 regression(s): signed-laplacian sbm-n400-q0.15" in capsys.readouterr().out
    lines = summary.read_text().splitlines()
    assert lines[:3] == [f"### Leaderboards: `{baseline}` → `{current}`", "",
                         "**2 regression(s)**: the comparison fails (rows marked **regressed**)."]
    rows = lines.index("| spec | dataset | method | metric | baseline → current | verdict | why |")
    assert lines[rows + 1:rows + 4] == [
        "| --- | --- | --- | --- | --- | --- | --- |",
        "| constrained-cc | n10-noise0.3-free | pivot | cost_over_opt | 1.2405 → 1.2 | improved | moved the right way |",
        "| signed-laplacian | sbm-n400-q0.15 | cc++-normalised | ari | 0.753458 → 0.7 | **regressed** "
        "| worse by 0.0534584 (7.1%), beyond exact |"]
    claims = lines.index("| spec | claim | baseline → current | verdict | why |")
    assert lines[claims + 2] == ("| signed-laplacian | ccpp-normalised-beats-sc-hard-band | reproduced → not reproduced "
                                 "| **regressed** | it held in the baseline and no longer does |")
    # a claim that comes to hold passes, and says so
    summary.unlink()
    edit_row(current / "signed-laplacian", "sbm-n400-q0.15", "cc++-normalised", ari_mean=before["ari_mean"])
    set_verdict(current / "signed-laplacian", "ccpp-normalised-beats-sc-hard-band", "reproduced")
    set_verdict(current / "constrained-cc", "cluster-lp-beats-pivot", "reproduced")
    assert main(["regress", str(baseline), str(current), "--markdown", str(summary)]) == 0
    text = summary.read_text()
    assert "No regression, but results moved: if that was meant, commit the new results as the baseline." in text
    assert "| constrained-cc | cluster-lp-beats-pivot | inconclusive → reproduced | improved | it holds now |" in text


def test_markdown_cells_keep_the_table_whole():
    from harness.regress import _md_row

    assert _md_row("a|b", "two\nlines") == "| a\\|b | two lines |"


def test_markdown_file_that_cannot_be_written_is_a_usage_error(roots, tmp_path):
    done = harness_cli("regress", *roots, "--markdown", tmp_path / "no-such-folder" / "summary.md")
    assert done.returncode == 2 and "--markdown" in done.stderr and "No such file or directory" in done.stderr
