"""Scaling and bound claims, and datasets that run only some methods: verdicts from synthetic rows."""
from __future__ import annotations

import json

import numpy as np
import pytest
import yaml

from conftest import TOY_SPEC
from harness.claims import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    REPRODUCED,
    check_claim,
    log_log_slope,
)
from harness.report.folder import write_leaderboard
from harness.results_table import table_of_rows
from harness.spec.load import SpecError, load_spec, validate_spec

SIZES = (100, 200, 400, 800, 1600)


def timing_rows(*args, **kwargs):
    return table_of_rows(timing_dicts(*args, **kwargs))


def timing_dicts(exponents: dict[str, float], seeds=range(4), sizes=SIZES, noise=0.05, failed=()):
    """runtime_s = c · n^k · (1 + noise) per method, with the size in dataset_params as the runner records it."""
    rng = np.random.default_rng(0)
    rows = []
    for seed in seeds:
        for n in sizes:
            for method, k in exponents.items():
                value = 1e-6 * n**k * float(np.exp(noise * rng.standard_normal()))
                status = "failed" if (method, seed, n) in failed else "ok"
                rows.append({"dataset": f"size-{n}", "dataset_params": {"n": n, "p": 0.2}, "method": method,
                             "seed": seed, "status": status, "metrics": {"runtime_s": value} if status == "ok" else {}})
    return rows


def scaling_claim(**extra):
    return {"id": "b-grows-faster", "kind": "scaling", "says": "b's time grows faster", "better": "a", "than": "b",
            "metric": "runtime_s", "size": "n", **extra}


def test_log_log_slope_recovers_a_power():
    sizes = np.array(SIZES, dtype=float)
    assert log_log_slope(sizes, 3.0 * sizes**2.5) == pytest.approx(2.5)


def test_scaling_claim_recovers_the_exponents_of_n_and_n_squared():
    verdict = check_claim(scaling_claim(), timing_rows({"a": 1.0, "b": 2.0}), "min")
    assert verdict.kind == "scaling" and verdict.verdict == REPRODUCED
    assert verdict.pairs == 4 and verdict.sizes == [float(n) for n in SIZES]
    exponents = {e.method: e for e in verdict.exponents}
    assert exponents["a"].mean == pytest.approx(1.0, abs=0.05) and exponents["b"].mean == pytest.approx(2.0, abs=0.05)
    assert verdict.mean_difference == pytest.approx(1.0, abs=0.05)
    # the page and `harness check` print the exponents
    assert "a 1" in verdict.details()[0] and "b 2" in verdict.details()[0]
    assert verdict.to_dict()["kind"] == "scaling" and "exponents" in verdict.to_dict()


def test_scaling_claim_margin_and_direction():
    rows = timing_rows({"a": 1.0, "b": 2.0})
    # by more than 1.5: the interval (about 1 ± 0.1) lies below it
    assert check_claim(scaling_claim(margin=1.5), rows, "min").verdict == NOT_REPRODUCED
    # the other way round: b's exponent is not below a's
    swapped = scaling_claim(better="b", than="a")
    assert check_claim(swapped, rows, "min").verdict == NOT_REPRODUCED
    # the same exponent: the difference straddles 0
    same = check_claim(scaling_claim(), timing_rows({"a": 2.0, "b": 2.0}, seeds=range(6), noise=0.3), "min")
    assert same.verdict in (INCONCLUSIVE, NOT_REPRODUCED) and abs(same.mean_difference) < 0.3


def test_scaling_claim_needs_five_sizes_spanning_sixteen_times():
    rows = timing_rows({"a": 1.0, "b": 2.0}, sizes=(100, 200, 400, 800))
    verdict = check_claim(scaling_claim(), rows, "min")
    assert verdict.verdict == INCONCLUSIVE and verdict.pairs == 0 and "5 sizes" in verdict.reason
    # a seed where one size failed for b is left out, and the page says so
    rows = timing_rows({"a": 1.0, "b": 2.0}, failed={("b", 0, 1600)})
    verdict = check_claim(scaling_claim(), rows, "min")
    assert verdict.pairs == 3 and "1 seed(s)" in verdict.unit


def exponent_claim(**extra):
    return {"id": "a-near-linear", "kind": "scaling", "says": "a's time grows at most like n^1.2", "methods": ["a"],
            "metric": "runtime_s", "size": "n", "at_most": 1.2, **extra}


