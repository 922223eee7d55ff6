""".github/workflows/leaderboards.yml: every command it calls is one these tests run, and its steps' scripts, run
with bash as GitHub runs them, on a repository of one toy spec with its committed results, write the job summary and
fail on a regression or on an audit finding that the spec does not acknowledge."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, TOY_SPEC, harness_cli
from test_regress import edit_row

WORKFLOW = ROOT / ".github" / "workflows" / "leaderboards.yml"
# the toy's findings on both profiles (one seed, three: fewer than 5 pairs; no trivial row; no sanity row)
ACKNOWLEDGED = TOY_SPEC + """\
audit:
  acknowledge:
    - {rule: too-few-independent-pairs, claim: tunable-wins, why: "a toy: a handful of seeds"}
    - {rule: missing-trivial-row, why: "a toy"}
    - {rule: missing-sanity-row, why: "a toy"}
"""


def job() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())["jobs"]["leaderboards"]


def checks() -> list[dict]:
    """The steps after the install, in order: what a pull request's job runs, and what the test runs."""
    steps = job()["steps"]
    install = next(i for i, step in enumerate(steps) if step.get("id") == "install")
    return steps[install + 1:]


def test_workflow_calls_only_what_these_tests_exercise():
    """`harness run --profile --out --no-progress`, `harness regress --markdown` and `harness audit --profile`, which
    test_workflow_steps_on_a_toy_repository runs; the install as the kernel workflow's; the summary written even when
    a step before failed."""
    scripts = "\n".join(line for step in job()["steps"] for line in step.get("run", "").splitlines()
                        if not line.strip().startswith("#"))
    calls = re.findall(r"\bharness ([^\n;&|>]*)", scripts)
    exercised = {"run": {"--profile", "--out", "--no-progress"}, "regress": {"--markdown"}, "audit": {"--profile"}}
    for call in calls:
        words = call.split()
        assert words[0] in exercised, call
        assert {w for w in words if w.startswith("--")} <= exercised[words[0]], call
    assert sorted({call.split()[0] for call in calls}) == sorted(exercised)
    assert [step["run"].count("harness ") for step in checks()] == [1, 1, 1]
    # torch's CPU build first, exactly as benchmarks.yml installs it, then every extra
    install = next(step["run"] for step in job()["steps"] if step.get("id") == "install")
    kernels = yaml.safe_load((ROOT / ".github" / "workflows" / "benchmarks.yml").read_text())
    torch_line = next(line for step in kernels["jobs"]["asv"]["steps"] for line in step.get("run", "").splitlines()
                      if "torch==" in line)
    assert install.splitlines()[:2] == [torch_line, "python -m pip install -e '.[all]'"]
    assert "\nall = " in (ROOT / "pyproject.toml").read_text()
    # the comparison and the audit run (and write the summary) after a failed run or comparison
    assert [step.get("if") for step in checks()[1:]] == ["${{ !cancelled() && steps.install.outcome == 'success' }}"] * 2
    assert set(job()["env"]) == {"SPECS", "BASELINE", "AUDIT_PROFILE"}


def run_checks(repo: Path, tmp_path: Path, name: str) -> tuple[list[int], str]:
    """Every check step's script, run as GitHub runs one (``bash --noprofile --norc -eo pipefail FILE``) with the job's
    env, in ``repo``: (each step's exit status, the job summary)."""
    summary = tmp_path / f"{name}.md"
    runner = tmp_path / "runner"  # one $RUNNER_TEMP for every try: the run step resumes its folder
    runner.mkdir(exist_ok=True)
    env = {**os.environ, **job()["env"], "GITHUB_STEP_SUMMARY": str(summary), "RUNNER_TEMP": str(runner),
           "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])}
    codes = []
    for i, step in enumerate(checks()):
        script = tmp_path / f"{name}-{i}.sh"
        script.write_text(step["run"])
        done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=repo, env=env,
                              capture_output=True, text=True, timeout=300)
        codes.append(done.returncode)
    return codes, summary.read_text()


@pytest.mark.long
def test_workflow_steps_on_a_toy_repository(toy_env, tmp_path):
    """A repository of one spec with its committed quick and default results, as docs/tracking.md tells a user to set
    one up: the job passes when nothing moved, fails the comparison when a committed primary metric is no longer
    reproduced, and fails the audit when the spec no longer acknowledges its findings; the summary says each."""
    repo = tmp_path / "repo"
    (repo / "specs").mkdir(parents=True)
    spec = repo / "specs" / "toy.yaml"
    spec.write_text(ACKNOWLEDGED)
    for profile in ("quick", "default"):  # the committed results
        done = harness_cli("run", "specs/toy.yaml", "--profile", profile, "--out", f"results/{profile}", "--no-progress",
                           cwd=repo)
        assert done.returncode == 0, done.stderr

    codes, summary = run_checks(repo, tmp_path, "same")
    assert codes == [0, 0, 0], summary
    assert "### Leaderboards: `results/quick` → " in summary and "\nnothing moved\n" in summary
    assert "### Audit of the specs on `results/default` (exit 0)" in summary
    assert "1 folder(s), 3 finding(s), 0 open" in summary

    before = edit_row(repo / "results" / "quick" / "toy", "easy", "toy-tunable", toy_score_mean=2.0)
    codes, summary = run_checks(repo, tmp_path, "moved")
    assert codes == [0, 1, 0], summary
    score = f"{float(before['toy_score_mean']):.6g}"
    assert f"| toy | easy | toy-tunable | toy_score | 2 → {score} | **regressed** | worse by " in summary
    edit_row(repo / "results" / "quick" / "toy", "easy", "toy-tunable", toy_score_mean=before["toy_score_mean"])

    spec.write_text(TOY_SPEC)  # the acknowledgements gone: the audit reads the spec file, no run needed
    codes, summary = run_checks(repo, tmp_path, "open")
    assert codes == [0, 0, 1], summary
    assert "\nnothing moved\n" in summary and "(exit 1)" in summary and "1 folder(s), 3 finding(s), 3 open" in summary
    assert "toy tunable-wins too-few-independent-pairs" in summary
