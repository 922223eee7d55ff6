"""Provenance: the commit a run records, and whether the tree was dirty."""
from __future__ import annotations

import subprocess

from harness.hardware import git_commit


def test_dirty_counts_code_changes_but_not_the_runs_own_results(tmp_path):
    def git(*args):
        subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=tmp_path, check=True,
                       capture_output=True)

    git("init", "-q")
    for name in ("specs/a.yaml", "results/default/index.md", "code.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("1")
    git("add", ".")
    git("commit", "-qm", "start")
    specs, results = tmp_path / "specs", tmp_path / "results" / "default"
    clean = git_commit(specs, ignore=results)
    assert len(clean) == 12 and "+" not in clean
    (results / "index.md").write_text("2")  # a run rewrote its own leaderboard
    assert git_commit(specs, ignore=results) == clean
    assert git_commit(specs, ignore=tmp_path.parent / "elsewhere") == clean + "+dirty"
    (tmp_path / "code.py").write_text("2")  # the code changed outside the spec's folder
    assert git_commit(specs, ignore=results) == clean + "+dirty"
