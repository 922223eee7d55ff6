"""A paired claim's cells as arrays (harness.claims.paired._Pairs, issue 25's 1M-row leaderboard) against the dicts
of :func:`paired_cells`, :func:`replicates` and :func:`per_dataset_evidence`: the same cells, pairs, units and
per-dataset evidence, float for float, on random tables (rows re-run, missing and NaN metrics, failures, datasets
named by the claim or not, both replications, both goals), and the verdict a claim gets either way."""
from __future__ import annotations

import json
import math
import random

import pytest

from harness.claims.base import VerdictMixin
from harness.claims.paired import _Pairs, paired_cells, paired_verdict, per_dataset_evidence, replicates
from harness.results_table import table_of_rows


def random_table(seed: int, integer: bool = False, devices=("cpu: X (2 cores)",)):
    rng = random.Random(seed)
    datasets = [rng.choice(["d", "e", "f10", "f9", "g"]) + str(k) for k in range(rng.randint(1, 8))]
    rows = []
    for i in range(rng.randint(0, 300)):
        value = rng.randint(-5, 5) if integer else rng.choice([rng.gauss(0, 1), 0.25, 1e-13, math.nan])
        rows.append({"key": str(i), "status": rng.choice(["ok"] * 8 + ["failed"]),
                     "dataset": rng.choice(datasets), "method": rng.choice(["a", "b", "c"]),
                     "seed": rng.choice([0, 1, 2, 3, 7, -2, 10 ** 12]), "device": rng.choice(devices),
                     "metrics": {"m": value} if rng.random() < 0.9 else {}})
    claim = {"id": "c", "says": "a beats b", "better": "a", "than": "b", "metric": "m"}
    if rng.random() < 0.4:
        claim["datasets"] = rng.sample(datasets, rng.randint(1, len(datasets)))
    order = rng.sample(datasets, rng.randint(0, len(datasets)))
    return table_of_rows(rows), claim, order


@pytest.mark.parametrize("seed", range(80))
@pytest.mark.parametrize("goal", ["max", "min"])
def test_the_arrays_give_the_dicts_numbers(seed, goal):
    rows, claim, order = random_table(seed)
    pairs = _Pairs.of(claim, rows, goal)
    cells = paired_cells(claim, rows, goal)
    assert repr(pairs.cells()) == repr(cells)
    for replicate in ("seed", "dataset-seed"):
        assert repr(pairs.replicates(replicate)) == repr(replicates(cells, replicate))
    assert repr(pairs.per_dataset(order)) == repr(per_dataset_evidence(cells, order))
    with pytest.raises(ValueError, match="replicate 'x'"):
        pairs.replicates("x")


@pytest.mark.parametrize("seed", range(20))
def test_a_verdict_is_the_same_either_way(seed, monkeypatch):
    rows, claim, order = random_table(seed)
    claim = {**claim, "replicate": random.Random(seed).choice(["seed", "dataset-seed"]), "min_pairs": 2}
    by_arrays = paired_verdict(claim, rows, "max", order)
    monkeypatch.setattr(_Pairs, "of", classmethod(lambda cls, *args: None))
    assert repr(paired_verdict(claim, rows, "max", order)) == repr(by_arrays)
    by_arrays.margin_from = "a note"  # an attribute check_claim may set
    record = by_arrays.to_dict()  # the evidence copied field by field: what dataclasses.asdict gave
    assert json.dumps(record) == json.dumps(VerdictMixin.to_dict(by_arrays)) and record["margin_from"] == "a note"


def test_integer_metrics_and_several_device_classes_keep_the_dicts():
    """A difference of two integers is an integer, and a cell measured on two classes is the mean of its classes'
    differences: both are left to paired_cells."""
    rows, claim, _ = random_table(1, integer=True)
    assert _Pairs.of(claim, rows, "max") is None
    rows, claim, _ = random_table(1, devices=("cpu: X (2 cores)", "cuda: Y (GPU 0)"))
    assert _Pairs.of(claim, rows, "max") is None
