"""`harness bench`: comparing asv's stored results, running asv for a commit, and the suite itself.

The stored-result fixtures are written by hand in asv 0.6's result format (version 2, one
row per benchmark aligned with ``result_columns``), as found by running the suite here.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

from conftest import ROOT, harness_cli
from harness.cli import main

COLUMNS = ["result", "params", "version", "started_at", "duration", "stats_ci_99_a", "stats_ci_99_b",
           "stats_q_25", "stats_q_75", "stats_number", "stats_repeat", "samples", "profile"]
BASE = "1111111aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
HEAD = "2222222bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
EIGEN = "signed_laplacian.GeneralisedEigensolve.time_eigensolve"
SWEEP = "signed_laplacian.SweepRounding.time_sweep"
PEAK = "constrained_cc.ClusterLP.peakmem_build_and_solve"
TRACK = "leaderboards.track_signed_laplacian_ari"


def jitter(centre: float, count: int = 20, spread: float = 0.02) -> list[float]:
    """``count`` samples within ±spread of ``centre``, deterministic."""
    return [centre * (1 + spread * ((7 * i) % count - count / 2) / (count / 2)) for i in range(count)]


def time_row(param_values: list[list[str]], samples: list[list[float]]) -> list:
    """A time_* row the way asv 0.6 saves it (stats from asv_runner's own compute_stats)."""
    from asv_runner.statistics import compute_stats

    results, stats = [], []
    for s in samples:
        result, stat = compute_stats(s, 1)
        results.append(result)
        stats.append(stat)
    row = [results, param_values, "1", 1796010922225, 2.5]
    row += [[s[key] for s in stats] for key in ("ci_99_a", "ci_99_b", "q_25", "q_75", "number", "repeat")]
    row += [samples]
    return row


def write_results(root: Path, machine: str, commit: str, rows: dict[str, list], env: str = "venv") -> Path:
    folder = root / ".asv" / "results" / machine
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "machine.json").write_text(json.dumps({"machine": machine, "version": 1}))
    data = {"commit_hash": commit, "env_name": f"existing-py_{env}_bin_python", "date": 1796010542000,
            "params": {"machine": machine, "python": "/venv/bin/python"}, "python": "/venv/bin/python",
            "requirements": {}, "env_vars": {}, "result_columns": COLUMNS, "results": rows,
            "durations": {"<build>": 3e-05}, "version": 2}
    path = folder / f"{commit[:8]}-existing-py_{env}_bin_python.json"
    path.write_text(json.dumps(data))
    return path


def described() -> dict:
    return {
        EIGEN: {"name": EIGEN, "param_names": ["n", "variant"], "params": [["400", "1000"], ["'cc++'", "'cc'"]],
                "type": "time", "unit": "seconds", "version": "1"},
        SWEEP: {"name": SWEEP, "param_names": ["n"], "params": [["400"]], "type": "time", "unit": "seconds",
                "version": "1"},
        PEAK: {"name": PEAK, "param_names": ["n"], "params": [["10"]], "type": "peakmemory", "unit": "bytes",
               "version": "1"},
        TRACK: {"name": TRACK, "param_names": ["dataset · method"], "params": [["'sbm · cc++'"]], "type": "track",
                "unit": "ari (higher is better)", "version": "1"},
        "version": 2,
    }


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A folder with the repository's asv.conf.json and stored results for BASE (and HEAD, per test)."""
    shutil.copy(ROOT / "asv.conf.json", tmp_path / "asv.conf.json")
    (tmp_path / ".asv" / "results").mkdir(parents=True)
    (tmp_path / ".asv" / "results" / "benchmarks.json").write_text(json.dumps(described()))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def suite(eigen_scale: float = 1.0, sweep_ms: float = 1.6, peak_bytes: float = 8.2e7, ari: float = 0.75,
          eigen_failed: bool = False) -> dict[str, list]:
    centres = [0.0045, 0.022, 0.044, 0.24]  # (400, cc++), (400, cc), (1000, cc++), (1000, cc)
    eigen = time_row([["400", "1000"], ["'cc++'", "'cc'"]], [jitter(c * eigen_scale) for c in centres])
    if eigen_failed:
        eigen = [[None, None, None, None], [["400", "1000"], ["'cc++'", "'cc'"]], "1", 1796010922225, 0.1]
    return {
        EIGEN: eigen,
        SWEEP: time_row([["400"]], [jitter(sweep_ms * 1e-3)]),
        PEAK: [[peak_bytes], [["10"]], "1", 1796010921405, 0.8],
        TRACK: [[ari], [["'sbm · cc++'"]], "1", 1796010931043, 0.3],
    }


