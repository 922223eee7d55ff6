"""`harness merge`: results folders of one spec, written by separate real runs, combined by cell key."""
from __future__ import annotations

import csv
import json
import os
import shutil
from pathlib import Path

import pytest

from harness.results_table import table_of_rows
import yaml

from conftest import PLUGINS, TOY_SPEC, harness_cli
from harness.claims import check_claim
from harness.cli import main
from harness.devices import device_class

# the toy spec, its runtime reported too: a merged leaderboard equals one run's in every column but that one
SPEC = TOY_SPEC.replace("report: [toy_score, toy_loss]", "report: [toy_score, toy_loss, runtime_s]")
GPU = "cuda: NVIDIA H200 (GPU 0)"


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    """Three real `harness run`s of the toy spec, each into its own root: seed 0 (a), seeds 1,2 (b), and all
    three seeds at once (all), the reference a merge of a and b must equal."""
    root = tmp_path_factory.mktemp("merge-runs")
    spec = root / "toy.yaml"
    spec.write_text(SPEC)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HARNESS_PLUGINS", "toy_plugin:CATALOGUE")
        mp.setenv("PYTHONPATH", os.pathsep.join([str(PLUGINS), os.environ.get("PYTHONPATH", "")]))
        for name, seeds in (("a", "0"), ("b", "1,2"), ("all", "0,1,2")):
            done = harness_cli("run", spec, "--out", root / name, "--seeds", seeds, "--jobs", "1", "--no-progress")
            assert done.returncode == 0, done.stderr
    return root


@pytest.fixture
def folders(runs, tmp_path) -> dict[str, Path]:
    """Copies of the three runs' toy folders, free to edit."""
    out = {}
    for name in ("a", "b", "all"):
        out[name] = tmp_path / name
        shutil.copytree(runs / name / "toy", out[name])
    return out


def rows_of(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "runs.jsonl").read_text().splitlines()]


def write_rows(folder: Path, rows: list[dict]) -> None:
    (folder / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def board(folder: Path) -> list[dict]:
    with open(folder / "leaderboard.csv", newline="") as f:
        return list(csv.DictReader(f))


def without_runtime(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if not k.startswith("runtime_s")} for r in rows]


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def test_merge_equals_one_run_over_all_seeds(folders, tmp_path, capsys):
    out = tmp_path / "merged"
    assert main(["merge", str(out), str(folders["a"]), str(folders["b"])]) == 0
    printed = capsys.readouterr().out
    assert f"{folders['a']}: 4 row(s) taken" in printed and f"{folders['b']}: 8 row(s) taken" in printed
    merged, single = board(out), board(folders["all"])
    assert len(merged) == 4 and without_runtime(merged) == without_runtime(single)
    assert [r["runtime_s_n"] for r in merged] == ["3"] * 4  # the runtime is there, from both machines' seeds
    assert json.loads((out / "claims.json").read_text()) == json.loads((folders["all"] / "claims.json").read_text())
    assert json.loads((out / "tuning.json").read_text()) == json.loads((folders["all"] / "tuning.json").read_text())
    rows = rows_of(out)
    assert sorted(r["seed"] for r in rows) == [0] * 4 + [1] * 4 + [2] * 4
    assert {r["merged_from"] for r in rows if r["seed"] == 0} == {str(folders["a"])}
    assert {r["merged_from"] for r in rows if r["seed"] > 0} == {str(folders["b"])}
    originals = {r["key"]: r for r in rows_of(folders["a"]) + rows_of(folders["b"])}
    assert all({k: v for k, v in r.items() if k != "merged_from"} == originals[r["key"]] for r in rows)
    spec = (out / "spec.yaml").read_text()
    assert f"# merged by `harness merge` from: {folders['a']}, {folders['b']}" in spec
    selection = yaml.safe_load(spec)["selection"]  # every folder's seeds, datasets and methods
    assert selection == {"datasets": ["easy", "hard"], "methods": ["toy-tunable", "toy-constant"], "seeds": [0, 1, 2]}
    # the merged folder reads as a results folder: the leaderboard command rebuilds it to the same page
    page = (out / "leaderboard.md").read_text()
    assert main(["leaderboard", str(out)]) == 0 and (out / "leaderboard.md").read_text() == page


def test_identical_keys_are_kept_once_and_out_keeps_its_rows(folders, capsys):
    """OUT is a results folder of the spec (b): a's rows join it; merging a again adds nothing; OUT's own
    rows stay as they were (no merged_from: they are its own)."""
    out = folders["b"]
    before = rows_of(out)
    assert main(["merge", str(out), str(folders["a"])]) == 0
    assert main(["merge", str(out), str(folders["a"]), str(folders["all"])]) == 0
    printed = capsys.readouterr().out
    assert f"{folders['a']}: 0 row(s) taken, 4 already there (same key and result) kept once" in printed
    assert f"{folders['all']}: 0 row(s) taken, 12 already there (same key and result) kept once" in printed
    rows = rows_of(out)
    assert len(rows) == 12 and len({r["key"] for r in rows}) == 12
    assert [r for r in rows if "merged_from" not in r] == before
    assert without_runtime(board(out)) == without_runtime(board(folders["all"]))


