"""``harness audit``: each rule fires on a folder that has its fault and stays silent on one that does not; the
command's output, acknowledgements, exit codes and bad input."""
from __future__ import annotations

import json

import pytest

from harness.audit.base import audit_board, rules
from harness.cli import main
from harness.report.folder import compute

from test_claim_plugins import toy_spec, write_folder

METRICS = {"toy_score": {"goal": "max", "unit": "", "about": "score"},
           "runtime_s": {"goal": "min", "unit": "s", "about": "time"},
           "runtime_s_spread": {"goal": "min", "unit": "s", "about": "half the range of the repeats",
                                "spread_of": "runtime_s"},
           "steps": {"goal": "min", "unit": "", "about": "training steps", "role": "budget"},
           "ratio": {"goal": "min", "unit": "", "about": "the certified ratio", "role": "certificate"},
           "failed_share": {"goal": "min", "unit": "", "about": "share of failed fits", "role": "failure-share"}}


def rows_of(values: dict[str, list[dict[str, float]]], datasets=("easy",)) -> list[dict]:
    """Rows for methods a and b: per method, one dict of metrics per seed, repeated on each dataset."""
    rows = []
    for dataset in datasets:
        for method, per_seed in values.items():
            for seed, metrics in enumerate(per_seed):
                rows.append({"dataset": dataset, "method": method, "seed": seed, "status": "ok", "metrics": metrics})
    return rows


def seeds(n: int, **metrics) -> list[dict[str, float]]:
    """n seeds of these metrics, each value a list (one per seed) or a number (the same on every seed)."""
    return [{k: (v[i] if isinstance(v, list) else v) for k, v in metrics.items()} for i in range(n)]


def audit(tmp_path, claims, rows, chance=None, datasets=None, **spec_extra):
    spec = toy_spec(claims)
    if datasets:
        spec["datasets"] = [{"name": "toy-target", "id": d, "params": {}} for d in datasets]
    spec.update(spec_extra)
    folder = tmp_path / "toy"
    tmp_path.mkdir(parents=True, exist_ok=True)
    write_folder(folder, spec, rows)
    (folder / "metrics.json").write_text(json.dumps(METRICS))
    (folder / "chance.json").write_text(json.dumps(chance or {}))
    return audit_board(compute(folder), "toy")


def found(findings, rule):
    return [f for f in findings if f.rule == rule]


PAIR = {"id": "a-wins", "says": "Sanity row: a beats b", "better": "a", "than": "b", "metric": "toy_score",
        "source": "harness"}
VARIED = [0.6, 0.7, 0.65, 0.72, 0.61, 0.68]


def test_every_rule_has_a_test_here():
    names = set(rules())
    text = open(__file__).read()
    assert all(f'"{name}"' in text for name in names), names


def test_check_counted_as_claim(tmp_path):
    bound = {"id": "ratio-holds", "kind": "bound", "says": "ratio at most 1", "methods": ["a"], "metric": "ratio",
             "at_most": 1.0}
    rows = rows_of({"a": seeds(6, toy_score=VARIED, ratio=0.5), "b": seeds(6, toy_score=0.5, ratio=0.5)})
    (finding,) = found(audit(tmp_path, [PAIR, bound], rows), "check-counted-as-claim")
    assert finding.claim == "ratio-holds" and "certificate" in finding.evidence
    check = {**bound, "kind": "check", "why": "the method rescales its output"}
    assert not found(audit(tmp_path / "2", [PAIR, check], rows), "check-counted-as-claim")


def test_zero_variance_test(tmp_path):
    constant = rows_of({"a": seeds(6, toy_score=0.7), "b": seeds(6, toy_score=0.5)})
    (finding,) = found(audit(tmp_path, [PAIR], constant), "zero-variance-test")
    assert "do not vary" in finding.evidence and finding.claim == "a-wins"
    varied = rows_of({"a": seeds(6, toy_score=VARIED), "b": seeds(6, toy_score=0.5)})
    assert not found(audit(tmp_path / "2", [PAIR], varied), "zero-variance-test")