def test_compare_flags_a_kernel_twice_as_slow(project, capsys):
    write_results(project, "ci", BASE, suite())
    slow = suite()
    slow[SWEEP] = time_row([["400"]], [jitter(3.2e-3)])  # 1.6 ms → 3.2 ms
    write_results(project, "ci", HEAD, slow)
    assert main(["bench", "compare", "--stored", BASE[:7], HEAD[:7], "--machine", "ci"]) == 1
    out, err = capsys.readouterr()
    assert f"REGRESSION {SWEEP}(n=400): 2.00× slower" in err
    line = next(l for l in out.splitlines() if SWEEP in l)
    assert line.startswith("slower") and "1.6ms" in line and "3.2ms" in line and "2.00" in line
    assert "Mann-Whitney" in line  # the samples were there, so asv's test decided
    others = [l for l in out.splitlines() if EIGEN in l or PEAK in l or TRACK in l]
    assert len(others) == 6 and all(l.startswith("same") for l in others), others


def test_compare_nothing_changed(project, capsys):
    write_results(project, "ci", BASE, suite())
    write_results(project, "ci", HEAD, suite())
    assert main(["bench", "compare", "--stored", BASE, HEAD, "--machine", "ci", "--factor", "1.2"]) == 0
    out = capsys.readouterr().out
    assert "no kernel slower by more than 1.2× among 7 benchmarks" in out
    assert f"{EIGEN}(n=1000, variant='cc')" in out


def test_compare_missing_commit_exits_2(project):
    write_results(project, "ci", BASE, suite())
    done = harness_cli("bench", "compare", "--stored", BASE, "3333333", "--machine", "ci", cwd=project)
    assert done.returncode == 2
    assert "HEAD '3333333': no asv results" in done.stderr and "1111111a" in done.stderr
    # results stored under another machine name are not this machine's
    assert harness_cli("bench", "compare", "--stored", BASE, BASE, "--machine", "laptop", cwd=project).returncode == 2


def test_compare_needs_significance_not_only_the_factor(project, capsys):
    """A 1.3× median change whose samples overlap widely is noise by asv's test; without samples or
    statistics (one sample, or peakmem) the factor alone decides."""
    write_results(project, "ci", BASE, suite())
    noisy = suite(peak_bytes=2.0e8)  # peak memory 82 MB → 200 MB
    noisy[SWEEP] = time_row([["400"]], [[x * 1e-3 for x in (1.0, 4.0, 1.2, 3.5, 2.2, 1.1, 3.9, 2.0, 1.3, 3.0)]])
    base = suite()
    base[SWEEP] = time_row([["400"]], [[x * 1e-3 for x in (1.0, 3.6, 1.1, 3.3, 1.5, 1.2, 3.1, 1.4, 1.6, 2.5)]])
    write_results(project, "ci", BASE, base)
    write_results(project, "ci", HEAD, noisy)
    assert main(["bench", "compare", "--stored", BASE, HEAD, "--machine", "ci"]) == 1
    out, err = capsys.readouterr()
    sweep = next(l for l in out.splitlines() if SWEEP in l)
    assert sweep.startswith("same") and "not significant" in sweep, sweep
    assert f"REGRESSION {PEAK}(n=10)" in err and SWEEP not in err


