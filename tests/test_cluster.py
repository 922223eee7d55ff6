"""Cells through submitit (``--executor local-submitit``: submitit's own local processes, no mock) and the
mapping of a spec's resources to sbatch options."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from conftest import ROOT, TOY_SPEC, harness_cli
from harness.runs_file import read_runs

RUNTIME_FIELDS = ("wall_s", "peak_mib", "peak_gpu_mib", "finished_at", "host", "load_average", "cores", "versions",
                  "git_commit")


def comparable_rows(folder: Path) -> dict[str, dict]:
    """runs.jsonl by key, without the fields that measure the run rather than the result."""
    rows = {}
    for row in read_runs(folder):
        row = {k: v for k, v in row.items() if k not in RUNTIME_FIELDS}
        row["metrics"] = {k: v for k, v in row["metrics"].items() if k != "runtime_s"}
        rows[row["key"]] = row
    return rows


@pytest.mark.slow  # 25 s: .ci/run runs it (-m slow -k cluster)
def test_local_submitit_gives_the_pool_results_in_every_non_runtime_column(toy_env, write_spec, tmp_path):
    spec = write_spec(TOY_SPEC)
    pooled = harness_cli("run", spec, "--out", tmp_path / "pool", "--jobs", "2", "--no-progress")
    assert pooled.returncode == 0, pooled.stderr
    jobs = harness_cli("run", spec, "--out", tmp_path / "jobs", "--jobs", "2", "--executor", "local-submitit",
                       "--no-progress")
    assert jobs.returncode == 0, jobs.stderr
    a, b = comparable_rows(tmp_path / "pool" / "toy"), comparable_rows(tmp_path / "jobs" / "toy")
    assert len(a) == 12 and a == b
    folder = tmp_path / "jobs" / "toy"
    assert json.loads((folder / "tuning.json").read_text()) == json.loads((tmp_path / "pool" / "toy" / "tuning.json").read_text())
    # the cells ran in submitit jobs, whose logs stay beside the results; a clean end removes the shards
    assert list((folder / "jobs").glob("*_log.out")) and not list((folder / "jobs").glob("*.shard.jsonl"))
    assert all(row["host"] for row in read_runs(folder))


def test_cells_of_a_group_share_a_job_and_small_groups_are_packed(tmp_path):
    from harness.cluster import ClusterResources, SubmititExecutor

    executor = SubmititExecutor(jobs=2, folder=tmp_path, backend="local", resources=ClusterResources(cells_per_job=4))
    for i in range(10):  # groups g0 (3 cells), g1 (3), g2 (3), g3 (1)
        executor.submit(i, {"group": f"g{i // 3}", "timeout_s": 5, "key": str(i)})
    batches = executor._pack(list(range(10)))
    assert batches == [[0, 1, 2], [3, 4, 5], [6, 7, 8, 9]]  # never a group split, never more than 4 unless one group is
    auto = SubmititExecutor(jobs=2, folder=tmp_path, backend="local")
    for i in range(1000):
        auto.submit(i, {"group": None, "timeout_s": 5, "key": str(i)})
    assert len(auto._pack(list(range(1000)))) == 8  # about four jobs per slot, not one job per cell
    assert len(auto._pack(list(range(875)))) == 7  # what is left once a job went out: jobs of the same size


@pytest.mark.slow  # 10 s: .ci/run runs it (-m slow -k cluster)
def test_a_job_past_its_time_limit_is_requeued_and_skips_the_cells_it_finished(toy_env, tmp_path):
    """submitit warns the job before its limit; the job checkpoints, is requeued, and finishes the rest."""
    import submitit

    from harness.cluster import CellBatch, shard_lines
    from test_execute import cell

    executor = submitit.LocalExecutor(folder=tmp_path / "jobs")
    executor.update_parameters(timeout_min=0.15, signal_delay_s=4)  # warned 5 s in
    cells = [(i, {**cell("toy-peek", {"seconds": 1.5}, seed=i), "key": f"k{i}"}) for i in range(4)]
    shard = tmp_path / "jobs" / "one.shard.jsonl"
    job = executor.submit(CellBatch(str(shard), cells, threads=1))
    assert job.result() == 4
    lines = shard_lines(shard)[0]
    assert sorted(line["index"] for line in lines) == list(range(4))  # each cell once, over both attempts
    assert {line["result"]["status"] for line in lines} == {"ok"}
    log = Path(job.paths.stderr).read_text() + Path(job.paths.stdout).read_text()
    assert "Caught signal SIGUSR2" in log and "timed-out" in log, log[-2000:]
    assert len({line["result"]["pid"] for line in lines}) >= 2  # two attempts or more, each with its own worker


def test_a_job_that_dies_fails_its_cells_and_names_its_log(toy_env, tmp_path):
    from harness.cluster import SubmititExecutor
    from test_execute import cell

    with SubmititExecutor(jobs=1, folder=tmp_path, backend="local") as executor:
        executor.submit("slow", {**cell("toy-sleep", {"seconds": 60.0}, timeout_s=90), "group": "g", "key": "k"})
        assert executor.wait(timeout=1.0) == []
        executor._jobs[0].job._process.kill()  # the scheduler kills the job (OOM killer, node failure)
        results = dict(executor.wait(timeout=30))
    assert results["slow"]["status"] == "failed"
    assert "ended without this cell's result" in results["slow"]["error"]
    assert results["slow"]["log"]["stderr"].startswith("jobs/") and (tmp_path / results["slow"]["log"]["stderr"]).exists()


KILL_SPEC = """\
spec: 1
name: slow
title: Slow toy comparison
task: toy.guess
datasets:
  - {name: toy-target, id: a}
  - {name: toy-target, id: b, params: {noise: 0.2}}