def test_exponent_bound_checks_each_methods_own_exponent():
    rows = timing_rows({"a": 1.0, "b": 2.0})
    verdict = check_claim(exponent_claim(), rows, "min")
    assert verdict.kind == "scaling" and verdict.verdict == REPRODUCED
    (check,) = verdict.checks
    assert check.method == "a" and check.seeds == 4 and check.mean == pytest.approx(1.0, abs=0.05)
    assert check.interval[0] < check.mean < check.interval[1] < 1.2
    assert [e.method for e in verdict.exponents] == ["a"] and "exponent 1" in verdict.evidence()
    # b grows like n²: at most 1.2 is refuted; at least 1.7 holds; at least 2.5 is refuted
    assert check_claim(exponent_claim(methods=["b"]), rows, "min").verdict == NOT_REPRODUCED
    assert check_claim(exponent_claim(methods=["b"], at_most=None, at_least=1.7), rows, "min").verdict == REPRODUCED
    assert check_claim(exponent_claim(methods=["b"], at_most=None, at_least=2.5), rows, "min").verdict == NOT_REPRODUCED
    # one method refuting it refutes the claim on both
    assert check_claim(exponent_claim(methods=["a", "b"]), rows, "min").verdict == NOT_REPRODUCED
    # an exponent right at the bound, with noise: the interval contains it
    near = check_claim(exponent_claim(at_most=1.0), timing_rows({"a": 1.0}, seeds=range(6), noise=0.3), "min")
    assert near.verdict == INCONCLUSIVE and "contains the bound" in near.reason
    # too few sizes: no exponent, inconclusive
    few = check_claim(exponent_claim(), timing_rows({"a": 1.0}, sizes=(100, 200, 400, 800)), "min")
    assert few.verdict == INCONCLUSIVE and few.checks[0].mean is None
    assert few.to_dict()["kind"] == "scaling" and few.to_dict()["side"] == "at_most"


def bound_rows(values: dict[tuple[str, int, str], float | None]):
    return table_of_rows([{"dataset": d, "seed": s, "method": m, "status": "failed" if v is None else "ok",
                           "metrics": {} if v is None else {"worst_cost_over_lp": v}} for (d, s, m), v in values.items()])


def bound_claim(**extra):
    return {"id": "ratio", "kind": "bound", "says": "cost/LP ≤ 1.92", "methods": ["alg"],
            "metric": "worst_cost_over_lp", "at_most": 1.92, **extra}


def test_bound_claim_holds_when_no_cell_exceeds_it():
    rows = bound_rows({("d1", 0, "alg"): 1.5, ("d1", 1, "alg"): 1.92, ("d2", 0, "alg"): 1.1,
                       ("d2", 0, "other"): 2.5})  # another method's cell is not held to it
    verdict = check_claim(bound_claim(), rows, "min", order=("d1", "d2"))
    assert verdict.kind == "bound" and verdict.verdict == REPRODUCED
    assert verdict.cells == 3 and verdict.violations == 0
    assert verdict.worst.value == 1.92 and verdict.worst.dataset == "d1"
    assert [e.dataset for e in verdict.per_dataset] == ["d1", "d2"]


def test_one_violating_cell_refutes_a_bound_and_is_named():
    rows = bound_rows({("d1", 0, "alg"): 1.5, ("d2", 3, "alg"): 1.95, ("d2", 4, "alg"): 1.93})
    verdict = check_claim(bound_claim(), rows, "min")
    assert verdict.verdict == NOT_REPRODUCED and verdict.violations == 2
    assert (verdict.worst.dataset, verdict.worst.seed, verdict.worst.value) == ("d2", 3, 1.95)
    assert "alg on d2, seed 3: 1.95" in verdict.line()


def test_bound_from_below_and_unchecked_cells():
    rows = bound_rows({("d1", 0, "alg"): 0.5, ("d1", 1, "alg"): 0.7})
    assert check_claim(bound_claim(at_most=None, at_least=0.6), rows, "max").verdict == NOT_REPRODUCED
    rows = bound_rows({("d1", 0, "alg"): 1.5, ("d1", 1, "alg"): None})
    verdict = check_claim(bound_claim(), rows, "min")
    assert verdict.verdict == INCONCLUSIVE and verdict.failed == 1
    assert check_claim(bound_claim(), table_of_rows([]), "min").verdict == INCONCLUSIVE


