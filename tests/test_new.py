"""`harness new` (issue 33): the skeleton of a new comparison passes `harness validate`, the conformance test and
`harness run --profile quick` as written; so does a method for an existing family (the docs' plugin, a family
of the checkout, a family of the repository), which starts as one of the family's methods and gets its catalogue
row, a spec and a test; an existing file is never overwritten; a bad NAME is one line.

Nothing is written into the repository: the skeletons go into a folder under tmp_path laid out like the checkout,
whose packages join the checkout's (``harness.tasks``, ``implementations``, ``baselines``) in every process the
test starts, through a ``sitecustomize`` on ``PYTHONPATH``: what writing into the checkout itself would do.
"""
from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, harness_cli
from harness.runs_file import read_runs
from test_readme import _blocks

NAME, PKG = "probe-mean", "probe_mean"
FAMILY_FILES = {"harness/tasks/probe_mean/__init__.py", "harness/tasks/probe_mean/catalogue.py",
                "harness/tasks/probe_mean/estimate.py", "implementations/probe_mean/__init__.py",
                "implementations/probe_mean/_method.py", "baselines/probe_mean.py", "specs/probe-mean.yaml",
                "tests/test_probe_mean.py"}

SITE = '''\
"""The checkout-like folder {root} joins the checkout's packages (written by tests/test_new.py)."""
import baselines
import harness.tasks
import implementations

for _package, _folder in ((harness.tasks, "harness/tasks"), (implementations, "implementations"),
                          (baselines, "baselines")):
    _package.__path__.append({root!r} + "/" + _folder)
'''


@pytest.fixture
def checkout(tmp_path, monkeypatch):
    """An empty folder to write skeletons into, found like the checkout's own files by every process started."""
    root = tmp_path / "checkout"
    root.mkdir()
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITE.format(root=str(root)))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.delenv("HARNESS_PLUGINS", raising=False)
    return root


def _files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts}


def _todo_lines_are_comments(root: Path) -> int:
    """Every line that asks the author for something is one comment starting with ``# TODO(author):``."""
    count = 0
    for path in root.rglob("*.*"):
        for line in path.read_text().splitlines() if path.suffix in (".py", ".yaml") else []:
            if "TODO(author)" in line and not line.lstrip().startswith("# Written by"):
                assert line.lstrip().startswith("# TODO(author): "), f"{path}: {line}"
                count += 1
    return count


def _passes_conformance(method: str, datasets: list[str], test: Path) -> None:
    """The real conformance test runs ``method`` on each dataset's tiny parameters, and the skeleton's test passes."""
    ids = [f"tests/test_conformance.py::test_method_runs_on_tiny_dataset[{method}@{dataset}]" for dataset in datasets]
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=", *ids, str(test)], cwd=ROOT,
                           capture_output=True, text=True, timeout=120)
    assert tests.returncode == 0 and f"{len(ids) + 1} passed" in tests.stdout, tests.stdout[-3000:]


def _runs_a_tie(spec: Path, out: Path, method: str, start: str) -> None:
    """`harness run --profile quick` runs the spec; as written the method is ``start``, so the claim that it does
    better is computed from the runs and is not reproduced: `harness run` exits 0 for it (1 only when a cell failed;
    `harness check` is the command that exits 1 on a claim not reproduced)."""
    assert harness_cli("validate", spec).returncode == 0
    run = harness_cli("run", spec, "--profile", "quick", "--out", out, "--no-progress")
    assert run.returncode == 0, run.stdout + run.stderr
    assert re.search(rf"^  claim {method}-beats-{start}: not reproduced$", run.stdout, flags=re.M), run.stdout
    written = yaml.safe_load(spec.read_text())
    rows = [r for r in read_runs(out / written["name"]) if r["status"] != "skipped"]
    assert rows and {r["status"] for r in rows} == {"ok"} and {r["method"] for r in rows} == {method, start}
    primary = written["metrics"]["primary"]
    scores = {m: {(r["dataset"], r["seed"]): r["metrics"][primary] for r in rows if r["method"] == m}
              for m in (method, start)}
    assert scores[method] == scores[start] and len(scores[method]) >= 5  # a real tie, cell by cell


