"""What a researcher sees on the console while and after a run: progress, skip reasons, --jobs auto, repair."""
from __future__ import annotations

import io
import json
import os

import pytest

from conftest import ROOT, TOY_SPEC, harness_cli
from harness.progress import QUIET_S, Progress, running_text
from harness.runs_file import read_runs
from harness.store import RunStore

LOCAL_SPEC = TOY_SPEC.replace(
    "  - {name: toy-target, id: hard, params: {noise: 0.3}}\n",
    "  - {name: toy-target, id: hard, params: {noise: 0.3}}\n  - {name: toy-local, id: local, requires: data}\n",
)


def test_without_a_terminal_each_finished_cell_is_one_plain_line(toy_env, write_spec, tmp_path):
    """A CI log gets a line per finished cell (tuning cells too), never a bar that prints nothing."""
    spec = write_spec(TOY_SPEC)
    done = harness_cli("run", spec, "--profile", "quick", "--out", tmp_path / "o")  # stderr is a pipe
    assert done.returncode == 0, done.stderr
    lines = [l for l in done.stderr.splitlines() if l.startswith("toy: [")]
    # quick: 2 datasets × (2 trials × 1 validation seed of the tuned method + 2 methods × 1 test seed)
    assert len(lines) == 2 * 2 + 2 * 2, done.stderr
    assert any("tuning toy-tunable on easy, trial 0, seed 0: ok in" in l for l in lines), lines
    assert any("toy-constant on hard, seed 0: ok in" in l for l in lines), lines
    assert lines[-1].startswith("toy: [8/8] ")
    assert "━" not in done.stderr  # no bar


def test_no_progress_prints_no_progress(toy_env, write_spec, tmp_path):
    done = harness_cli("run", write_spec(TOY_SPEC), "--profile", "quick", "--out", tmp_path / "o", "--no-progress")
    assert done.returncode == 0 and "toy: [" not in done.stderr, done.stderr


def test_the_running_cells_are_shown_longest_first_and_named_when_a_log_is_quiet(monkeypatch):
    assert running_text([("b", 95.0), ("a", 40.0)], now=100.0) == "a (60 s), b (5 s)"
    assert running_text([(str(i), 0.0) for i in range(5)], now=1.0).endswith("and 2 more")
    stream = io.StringIO()
    clock = [1000.0]
    monkeypatch.setattr("harness.progress.time.monotonic", lambda: clock[0])
    with Progress(True, "spec", stream) as progress:
        progress.add(2)
        progress.running([("m on d, seed 0", 1000.0)])
        assert stream.getvalue() == ""  # a line was just printed (the start): not yet
        clock[0] += QUIET_S
        progress.running([("m on d, seed 0", 1000.0)])
        progress.finished("m on d, seed 0", "ok", 61.0)
    assert stream.getvalue().splitlines() == ["spec: [0/2] running m on d, seed 0 (60 s)",
                                              "spec: [1/2] m on d, seed 0: ok in 61.0 s"]


def test_jobs_auto_is_the_default_and_uses_every_usable_core(toy_env, write_spec, tmp_path, monkeypatch):
    from harness.cli import build_parser
    from harness.hardware import auto_jobs, usable_cpus

    assert build_parser().parse_args(["run", "x.yaml"]).jobs == "auto"
    assert build_parser().parse_args(["run", "x.yaml", "--jobs", "3"]).jobs == 3
    assert usable_cpus() == len(os.sched_getaffinity(0))
    assert auto_jobs(threads=1, gpus=[]) == usable_cpus()
    assert auto_jobs(threads=usable_cpus() * 4, gpus=[]) == 1  # never zero workers
    assert auto_jobs(threads=1, gpus=["0", "1", "2"]) == 3  # one worker per GPU

    import harness
    from harness import executors

    sizes = []
    original = executors.LocalExecutor.__init__

    def spy(self, jobs=1, threads=1, gpus=None):
        sizes.append(jobs)
        original(self, jobs, threads, gpus)

    monkeypatch.setattr(executors.LocalExecutor, "__init__", spy)
    harness.run(write_spec(TOY_SPEC), tmp_path / "o", progress=False, profile="quick")
    assert sizes == [usable_cpus()]