def test_too_few_independent_pairs(tmp_path):
    few = rows_of({"a": seeds(4, toy_score=VARIED[:4]), "b": seeds(4, toy_score=0.5)})
    (finding,) = found(audit(tmp_path, [PAIR], few), "too-few-independent-pairs")
    assert finding.evidence.startswith("4 independent pairs")
    enough = rows_of({"a": seeds(5, toy_score=VARIED[:5]), "b": seeds(5, toy_score=0.5)})
    assert not found(audit(tmp_path / "2", [PAIR], enough), "too-few-independent-pairs")


def test_dependent_pairs(tmp_path):
    claim = {**PAIR, "replicate": "dataset-seed"}
    datasets = ["d1", "d2", "d3", "d4"]
    rows = []
    for i, dataset in enumerate(datasets):  # each seed shifts every dataset's difference alike: shared
        for seed in range(6):
            rows.append({"dataset": dataset, "method": "a", "seed": seed, "status": "ok",
                         "metrics": {"toy_score": 0.5 + 0.1 * seed + 0.001 * i}})
            rows.append({"dataset": dataset, "method": "b", "seed": seed, "status": "ok",
                         "metrics": {"toy_score": 0.5}})
    (finding,) = found(audit(tmp_path, [claim], rows, datasets=datasets), "dependent-pairs")
    assert "ANOVA" in finding.evidence
    independent = [dict(r, metrics={"toy_score": 0.5 + (0.1 * ((r["seed"] * 7 + int(r["dataset"][1]) * 3) % 5)
                                                        if r["method"] == "a" else 0)})
                   for r in rows]
    assert not found(audit(tmp_path / "2", [claim], independent, datasets=datasets), "dependent-pairs")
    assert not found(audit(tmp_path / "3", [PAIR], rows, datasets=datasets), "dependent-pairs")  # paired by seed


def test_margin_after_run(tmp_path):
    rows = rows_of({"a": seeds(6, toy_score=VARIED), "b": seeds(6, toy_score=0.5)})
    after = {**PAIR, "margin": 0.05, "margin_from": "after-run"}
    unstated = {**PAIR, "id": "b-claim", "margin": 0.05}
    findings = found(audit(tmp_path, [after, unstated], rows), "margin-after-run")
    assert [(f.claim, "after a run" in f.evidence) for f in findings] == [("a-wins", True), ("b-claim", False)]
    prior = {**PAIR, "margin": 0.05, "margin_from": "prior"}
    assert not found(audit(tmp_path / "2", [prior], rows), "margin-after-run")


def test_quote_not_from_paper(tmp_path):
    rows = rows_of({"a": seeds(6, toy_score=VARIED), "b": seeds(6, toy_score=0.5)})
    noted = {**PAIR, "source": "paper", "quote": "Paper note (d): Expected: a wins"}
    (finding,) = found(audit(tmp_path, [noted], rows), "quote-not-from-paper")
    assert "Paper note" in finding.evidence
    quoted = {**PAIR, "source": "paper", "quote": "§5, Table 2: \"a lowers the expected ratio by 3 points\""}
    assert not found(audit(tmp_path / "2", [quoted], rows), "quote-not-from-paper")
    predicted = {**PAIR, "source": "paper", "quote": "§5: Expected: a wins"}
    assert found(audit(tmp_path / "3", [predicted], rows), "quote-not-from-paper")