def test_leaderboard_prints_scaling_and_bound_sections(toy_env, tmp_path):
    spec = {"name": "toy", "title": "Toy", "task": "toy.guess",
            "datasets": [{"name": "toy-target", "id": f"size-{n}", "params": {"n": n}} for n in SIZES],
            "methods": [{"name": "toy-constant", "id": m, "kind": "baseline"} for m in ("a", "b")],
            "metrics": {"primary": "toy_score", "report": ["toy_score"]}, "seeds": [0, 1, 2, 3],
            "claims": [{"id": "time", "kind": "scaling", "says": "b's score grows faster", "better": "b", "than": "a",
                        "metric": "toy_score", "size": "n", "source": "harness"},
                       {"id": "cap", "kind": "bound", "says": "a stays under 1", "methods": ["a"],
                        "metric": "toy_score", "at_most": 1.0, "source": "harness"}]}
    folder = tmp_path / "toy"
    folder.mkdir()
    (folder / "spec.yaml").write_text(yaml.safe_dump({"profile": "quick", "spec_hash": "h1", "spec": spec}))
    rows = timing_dicts({"a": 0.5, "b": 1.0})
    lines = [{**r, "key": f"{r['dataset']}{r['method']}{r['seed']}", "kind": "baseline", "split": "test",
              "metrics": {"toy_score": r["metrics"]["runtime_s"]}, "error": None, "spec_hash": "h1",
              "git_commit": "abc", "device": "cpu: test", "task_version": "1", "versions": {"python": "3"}}
             for r in rows]
    (folder / "runs.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    verdicts = write_leaderboard(folder)
    assert [v.verdict for v in verdicts] == [REPRODUCED, REPRODUCED]
    page = (folder / "leaderboard.md").read_text()
    assert "## Scaling claims" in page and "## Bound claims" in page and "## Claims\n" not in page
    assert "n = 100, 200, 400, 800, 1600" in page
    saved = json.loads((folder / "claims.json").read_text())["claims"]
    assert [c["kind"] for c in saved] == ["scaling", "bound"] and [c["verdict"] for c in saved] == [REPRODUCED] * 2


SWEEP = """\
  - {name: toy-target, id: s1, params: {noise: 0.1}, methods: [toy-tunable, toy-constant]}
"""


def test_a_dataset_can_run_only_some_methods(toy_env, write_spec):
    from harness.plan import test_cells

    text = TOY_SPEC.replace("  - {name: toy-target, id: hard, params: {noise: 0.3}}\n",
                            "  - {name: toy-target, id: hard, params: {noise: 0.3}, methods: [toy-constant]}\n")
    spec = load_spec(write_spec(text))
    cells = test_cells(spec, {(d.id, m.id): {} for d in spec.datasets for m in spec.methods}, "1", None)
    assert {(c.dataset.id, c.method.id) for c in cells} == {("easy", "toy-tunable"), ("easy", "toy-constant"),
                                                            ("hard", "toy-constant")}
    # a claim on a dataset that does not run one of its methods has no pair there: an error, before any run
    bad = text.replace("metric: toy_score}", "metric: toy_score, datasets: [hard]}")
    with pytest.raises(SpecError, match="does not run 'toy-tunable'"):
        validate_spec(write_spec(bad))
    with pytest.raises(SpecError, match="no method with id 'toy-constnt'"):
        validate_spec(write_spec(text.replace("methods: [toy-constant]", "methods: [toy-constnt]")))


def test_claim_kinds_are_checked_when_the_spec_loads(toy_env, write_spec):
    def with_sizes(noises):
        return TOY_SPEC.replace("  - {name: toy-target, id: hard, params: {noise: 0.3}}\n",
                                "  - {name: toy-target, id: hard, params: {noise: 0.3}}\n" + "".join(
                                    f"  - {{name: toy-target, id: n{i}, params: {{noise: {v}}}}}\n"
                                    for i, v in enumerate(noises)))

    sizes = ", datasets: [n0, n1, n2, n3, n4]"
    base = with_sizes([0.01, 0.02, 0.04, 0.08, 0.16])
    scaling = base.replace("metric: toy_score}", f"metric: toy_score, kind: scaling, size: noise{sizes}}}")
    assert load_spec(write_spec(scaling)).claims[0].size == "noise"
    with pytest.raises(SpecError, match="at least 5 sizes spanning 16x; its datasets have noise = 0.01, 0.02"):
        validate_spec(write_spec(with_sizes([0.01, 0.02, 0.04, 0.08, 0.08]).replace(
            "metric: toy_score}", f"metric: toy_score, kind: scaling, size: noise{sizes}}}")))
    with pytest.raises(SpecError, match="missing required key 'size'"):
        validate_spec(write_spec(base.replace("metric: toy_score}", "metric: toy_score, kind: scaling}")))
    bound = base.replace("better: toy-tunable, than: toy-constant, metric: toy_score}",
                         "kind: bound, methods: [toy-tunable], metric: toy_score, at_most: 1.0}")
    claim = load_spec(write_spec(bound)).claims[0]
    assert (claim.kind, claim.methods, claim.at_most, claim.better) == ("bound", ("toy-tunable",), 1.0, None)
    with pytest.raises(SpecError, match="`better` has no meaning in a claim of kind 'bound'"):
        validate_spec(write_spec(bound.replace("kind: bound,", "kind: bound, better: toy-tunable,")))
    with pytest.raises(SpecError, match="missing required key 'at_most'"):
        validate_spec(write_spec(bound.replace(", at_most: 1.0", "")))
    exponent = scaling.replace("better: toy-tunable, than: toy-constant,", "methods: [toy-tunable], at_most: 1.2,")
    claim = load_spec(write_spec(exponent)).claims[0]
    assert (claim.kind, claim.methods, claim.at_most, claim.better) == ("scaling", ("toy-tunable",), 1.2, None)
    with pytest.raises(SpecError, match="`better` has no meaning in a claim of kind 'scaling' here"):
        validate_spec(write_spec(exponent.replace("at_most: 1.2,", "at_most: 1.2, better: toy-tunable,")))
    with pytest.raises(SpecError, match="missing required key 'at_most'"):
        validate_spec(write_spec(exponent.replace(" at_most: 1.2,", "")))
    with pytest.raises(SpecError, match="`at_most` has no meaning in a claim of kind 'scaling'"):
        validate_spec(write_spec(scaling.replace("kind: scaling,", "kind: scaling, at_most: 1.2,")))
    # no kind: the paired comparison, as before
    assert load_spec(write_spec(TOY_SPEC)).claims[0].kind == "paired"


# --- claim preconditions --------------------------------------------------------------------


def precondition_rows(*args, **kwargs):
    return table_of_rows(precondition_dicts(*args, **kwargs))


def precondition_dicts(backbone_minus_pixels: float, seeds=range(4)):
    """accuracy per (dataset, seed, method): new beats base by 5 on far; backbone vs pixels on near as given."""
    rows = []
    for seed in seeds:
        jitter = 0.1 * seed
        values = {("far", "new"): 60 + jitter, ("far", "base"): 55, ("near", "base"): 50 + backbone_minus_pixels + jitter,
                  ("near", "pixels"): 50, ("near", "new"): 50, ("far", "pixels"): 20}
        rows += [{"status": "ok", "dataset": d, "seed": seed, "method": m, "metrics": {"acc": v}}
                 for (d, m), v in values.items()]
    return rows


def precondition_claim(**kw):
    return {"id": "new-beats-base", "says": "new is better", "better": "new", "than": "base", "metric": "acc",
            "datasets": ["far"], "precondition": {"better": "base", "than": "pixels", "metric": "acc", "datasets": ["near"], **kw}}


def test_a_met_precondition_keeps_the_verdict_and_says_so():
    verdict = check_claim(precondition_claim(), precondition_rows(+10), "max", goals={"acc": "max"})
    assert verdict.verdict == REPRODUCED and verdict.pairs == 4
    assert "precondition met: base better than pixels on acc on near: reproduced" in verdict.reason
    assert verdict.to_dict()["precondition"].startswith("base better than pixels on acc on near: reproduced")


def test_an_unmet_precondition_makes_the_claim_inconclusive_with_the_reason():
    for gap in (-10, 0):  # the backbone below pixels, and tied with them (0 is not "better")
        verdict = check_claim(precondition_claim(), precondition_rows(gap), "max", goals={"acc": "max"})
        assert verdict.verdict == INCONCLUSIVE
        assert verdict.reason.startswith("precondition not met: base better than pixels on acc on near: ")
        assert "its own test: reproduced" in verdict.reason  # what the claim alone would have said stays visible
        assert verdict.mean_difference == pytest.approx(5.15)  # the claim's own numbers are kept
    # a margin in the precondition is honoured: +10 is not better by 20
    assert check_claim(precondition_claim(margin=20), precondition_rows(+10), "max", goals={"acc": "max"}).verdict == INCONCLUSIVE
    # the precondition's goal is its own metric's: on a metric to minimise, lower is better
    rows = precondition_dicts(-10)
    for row in rows:
        row["metrics"]["err"] = row["metrics"]["acc"]
    claim = precondition_claim()
    claim["precondition"]["metric"] = "err"
    assert check_claim(claim, table_of_rows(rows), "max", goals={"acc": "max", "err": "min"}).verdict == REPRODUCED


def test_a_claim_without_precondition_is_unchanged():
    claim = precondition_claim()
    del claim["precondition"]
    verdict = check_claim(claim, precondition_rows(-10), "max")
    assert verdict.verdict == REPRODUCED and "precondition" not in verdict.to_dict() and "precondition" not in verdict.reason


def test_precondition_names_are_validated(toy_env, tmp_path):
    spec = yaml.safe_load(TOY_SPEC)
    spec["claims"] = [{"id": "c", "says": "x", "better": "a", "than": "b", "metric": "toy_score",
                       "precondition": {"better": "a", "than": "nope", "metric": "toy_score", "datasets": ["nowhere"]}}]
    path = tmp_path / "toy.yaml"
    path.write_text(yaml.safe_dump(spec))
    with pytest.raises(SpecError, match="precondition") as error:
        load_spec(path)
    assert "'nope'" in str(error.value) and "'nowhere'" in str(error.value)


def test_margin_gap_reads_the_nearer_end_as_a_share_of_the_width():
    from harness.claims.base import MarginGap

    gap = MarginGap("", 0.05, 1.05, 0.0)  # reproduced, its low end 0.05 above 0: 5% of the width
    assert gap.distance == pytest.approx(0.05) and gap.share == pytest.approx(0.05) and gap.near
    assert "**near**" in gap.text() and "5% of the interval's width" in gap.text()
    far = MarginGap("a", -3.0, -1.0, 0.0)  # not reproduced, its high end a whole width below
    assert far.distance == 1.0 and far.share == 0.5 and not far.near and far.text().startswith("a: 1 from 0")
    inside = MarginGap("", -0.5, 1.5, 0.0)  # inconclusive: the margin a quarter of the way in
    assert inside.share == pytest.approx(0.25) and not inside.near
    assert MarginGap("", 2.0, 2.0, 1.0).share == float("inf")  # no spread: never near


def test_each_kind_gives_the_intervals_that_decided_its_verdict():
    from harness.claims import margin_gaps

    # paired: the oriented interval against the claim's margin
    claim = precondition_claim()
    del claim["precondition"]
    paired = check_claim({**claim, "margin": 1.0}, precondition_rows(+10), "max")
    (gap,) = margin_gaps(paired, {**claim, "margin": 1.0})
    assert gap.threshold == 1.0 and (gap.low, gap.high) == tuple(paired.interval)
    # a verdict its precondition decided has no gap: the claim's own interval did not decide it
    unmet = check_claim(precondition_claim(), precondition_rows(-10), "max", goals={"acc": "max"})
    assert margin_gaps(unmet, precondition_claim()) == []
    # an exponent bound: each method's interval against the bound
    rows = timing_rows({"a": 1.0, "b": 1.1})
    bounded = check_claim(exponent_claim(methods=["a", "b"]), rows, "min")
    gaps = margin_gaps(bounded, exponent_claim(methods=["a", "b"]))
    assert [g.what for g in gaps] == ["a", "b"] and {g.threshold for g in gaps} == {1.2}
    assert gaps[1].distance < gaps[0].distance  # b's exponent sits nearer the bound
    # a bound claim counts violations: no interval, no gap
    bound = check_claim(bound_claim(), bound_rows({("d", 0, "alg"): 0.5}), "min")
    assert margin_gaps(bound, bound_claim()) == []
    # equivalence: the interval against whichever end of ±margin it comes nearer
    from types import SimpleNamespace

    from harness.claims import kinds

    on_par = SimpleNamespace(kind="equivalence", interval=(-0.2, 0.9), reason="the whole interval is inside ±1")
    (gap,) = kinds()["equivalence"].margin_gaps(on_par, {"margin": 1.0})
    assert gap.threshold == 1.0 and gap.distance == pytest.approx(0.1) and gap.near


def test_the_verdicts_table_says_how_far_each_interval_sits_from_its_margin(toy_env, tmp_path):
    spec = {"name": "toy", "title": "Toy", "task": "toy.guess",
            "datasets": [{"name": "toy-target", "id": f"size-{n}", "params": {"n": n}} for n in SIZES],
            "methods": [{"name": "toy-constant", "id": m, "kind": "baseline"} for m in ("a", "b")],
            "metrics": {"primary": "toy_score", "report": ["toy_score"]}, "seeds": [0, 1, 2, 3],
            "claims": [{"id": "a-below", "kind": "scaling", "says": "a grows at most like n^1.2", "methods": ["a"],
                        "metric": "toy_score", "size": "n", "at_most": 1.2, "source": "harness"},
                       {"id": "b-below", "kind": "scaling", "says": "b grows at most like n^2", "methods": ["b"],
                        "metric": "toy_score", "size": "n", "at_most": 2.0, "source": "harness"}]}
    folder = tmp_path / "toy"
    folder.mkdir()
    (folder / "spec.yaml").write_text(yaml.safe_dump({"profile": "quick", "spec_hash": "h1", "spec": spec}))
    lines = [{**r, "key": f"{r['dataset']}{r['method']}{r['seed']}", "kind": "baseline", "split": "test",
              "metrics": {"toy_score": r["metrics"]["runtime_s"]}, "error": None, "spec_hash": "h1",
              "git_commit": "abc", "device": "cpu: test", "task_version": "1", "versions": {"python": "3"}}
             for r in timing_dicts({"a": 1.16, "b": 1.0}, noise=0.05)]
    (folder / "runs.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    write_leaderboard(folder)
    page = (folder / "leaderboard.md").read_text()
    verdicts = page[page.index("## Verdicts"):page.index("## Verdicts") + 1500]
    assert "| claim | verdict | from the margin | says |" in verdicts
    row = next(line for line in verdicts.splitlines() if line.startswith("| `a-below`"))
    assert "from 1.2 (" in row and "**near**" in row  # 1.16 against 1.2: its interval's high end 0.002 below it
    far = next(line for line in verdicts.splitlines() if line.startswith("| `b-below`"))
    assert "b: " in far and "from 2 (" in far and "near" not in far
    assert "can flip with another draw of seeds or on another CPU" in verdicts


def test_each_method_s_cells_of_a_seed_begin_on_another_dataset(toy_env, write_spec):
    """Workers that start a seed's first methods side by side start on different datasets (a preparation the task
    shares per dataset and seed, under a lock, is then made in parallel); every cell is still planned once."""
    from harness.plan import test_cells

    spec = load_spec(write_spec(TOY_SPEC))
    cells = test_cells(spec, {(d.id, m.id): {} for d in spec.datasets for m in spec.methods}, "1", None)
    first_seed = [c for c in cells if c.seed == spec.seeds[0]]
    by_method = {}
    for cell in first_seed:
        by_method.setdefault(cell.method.id, []).append(cell.dataset.id)
    firsts = [datasets[0] for datasets in by_method.values()]
    assert len(set(firsts)) == min(len(spec.methods), len(spec.datasets))
    assert len({(c.seed, c.dataset.id, c.method.id) for c in cells}) == len(cells) == (
        len(spec.seeds) * len(spec.datasets) * len(spec.methods))


def test_tuning_studies_of_each_method_begin_on_another_dataset():
    """The tuning hands its cells out staggered too: with two tuned methods on two datasets, the first cell of each
    method's group is on a different dataset."""
    from types import SimpleNamespace

    from harness.runner import _advance

    class Study:
        def __init__(self, dataset, method):
            self.dataset, self.method = SimpleNamespace(id=dataset), SimpleNamespace(id=method)
            self.waiting = self.finished = False

        def ask_batch(self):
            self.waiting = True
            cell = SimpleNamespace(method=self.method, dataset=self.dataset, seed=0,
                                   payload=lambda: {"dataset": self.dataset.id, "method": self.method.id})
            return [(0, [cell])]

        def tell(self, batch):
            self.waiting, self.finished = False, True

        def others_running(self):
            return False

        def beat(self):
            pass

    class Executor:
        def __init__(self):
            self.submitted, self.pending = [], []

        def submit(self, tag, cell):
            self.submitted.append((cell["method"], cell["dataset"]))
            self.pending.append(tag)

        @property
        def outstanding(self):
            return len(self.pending)

        def wait(self, timeout=None):
            done, self.pending = self.pending, []
            return [(tag, {"status": "ok"}) for tag in done]

        def running(self):
            return []

    bar = SimpleNamespace(running=lambda *a: None, finished=lambda *a: None, add=lambda *a: None)
    studies = {(d, m): Study(d, m) for d in ("easy", "hard") for m in ("first", "second")}
    executor = Executor()
    _advance(studies, executor, bar)
    first = {}
    for method, dataset in executor.submitted:
        first.setdefault(method, dataset)
    assert first == {"first": "easy", "second": "hard"}
    assert sorted(executor.submitted) == sorted((m, d) for d, m in studies)


def _gap_rows(leads: dict[str, float], seeds=range(6), noise=0.01):
    """accuracy of b = 0.5 + noise, of a = b + the dataset's lead (+ its own noise), per seed and dataset."""
    rng = np.random.default_rng(1)
    rows = []
    for seed in seeds:
        for dataset, lead in leads.items():
            base = 0.5 + noise * rng.standard_normal()
            for method, value in (("a", base + lead + noise * rng.standard_normal()), ("b", base)):
                rows.append({"dataset": dataset, "dataset_params": {}, "method": method, "seed": seed, "status": "ok",
                             "metrics": {"accuracy": value}})
    return table_of_rows(rows)


def gap_claim(**extra):
    return {"id": "lead-larger-small", "kind": "gap", "says": "a's lead over b is larger with little data",
            "better": "a", "than": "b", "metric": "accuracy", "datasets": ["small"], "than_datasets": ["large"],
            **extra}


def test_a_gap_claim_reads_the_difference_of_the_two_groups_leads():
    rows = _gap_rows({"small": 0.10, "large": 0.02})
    verdict = check_claim(gap_claim(), rows, "max")
    assert verdict.kind == "gap" and verdict.verdict == REPRODUCED and verdict.pairs == 6
    assert verdict.gap_on_datasets == pytest.approx(0.10, abs=0.02)
    assert verdict.gap_on_than_datasets == pytest.approx(0.02, abs=0.02)
    assert verdict.mean_difference == pytest.approx(verdict.gap_on_datasets - verdict.gap_on_than_datasets)
    assert "+0.1" in verdict.evidence() and verdict.to_dict()["kind"] == "gap"
    # a lead as large on both groups is not a larger gap, whatever the lead itself; a smaller one refutes it
    assert check_claim(gap_claim(), _gap_rows({"small": 0.05, "large": 0.05}), "max").verdict != REPRODUCED
    assert check_claim(gap_claim(), _gap_rows({"small": 0.0, "large": 0.08}), "max").verdict == NOT_REPRODUCED
    # the margin is in the metric's units, and a goal of min turns the leads round
    assert check_claim(gap_claim(margin=0.2), rows, "max").verdict == NOT_REPRODUCED
    assert check_claim(gap_claim(), rows, "min").verdict == NOT_REPRODUCED


def test_a_gap_claim_needs_seeds_with_both_groups():
    rows = _gap_rows({"small": 0.10, "large": 0.02}, seeds=range(2))
    verdict = check_claim(gap_claim(), rows, "max")
    assert verdict.verdict == INCONCLUSIVE and verdict.interval is None and "2 seeds" in verdict.reason


def test_a_spec_s_gap_claim_names_datasets_the_spec_has_apart_from_its_own(toy_env, write_spec):
    claim = ("  - {id: gap, kind: gap, says: s, better: toy-tunable, than: toy-constant, metric: toy_score, "
             "datasets: [easy], than_datasets: [%s]}\n")
    base = TOY_SPEC.split("claims:\n")[0] + "claims:\n"
    profiles = "profiles:" + TOY_SPEC.split("profiles:")[1]
    assert load_spec(write_spec(base + claim % "hard" + profiles)).claims[0].kind == "gap"
    with pytest.raises(SpecError, match=r"than_datasets\[0\].*no dataset 'nothing'"):
        validate_spec(write_spec(base + claim % "nothing" + profiles))
    with pytest.raises(SpecError, match=r"than_datasets\[0\].*must not share"):
        validate_spec(write_spec(base + claim % "easy" + profiles))