def test_compare_failed_kernel_and_changed_track(project, capsys):
    """A kernel that ran at BASE and fails at HEAD fails the comparison; a track_* value that
    moved is shown but left to `harness regress`."""
    write_results(project, "ci", BASE, suite())
    write_results(project, "ci", HEAD, suite(eigen_failed=True, ari=0.5))
    assert main(["bench", "compare", "--stored", BASE, HEAD, "--machine", "ci"]) == 1
    out, err = capsys.readouterr()
    assert err.count("REGRESSION") == 4 and f"REGRESSION {EIGEN}(n=400, variant='cc++'): failed" in err
    track = next(l for l in out.splitlines() if TRACK in l)
    assert track.startswith("changed") and "0.75" in track and "0.5" in track


def test_compare_leaves_skipped_benchmarks_alone(project, capsys):
    """asv stores NaN for a benchmark whose setup raised NotImplementedError (a GPU-only size on a
    CPU runner): skipped at both commits is no regression; failed (None) after running is one."""
    base, head = suite(), suite()
    base[PEAK] = [[float("nan")], [["10"]], "1", 1796010921405, 0.1]
    head[PEAK] = [[float("nan")], [["10"]], "1", 1796010921405, 0.1]
    write_results(project, "ci", BASE, base)
    write_results(project, "ci", HEAD, head)
    assert main(["bench", "compare", "--stored", BASE, HEAD, "--machine", "ci"]) == 0
    line = next(l for l in capsys.readouterr().out.splitlines() if PEAK in l)
    assert line.startswith("skipped") and "n/a" in line


def test_compare_reads_results_from_several_runs_of_one_commit(project, capsys):
    """asv keeps one file per environment: the newest measurement of each benchmark wins."""
    write_results(project, "ci", BASE, suite())
    write_results(project, "ci", HEAD, suite())
    later = suite()
    later[SWEEP] = time_row([["400"]], [jitter(3.2e-3)])
    later[SWEEP][3] += 1000  # started later
    write_results(project, "ci", HEAD, later, env="other_venv")
    assert main(["bench", "compare", "--stored", BASE, HEAD, "--machine", "ci"]) == 1
    assert f"REGRESSION {SWEEP}(n=400): 2.00× slower" in capsys.readouterr().err


def test_factor_must_be_at_least_one(project):
    done = harness_cli("bench", "compare", "--stored", BASE, HEAD, "--factor", "0.8", cwd=project)
    assert done.returncode == 2 and "factor ≥ 1" in done.stderr


def test_synchronize_waits_for_cuda_only(monkeypatch):
    import importlib.util

    # the file alone: the benchmarks package's __init__ would set thread variables in this process
    spec = importlib.util.spec_from_file_location("bench_common", ROOT / "benchmarks" / "_common.py")
    common = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(common)
    synchronize = common.synchronize

    calls = []
    fake = types.ModuleType("torch")
    fake.cuda = types.SimpleNamespace(synchronize=lambda device=None: calls.append(device))
    monkeypatch.setitem(sys.modules, "torch", fake)
    synchronize("cpu")
    assert calls == []
    synchronize("cuda")
    synchronize("cuda:1")
    assert calls == ["cuda", "cuda:1"]


