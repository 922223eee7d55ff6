"""A dataset entry's ``grid``: shorthand for the datasets it stands for, with the same spec_hash and cell keys as
the spec that lists them by hand, and errors that point at the grid as written."""
from __future__ import annotations

import pytest
import yaml

import harness
from harness.spec.load import SpecError, load_spec, validate_spec
from harness.spec.model import expand_grids

HEAD = """\
spec: 1
name: toy
title: A sweep
task: toy.guess
datasets:
"""
TAIL = """\
methods:
  - {name: toy-constant, kind: baseline, params: {value: 0.5}}
metrics: {primary: toy_score}
seeds: [0, 1]
hardware: {device: cpu, threads: 1, timeout_s: 20}
"""
GRID = HEAD + """\
  - {name: toy-target, id: sweep, params: {curve: false}, grid: {target: [0.25, 0.75], noise: [0.1, 0.2, 0.5]}}
  - {name: toy-target, id: plain, params: {noise: 0.3}}
""" + TAIL
BY_HAND = HEAD + "".join(
    f"  - {{name: toy-target, id: sweep-target{t}-noise{n}, params: {{curve: false, target: {t}, noise: {n}}}}}\n"
    for t in (0.25, 0.75) for n in (0.1, 0.2, 0.5)) + """\
  - {name: toy-target, id: plain, params: {noise: 0.3}}
""" + TAIL


def problems_of(path) -> list:
    with pytest.raises(SpecError, match=r":\d+:\d+: ") as info:
        validate_spec(path)
    return info.value.problems


def test_a_grid_is_its_datasets_in_product_order_with_named_ids(toy_env, write_spec):
    spec = load_spec(write_spec(GRID))
    assert [d.id for d in spec.datasets] == [
        "sweep-target0.25-noise0.1", "sweep-target0.25-noise0.2", "sweep-target0.25-noise0.5",
        "sweep-target0.75-noise0.1", "sweep-target0.75-noise0.2", "sweep-target0.75-noise0.5", "plain"]
    assert spec.dataset("sweep-target0.75-noise0.2").params == {"curve": False, "target": 0.75, "noise": 0.2}
    assert spec.resolved["datasets"][0]["grid"] == {"target": [0.25, 0.75], "noise": [0.1, 0.2, 0.5]}  # as written


def test_a_grid_has_the_spec_hash_and_keys_of_its_datasets_by_hand(toy_env, write_spec, tmp_path):
    grid = load_spec(write_spec(GRID))
    (tmp_path / "hand").mkdir()
    (tmp_path / "hand" / "toy.yaml").write_text(BY_HAND)
    by_hand = load_spec(tmp_path / "hand" / "toy.yaml")
    assert grid.datasets == by_hand.datasets and grid.spec_hash == by_hand.spec_hash
    out = tmp_path / "out"
    [first] = harness.run(by_hand, out, harness.RunOptions(jobs=1), progress=False)
    [again] = harness.run(grid, out, harness.RunOptions(jobs=1), progress=False)
    assert first.statuses["ok"] == 7 * 2
    assert again.already_done == 7 * 2 and not again.statuses  # every cell was done: one key each
    written = yaml.safe_load((out / "toy" / "spec.yaml").read_text())
    assert "grid" in written["spec"]["datasets"][0]  # spec.yaml keeps the grid as written: 10,000 datasets in a line
    assert written["selection"]["datasets"] == [d.id for d in grid.datasets]
    board = (out / "toy" / "leaderboard.csv").read_text()
    assert all(f",{d.id}," in board for d in grid.datasets)  # the pages show each dataset


def test_a_profile_narrows_a_grid_by_the_entry_id(toy_env, write_spec):
    text = GRID + "profiles:\n  quick:\n    datasets: {sweep: {grid: {noise: [0.2]}}}\n"
    quick = load_spec(write_spec(text), "quick")
    assert [d.id for d in quick.datasets] == ["sweep-target0.25-noise0.2", "sweep-target0.75-noise0.2", "plain"]


def test_a_grid_value_of_any_scalar_reads_in_the_id():
    expanded, sources = expand_grids([{"name": "x", "grid": {"k": ["rbf", 3, 1e-05, True, None]}},
                                      {"name": "y"}])
    assert [d.get("id", d["name"]) for d in expanded] == ["x-krbf", "x-k3", "x-k1e-05", "x-ktrue", "x-knull", "y"]
    assert sources == [0, 0, 0, 0, 0, 1]


