"""The examples of the README and the docs run as written: the worked example of adding a paper
(docs/adding-a-paper.md: a plugin package outside the repository with its catalogue, task, methods and spec), the
README's run of the main job and its first screen's quick run."""
from __future__ import annotations

import os
import re

from conftest import ROOT, harness_cli
from harness.runs_file import read_runs


def _blocks() -> dict[str, str]:
    """Code blocks of docs/adding-a-paper.md whose first line is a comment naming a file: path → text."""
    text = (ROOT / "docs" / "adding-a-paper.md").read_text()
    found = {}
    for body in re.findall(r"```(?:python|yaml)\n(.*?)```", text, flags=re.S):
        first = body.splitlines()[0]
        match = re.match(r"# (\S+\.(?:py|yaml))", first)
        if match:
            found[match.group(1)] = body
    return found


def test_the_worked_example_runs_as_written(tmp_path, monkeypatch):
    blocks = _blocks()
    assert set(blocks) == {"robust_mean/catalogue.py", "robust_mean/task.py", "robust_mean/methods.py",
                           "specs/robust-mean.yaml"}
    for name, body in blocks.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(body)
    (tmp_path / "robust_mean" / "__init__.py").write_text("")
    monkeypatch.setenv("HARNESS_PLUGINS", "robust_mean.catalogue:CATALOGUE")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    spec = tmp_path / "specs" / "robust-mean.yaml"
    listed = harness_cli("list", "methods")
    assert "median-of-means" in listed.stdout and "robust_mean.catalogue:CATALOGUE" in listed.stdout
    assert harness_cli("validate", spec).returncode == 0
    done = harness_cli("run", spec, "--profile", "quick", "--out", tmp_path / "out", "--no-progress")
    assert done.returncode == 0, done.stdout + done.stderr
    rows = list(read_runs(tmp_path / "out" / "robust-mean"))
    assert len(rows) == 2 * 3 and {r["status"] for r in rows} == {"ok"}
    assert all("blocks" in r["params"] for r in rows if r["method"] == "median-of-means")
    assert "claim mom-beats-mean:" in done.stdout


def test_the_main_jobs_example_output_says_what_the_committed_results_say():
    """The README's example run of specs/cdfsl.yaml prints each claim's verdict: each must be the verdict of the
    committed results/default/cdfsl (it once said `shuffle-raises-cka: not reproduced` where they said
    reproduced)."""
    import json

    text = (ROOT / "README.md").read_text()
    example = text[text.index("$ harness run specs/cdfsl.yaml"):]
    example = example[:example.index("```")]
    printed = dict(re.findall(r"^  claim (\S+): (.+)$", example, flags=re.M))
    committed = json.loads((ROOT / "results" / "default" / "cdfsl" / "claims.json").read_text())
    assert printed == {claim["claim"]: claim["verdict"] for claim in committed["claims"]}


def test_the_first_screen_s_quick_run_prints_and_writes_what_the_readme_shows(tmp_path):
    """The README's one-minute example runs as shown: the command, each claim's verdict line and the leaderboard
    rows it quotes (signed-laplacian's graph clustering is bit-identical across CPUs, so the rows are exact)."""
    text = (ROOT / "README.md").read_text()
    example = text[text.index("```console\n$ harness run specs/signed-laplacian.yaml"):]
    example = example[len("```console\n"):example.index("```", len("```console\n"))]
    command = example.splitlines()[0].removeprefix("$ harness ").split()
    assert command[:4] == ["run", "specs/signed-laplacian.yaml", "--profile", "quick"] and command[4] == "--out"
    done = harness_cli(*command[:4], "--out", tmp_path / "out", "--no-progress")
    assert done.returncode == 0, done.stdout + done.stderr
    printed = re.findall(r"^  claim \S+: .+$", example, flags=re.M)
    assert printed and all(line in done.stdout.splitlines() for line in printed)
    quoted = text[text.index("`out/signed-laplacian/leaderboard.md` opens with"):]
    quoted = quoted[quoted.index("```\n") + 4:]
    quoted = quoted[:quoted.index("```")]
    page = (tmp_path / "out" / "signed-laplacian" / "leaderboard.md").read_text()
    assert all(line in page.splitlines() for line in quoted.splitlines())