def test_a_retried_cell_keeps_its_failed_try_as_history(folders, tmp_path):
    """a's first cell failed once, then its retry finished ok (a run's history); b's copy of that cell is ok:
    no conflict, the failed try is kept (with its provenance) before the shown row."""
    rows = rows_of(folders["a"])
    failed = {**rows[0], "status": "failed", "error": "RuntimeError: out of memory", "metrics": {}}
    write_rows(folders["a"], [failed, *rows])
    write_rows(folders["b"], rows_of(folders["b"]) + [rows[0]])
    old_code = {**rows[1], "code": {**rows[1]["code"], "method": "0123456789ab"}}  # a row an older code left
    (folders["a"] / "superseded.jsonl").write_text(json.dumps(old_code) + "\n")
    out = tmp_path / "merged"
    assert main(["merge", str(out), str(folders["a"]), str(folders["b"])]) == 0
    merged = rows_of(out)
    assert merged[0] == {**failed, "merged_from": str(folders["a"])}
    assert [json.loads(line) for line in (out / "superseded.jsonl").read_text().splitlines()] == [
        {**old_code, "merged_from": str(folders["a"])}]
    assert sum(r["key"] == rows[0]["key"] and r["status"] == "ok" for r in merged) == 1
    assert without_runtime(board(out)) == without_runtime(board(folders["all"]))


def test_a_conflicting_key_names_both_files_and_leaves_out_untouched(folders, capsys):
    """b's copy of a's seed-0 cells, one toy_score edited: exit 2 naming both files and lines, OUT unchanged."""
    out = folders["all"]
    before = snapshot(out)
    copy = folders["b"]
    rows = rows_of(folders["a"])
    rows[2]["metrics"]["toy_score"] += 0.125
    write_rows(copy, rows_of(copy) + rows)
    assert main(["merge", str(out), str(copy)]) == 2
    err = capsys.readouterr().err
    line = next(i for i, r in enumerate(rows_of(out), start=1) if r["key"] == rows[2]["key"])
    assert f"key {rows[2]['key']}" in err and f"{out / 'runs.jsonl'}:{line}" in err
    assert f"{copy / 'runs.jsonl'}:{9 + 2}" in err and "toy_score" in err and "nothing was written" in err
    assert snapshot(out) == before


def test_runtime_alone_is_no_conflict(folders, tmp_path):
    """The same cells with other seconds (another run of them): kept once, not a conflict."""
    rows = rows_of(folders["a"])
    for r in rows:
        r["metrics"]["runtime_s"] *= 3
    write_rows(folders["b"], rows_of(folders["b"]) + rows)
    out = tmp_path / "merged"
    assert main(["merge", str(out), str(folders["a"]), str(folders["b"])]) == 0
    assert len(rows_of(out)) == 12


def test_a_different_spec_hash_is_refused(folders, tmp_path, capsys):
    spec = folders["b"] / "spec.yaml"
    text = spec.read_text()
    hash_a = next(line.split()[-1] for line in text.splitlines() if line.startswith("spec_hash:"))
    spec.write_text(text.replace(f"spec_hash: {hash_a}", "spec_hash: 0123456789abcdef"))
    out = tmp_path / "merged"
    assert main(["merge", str(out), str(folders["a"]), str(folders["b"])]) == 2
    err = capsys.readouterr().err
    assert "spec_hash differs" in err and f"{folders['a']}: {hash_a}" in err and f"{folders['b']}: 0123456789abcdef" in err
    assert not out.exists()


def test_different_code_is_refused(folders, tmp_path, capsys):
    rows = rows_of(folders["b"])
    for r in rows:
        if r["method"] == "toy-constant":
            r["code"] = {**r["code"], "method": "0000000000ff"}
    write_rows(folders["b"], rows)
    out = tmp_path / "merged"
    assert main(["merge", str(out), str(folders["a"]), str(folders["b"])]) == 2
    err = capsys.readouterr().err
    assert "different code" in err and "method 'toy-constant'" in err and "0000000000ff" in err
    assert str(folders["a"]) in err and str(folders["b"]) in err and "toy-tunable" not in err
    assert not out.exists()