@pytest.mark.long
def test_a_new_family_validates_passes_conformance_and_runs_its_claim(checkout, tmp_path):
    done = harness_cli("new", NAME, "--dir", checkout)
    assert done.returncode == 0, done.stderr
    assert _files(checkout) == FAMILY_FILES
    assert _todo_lines_are_comments(checkout) >= 10
    assert "next: fill in the" in done.stdout and "harness run" in done.stdout
    spec = checkout / "specs" / f"{NAME}.yaml"
    validated = harness_cli("validate", spec)
    assert validated.returncode == 0, validated.stderr
    # the conformance test picks the new family up from its catalogue (no list to edit), and the skeleton's own test
    conformance = [f"tests/test_conformance.py::test_task_declares_its_contract[{PKG}.estimate]"]
    conformance += [f"tests/test_conformance.py::test_method_runs_on_tiny_dataset[{method}@{NAME}-gaussian]"
                    for method in (NAME, f"{NAME}-median", f"{NAME}-zero")]
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=", *conformance,
                            str(checkout / "tests" / f"test_{PKG}.py")], cwd=ROOT, capture_output=True, text=True,
                           timeout=120)
    assert tests.returncode == 0 and "6 passed" in tests.stdout, tests.stdout[-3000:]
    out = tmp_path / "out"
    run = harness_cli("run", spec, "--profile", "quick", "--out", out, "--no-progress")
    assert run.returncode == 0, run.stdout + run.stderr
    assert re.search(rf"^  claim {NAME}-beats-trivial: (reproduced|not reproduced|inconclusive)$", run.stdout,
                     flags=re.M), run.stdout
    rows = list(read_runs(out / NAME))
    assert {r["status"] for r in rows} == {"ok"}
    assert {r["method"] for r in rows} == {NAME, f"{NAME}-median", f"{NAME}-zero"}
    assert all("trim" in r["params"] for r in rows if r["method"] == NAME)  # tuned, as the spec says
    trivial = [r["metrics"]["abs_error"] for r in rows if r["method"] == f"{NAME}-zero"]
    estimated = [r["metrics"]["abs_error"] for r in rows if r["method"] == NAME]
    assert trivial == [1.0] * 5 and max(estimated) < 1.0  # the claim compares real runs: 0 errs by the mean, 1


def test_a_method_for_a_family_of_the_checkout_gets_its_row_and_a_spec_and_runs(checkout, tmp_path):
    assert harness_cli("new", NAME, "--dir", checkout).returncode == 0
    catalogue = checkout / "harness" / "tasks" / PKG / "catalogue.py"
    before = catalogue.read_text()
    done = harness_cli("new", "probe-method", "--family", PKG, "--dir", checkout)
    assert done.returncode == 0, done.stderr
    assert _files(checkout) - FAMILY_FILES == {"implementations/probe_method/__init__.py",
                                               "implementations/probe_method/_method.py",
                                               "specs/probe-method.yaml", "tests/test_probe_method.py"}
    after = catalogue.read_text()
    added = [line for line in after.splitlines() if line not in before.splitlines()]
    assert [line for line in after.splitlines() if line not in added] == before.splitlines()  # only the row added
    assert [line.strip()[:40] for line in added] == ["# TODO(author): say in `about` what prob",
                                                     '"probe-method": {"task": "probe_mean.est']
    assert '"target": "implementations.probe_method:ProbeMethod"' in added[1]
    ast.parse(after)
    method = (checkout / "implementations" / "probe_method" / "_method.py").read_text()
    # the family's trivial answer, each call of the protocol written out with its signature, to write in its place
    assert f'_StartingMethod = default_registry().load("methods", "{NAME}-zero")' in method
    assert "class ProbeMethod(_StartingMethod):" in method
    assert "    def estimate(self, samples: np.ndarray, rng: np.random.Generator) -> float:\n" in method
    assert "        # TODO(author): ProbeMethod's estimate() in place of probe-mean-zero's\n" \
           "        return super().estimate(samples, rng)\n" in method
    assert "NotImplementedError" not in method
    spec = (checkout / "specs" / "probe-method.yaml").read_text()
    assert "- {name: probe-method, kind: implementation}" in spec and f"- {{name: {NAME}-zero, kind: trivial}}" in spec
    assert _todo_lines_are_comments(checkout) >= 18
    _passes_conformance("probe-method", [f"{NAME}-gaussian"], checkout / "tests" / "test_probe_method.py")
    _runs_a_tie(checkout / "specs" / "probe-method.yaml", tmp_path / "out", "probe-method", f"{NAME}-zero")