def test_jobs_refuses_what_is_neither_a_count_nor_auto(capsys):
    from harness.cli import main

    with pytest.raises(SystemExit, match="2"):
        main(["run", "x.yaml", "--jobs", "all"])
    assert "expected a positive integer or 'auto', found 'all'" in capsys.readouterr().err


def test_each_distinct_skip_reason_is_printed_once(toy_env, write_spec, tmp_path):
    done = harness_cli("run", write_spec(LOCAL_SPEC), "--profile", "quick", "--out", tmp_path / "o",
                       "--no-progress", "--data-dir", tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("skipped: toy-local: target.txt not found in the data folder") == 1, done.stdout
    assert "2 cell(s) skipped: toy-local: target.txt not found" in done.stdout  # two methods × one quick seed
    assert "was not read" not in done.stdout  # the local dataset did read the folder


def test_a_data_dir_that_no_selected_dataset_reads_is_warned_about(toy_env, write_spec, tmp_path):
    done = harness_cli("run", write_spec(LOCAL_SPEC), "--profile", "quick", "--out", tmp_path / "o",
                       "--no-progress", "--datasets", "easy", "--data-dir", tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"--data-dir {tmp_path} was not read: no selected dataset of this spec reads real data" in done.stdout


def test_list_specs_does_not_depend_on_the_current_directory(tmp_path):
    here = harness_cli("list", "specs").stdout.splitlines()
    elsewhere = harness_cli("list", "specs", cwd=tmp_path).stdout.splitlines()
    assert [l.split()[0] for l in here] == [l.split()[0] for l in elsewhere] != []
    assert str(ROOT / "specs" / "cdfsl.yaml") in "\n".join(elsewhere)
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "mine.yaml").write_text("spec: 1\nname: mine\ntask: t\ntitle: my own\n")
    own = harness_cli("list", "specs", cwd=tmp_path).stdout
    assert "specs/mine.yaml" in own and "cdfsl" in own  # one's own specs beside the shipped ones


def _record(key: str) -> dict:
    return {"key": key, "status": "ok", "dataset": "d", "method": "m", "seed": 0, "split": "test"}


def test_repair_moves_damaged_lines_aside_byte_for_byte(tmp_path):
    folder = tmp_path / "spec"
    folder.mkdir()
    good = [json.dumps(_record("a")) + "\n", json.dumps(_record("b")) + "\n"]
    damaged = [b"42\n", b"\0" * 12 + b"\n", b"\xff\xfe garbage\n"]
    (folder / "runs.jsonl").write_bytes(good[0].encode() + damaged[0] + damaged[1] + good[1].encode() + damaged[2])
    done = harness_cli("repair", folder)
    assert done.returncode == 0, done.stderr
    assert "moved 3 damaged line(s) (line 2, 3, 5)" in done.stdout
    assert (folder / "runs.jsonl").read_text() == "".join(good)
    assert (folder / "damaged.jsonl").read_bytes() == b"".join(damaged)
    assert [r["key"] for r in read_runs(folder)] == ["a", "b"]
    again = harness_cli("repair", folder)
    assert again.returncode == 0 and "no damaged line, nothing moved" in again.stdout


def test_repair_refuses_a_folder_without_runs_or_one_being_written(tmp_path):
    done = harness_cli("repair", tmp_path)
    assert done.returncode == 2 and "no runs.jsonl here" in done.stderr and "Traceback" not in done.stderr
    (tmp_path / "runs.jsonl").write_text("42\n")
    with RunStore(tmp_path):
        locked = harness_cli("repair", tmp_path)
    assert locked.returncode == 2 and "another `harness run` is writing" in locked.stderr
    assert (tmp_path / "runs.jsonl").read_text() == "42\n"