def test_two_device_classes_give_a_row_each(folders, tmp_path):
    """b's rows re-labelled as run on a GPU: its keys are also in `all` (CPU), and both are kept; the
    leaderboard has a row per method and device class, each class ranked on its own."""
    rows = rows_of(folders["b"])
    for r in rows:
        r["device"] = GPU
    write_rows(folders["b"], rows)
    out = tmp_path / "merged"
    assert main(["merge", str(out), str(folders["all"]), str(folders["b"])]) == 0
    assert len(rows_of(out)) == 20
    table = board(out)
    cpu = device_class(rows_of(folders["all"])[0]["device"])
    assert [(r["dataset"], r["method"], r["device_class"], r["seeds_ok"], r["rank"]) for r in table] == [
        ("easy", "toy-tunable", cpu, "3", "1"), ("easy", "toy-constant", cpu, "3", "2"),
        ("easy", "toy-tunable", "cuda: NVIDIA H200", "2", "1"), ("easy", "toy-constant", "cuda: NVIDIA H200", "2", "2"),
        ("hard", "toy-tunable", cpu, "3", "1"), ("hard", "toy-constant", cpu, "3", "2"),
        ("hard", "toy-tunable", "cuda: NVIDIA H200", "2", "1"), ("hard", "toy-constant", "cuda: NVIDIA H200", "2", "2")]
    reference = {(r["dataset"], r["method"]): r for r in board(folders["all"])}
    for row in table[:2] + table[4:6]:  # the CPU rows are the one-machine run's
        assert row["toy_score_mean"] == reference[(row["dataset"], row["method"])]["toy_score_mean"]
    page = (out / "leaderboard.md").read_text()
    assert "| rank | method | device class | kind |" in page and "toy-tunable on cuda: NVIDIA H200" in page


def test_a_claim_pairs_cells_only_within_one_device_class():
    """A's cells ran on the CPU, B's on a GPU: no pair, though every (dataset, seed) has both methods."""
    def row(method, seed, device, value):
        return {"dataset": "d", "method": method, "seed": seed, "status": "ok", "device": device,
                "metrics": {"runtime_s": value}}

    claim = {"id": "faster", "says": "A is faster", "better": "A", "than": "B", "metric": "runtime_s"}
    apart = [row("A", s, "cpu: X (2 cores)", 1.0) for s in range(4)] + [row("B", s, GPU, 2.0) for s in range(4)]
    verdict = check_claim(claim, table_of_rows(apart), "min")
    assert verdict.pairs == 0 and verdict.verdict == "inconclusive"
    both = apart + [row("A", s, GPU, 0.5 + s / 10) for s in range(4)]  # now A also ran on the GPU
    verdict = check_claim(claim, table_of_rows(both), "min")
    assert verdict.pairs == 4 and verdict.mean_difference == pytest.approx(2.0 - 0.65)


def test_a_scaling_exponent_is_fitted_within_one_device_class():
    """A's time grows like n on the CPU and like n² on the GPU: each seed's exponent is the mean of the two
    classes' fits (1.5), never a fit through points of both (which would read the GPU's as the CPU's)."""
    sizes = [64, 128, 256, 512, 1024]
    rows = [{"dataset": f"n{n}", "dataset_params": {"n": n}, "method": method, "seed": seed, "status": "ok",
             "device": device, "metrics": {"runtime_s": scale * n ** power}}
            for seed in range(3) for n in sizes
            for method, device, scale, power in (("A", "cpu: X (2 cores)", 1e-3, 1.0), ("A", GPU, 1e-6, 2.0),
                                                 ("B", "cpu: X (2 cores)", 1e-3, 1.0), ("B", GPU, 1e-6, 2.0))]
    claim = {"id": "scales", "says": "A scales like B", "kind": "scaling", "size": "n", "better": "A", "than": "B",
             "metric": "runtime_s", "datasets": [f"n{n}" for n in sizes]}
    verdict = check_claim(claim, table_of_rows(rows), "min")
    assert [(e.method, e.seeds) for e in verdict.exponents] == [("A", 3), ("B", 3)]
    assert verdict.exponents[0].mean == pytest.approx(1.5) and verdict.pairs == 3
    assert verdict.mean_difference == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("description, expected", [
    ("cpu: Intel(R) Xeon(R) Processor (2 cores)", "cpu: Intel(R) Xeon(R) Processor"),
    ("cuda: NVIDIA H200 (GPU 3)", "cuda: NVIDIA H200"),
    ("cuda: NVIDIA H200", "cuda: NVIDIA H200"),
    (None, None),
])
def test_device_class(description, expected):
    assert device_class(description) == expected