@pytest.mark.parametrize("entry, line, says", [
    ("{name: toy-target, id: sweep, grid: {nois: [0.1, 0.2]}}", 6,
     "cannot sweep 'nois': 'toy-target' has no such parameter (did you mean 'noise'?)"),
    ("{name: toy-target, id: sweep, params: {noise: 0.1}, grid: {noise: [0.1, 0.2]}}", 6,
     "'noise' is both fixed in params and swept in grid; keep one"),
    ("{name: toy-target, id: sweep, grid: {noise: [0.1, 0.1]}}", 6, "has non-unique elements"),
    ("{name: toy-target, id: sweep, grid: {noise: []}}", 6, "should be non-empty"),
    ("{name: toy-target, id: sweep, grid: {noise: [[0.1]]}}", 6, "expected a string or a number"),
    ("{name: toy-target, id: sweep, grid: {}}", 6, "should be non-empty"),
    ("{name: toy-target, id: sweep, grid: {curve: [\"Yes\", \"No\"]}}", 6,
     "the grid names a dataset 'sweep-curveYes', not an identifier"),
    ("{name: toy-target, id: " + "s" * 60 + ", grid: {noise: [0.1]}}", 6, "longer than 64 characters"),
    ("{name: toy-target, id: sweep, grid: {noise: [0.3]}}\n  - {name: toy-target, id: sweep-noise0.3}", 7,
     "dataset id 'sweep-noise0.3' is used twice (also at datasets[0])"),
])
def test_grid_errors_point_at_the_entry(toy_env, write_spec, entry, line, says):
    problems = problems_of(write_spec(HEAD + f"  - {entry}\n" + TAIL))
    assert [says in p.message for p in problems] == [True], [str(p) for p in problems]
    assert problems[0].line == line


def test_claims_name_a_grid_s_datasets_and_a_long_list_of_ids_is_cut(toy_env, write_spec):
    values = ", ".join(f"0.{i:02d}" for i in range(1, 41))
    text = (HEAD + f"  - {{name: toy-target, id: s, grid: {{noise: [{values}]}}}}\n" + TAIL.replace(
        "methods:\n", "methods:\n  - {name: toy-constant, id: other, kind: baseline, params: {value: 0.4}}\n")
        + "claims:\n  - {id: c, says: it, better: toy-constant, than: other, metric: toy_score, "
          "datasets: [s-noise0.02, s-noise0.9]}\n")
    [problem] = problems_of(write_spec(text))
    assert "no dataset with id 's-noise0.9' (did you mean" in problem.message
    assert problem.message.endswith("s-noise0.2, ... (40 in all)")  # 20 ids shown, then the count
    assert problem.line == 14


def test_the_command_line_selects_a_grid_s_datasets_by_their_ids(toy_env, write_spec):
    from harness.plan import PlanError, RunOptions, apply_options

    spec = load_spec(write_spec(GRID))
    picked = apply_options(spec, RunOptions(datasets=("sweep-target0.75-noise0.1", "plain")))
    assert [d.id for d in picked.datasets] == ["sweep-target0.75-noise0.1", "plain"]
    with pytest.raises(PlanError, match=r"--datasets 'swep' is not a dataset id .* its datasets: sweep-target0\.25"):
        apply_options(spec, RunOptions(datasets=("swep",)))


def test_a_grid_s_id_names_its_datasets_in_claims_and_on_the_command_line(toy_env, write_spec, tmp_path):
    from harness.report.folder import compute
    from harness.plan import RunOptions, apply_options

    text = GRID.replace("methods:\n", "methods:\n  - {name: toy-constant, id: other, kind: baseline, params: {value: 0.9}}\n")
    text += ("claims:\n  - {id: c, says: it, better: toy-constant, than: other, metric: toy_score, datasets: [sweep], "
             "precondition: {better: toy-constant, than: other, metric: toy_score, datasets: [sweep]}}\n")
    spec = load_spec(write_spec(text))
    sweep = [d.id for d in spec.datasets if d.id.startswith("sweep-")]
    assert spec.claims[0].datasets == tuple(sweep) and len(sweep) == 6
    assert [d.id for d in apply_options(spec, RunOptions(datasets=("sweep",))).datasets] == sweep
    [done] = harness.run(spec, tmp_path, harness.RunOptions(jobs=1), progress=False)
    [verdict] = compute(done.folder).verdicts  # the claim and its precondition pair the sweep's cells, not plain's
    assert verdict.cells == 6 * 2 and [e.dataset for e in verdict.per_dataset] == sweep
    assert f"on {', '.join(sweep)}: inconclusive" in verdict.precondition


def test_a_grid_id_that_is_also_a_dataset_id_is_refused(toy_env, write_spec):
    text = HEAD + ("  - {name: toy-target, id: a, grid: {noise: [0.1]}}\n"
                   "  - {name: toy-target, id: b-noise0.1, params: {noise: 0.2}}\n"
                   "  - {name: toy-target, id: b, grid: {noise: [0.1]}}\n  - {name: toy-target, id: a-x}\n")
    problems = problems_of(write_spec(text + TAIL))
    assert [p.message for p in problems] == ["dataset id 'b-noise0.1' is used twice (also at datasets[1]); give each "
                                             "entry its own `id`"], [str(p) for p in problems]
    problems = problems_of(write_spec(HEAD + "  - {name: toy-target, id: a, grid: {noise: [0.1]}}\n"
                                      "  - {name: toy-target, id: a}\n" + TAIL))
    assert "'a' names this grid and a dataset" in problems[0].message and problems[0].line == 6
