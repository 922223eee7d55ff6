"""Provenance: the commit a run records, and whether the tree was dirty."""
from __future__ import annotations

import subprocess

import pytest

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


ZEN3 = ("processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 1\nmodel name\t: AMD EPYC\n"
        "flags\t\t: fpu sse2 avx avx2 fma\n\nprocessor\t: 1\ncpu family\t: 99\nmodel name\t: other\n")
ZEN4 = ZEN3.replace("model\t\t: 1\n", "model\t\t: 17\n").replace("avx2 fma", "avx2 fma avx512f avx512bw")


def test_the_cpu_name_tells_apart_generations_a_virtual_machine_names_alike():
    """VMs report "AMD EPYC" for Zen 3 and Zen 4, whose kernels give other numbers; rows of one device class are
    compared exactly, so the name carries the family, the model and the widest vector instruction set."""
    from harness.devices import device_class
    from harness.hardware import cpu_name_of

    assert cpu_name_of(ZEN3) == "AMD EPYC (family 25 model 1, AVX2)"  # the first processor's block only
    assert cpu_name_of(ZEN4) == "AMD EPYC (family 25 model 17, AVX-512)"
    assert device_class(f"cpu: {cpu_name_of(ZEN3)} (2 cores)") != device_class(f"cpu: {cpu_name_of(ZEN4)} (2 cores)")
    assert device_class(f"cpu: {cpu_name_of(ZEN3)} (2 cores)") == "cpu: AMD EPYC (family 25 model 1, AVX2)"
    assert cpu_name_of("model name\t: Apple M2\n") == "Apple M2"  # nothing more known: the name alone
    with pytest.raises(ValueError, match="no model name"):
        cpu_name_of("processor\t: 0\nflags\t\t: avx2\n")