def test_bad_inputs_are_named(folders, tmp_path, capsys):
    out = tmp_path / "merged"
    assert main(["merge", str(out), str(folders["a"]), str(tmp_path / "nowhere")]) == 2
    assert f"{tmp_path / 'nowhere'}: no such folder" in capsys.readouterr().err
    plain = tmp_path / "plain"
    plain.mkdir()
    assert main(["merge", str(out), str(plain)]) == 2
    assert f"{plain}: not a results folder: no spec.yaml" in capsys.readouterr().err
    with open(folders["b"] / "runs.jsonl", "a") as f:
        f.write("{not json\n")
    assert main(["merge", str(out), str(folders["a"]), str(folders["b"])]) == 2
    assert f"{folders['b'] / 'runs.jsonl'}:9: damaged line" in capsys.readouterr().err
    with open(folders["a"] / "runs.jsonl", "a") as f:
        f.write('{"key": "cut')
    assert main(["merge", str(out), str(folders["a"])]) == 2
    assert f"{folders['a'] / 'runs.jsonl'}:5: the last line is cut off" in capsys.readouterr().err
    assert main(["merge", str(out), str(folders["all"]), str(folders["all"])]) == 2
    assert "given twice" in capsys.readouterr().err
    assert not out.exists()


def results_root(path: Path, **specs: Path) -> Path:
    """A results root at ``path`` holding a copy of each given spec folder under its keyword's name."""
    for name, folder in specs.items():
        shutil.copytree(folder, path / name)
    return path


def test_results_roots_merge_spec_by_spec(folders, tmp_path, capsys):
    """Two roots, as two machines' `--out`: toy in both is merged; solo, in one root only, is merged alone."""
    root_a = results_root(tmp_path / "machine-a", toy=folders["a"], solo=folders["all"])
    root_b = results_root(tmp_path / "machine-b", toy=folders["b"])
    out = tmp_path / "merged"
    assert main(["merge", str(out), str(root_a), str(root_b)]) == 0
    printed = capsys.readouterr().out
    assert f"{root_a / 'toy'}: 4 row(s) taken" in printed and f"{root_b / 'toy'}: 8 row(s) taken" in printed
    assert f"{out / 'solo'}/runs.jsonl: 12 row(s)" in printed
    assert sorted(p.name for p in out.iterdir()) == ["solo", "toy"]
    rows = rows_of(out / "toy")
    assert sorted(r["seed"] for r in rows) == [0] * 4 + [1] * 4 + [2] * 4
    assert {r["merged_from"] for r in rows if r["seed"] == 0} == {str(root_a / "toy")}
    assert {r["merged_from"] for r in rows if r["seed"] > 0} == {str(root_b / "toy")}
    assert without_runtime(board(out / "toy")) == without_runtime(board(folders["all"]))
    solo = rows_of(out / "solo")
    assert {r["merged_from"] for r in solo} == {str(root_a / "solo")}
    assert [{k: v for k, v in r.items() if k != "merged_from"} for r in solo] == rows_of(folders["all"])
    # OUT is now a results root: merging a root again keeps each row once
    assert main(["merge", str(out), str(root_b)]) == 0
    assert f"{root_b / 'toy'}: 0 row(s) taken, 8 already there" in capsys.readouterr().out
    assert len(rows_of(out / "toy")) == 12


def test_results_roots_refusals_name_the_argument_and_write_nothing(folders, tmp_path, capsys):
    root_a = results_root(tmp_path / "machine-a", toy=folders["a"], zeta=folders["all"])
    root_b = results_root(tmp_path / "machine-b", toy=folders["b"], zeta=folders["all"])
    out = tmp_path / "merged"
    assert main(["merge", str(out), str(root_a), str(folders["b"])]) == 2  # a root and a spec folder
    err = capsys.readouterr().err
    assert f"{folders['b']}: one spec's results folder, but {root_a} is a results root" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["merge", str(out), str(root_a), str(empty)]) == 2
    assert f"{empty}: neither a spec's results folder" in capsys.readouterr().err
    assert main(["merge", str(out), str(root_a), str(root_a)]) == 2
    assert f"{root_a}: given twice" in capsys.readouterr().err
    assert main(["merge", str(folders["all"]), str(root_a)]) == 2  # OUT is a spec folder, the inputs roots
    assert f"{folders['all']}: OUT is one spec's results folder" in capsys.readouterr().err
    # zeta refused (another spec hash) after toy checked fine: no spec of the merge is written
    spec = root_b / "zeta" / "spec.yaml"
    text = spec.read_text()
    hash_all = next(line.split()[-1] for line in text.splitlines() if line.startswith("spec_hash:"))
    spec.write_text(text.replace(f"spec_hash: {hash_all}", "spec_hash: 0123456789abcdef"))
    assert main(["merge", str(out), str(root_a), str(root_b)]) == 2
    err = capsys.readouterr().err
    assert "spec_hash differs" in err and str(root_b / "zeta") in err
    assert not out.exists()
