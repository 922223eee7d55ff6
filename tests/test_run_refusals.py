"""What `harness run` (and `show`, `check`, `regress`) refuses before anything runs, or says once (issue 26:
items 2, 6, 7, 8, 9 and 10): each is one line for people, never a traceback."""
from __future__ import annotations

import shutil

import pytest
import yaml

import harness
from conftest import ROOT, TOY_SPEC
from harness.cli import main
from harness.runs_file import read_runs

QUICK = ROOT / "results" / "quick"
ONE_CELL = harness.RunOptions(jobs=1, methods=("toy-constant",), datasets=("easy",))


def _one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# --- 2: two specs with one name ------------------------------------------------------------------------------

def test_two_specs_with_one_name_are_refused_before_anything_runs(toy_env, write_spec, tmp_path, capsys):
    first = write_spec(TOY_SPEC)
    (tmp_path / "other").mkdir()
    second = tmp_path / "other" / "toy.yaml"
    second.write_text(TOY_SPEC.replace("title: Toy comparison", "title: Another toy"))
    out = tmp_path / "out"
    assert main(["run", str(first), str(second), "--profile", "quick", "--out", str(out), "--no-progress"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert str(first) in line and str(second) in line and "'toy'" in line, line
    assert not (out / "toy").exists()
    # the same file twice is the same refusal: it would run its cells twice into one folder
    assert main(["run", str(first), str(first), "--profile", "quick", "--out", str(out)]) == 2
    assert "'toy'" in _one_line(capsys.readouterr().err)
    assert not (out / "toy").exists()


# --- 6: --timeout does not re-key ------------------------------------------------------------------------------

def test_timeout_changes_neither_the_spec_hash_nor_the_keys(toy_env, write_spec, tmp_path):
    spec = write_spec(TOY_SPEC)
    out = tmp_path / "out"
    harness.run(spec, out, ONE_CELL, progress=False, profile="quick")
    rows = list(read_runs(out / "toy"))
    from dataclasses import replace

    [again] = harness.run(spec, out, replace(ONE_CELL, timeout_s=7.5), progress=False, profile="quick")
    assert not again.statuses and again.already_done == 1 and not again.notes, again
    assert list(read_runs(out / "toy")) == rows  # nothing recorded again under another hash
    quick = harness.load_spec(spec, "quick")
    from harness.plan import RunOptions, apply_options

    timed = apply_options(quick, RunOptions(timeout_s=7.5))
    assert timed.spec_hash == quick.spec_hash == rows[0]["spec_hash"]
    assert timed.hardware.timeout_s == 7.5  # the override still applies to the cells
    # the spec's own timeout_s stays part of the hash: the committed results were keyed with it
    edited = harness.load_spec(write_spec(TOY_SPEC.replace("timeout_s: 20", "timeout_s: 30")), "quick")
    assert edited.spec_hash != quick.spec_hash


# --- 7: regress across specs or profiles -----------------------------------------------------------------------

def _copy(spec: str, to) -> None:
    to.mkdir(parents=True)
    for file in ("leaderboard.csv", "claims.json", "spec.yaml"):
        shutil.copy(QUICK / spec / file, to / file)


def _edit_meta(folder, **changes) -> None:
    meta = yaml.safe_load((folder / "spec.yaml").read_text())
    meta.update(changes)
    (folder / "spec.yaml").write_text(yaml.safe_dump(meta, sort_keys=False))


def test_regress_refuses_folders_of_other_specs_or_profiles(tmp_path, capsys):
    _copy("signed-laplacian", tmp_path / "a" / "signed-laplacian")
    _copy("constrained-cc", tmp_path / "b")
    assert main(["regress", str(tmp_path / "a" / "signed-laplacian"), str(tmp_path / "b")]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "not comparable" in line and "'signed-laplacian'" in line and "'constrained-cc'" in line, line

    _copy("signed-laplacian", tmp_path / "c" / "signed-laplacian")
    _edit_meta(tmp_path / "c" / "signed-laplacian", profile="default")
    assert main(["regress", str(tmp_path / "a"), str(tmp_path / "c")]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "not comparable" in line and "profile" in line and "quick" in line and "default" in line, line

    # the same spec and profile with another spec hash is a comparison, as before
    _copy("signed-laplacian", tmp_path / "d" / "signed-laplacian")
    _edit_meta(tmp_path / "d" / "signed-laplacian", spec_hash="0123456789abcdef")
    assert main(["regress", str(tmp_path / "a"), str(tmp_path / "d")]) == 0
    assert "spec_hash" in capsys.readouterr().out


# --- 8: a --data-dir that is not a folder ------------------------------------------------------------------------

@pytest.mark.parametrize("how", ["missing", "file", "variable"])
def test_a_data_dir_that_is_not_a_folder_is_one_line_and_exit_two(toy_env, write_spec, tmp_path, capsys,
                                                                  monkeypatch, how):
    spec = write_spec(TOY_SPEC)
    out = tmp_path / "out"
    where = tmp_path / "data"
    if how == "file":
        where.write_text("not a folder")
    args = ["run", str(spec), "--profile", "quick", "--out", str(out), "--no-progress"]
    if how == "variable":
        monkeypatch.setenv("HARNESS_DATA_DIR", str(where))
    else:
        args += ["--data-dir", str(where)]
    assert main(args) == 2
    line = _one_line(capsys.readouterr().err)
    assert str(where) in line and ("HARNESS_DATA_DIR" in line if how == "variable" else "--data-dir" in line), line
    assert ("is a file" if how == "file" else "no such folder") in line
    assert not (out / "toy").exists()


# --- 9: a profile the spec does not have ------------------------------------------------------------------------

def test_a_profile_the_spec_lacks_is_refused_naming_those_it_has(toy_env, write_spec, tmp_path, capsys):
    spec = write_spec(TOY_SPEC)  # profiles: quick only
    out = tmp_path / "out"
    assert main(["run", str(spec), "--profile", "paper", "--out", str(out), "--no-progress"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "'paper'" in line and "quick" in line and "default" in line and str(spec) in line, line
    assert not out.exists()
    assert main(["show", str(spec), "--profile", "paper"]) == 2
    assert "'paper'" in _one_line(capsys.readouterr().err)
    assert main(["check", str(spec), "--profile", "paper", "--out", str(out)]) == 2
    assert "'paper'" in _one_line(capsys.readouterr().err)
    # no profiles at all: quick is refused too, and default (the base spec) is always there
    bare = write_spec(TOY_SPEC.split("profiles:")[0], stem="toy")
    assert main(["show", str(bare), "--profile", "quick"]) == 2
    assert "has no profiles" in _one_line(capsys.readouterr().err)
    assert main(["show", str(bare)]) == 0
    capsys.readouterr()
    # a spec may still name its default profile: what it says is merged over the base, as before
    named = write_spec(TOY_SPEC + "  default:\n    seeds: [4, 5]\n")
    assert harness.load_spec(named, "default").seeds == [4, 5]
    with pytest.raises(harness.SpecError, match="'paper'"):
        harness.load_spec(named, "paper")


# --- 10: more workers than cores or GPUs ------------------------------------------------------------------------

def test_more_jobs_than_cores_warns_once_and_gpu_workers_are_capped(monkeypatch):
    from harness import hardware

    monkeypatch.setattr(hardware, "usable_cpus", lambda: 2)
    jobs, warning = hardware.plan_jobs(64, threads=1, gpus=[])
    assert jobs == 64 and "64" in warning and "2 usable cores" in warning
    assert hardware.plan_jobs(2, threads=1, gpus=[]) == (2, None)
    assert hardware.plan_jobs("auto", threads=1, gpus=[]) == (2, None)
    jobs, warning = hardware.plan_jobs(2, threads=2, gpus=[])  # 2 workers × 2 threads on 2 cores
    assert jobs == 2 and "4 threads" in warning
    jobs, warning = hardware.plan_jobs(8, threads=1, gpus=["0", "1"])
    assert jobs == 2 and "2 GPUs" in warning and "8" in warning
    assert hardware.plan_jobs(2, threads=1, gpus=["0", "1"]) == (2, None)
    assert hardware.plan_jobs("auto", threads=1, gpus=["0", "1", "2"]) == (3, None)


def test_a_run_with_more_jobs_than_cores_says_so_once_on_stderr(toy_env, write_spec, tmp_path, capsys, monkeypatch):
    from dataclasses import replace

    from harness import hardware

    monkeypatch.setattr(hardware, "usable_cpus", lambda: 2)
    first = write_spec(TOY_SPEC)
    second = write_spec(TOY_SPEC.replace("name: toy\n", "name: toy2\n"), stem="toy2")
    harness.run([first, second], tmp_path / "out", replace(ONE_CELL, jobs=64), progress=False, profile="quick")
    err = capsys.readouterr().err
    warnings = [line for line in err.splitlines() if "--jobs 64" in line]
    assert len(warnings) == 1 and "2 usable cores" in warnings[0], err