def test_asv_check_passes_and_catches_a_broken_benchmark(tmp_path):
    done = subprocess.run([sys.executable, "-m", "asv", "check"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and "No problems found" in done.stdout, done.stdout + done.stderr
    shutil.copy(ROOT / "asv.conf.json", tmp_path)
    shutil.copytree(ROOT / "benchmarks", tmp_path / "benchmarks", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "benchmarks" / "broken.py").write_text("def time_two_arguments(a, b):\n    pass\n\n"
                                                       "time_two_arguments.params = [1, 2]\n")
    done = subprocess.run([sys.executable, "-m", "asv", "check"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode != 0 and "broken.time_two_arguments" in done.stdout


TRIVIAL_SUITE = '''\
"""A suite whose one kernel is slower when slow.txt says so."""
import time
from pathlib import Path

DELAY_S = float((Path(__file__).resolve().parents[1] / "slow.txt").read_text())


class Kernel:
    version = "1"
    repeat = (3, 5, 2.0)
    rounds = 1

    def setup(self):
        self.delay = DELAY_S

    def time_sleep(self):
        time.sleep(self.delay)


def track_answer():
    return 42
'''


def test_bench_run_compare_publish_on_two_commits(tmp_path):
    """The GitHub workflow's steps, for real: `harness bench run` on a base and a head commit of a
    git repository with the project's asv.conf.json, `harness bench compare`, `asv publish`."""
    repo = tmp_path / "repo"
    (repo / "benchmarks").mkdir(parents=True)
    shutil.copy(ROOT / "asv.conf.json", repo)
    (repo / "benchmarks" / "__init__.py").write_text("")
    (repo / "benchmarks" / "kernels.py").write_text(TRIVIAL_SUITE)
    (repo / ".gitignore").write_text(".asv/\n")
    env = {**os.environ, "HOME": str(tmp_path / "home"), "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    (tmp_path / "home").mkdir()

    def git(*args):
        return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout.strip()

    def harness(*args):
        return subprocess.run([sys.executable, "-m", "harness.cli", *args], cwd=repo, env=env, capture_output=True,
                              text=True, timeout=300)

    git("init", "-q")
    commits = []
    for delay in ("0.002", "0.02"):  # the head commit makes the kernel 10× slower
        (repo / "slow.txt").write_text(delay)
        git("add", "-A")
        git("commit", "-q", "-m", f"delay {delay}")
        commits.append(git("rev-parse", "HEAD"))
    for commit in commits:
        git("checkout", "-q", commit)
        done = harness("bench", "run", "--machine", "ci-test")
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        assert f"2 measured, 0 failed for {commit[:8]} on machine 'ci-test'" in done.stdout
    assert "ci-test" in json.loads((tmp_path / "home" / ".asv-machine.json").read_text())
    done = harness("bench", "compare", "--stored", commits[0], commits[1], "--machine", "ci-test", "--factor", "1.2")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "REGRESSION kernels.Kernel.time_sleep" in done.stderr
    assert harness("bench", "compare", "--stored", commits[0], commits[0], "--machine", "ci-test").returncode == 0
    published = subprocess.run([sys.executable, "-m", "asv", "publish"], cwd=repo, env=env, capture_output=True,
                               text=True, timeout=120)
    assert published.returncode == 0, published.stdout + published.stderr
    assert (repo / ".asv" / "html" / "index.html").exists()
    # --quick checks that the suite runs, and stores nothing
    stored = sorted((repo / ".asv" / "results" / "ci-test").glob("*.json"))
    done = harness("bench", "run", "--quick", "--bench", "time_sleep", "--machine", "ci-test")
    assert done.returncode == 0 and "1 measured, 0 failed" in done.stdout and "nothing stored" in done.stdout
    assert sorted((repo / ".asv" / "results" / "ci-test").glob("*.json")) == stored
    assert harness("bench", "run", "--quick", "--bench", "no_such_benchmark").returncode == 2


def test_workflow_calls_only_what_these_tests_exercise():
    """.github/workflows/benchmarks.yml: `harness bench run --machine` and `asv publish`, which
    test_bench_run_compare_publish_on_two_commits runs, and `harness bench compare --factor --json --bench`, which
    test_bench_compare.py runs."""
    import re

    import yaml

    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "benchmarks.yml").read_text())
    scripts = "\n".join(step.get("run", "") for step in workflow["jobs"]["asv"]["steps"])
    harness_calls = re.findall(r"\bharness ([^\n;&|>]*)", scripts)
    asv_calls = re.findall(r"-m asv (\w+)", scripts)
    assert harness_calls and asv_calls == ["publish"]
    exercised = {"bench run": {"--machine"}, "bench compare": {"--factor", "--json", "--bench"}, "bench --help": set()}
    for call in harness_calls:
        words = call.split()
        command = " ".join(words[:2])
        assert command in exercised, call
        assert set(w for w in words if w.startswith("--") and w != "--help") <= exercised[command], call
    assert "fetch-depth: 0" in (ROOT / ".github" / "workflows" / "benchmarks.yml").read_text()