@pytest.mark.parametrize("family, start", [("sco", "zero-point"), ("design.factorial", "fractional-factorial")],
                         ids=["trivial", "first-baseline"])
@pytest.mark.long
def test_a_method_for_a_family_of_the_repository_runs_as_written(family, start, checkout, tmp_path, monkeypatch):
    """A family of the repository (light dependencies: numpy and scipy): the method starts as its trivial answer or,
    lacking one, its first baseline. The plan's catalogue edit is checked but not written (the test never edits the
    checkout): the same row is registered through HARNESS_PLUGINS instead."""
    from harness.scaffold import new_method, write

    plan = new_method("probe-method", checkout, family, None)
    ((catalogue, text),) = plan.edits.items()
    assert catalogue == ROOT / "harness" / "tasks" / family.split(".")[0] / "catalogue.py"
    before = catalogue.read_text().splitlines()
    added = [line.strip() for line in text.splitlines() if line not in before]
    assert len(added) == 2 and added[0].startswith("# TODO(author): say in `about` what probe-method does")
    plan.edits.clear()
    write(plan)
    (tmp_path / "probe_rows.py").write_text(f'CATALOGUE = {{"methods": {{{added[1]}}}}}\n')
    monkeypatch.setenv("HARNESS_PLUGINS", "probe_rows:CATALOGUE")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), os.environ["PYTHONPATH"]]))
    method = (checkout / "implementations" / "probe_method" / "_method.py").read_text()
    assert f'default_registry().load("methods", "{start}")' in method and "NotImplementedError" not in method
    spec = checkout / "specs" / "probe-method.yaml"
    task = yaml.safe_load(spec.read_text())["task"]
    from harness.registry import default_registry

    _passes_conformance("probe-method", default_registry().names("datasets", task),
                        checkout / "tests" / "test_probe_method.py")
    _runs_a_tie(spec, tmp_path / "out", "probe-method", start)


@pytest.mark.long
def test_a_method_for_the_docs_plugin_s_family_from_its_spec(tmp_path, monkeypatch):
    """The worked example of docs/adding-a-paper.md (an outside plugin): the method goes beside its catalogue, the
    spec and test into its project folder; the spec starts from specs/robust-mean.yaml."""
    for name, body in _blocks().items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(body)
    (tmp_path / "robust_mean" / "__init__.py").write_text("")
    monkeypatch.setenv("HARNESS_PLUGINS", "robust_mean.catalogue:CATALOGUE")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    source = tmp_path / "specs" / "robust-mean.yaml"
    done = harness_cli("new", "huber-mean", "--from-spec", source)
    assert done.returncode == 0, done.stderr
    assert {"robust_mean/huber_mean.py", "specs/huber-mean.yaml", "tests/test_huber_mean.py"} <= _files(tmp_path)
    assert '"huber-mean": {"task": "robust.mean", "target": "robust_mean.huber_mean:HuberMean"' in \
        (tmp_path / "robust_mean" / "catalogue.py").read_text()
    spec = tmp_path / "specs" / "huber-mean.yaml"
    assert harness_cli("validate", spec).returncode == 0
    data = yaml.safe_load(spec.read_text())
    assert data["datasets"] == yaml.safe_load(source.read_text())["datasets"]
    assert [(m["name"], m["kind"]) for m in data["methods"]] == [
        ("median-of-means", "baseline"), ("sample-mean", "baseline"), ("huber-mean", "implementation")]
    assert [(c["better"], c["than"]) for c in data["claims"]] == [("huber-mean", "median-of-means")]
    assert set(data["profiles"]) == {"quick"}
    method = (tmp_path / "robust_mean" / "huber_mean.py").read_text()
    assert 'default_registry().load("methods", "median-of-means")' in method  # the method the spec compares it with
    _passes_conformance("huber-mean", ["student-t"], tmp_path / "tests" / "test_huber_mean.py")
    out = tmp_path / "out"
    run = harness_cli("run", spec, "--profile", "quick", "--out", out, "--no-progress")
    assert run.returncode == 0, run.stdout + run.stderr  # median-of-means is tuned, huber-mean not yet: no tie
    assert re.search(r"^  claim huber-mean-beats-median-of-means: (reproduced|not reproduced|inconclusive)$",
                     run.stdout, flags=re.M), run.stdout
    assert {r["status"] for r in read_runs(out / "huber-mean")} == {"ok"}
    again = harness_cli("new", "tukey-mean", "--family", "robust")
    assert again.returncode == 0, again.stderr
    # no trivial answer and no baselines package: the family's first method (huber-mean, registered just above)
    assert 'default_registry().load("methods", "huber-mean")' in (tmp_path / "robust_mean" / "tukey_mean.py").read_text()
    _passes_conformance("tukey-mean", ["student-t"], tmp_path / "tests" / "test_tukey_mean.py")
    _runs_a_tie(tmp_path / "specs" / "tukey-mean.yaml", out, "tukey-mean", "huber-mean")