methods:
  - name: toy-stop
    kind: implementation
    params: {seconds: 0.3}
    search:
      x: {float: [0.0, 1.0]}
  - {name: toy-stop, id: fixed, kind: baseline, params: {seconds: 0.3}}
metrics: {primary: toy_score}
seeds: [0, 1, 2, 3, 4, 5]
tuning: {trials: 3, sampler: {name: random, args: {}}}
hardware: {device: cpu, timeout_s: 30}
"""


def _controllers_alive(folder: Path) -> bool:
    found = subprocess.run(["pgrep", "-f", f"submitit.local._local {folder}"], capture_output=True, text=True)
    return bool(found.stdout.strip())


@pytest.mark.slow  # 25 s: .ci/run runs it (-m slow -k cluster)
def test_killed_parent_resumes_without_running_again_what_its_jobs_finished(toy_env, write_spec, tmp_path, monkeypatch):
    """SIGKILL the parent alone (its jobs live on, as on a cluster); the next run folds in their shards."""
    counter = tmp_path / "calls"
    monkeypatch.setenv("HARNESS_TOY_STOP", f"{counter}:0:SIGINT")  # count every call, stop none
    spec = write_spec(KILL_SPEC, stem="slow")
    folder = tmp_path / "out" / "slow"
    command = [sys.executable, "-m", "harness.cli", "run", str(spec), "--out", str(tmp_path / "out"), "--jobs", "2",
               "--executor", "local-submitit", "--no-progress"]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and len(list(read_runs(folder))) < 4:
        time.sleep(0.05)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    partial = len(list(read_runs(folder)))
    assert 4 <= partial < 24, "the kill should land mid-run"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and _controllers_alive(folder / "jobs"):
        time.sleep(0.2)  # the jobs it left finish and write their shards
    assert list((folder / "jobs").glob("*.shard.jsonl"))

    finished = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, finished.stderr
    keys = Counter(row["key"] for row in read_runs(folder))
    assert len(keys) == 24 and set(keys.values()) == {1}  # every cell recorded once
    # 6 tuning cells and 24 test cells, each computed once: nothing the orphaned jobs finished ran again
    assert int(counter.read_text()) == 6 + 24


def test_sbatch_options_come_from_the_spec_hardware_and_the_command_line(tmp_path, monkeypatch):
    """submitit writes the sbatch script; nothing is submitted (a stand-in srun only passes its SLURM check)."""
    from harness.cluster import SubmititExecutor, resources_from
    from harness.spec.model import Hardware

    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "srun").write_text("#!/bin/sh\nexit 1\n")
    (fake / "srun").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    hardware = Hardware(device="cuda", threads=4, timeout_s=600, memory_gb=32,
                        slurm={"partition": "gpu", "account": "lab", "options": {"exclusive": True}})
    resources = resources_from(hardware, hardware.slurm, {"partition": "debug", "options": {"reservation": "ml"}})
    executor = SubmititExecutor(jobs=8, threads=4, folder=tmp_path, backend="slurm", resources=resources)
    executor.submit("a", {"timeout_s": 600, "group": "g", "key": "k"})
    executor._executor.update_parameters(**executor._parameters(3))
    script = executor._executor._executor._make_submission_file_text("python -m x", "uid")
    for line in ("--partition=debug", "--account=lab", "--cpus-per-task=4", "--gpus-per-node=1", "--mem=32GB",
                 "--exclusive", "--reservation=ml", "--time=35"):  # 3 cells × 600 s + 5 min
        assert f"#SBATCH {line}\n" in script, script
    assert executor._executor._executor.parameters["array_parallelism"] == 8


def test_slurm_off_a_cluster_and_slurm_flags_without_it_are_usage_errors(toy_env, write_spec, tmp_path):
    import shutil

    if shutil.which("sbatch"):
        pytest.skip("a real SLURM is installed here")
    spec = write_spec(TOY_SPEC)
    off = harness_cli("run", spec, "--out", tmp_path / "out", "--executor", "slurm")
    assert off.returncode == 2 and "not a SLURM login node" in off.stderr and "Traceback" not in off.stderr
    assert not (tmp_path / "out").exists()
    stray = harness_cli("run", spec, "--out", tmp_path / "out", "--slurm-partition", "gpu")
    assert stray.returncode == 2 and "--slurm-partition only apply to cluster jobs" in stray.stderr


def test_slurm_settings_do_not_change_the_spec_hash(toy_env, write_spec):
    from harness.spec.load import load_spec

    plain = load_spec(write_spec(TOY_SPEC), "default")
    placed = load_spec(write_spec(TOY_SPEC.replace(
        "hardware: {device: cpu, threads: 1, timeout_s: 20}",
        "hardware: {device: cpu, threads: 1, timeout_s: 20, memory_gb: 8, slurm: {partition: gpu, time_min: 30}}"),
        stem="toy"), "default")
    assert placed.hardware.slurm == {"partition": "gpu", "time_min": 30} and placed.hardware.memory_gb == 8
    assert placed.spec_hash == plain.spec_hash