def test_short_scaling_range(tmp_path):
    def scaling(sizes):
        datasets = [f"n{n}" for n in sizes]
        rows = []
        for dataset, n in zip(datasets, sizes):
            for seed in range(5):
                for method, power in (("a", 1.0), ("b", 2.0)):
                    rows.append({"dataset": dataset, "method": method, "seed": seed, "status": "ok",
                                 "metrics": {"runtime_s": n ** power * (1 + 0.01 * seed)}})
        spec_datasets = [{"name": "toy-target", "id": d, "params": {"n": n}} for d, n in zip(datasets, sizes)]
        claim = {"id": "a-scales-better", "kind": "scaling", "says": "Sanity row: a grows slower", "better": "a",
                 "than": "b", "metric": "runtime_s", "size": "n"}
        return claim, rows, spec_datasets

    def audited(folder, sizes):
        claim, rows, spec_datasets = scaling(sizes)
        spec = toy_spec([claim])
        spec["datasets"] = spec_datasets
        write_folder(folder, spec, rows)
        lines = [json.loads(line) for line in (folder / "runs.jsonl").read_text().splitlines()]
        for line in lines:  # each row records its dataset's size, which the exponent is fitted against
            line["dataset_params"] = {"n": int(line["dataset"][1:])}
        (folder / "runs.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
        (folder / "metrics.json").write_text(json.dumps(METRICS))
        return audit_board(compute(folder), "toy")

    (finding,) = found(audited(tmp_path / "short", [100, 200, 400, 800, 1600]), "short-scaling-range")
    assert "1.20 decades" in finding.evidence and finding.open
    assert not found(audited(tmp_path / "long", [10, 40, 160, 640, 2560]), "short-scaling-range")


def test_below_trivial(tmp_path):
    rows = rows_of({"a": seeds(6, toy_score=VARIED), "b": seeds(6, toy_score=[0.2, 0.3, 0.25, 0.2, 0.3, 0.2])})
    (finding,) = found(audit(tmp_path, [PAIR], rows, chance={"easy": {"toy_score": 0.5}}), "below-trivial")
    assert finding.method == "b" and "chance 0.5" in finding.evidence
    assert not found(audit(tmp_path / "2", [PAIR], rows, chance={"easy": {"toy_score": 0.1}}), "below-trivial")


def trivial_folder(tmp_path, values: dict[str, list[float]], name="toy"):
    spec = toy_spec([PAIR])
    spec["methods"].append({"name": "toy-prior", "id": "prior", "kind": "trivial"})
    rows = [dict(r, kind="trivial") if r["method"] == "prior" else r
            for r in rows_of({m: seeds(len(v), toy_score=v) for m, v in values.items()})]
    folder = tmp_path / name
    write_folder(folder, spec, rows)
    (folder / "metrics.json").write_text(json.dumps(METRICS))
    return folder


def test_missing_trivial_row_and_below_a_trivial_row(tmp_path, toy_env):
    folder = trivial_folder(tmp_path, {"a": VARIED, "b": [0.5] * 6, "prior": [0.55] * 6})
    findings = audit_board(compute(folder), "toy")
    (below,) = found(findings, "below-trivial")
    assert below.method == "b" and "does not beat the trivial answer on 1 of 1 datasets: easy 0.5 (prior 0.55)" \
        in below.evidence
    # a trivial row answers the sanity-row rule, and the task's trivial answer is run
    assert not found(findings, "missing-sanity-row") and not found(findings, "missing-trivial-row")
    plain = tmp_path / "plain"
    write_folder(plain, toy_spec([{**PAIR, "says": "a beats b"}]),
                 rows_of({"a": seeds(6, toy_score=VARIED), "b": seeds(6, toy_score=0.5)}))
    (plain / "metrics.json").write_text(json.dumps(METRICS))
    (missing,) = found(audit_board(compute(plain), "toy"), "missing-trivial-row")
    assert missing.evidence == "task toy.guess declares the trivial answer(s) toy-prior; the spec runs none of them " \
                               "(kind: trivial)"



def test_missing_trivial_row_reads_the_trivial_answers_the_run_recorded(tmp_path, toy_env):
    """trivial.json, written by the run, decides, whatever this process registers; a folder without it (written
    before runs recorded it) falls back to the registry."""
    plain = tmp_path / "plain"
    write_folder(plain, toy_spec([{**PAIR, "says": "a beats b"}]),
                 rows_of({"a": seeds(6, toy_score=VARIED), "b": seeds(6, toy_score=0.5)}))
    (plain / "metrics.json").write_text(json.dumps(METRICS))
    (plain / "trivial.json").write_text(json.dumps({"toy.guess": []}))  # the task declared none when it ran
    assert not found(audit_board(compute(plain), "toy"), "missing-trivial-row")
    (plain / "trivial.json").write_text(json.dumps({"toy.guess": ["toy-constant"]}))
    (missing,) = found(audit_board(compute(plain), "toy"), "missing-trivial-row")
    assert "declares the trivial answer(s) toy-constant;" in missing.evidence


def test_a_run_records_its_task_s_trivial_answers(tmp_path, toy_env):
    from harness.metric_tables import read_trivial_table, write_trivial_table

    write_trivial_table(tmp_path, "toy.guess", ["toy-prior"])
    assert json.loads((tmp_path / "trivial.json").read_text()) == {"toy.guess": ["toy-prior"]}
    assert read_trivial_table(tmp_path, "toy.guess") == ["toy-prior"]
    assert read_trivial_table(tmp_path / "older", "toy.guess") is None
    (tmp_path / "trivial.json").write_text(json.dumps({"toy.guess": "toy-prior"}))
    with pytest.raises(ValueError, match="trivial.json: expected"):
        read_trivial_table(tmp_path, "toy.guess")


def test_below_trivial_on_a_claim_s_own_metric(tmp_path):
    # the primary metric beats chance; the claim's metric (a loss, lower is better) does not for b
    claim = {**PAIR, "id": "a-lower-loss", "metric": "toy_loss"}
    metrics = {**METRICS, "toy_loss": {"goal": "min", "unit": "", "about": "loss"}}
    rows = rows_of({"a": seeds(6, toy_score=VARIED, toy_loss=[0.2, 0.3, 0.25, 0.2, 0.3, 0.2]),
                    "b": seeds(6, toy_score=0.6, toy_loss=[0.6, 0.7, 0.65, 0.6, 0.7, 0.6])})
    chance = {"easy": {"toy_score": 0.1, "toy_loss": 0.5}}
    spec = toy_spec([PAIR, claim])
    folder = tmp_path / "toy"
    write_folder(folder, spec, rows)
    (folder / "metrics.json").write_text(json.dumps(metrics))
    (folder / "chance.json").write_text(json.dumps(chance))
    (finding,) = found(audit_board(compute(folder), "toy"), "below-trivial")
    assert finding.claim == "a-lower-loss" and finding.evidence == (
        "the mean toy_loss does not beat chance for b on 1 of 1 datasets (easy 0.6417 against 0.5)")
    beaten = tmp_path / "beaten"
    write_folder(beaten, spec, rows)
    (beaten / "metrics.json").write_text(json.dumps(metrics))
    (beaten / "chance.json").write_text(json.dumps({"easy": {"toy_score": 0.1, "toy_loss": 0.9}}))
    assert not found(audit_board(compute(beaten), "toy"), "below-trivial")


def test_missing_sanity_row(tmp_path):
    rows = rows_of({"a": seeds(6, toy_score=VARIED), "b": seeds(6, toy_score=0.5)})
    plain = {**PAIR, "says": "a beats b"}
    (finding,) = found(audit(tmp_path, [plain], rows), "missing-sanity-row")
    assert finding.subject == "spec"
    assert not found(audit(tmp_path / "2", [PAIR], rows), "missing-sanity-row")
    assert not found(audit(tmp_path / "3", [plain], rows, chance={"easy": {"toy_score": 0.1}}), "missing-sanity-row")


def test_unequal_budget(tmp_path):
    rows = rows_of({"a": seeds(6, toy_score=VARIED, steps=1300), "b": seeds(6, toy_score=0.5, steps=1000)})
    (finding,) = found(audit(tmp_path, [PAIR], rows), "unequal-budget")
    assert "1.30x" in finding.evidence
    equal = rows_of({"a": seeds(6, toy_score=VARIED, steps=1100), "b": seeds(6, toy_score=0.5, steps=1000)})
    assert not found(audit(tmp_path / "2", [PAIR], equal), "unequal-budget")
    about_budget = {**PAIR, "metric": "steps"}
    assert not found(audit(tmp_path / "3", [about_budget], rows), "unequal-budget")
    timed = rows_of({"a": seeds(6, toy_score=VARIED, steps=1300, runtime_s=VARIED),
                     "b": seeds(6, toy_score=0.5, steps=1000, runtime_s=1.0)})
    about_time = {**PAIR, "metric": "runtime_s"}
    assert not found(audit(tmp_path / "4", [about_time], timed), "unequal-budget")


def test_singular_fits(tmp_path):
    rows = rows_of({"a": seeds(6, toy_score=VARIED, failed_share=[0, 0, 0.5, 0, 0, 0]),
                    "b": seeds(6, toy_score=0.5, failed_share=0.0)})
    (finding,) = found(audit(tmp_path, [PAIR], rows), "singular-fits")
    assert finding.method == "a" and "8.3%" in finding.evidence
    rows = rows_of({"a": seeds(6, toy_score=VARIED, failed_share=[0, 0, 0.2, 0, 0, 0]),
                    "b": seeds(6, toy_score=0.5, failed_share=0.0)})
    assert not found(audit(tmp_path / "2", [PAIR], rows), "singular-fits")


def test_timing_includes_warm_up(tmp_path):
    claim = {**PAIR, "id": "a-faster", "metric": "runtime_s"}
    slow_first = rows_of({"a": seeds(6, toy_score=0.6, runtime_s=[2.0, 1.0, 1.1, 0.9, 1.0, 1.05]),
                          "b": seeds(6, toy_score=0.5, runtime_s=[3.0, 2.0, 2.1, 1.9, 2.0, 2.05])})
    (finding,) = found(audit(tmp_path, [claim], slow_first), "timing-includes-warm-up")
    assert "seed 0" in finding.evidence
    even = rows_of({"a": seeds(6, toy_score=0.6, runtime_s=[1.0, 1.0, 1.1, 0.9, 1.0, 1.05]),
                    "b": seeds(6, toy_score=0.5, runtime_s=[2.0, 2.0, 2.1, 1.9, 2.0, 2.05])})
    assert not found(audit(tmp_path / "2", [claim], even), "timing-includes-warm-up")


def test_acknowledged_findings_stay_shown_and_no_longer_fail(tmp_path, capsys):
    rows = rows_of({"a": seeds(4, toy_score=VARIED[:4]), "b": seeds(4, toy_score=0.5)})
    spec = toy_spec([PAIR])
    write_folder(tmp_path / "toy", spec, rows)
    (tmp_path / "toy" / "metrics.json").write_text(json.dumps(METRICS))
    assert main(["audit", str(tmp_path / "toy")]) == 1
    out = capsys.readouterr().out
    assert "toy a-wins too-few-independent-pairs: 4 independent pairs" in out and "1 open" in out
    spec["audit"] = {"acknowledge": [{"rule": "too-few-independent-pairs", "claim": "a-wins", "why": "open"}]}
    write_folder(tmp_path / "ack", spec, rows)
    (tmp_path / "ack" / "metrics.json").write_text(json.dumps(METRICS))
    assert main(["audit", str(tmp_path / "ack"), "--format", "json"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)["folders"]
    assert [(f["rule"], f["acknowledged"]) for f in entry["findings"]] == [("too-few-independent-pairs", "open")]


def test_bad_input_is_exit_2_with_the_place(tmp_path, capsys):
    assert main(["audit", str(tmp_path / "nowhere")]) == 2
    assert "neither a spec file" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["audit", str(tmp_path / "empty")]) == 2
    assert "no results here" in capsys.readouterr().err
    spec = toy_spec([PAIR])
    spec["audit"] = {"acknowledge": [{"rule": "below-trivial", "method": "c", "why": "open"},
                                     {"rule": "too-few-pairs", "why": "open"}]}
    write_folder(tmp_path / "toy", spec, rows_of({"a": seeds(2, toy_score=0.6), "b": seeds(2, toy_score=0.5)}))
    (tmp_path / "toy" / "metrics.json").write_text(json.dumps(METRICS))
    assert main(["audit", str(tmp_path / "toy")]) == 2
    assert "toy/spec.yaml: $.audit.acknowledge.1.rule: no audit rule 'too-few-pairs'" in capsys.readouterr().err
    # a method or claim this profile lacks is no error (profiles replace claims): it acknowledges nothing, said so
    spec["audit"]["acknowledge"].pop()
    write_folder(tmp_path / "ok", spec, rows_of({"a": seeds(6, toy_score=VARIED), "b": seeds(6, toy_score=0.5)}))
    (tmp_path / "ok" / "metrics.json").write_text(json.dumps(METRICS))
    assert main(["audit", str(tmp_path / "ok")]) == 0
    assert ("ok note: audit.acknowledge[0] (rule below-trivial, method c) acknowledges no finding here"
            in capsys.readouterr().out)


def training_rows(curves_a: list[list[float]], curves_b: list[list[float]]) -> list[dict]:
    rows = []
    for method, curves in (("a", curves_a), ("b", curves_b)):
        for seed, ys in enumerate(curves):
            x = [(i + 1) / len(ys) for i in range(len(ys))]
            rows.append({"dataset": "easy", "method": method, "seed": seed, "status": "ok",
                         "metrics": {"toy_score": 0.6 + 0.01 * seed if method == "a" else 0.5, "train_loss": ys[-1]},
                         "curves": {"train_loss": {"x": x, "y": ys, "x_label": "fraction", "y_label": "train_loss",
                                                   "theory": None}}})
    return rows


def test_unconverged(tmp_path):
    METRICS["train_loss"] = {"goal": "min", "unit": "", "about": "training loss", "role": "training-objective",
                             "tolerance": 0.01}
    flat = [1.0, 0.5, 0.3, 0.25, 0.22, 0.21, 0.2, 0.2, 0.2, 0.2]
    falling = [1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1]  # the last fifth still gains 0.2
    try:
        rows = training_rows([flat] * 6, [falling] * 6)
        (finding,) = found(audit(tmp_path, [PAIR], rows), "unconverged")
        assert finding.claim == "a-wins" and "b's train_loss still improved" in finding.evidence
        assert "on 6 of 6 cells" in finding.evidence and "a's" not in finding.evidence
        assert not found(audit(tmp_path / "2", [PAIR], training_rows([flat] * 6, [flat] * 6)), "unconverged")
        # ending at the trivial level (the objective's chance level) is unconverged however flat the end
        at_chance = found(audit(tmp_path / "3", [PAIR], training_rows([flat] * 6, [flat] * 6),
                                chance={"easy": {"train_loss": 0.2}}), "unconverged")
        assert len(at_chance) == 1 and "no better than its chance level" in at_chance[0].evidence
    finally:
        del METRICS["train_loss"]


def test_a_training_log_keeps_ten_fixed_fractions():
    from harness.tasks.training import TrainingLog

    log = TrainingLog("train_loss", budget=1000)
    assert [s for s in range(1000) if log.due(s)] == [99, 199, 299, 399, 499, 599, 699, 799, 899, 999]
    for step in range(1000):
        log.record(step, 1000 - step)
    (curve,) = log.curves().values()
    assert list(curve.x) == [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0] and log.final == 1
    short = TrainingLog("loss", budget=4)  # fewer steps than points: every step, at its fraction
    assert [s for s in range(4) if short.due(s)] == [0, 1, 2, 3]
    for step in range(4):
        short.record(step, step)
    assert list(short.curves()["loss"].x) == [0.25, 0.5, 0.75, 1.0]


def test_a_catalogue_declares_roles_and_a_training_objective_its_tolerance():
    from harness.registry import Registry, RegistryError

    def catalogue(**row):
        return {"metrics": {"loss": {"goal": "min", "unit": "", "about": "loss", **row}}}

    assert Registry([("fam", catalogue(role="training-objective", tolerance=0.01))]).metrics["loss"].tolerance == 0.01
    assert Registry([("fam", catalogue(role="budget"))]).metrics["loss"].role == "budget"
    with pytest.raises(RegistryError, match="role must be one of budget, certificate"):
        Registry([("fam", catalogue(role="cost"))])
    with pytest.raises(RegistryError, match="a training objective .* states its tolerance"):
        Registry([("fam", catalogue(role="training-objective"))])
    with pytest.raises(RegistryError, match="states its tolerance, a number ≥ 0, and no other metric does"):
        Registry([("fam", catalogue(tolerance=0.1))])


def test_timing_within_noise(tmp_path):
    claim = {**PAIR, "id": "a-faster", "metric": "runtime_s"}
    noisy = rows_of({"a": seeds(6, toy_score=0.6, runtime_s=[1.0, 1.02, 0.98, 1.01, 0.99, 1.0], runtime_s_spread=0.2),
                     "b": seeds(6, toy_score=0.5, runtime_s=[1.1, 1.12, 1.08, 1.11, 1.09, 1.1], runtime_s_spread=0.2)})
    (finding,) = found(audit(tmp_path, [claim], noisy), "timing-within-noise")
    assert "within the spread of their repeats (0.2 s" in finding.evidence
    quiet = [dict(r, metrics={**r["metrics"], "runtime_s_spread": 0.01}) for r in noisy]
    assert not found(audit(tmp_path / "2", [claim], quiet), "timing-within-noise")


def test_the_timing_helper_excludes_the_warm_up_and_takes_medians():
    from harness.tasks.timing import time_call

    calls = []

    def work(n):
        calls.append(n)
        return sum(range(n))

    result, timing = time_call(work, 10_000, repeats=5, warmup=2)
    assert result == sum(range(10_000)) and len(calls) == 7 and (timing.repeats, timing.warmup) == (5, 2)
    assert timing.wall_s > 0 and timing.cpu_s >= 0 and timing.spread_s >= 0
    assert set(timing.metrics("fit_s")) == {"fit_s", "fit_s_cpu", "fit_s_spread"}
    synced = []
    time_call(work, 10, repeats=3, warmup=0, sync=lambda: synced.append(1))
    assert len(synced) == 6  # before and after each timed call


def test_a_super_linear_bound_reads_the_top_octave(tmp_path):
    """Cost n² + 500 n over n = 100 … 3200: one slope over every size is bent below 2 by the linear term (1.53);
    over the top octave it is nearer 2 (1.82). The exponent bound at_least 1.7 holds only on the top octave, and
    the audit flags the claim that reads one slope over every size."""
    from harness.claims import check_claim
    from harness.results_table import table_of_rows

    sizes = [100, 200, 400, 800, 1600, 3200]
    rows = [{"dataset": f"n{n}", "method": "a", "seed": seed, "status": "ok", "dataset_params": {"n": n},
             "metrics": {"runtime_s": (n * n + 500 * n) * (1 + 0.01 * seed)}} for n in sizes for seed in range(5)]
    claim = {"id": "quadratic", "kind": "scaling", "says": "a's time grows at least like n^1.7", "methods": ["a"],
             "metric": "runtime_s", "size": "n", "at_least": 1.7}
    whole = check_claim(claim, table_of_rows(rows), "min")
    top = check_claim({**claim, "fit": "top-octave"}, table_of_rows(rows), "min")
    assert whole.verdict == "not reproduced" and top.verdict == "reproduced"
    (exponent,) = whole.exponents
    assert 1.52 < exponent.mean < 1.53 and 1.81 < exponent.top_octave < 1.82
    assert "top octave" in exponent.text() and "1.5 decades" in whole.sizes_text()

    def folder_with(claim_entry, name):
        spec = toy_spec([claim_entry])
        spec["datasets"] = [{"name": "toy-target", "id": f"n{n}", "params": {"n": n}} for n in sizes]
        write_folder(tmp_path / name, spec, rows)
        lines = [json.loads(line) for line in (tmp_path / name / "runs.jsonl").read_text().splitlines()]
        for line in lines:
            line["dataset_params"] = {"n": int(line["dataset"][1:])}
        (tmp_path / name / "runs.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
        (tmp_path / name / "metrics.json").write_text(json.dumps(METRICS))
        return found(audit_board(compute(tmp_path / name), "toy"), "short-scaling-range")

    (finding,) = folder_with(claim, "whole")
    assert "super-linear bound (at least 1.7) read off one slope" in finding.evidence and "a 1.82" in finding.evidence
    (finding,) = folder_with({**claim, "fit": "top-octave"}, "top")  # only the range (1.5 decades) is left
    assert "super-linear" not in finding.evidence and "1.51 decades" in finding.evidence


def test_the_page_has_an_audit_section_and_each_claim_its_findings(tmp_path):
    from harness.report.folder import write_leaderboard

    rows = rows_of({"a": seeds(4, toy_score=VARIED[:4]), "b": seeds(4, toy_score=0.5)})
    margin = {**PAIR, "id": "a-by-a-margin", "margin": 0.01}
    spec = toy_spec([PAIR, margin])
    spec["audit"] = {"acknowledge": [{"rule": "margin-after-run", "claim": "a-by-a-margin", "why": "the field's 1 point"}]}
    write_folder(tmp_path / "toy", spec, rows)
    (tmp_path / "toy" / "metrics.json").write_text(json.dumps(METRICS))
    write_leaderboard(tmp_path / "toy")
    page = (tmp_path / "toy" / "leaderboard.md").read_text()
    audit = page[page.index("## Audit"):]
    assert "3 findings: 1 acknowledged by the spec (its reason beside), 2 open." in audit
    assert "| `margin-after-run` | `a-by-a-margin` | its margin 0.01 does not say where it comes from" in audit
    assert "| the field's 1 point |" in audit and "| **open** |" in audit
    assert "**reproduced** (audit: too-few-independent-pairs) |" in page[:page.index("## Audit")]
    record = json.loads((tmp_path / "toy" / "claims.json").read_text())
    assert [(f["rule"], f["claim"], f["acknowledged"]) for f in record["audit"]] == [
        ("too-few-independent-pairs", "a-wins", None), ("too-few-independent-pairs", "a-by-a-margin", None),
        ("margin-after-run", "a-by-a-margin", "the field's 1 point")]
    assert "(audit:" not in (tmp_path / "toy" / "leaderboard.csv").read_text()
    clean = toy_spec([PAIR])
    write_folder(tmp_path / "clean", clean, rows_of({"a": seeds(6, toy_score=VARIED), "b": seeds(6, toy_score=0.5)}))
    (tmp_path / "clean" / "metrics.json").write_text(json.dumps(METRICS))
    write_leaderboard(tmp_path / "clean")
    assert "## Audit\n\n`harness audit`'s methodology lint" in (tmp_path / "clean" / "leaderboard.md").read_text()
    assert "It finds none." in (tmp_path / "clean" / "leaderboard.md").read_text()


def test_a_spec_whose_claims_read_a_metric_its_folder_never_recorded_is_bad_input(tmp_path, toy_env, write_spec,
                                                                                   capsys):
    from conftest import TOY_SPEC

    out = tmp_path / "out"
    out.mkdir()
    write_folder(out / "toy", toy_spec([PAIR]), rows_of({"a": seeds(6, toy_score=VARIED), "b": seeds(6, toy_score=0.5)}))
    (out / "toy" / "metrics.json").write_text(json.dumps(METRICS))
    spec = write_spec(TOY_SPEC.replace("than: toy-constant, metric: toy_score", "than: toy-constant, metric: toy_loss"))
    assert main(["audit", str(spec), "--out", str(out), "--profile", "quick"]) == 2
    err = capsys.readouterr().err
    assert "its claims read toy_loss, which" in err and "has never recorded; run `harness run" in err
    assert "Traceback" not in err


def test_harness_validate_names_an_acknowledgement_of_no_rule_with_its_line(toy_env, write_spec, capsys):
    from conftest import TOY_SPEC

    text = TOY_SPEC.replace("profiles:\n", "audit:\n  acknowledge:\n    - {rule: below-trivail, why: open}\nprofiles:\n")
    assert main(["validate", str(write_spec(text))]) == 2
    line = next(i for i, t in enumerate(text.splitlines(), start=1) if "below-trivail" in t)
    assert f"toy.yaml:{line}:" in (err := capsys.readouterr().err) and "no audit rule 'below-trivail'" in err
    assert err.count("below-trivail") == 1  # once, though every profile inherits it
    assert main(["validate", str(write_spec(text.replace("below-trivail", "below-trivial")))]) == 0