def test_an_existing_file_is_never_overwritten(tmp_path):
    root = tmp_path / "checkout"
    (root / "specs").mkdir(parents=True)
    mine = root / "specs" / f"{NAME}.yaml"
    mine.write_text("mine\n")
    done = harness_cli("new", NAME, "--dir", root)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [f"harness new: {mine} already exists; harness new never overwrites a file "
                                        "(choose another NAME, or move the file away)"]
    assert _files(root) == {f"specs/{NAME}.yaml"} and mine.read_text() == "mine\n"  # nothing written at all
    mine.unlink()
    assert harness_cli("new", NAME, "--dir", root).returncode == 0
    written = {path: path.read_bytes() for path in root.rglob("*") if path.is_file()}
    twice = harness_cli("new", NAME, "--dir", root)
    assert twice.returncode == 2
    assert len(twice.stderr.splitlines()) == 1 and f"harness/tasks/{PKG}/__init__.py already exists" in twice.stderr
    assert written == {path: path.read_bytes() for path in root.rglob("*") if path.is_file()}


@pytest.mark.parametrize("args, says", [
    (["Probe"], "NAME 'Probe' is not a name harness new can use"),
    (["probe--mean"], "NAME 'probe--mean' is not a name"),
    (["probe/mean"], "NAME 'probe/mean' is not a name"),
    (["class"], "NAME 'class' is a Python keyword"),
    (["probe", "--family", "scoo"], "unknown family 'scoo' (did you mean 'sco'"),
    (["probe", "--family", "fewshot"], "family 'fewshot' has 2 tasks (fewshot.cdfsl, fewshot.cdfss): name one"),
    (["probe", "--from-spec", "no/such.yaml"], "--from-spec no/such.yaml: no such spec file"),
], ids=["upper-case", "double-hyphen", "slash", "keyword", "unknown-family", "family-of-two", "missing-spec"])
def test_bad_input_is_refused_in_one_line(args, says, tmp_path):
    done = harness_cli("new", *args, "--dir", tmp_path / "checkout")
    assert done.returncode == 2
    assert len(done.stderr.splitlines()) == 1 and done.stderr.startswith(f"harness new: {says}"), done.stderr
    assert not (tmp_path / "checkout").exists()


def test_help_imports_no_scaffold():
    probe = ("import json, sys\nfrom harness.cli import build_parser\nbuild_parser()\n"
             "print(json.dumps([m for m in ('harness.scaffold', 'yaml', 'numpy') if m in sys.modules]))\n")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert json.loads(done.stdout) == [], done.stderr
    assert "--from-spec" in harness_cli("new", "--help").stdout
