"""A real `harness run` killed with SIGKILL resumes: every cell ends up exactly once."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter

from conftest import ROOT, TOY_SPEC, harness_cli
from harness.runs_file import read_runs
from harness.store import RunStore

SLOW_SPEC = """\
spec: 1
name: slow
title: Slow toy comparison
task: toy.guess
datasets:
  - {name: toy-target, id: a}
  - {name: toy-target, id: b, params: {noise: 0.2}}
methods:
  - name: toy-peek
    kind: implementation
    search:
      seconds: {float: [0.05, 0.1]}
  - {name: toy-peek, id: peek-fixed, kind: baseline, params: {seconds: 0.2}}
metrics: {primary: toy_score}
seeds: [0, 1, 2, 3, 4, 5]
tuning: {trials: 3, sampler: {name: random, args: {}}}
hardware: {device: cpu, timeout_s: 30}
"""


def keys_and_statuses(folder):
    return [(r["key"], r["status"]) for r in read_runs(folder)]


def test_sigkill_mid_run_then_resume_runs_each_cell_once(toy_env, write_spec, tmp_path):
    spec = write_spec(SLOW_SPEC, stem="slow")
    out = tmp_path / "out"
    folder = out / "slow"
    command = [sys.executable, "-m", "harness.cli", "run", str(spec), "--out", str(out), "--no-progress"]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if (folder / "runs.jsonl").exists() and len(keys_and_statuses(folder)) >= 4:
            break
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)  # the run and its workers, mid-cell
    process.wait()
    partial = keys_and_statuses(folder)
    assert 4 <= len(partial) < 24, "the kill should land mid-run"

    finished = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, finished.stderr
    assert f"({len(partial)} already done)" in finished.stdout
    rows = keys_and_statuses(folder)
    counts = Counter(key for key, _ in rows)
    assert len(counts) == 2 * 2 * 6 and set(counts.values()) == {1}
    assert {status for _, status in rows} == {"ok"}
    assert rows[: len(partial)] == partial  # earlier lines untouched
    # a third run has nothing left to do
    again = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "nothing new to run" in again.stdout
    assert len(keys_and_statuses(folder)) == 24


def _record(key: str) -> dict:
    return {"key": key, "status": "ok", "dataset": "d", "method": "m", "seed": 0, "split": "test"}


def test_half_written_last_line_is_cut_before_appending(tmp_path):
    folder = tmp_path / "spec"
    folder.mkdir()
    good = json.dumps(_record("a")) + "\n"
    (folder / "runs.jsonl").write_text(good + '{"key": "b", "sta')
    assert [r["key"] for r in read_runs(folder)] == ["a"]
    with RunStore(folder) as store:
        store.append(_record("c"))
        assert [r["key"] for r in read_runs(folder)] == ["a", "c"]
    assert (folder / "runs.jsonl").read_text() == good + json.dumps(_record("c")) + "\n"


def test_two_runs_cannot_write_one_folder(tmp_path):
    import pytest

    from harness.store import StoreLocked

    with RunStore(tmp_path / "spec"):
        with pytest.raises(StoreLocked, match="another `harness run` is writing"):
            with RunStore(tmp_path / "spec"):
                pass


def test_fresh_never_moves_a_folder_another_run_is_writing(toy_env, write_spec, tmp_path):
    """--fresh beside a running run once moved the folder away under it (16 records for 8 keys)."""
    import pytest

    import harness
    from harness.store import StoreLocked

    spec = write_spec(TOY_SPEC)
    folder = tmp_path / "o" / "toy"
    with RunStore(folder) as running:
        running.append({"key": "k", "status": "ok"})
        with pytest.raises(StoreLocked, match="another `harness run` is writing"):
            harness.run(spec, tmp_path / "o", harness.RunOptions(fresh=True), progress=False, profile="quick")
        assert (folder / "runs.jsonl").exists() and not (tmp_path / "o" / ".archive").exists()


def test_damaged_lines_are_reported_once_and_the_rest_is_used(toy_env, write_spec, tmp_path):
    """JSON that is not a record, a line of NUL bytes, invalid UTF-8: reported with the line number, never a crash."""
    import harness

    spec = write_spec(TOY_SPEC)
    harness.run(spec, tmp_path / "o", progress=False, profile="quick")
    runs = tmp_path / "o" / "toy" / "runs.jsonl"
    good = runs.read_bytes().splitlines(keepends=True)
    runs.write_bytes(good[0] + b"42\n" + b"[1, 2]\n" + b'{"status": "ok"}\n' + b"\0" * 40 + b"\n"
                     + b"\xff\xfe garbage\n" + b"".join(good[1:]))
    done = harness_cli("leaderboard", tmp_path / "o" / "toy")
    assert done.returncode == 0, done.stderr
    for number in (2, 3, 4, 5, 6):
        assert done.stderr.count(f"runs.jsonl:{number}: ") == 1, done.stderr
    assert "Traceback" not in done.stderr
    again = harness_cli("run", spec, "--profile", "quick", "--out", tmp_path / "o", "--no-progress")
    assert again.returncode == 0 and "nothing new to run (4 already done)" in again.stdout, again.stdout + again.stderr
    assert len(runs.read_bytes().splitlines()) == len(good) + 5  # nothing rewritten without asking


def test_moving_superseded_rows_aside_keeps_damaged_lines_byte_for_byte(tmp_path):
    folder = tmp_path / "spec"
    folder.mkdir()
    lines = [json.dumps(_record("old")) + "\n", "\0\0\0\n", json.dumps(_record("new")) + "\n", "42\n"]
    (folder / "runs.jsonl").write_text("".join(lines))
    with RunStore(folder) as store:
        assert store.move_aside(lambda r: r["key"] == "old") == 1
    assert (folder / "runs.jsonl").read_text() == "".join(lines[1:])
    assert (folder / "superseded.jsonl").read_text() == lines[0]


def test_a_method_added_to_the_spec_keeps_the_others_on_the_leaderboard(toy_env, write_spec, tmp_path):
    """Adding a method changes the spec hash, not the other cells' keys: they are not run again, and their
    rows are recorded again under the new hash, so the leaderboard still shows them."""
    from conftest import TOY_SPEC

    first = harness_cli("run", write_spec(TOY_SPEC), "--profile", "quick", "--out", tmp_path, "--no-progress")
    assert first.returncode == 0, first.stderr
    extended = TOY_SPEC.replace(
        "  - {name: toy-constant, kind: baseline, params: {value: 0.0}}\n",
        "  - {name: toy-constant, kind: baseline, params: {value: 0.0}}\n"
        "  - {name: toy-constant, id: other, kind: baseline, params: {value: 0.2}}\n")
    second = harness_cli("run", write_spec(extended), "--profile", "quick", "--out", tmp_path, "--no-progress")
    assert second.returncode == 0, second.stderr
    assert "2 ok (4 already done)" in second.stdout and "4 cell(s) finished under an earlier version" in second.stdout
    rows = list(read_runs(tmp_path / "toy"))
    carried = [r for r in rows if r.get("carried_from")]
    assert len(carried) == 4 and {r["spec_hash"] for r in carried} == {rows[-1]["spec_hash"]}
    board = (tmp_path / "toy" / "leaderboard.csv").read_text()
    assert all(method in board for method in ("toy-tunable", "toy-constant", "other"))
    third = harness_cli("run", write_spec(extended), "--profile", "quick", "--out", tmp_path, "--no-progress")
    assert "nothing new to run" in third.stdout and "earlier version" not in third.stdout
    assert len(list(read_runs(tmp_path / "toy"))) == len(rows)


def test_appends_are_fsynced_in_groups_within_a_second_and_at_the_end(tmp_path, monkeypatch):
    """A line is in the kernel as soon as it is appended (SIGKILL loses nothing: the tests above); it reaches
    the disk within store.SYNC_INTERVAL_S, by the background thread, not one fsync per cell."""
    from harness import store as store_module

    synced_sizes = []
    real_fsync = os.fsync
    monkeypatch.setattr(store_module.os, "fsync",
                        lambda fd: (synced_sizes.append(os.fstat(fd).st_size), real_fsync(fd))[1])
    folder = tmp_path / "spec"
    with RunStore(folder) as store:
        for i in range(200):
            store.append(_record(f"k{i}"))
        size = (folder / "runs.jsonl").stat().st_size
        assert len(keys_and_statuses(folder)) == 200  # readable at once, before any fsync
        deadline = time.monotonic() + 30  # the background thread's next tick (a second), on a busy machine
        while size not in synced_sizes and time.monotonic() < deadline:
            time.sleep(0.05)
        assert size in synced_sizes  # flushed while the run goes on, without waiting for its end
        assert len(synced_sizes) < 20  # in groups: far fewer than one per cell
        store.append(_record("last"))
    assert synced_sizes[-1] == (folder / "runs.jsonl").stat().st_size  # the end flushes the rest


def test_rows_moved_aside_mid_run_leave_later_appends_in_the_new_file(tmp_path):
    folder = tmp_path / "spec"
    with RunStore(folder) as store:
        store.append(_record("old"))
        store.append(_record("kept"))
        assert store.move_aside(lambda row: row["key"] == "old") == 1
        store.append(_record("new"))
    assert [r["key"] for r in read_runs(folder)] == ["kept", "new"]
