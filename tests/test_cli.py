"""The command line end to end, on the toy plugin's quick profile: outputs, exit codes, filters."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import ROOT, TOY_SPEC, harness_cli
from harness.runs_file import read_runs

HEAVY = ("torch", "optuna", "pandas", "sklearn", "scipy", "matplotlib")


def test_help_list_and_validate_stay_light(toy_env, write_spec):
    """--help and list import no heavy package; validate and show never import torch."""
    spec = write_spec(TOY_SPEC)
    probe = (
        "import sys, runpy\n"
        "sys.argv = ['harness'] + sys.argv[1:]\n"
        "try:\n    runpy.run_module('harness.cli', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        f"print('HEAVY:', sorted(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)\n"
    )
    for args in (["--help"], ["list"], ["validate", str(spec)], ["show", str(spec), "--profile", "quick"]):
        done = subprocess.run([sys.executable, "-c", probe, *args], cwd=ROOT, capture_output=True, text=True)
        heavy = done.stderr.rsplit("HEAVY:", 1)[-1]
        if args[0] in ("--help", "list"):
            assert "HEAVY: []" in done.stderr, (args, done.stderr[-2000:])
        else:
            assert "torch" not in heavy and "sklearn" not in heavy, (args, done.stderr[-2000:])


def test_list_names_task_and_origin(toy_env):
    done = harness_cli("list", "methods")
    assert done.returncode == 0
    line = next(l for l in done.stdout.splitlines() if l.startswith("toy-tunable"))
    assert "toy.guess" in line and "toy_plugin:CATALOGUE" in line
    metrics = harness_cli("list", "metrics").stdout
    assert any(l.startswith("toy_score") and "max ↑" in l for l in metrics.splitlines())


def test_a_reader_that_stops_early_gets_no_traceback():
    """`harness list | head -1`: the closed pipe ends the command quietly, as other Unix tools do."""
    listing = subprocess.Popen([sys.executable, "-m", "harness.cli", "list"], cwd=ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, bufsize=0)
    listing.stdout.read(1)
    listing.stdout.close()  # the reader is gone before most of the listing is written
    stderr = listing.stderr.read().decode()
    assert listing.wait(timeout=60) in (0, 141) and "Traceback" not in stderr, stderr


def test_quick_run_end_to_end(toy_env, write_spec, tmp_path):
    spec = write_spec(TOY_SPEC)
    out = tmp_path / "out"
    done = harness_cli("run", spec, "--profile", "quick", "--out", out, "--no-progress")
    assert done.returncode == 0, done.stderr
    folder = out / "toy"
    for name in ("runs.jsonl", "leaderboard.md", "leaderboard.csv", "leaderboard.html", "spec.yaml", "claims.json"):
        assert (folder / name).exists(), name
    assert (out / "index.md").exists()
    rows = list(read_runs(folder))
    assert len(rows) == 2 * 2 * 1  # datasets × methods × quick seeds
    required = {"key", "spec", "profile", "task", "dataset", "method", "kind", "seed", "params", "status", "error",
                "metrics", "wall_s", "peak_mib", "device", "git_commit", "spec_hash", "versions"}
    for row in rows:
        assert required <= set(row) and row["profile"] == "quick" and row["status"] == "ok"
        assert {"python", "optuna", "numpy"} <= set(row["versions"])
    tuned = [r for r in rows if r["method"] == "toy-tunable"]
    assert all("x" in r["params"] and r["tuned"] == ["x"] for r in tuned)
    assert "tunable-wins: inconclusive" in done.stdout  # one quick seed × 2 datasets is too few pairs

    md = harness_cli("leaderboard", folder, "--format", "md")
    assert md.returncode == 0 and "| rank | method | kind |" in md.stdout
    csv = harness_cli("leaderboard", folder, "--format", "csv")
    assert csv.stdout.startswith("spec,profile,dataset,rank,method")
    check = harness_cli("check", spec, "--out", out)
    assert check.returncode == 0 and check.stdout.splitlines()[1].startswith("tunable-wins: inconclusive")


def test_filters_failures_exit_one_and_fresh(toy_env, write_spec, tmp_path):
    text = TOY_SPEC.replace("metrics: {primary", "  - {name: toy-raise, kind: baseline}\nmetrics: {primary")
    spec = write_spec(text)
    out = tmp_path / "out"
    done = harness_cli("run", spec, "--profile", "quick", "--out", out, "--no-progress",
                       "--methods", "toy-constant,toy-raise", "--seeds", "3,4", "--datasets", "easy")
    assert done.returncode == 1 and "2 failed, 2 ok" in done.stdout
    rows = list(read_runs(out / "toy"))
    assert {(r["method"], r["seed"]) for r in rows} == {(m, s) for m in ("toy-constant", "toy-raise") for s in (3, 4)}
    assert all(r["error"] == "RuntimeError: the method broke" for r in rows if r["method"] == "toy-raise")

    fresh = harness_cli("run", spec, "--profile", "quick", "--out", out, "--no-progress", "--fresh",
                        "--methods", "toy-constant", "--seeds", "3", "--datasets", "easy")
    assert fresh.returncode == 0 and "earlier results moved to" in fresh.stdout
    assert len(list(read_runs(out / "toy"))) == 1
    archived = list((out / ".archive").glob("toy-*/runs.jsonl"))
    assert len(archived) == 1 and len(archived[0].read_text().splitlines()) == 4


def test_check_exits_one_when_a_claim_is_not_reproduced(toy_env, write_spec, tmp_path):
    text = TOY_SPEC.replace("better: toy-tunable, than: toy-constant, metric: toy_score}",
                            "better: toy-constant, than: toy-tunable, metric: toy_score,\n"
                            "     source: paper, quote: 'Table 2: the constant guess wins', replicate: dataset-seed}")
    spec = write_spec(text)
    out = tmp_path / "out"
    done = harness_cli("run", spec, "--out", out, "--no-progress", "--trials", "6")
    assert done.returncode == 0, done.stderr
    check = harness_cli("check", spec, "--out", out)
    assert check.returncode == 1, check.stdout
    assert "tunable-wins: not reproduced" in check.stdout and "95% CI" in check.stdout and "p = " in check.stdout
    # the toy's datasets draw their targets from their own streams, so the claim may count its 3 × 2 cells
    assert "6 independent pairs ((dataset, seed) cells: the claim declares its datasets independent draws)" in check.stdout
    details = check.stdout.splitlines()[2:]
    assert details[0].startswith("  per dataset (toy-constant − toy-tunable, + favours toy-constant): easy -")
    assert details[1] == "  from the paper: Table 2: the constant guess wins"


def test_usage_errors_exit_two_and_write_nothing(toy_env, write_spec, tmp_path):
    spec = write_spec(TOY_SPEC)
    out = tmp_path / "out"
    bad_method = harness_cli("run", spec, "--out", out, "--methods", "toy-constnt")
    assert bad_method.returncode == 2 and "did you mean 'toy-constant'" in bad_method.stderr
    bad_spec = write_spec(TOY_SPEC.replace("seeds: [0, 1, 2]", "seeds: [zero]"), stem="toy")
    invalid = harness_cli("run", bad_spec, "--out", out)
    assert invalid.returncode == 2 and "invalid spec, nothing ran" in invalid.stderr and ":16:" in invalid.stderr
    assert "Traceback" not in invalid.stderr + bad_method.stderr
    assert not out.exists()
    assert harness_cli("run", spec, "--seeds", "a,b").returncode == 2
    assert harness_cli("validate", bad_spec).returncode == 2
    assert harness_cli("check", spec, "--out", out).returncode == 2
    assert harness_cli("leaderboard", out / "toy").returncode == 2


def test_runs_jsonl_lines_are_json_objects(toy_env, write_spec, tmp_path):
    spec = write_spec(TOY_SPEC)
    out = tmp_path / "o"
    assert harness_cli("run", spec, "--profile", "quick", "--out", out, "--no-progress").returncode == 0
    for line in (out / "toy" / "runs.jsonl").read_text().splitlines():
        assert isinstance(json.loads(line), dict)
    written = {p.relative_to(tmp_path).parts[0] for p in tmp_path.rglob("*")}
    assert written == {"o", "toy.yaml"}  # nothing outside the output folder


def test_storage_url_is_used_for_tuning(toy_env, write_spec, tmp_path):
    import sqlite3

    spec = write_spec(TOY_SPEC)
    db = tmp_path / "studies.db"
    done = harness_cli("run", spec, "--profile", "quick", "--out", tmp_path / "o", "--no-progress",
                       "--storage", f"sqlite:///{db}")
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "o" / "toy" / "optuna.db").exists()
    names = {row[0] for row in sqlite3.connect(db).execute("select study_name from studies")}
    assert {n.split("/")[1] for n in names} == {"easy", "hard"} and all(n.startswith("toy/") for n in names)


def test_resume_without_the_optuna_storage_reuses_frozen_params(toy_env, write_spec, tmp_path):
    """Committed results carry runs.jsonl but not optuna.db: a rerun must not tune again."""
    spec = write_spec(TOY_SPEC)
    out = tmp_path / "o"
    assert harness_cli("run", spec, "--profile", "quick", "--out", out, "--no-progress").returncode == 0
    (out / "toy" / "optuna.db").unlink()
    again = harness_cli("run", spec, "--profile", "quick", "--out", out, "--no-progress")
    assert again.returncode == 0 and "nothing new to run (4 already done)" in again.stdout
    assert not (out / "toy" / "optuna.db").exists()  # no study was opened, so none was re-run


@pytest.mark.parametrize("args, says", [
    (["--seeds", "0,0"], "0 given twice"),
    (["--seeds", "-1"], "seed -1 is out of range"),
    (["--seeds", str(2**32)], f"seed {2**32} is out of range"),
    (["--methods", "a,a"], "a given twice"),
    (["--timeout", "nan"], "expected a positive finite number, found 'nan'"),
    (["--timeout", "inf"], "expected a positive finite number, found 'inf'"),
])
def test_bad_option_values_are_refused_before_anything_runs(args, says, capsys, tmp_path):
    from harness.cli import main

    with pytest.raises(SystemExit, match="2"):
        main(["run", "specs/any.yaml", "--out", str(tmp_path / "o"), *args])
    assert says in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_failed_cells_run_again_and_the_exit_code_tells_the_plan(toy_env, write_spec, tmp_path, monkeypatch):
    """A cell that timed out is retried next time (its row stays as history); --no-retry keeps it, and the
    exit code stays 1 while any planned cell's newest record is failed or timed out.

    Whatever the machine's load: toy-sleep sleeps 60 s against a 2 s timeout, toy-constant returns at once, and
    the retried toy-sleep returns at once too (HARNESS_TOY_SLEEP_S; its key is unchanged)."""
    text = TOY_SPEC.replace("metrics: {primary", "  - {name: toy-sleep, kind: baseline, params: {seconds: 60}}\n"
                                                 "metrics: {primary")
    spec = write_spec(text)
    out = tmp_path / "out"
    args = ("run", spec, "--profile", "quick", "--out", out, "--no-progress", "--methods", "toy-sleep,toy-constant",
            "--datasets", "easy")
    slow = harness_cli(*args, "--timeout", "2")
    assert slow.returncode == 1 and "1 timed-out" in slow.stdout and "a rerun retries them" in slow.stdout, slow.stdout
    assert "1 ok" in slow.stdout  # toy-constant, well within the 2 s
    kept = harness_cli(*args, "--no-retry")
    assert kept.returncode == 1 and "nothing new to run (2 already done)" in kept.stdout  # the plan is not ok
    monkeypatch.setenv("HARNESS_TOY_SLEEP_S", "0")
    retried = harness_cli(*args, "--timeout", "20")
    assert retried.returncode == 0 and "1 ok (1 already done)" in retried.stdout
    rows = [r for r in read_runs(out / "toy") if r["method"] == "toy-sleep"]
    # the failure stays as history; --timeout is not part of the spec hash, so nothing was recorded again
    assert [(r["status"], bool(r.get("carried_from"))) for r in rows] == [("timed-out", False), ("ok", False)]
    board = (out / "toy" / "leaderboard.csv").read_text()
    assert "toy-sleep" in board and ",1,0," in board.split("toy-sleep")[1][:40]  # the newest: 1 seed ok, 0 failed


def test_the_closing_message_names_the_page_and_what_verdicts_mean(toy_env, write_spec, tmp_path):
    done = harness_cli("run", write_spec(TOY_SPEC), "--profile", "quick", "--out", tmp_path / "o", "--no-progress")
    assert done.returncode == 0
    assert "leaderboard.md (and leaderboard.html)" in done.stdout
    assert "reproduced: the 95% interval" in done.stdout and "inconclusive: it straddles it" in done.stdout


def test_an_out_that_is_a_file_is_one_line_and_exit_two(toy_env, write_spec, tmp_path):
    # (a read-only folder takes the same path; these tests run as root, who may write anywhere)
    taken = tmp_path / "results.txt"
    taken.write_text("not a folder")
    done = harness_cli("run", write_spec(TOY_SPEC), "--profile", "quick", "--out", taken, "--no-progress")
    assert done.returncode == 2 and "is a file, not a folder" in done.stderr and "Traceback" not in done.stderr
    assert taken.read_text() == "not a folder"


def test_a_run_with_nothing_new_leaves_the_pages_unless_what_they_show_changed(toy_env, write_spec, tmp_path):
    """Nothing ran and nothing the pages are made of changed: they are not rebuilt (that imported scipy and
    matplotlib), and the verdicts are read back from claims.json. A new description is rebuilt into them."""
    out = tmp_path / "out"
    first = harness_cli("run", write_spec(TOY_SPEC), "--profile", "quick", "--out", out, "--no-progress")
    assert first.returncode == 0, first.stderr
    page = out / "toy" / "leaderboard.md"
    built = page.stat().st_mtime_ns
    again = harness_cli("run", write_spec(TOY_SPEC), "--profile", "quick", "--out", out, "--no-progress")
    assert "nothing new to run" in again.stdout and "claim tunable-wins: inconclusive" in again.stdout
    assert page.stat().st_mtime_ns == built
    described = TOY_SPEC.replace("title: Toy comparison\n", "title: Toy comparison\ndescription: A fresh reading.\n")
    third = harness_cli("run", write_spec(described), "--profile", "quick", "--out", out, "--no-progress")
    assert "nothing new to run" in third.stdout and "A fresh reading." in page.read_text()


def test_version_prints_the_installed_version_and_exits_zero():
    from importlib.metadata import version

    done = harness_cli("--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"harness {version('harness')}\n" and done.stderr == ""
    assert "--version" in harness_cli("--help").stdout
