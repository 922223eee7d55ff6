"""spatiotemporal.crossdomain and SynEVO: the reordering, elastic schedule, extractor loss and gate distance against
their definitions; the groups' spans, scalers and the zero-shot period that never leaks; the real-data loader on
files the test writes; the backbone's shapes and graph; equal budgets and the gate's bookkeeping."""
from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from baselines.spatiotemporal import (FullTarget, Independent, Joint, LastValue, Sequential,  # noqa: E402
                                      split_budget)
from harness.tasks.base import Context, DataError, DataUnavailable  # noqa: E402
from harness.tasks.spatiotemporal import crossdomain as cd  # noqa: E402
from implementations.synevo import SynEVO  # noqa: E402
from implementations.synevo.parts import (co_movement_distance, contrastive_loss, curriculum,  # noqa: E402
                                          elastic, relative_distance, train_extractor)

SMALL = dict(nodes=5, days=10, slots=12, inputs=8, horizon=2, steps=16, batch_size=8, every=2, hidden=4)
SOURCES = dict(SMALL, related=3, unrelated=1, shots=0.3, finetune_steps=4)
PERIODS = dict(SMALL, periods=3)


def test_curriculum_orders_by_gradient_distance_to_the_bench():
    """sum_c = Σ‖∇_i‖², bench = argmin, l = ‖cat_c − cat_bench‖, normalised by the largest, ascending."""
    gradients = {"a": [np.array([3.0, 0.0]), np.array([[0.0]])],  # sum 9
                 "b": [np.array([1.0, 0.0]), np.array([[0.0]])],  # sum 1: the bench
                 "c": [np.array([1.0, 2.0]), np.array([[2.0]])],  # sum 9, distance sqrt(8)
                 "t": [np.array([1.0, 0.0]), np.array([[9.0]])]}  # the target: distance 9 > d_max, clipped
    order, distance = curriculum(gradients, ["a", "b", "c"])
    assert order == ["b", "a", "c"]
    assert distance["b"] == 0.0
    assert distance["a"] == pytest.approx(2.0 / math.sqrt(8.0))
    assert distance["c"] == pytest.approx(1.0)
    assert distance["t"] == 1.0


def test_the_elastic_schedule_is_the_papers_formula_on_normalised_distances():
    p, decay = elastic(0.0, 0.5, 0.05)
    assert p == pytest.approx(0.5 * (1 - math.exp(-1)))
    assert decay == pytest.approx(0.05 * (1 - math.exp(-1)))
    assert elastic(1.0, 0.5, 0.05) == (0.0, 0.0)  # the hardest group: no dropout, no decay
    values = [elastic(d, 0.5, 0.05)[0] for d in np.linspace(0, 1, 11)]
    assert all(a > b for a, b in zip(values, values[1:]))  # harder groups: less regularisation
    with pytest.raises(ValueError, match="normalised distance"):
        elastic(1.5, 0.5, 0.05)


def test_the_extractor_loss_is_the_papers_form_not_hadsells():
    """R = ŷ·D + (1 − ŷ)·max(0, m − D), D already squared and the hinge not squared (m = 1)."""
    d = np.array([0.25, 0.25, 1.5])
    same = np.array([1.0, 0.0, 0.0])
    assert contrastive_loss(d, same).tolist() == [0.25, 0.75, 0.0]
    assert float(contrastive_loss(torch.tensor(0.25), torch.tensor(0.0))) == 0.75  # not Hadsell's ½(1 − √D)²


def test_relative_distance_is_0_for_equal_1_for_uncorrelated_and_2_for_opposite():
    rng = np.random.default_rng(0)
    weight = rng.normal(size=(6, 3))
    a = rng.normal(size=(200, 4, 6))
    assert relative_distance(weight, a, a) == 0.0
    assert relative_distance(weight, a, -a) == pytest.approx(2.0)
    assert relative_distance(weight, a, 5 * rng.normal(size=a.shape)) == pytest.approx(1.0, abs=0.05)
    with pytest.raises(ValueError, match="same days"):
        relative_distance(weight, a, a[:3])


def test_the_gate_distance_sees_co_movement_not_a_shared_profile():
    """Two groups reading one process day by day sit well below 1; an independent group with the same daily
    profile and statistics sits near 1, however large the shared profile (it cancels)."""
    rng = np.random.default_rng(2)
    weight = rng.normal(size=(8, 4))
    profile = 10 * rng.normal(size=(1, 5, 8))
    process = rng.normal(size=(40, 5, 8))
    a = profile + process + 0.3 * rng.normal(size=process.shape)
    related = 2 * profile + process + 0.3 * rng.normal(size=process.shape)
    unrelated = profile + rng.normal(size=process.shape)
    assert co_movement_distance(weight, a, related) < 0.2
    assert co_movement_distance(weight, a, unrelated) == pytest.approx(1.0, abs=0.15)
    assert co_movement_distance(weight, a[:2], related[:2]) < 0.5  # two days (the target's few shots) suffice
    with pytest.raises(ValueError, match="one day only"):
        co_movement_distance(weight, a[:1], related[:1])


def test_the_extractor_learns_to_pull_a_domain_together_and_push_domains_apart():
    """Two domains whose days are noisy copies of their own profile: after training, same-domain pairs sit closer
    than cross-domain pairs (the contrastive loss falls from its start)."""
    rng = np.random.default_rng(1)
    profiles = rng.normal(size=(2, 1, 3, 8))
    segments = [profiles[g] + 0.2 * rng.normal(size=(30, 3, 8)) for g in range(2)]
    weight = train_extractor(segments, dim=4, steps=300, pairs=16, seed=0)
    same = np.mean([np.mean((segments[0][i] @ weight - segments[0][i + 1] @ weight) ** 2) for i in range(29)])
    cross = np.mean([np.mean((segments[0][i] @ weight - segments[1][i] @ weight) ** 2) for i in range(30)])
    assert cross > 0.9 > same


def test_source_groups_spans_and_scalers():
    data = cd.sensor_sources(Context(seed=0, split="test"), **SOURCES)
    assert [g.name for g in data.groups] == ["related-1", "related-2", "unrelated-1"]
    assert data.related == (True, True, False)
    assert data.target.name == "related-3"
    for group in data.groups:  # z-scored on the training span; windows end inside it
        assert abs(float(group.train.y.mean())) < 0.5
        assert group.train.start.max() + SMALL["inputs"] + SMALL["horizon"] <= 6 * 12
        assert group.segments.shape == (6, 5, 12)
    # the few shots are the first whole days (30% of 6 training days = 2), their windows end in them
    assert data.target.days.tolist() == [0, 1]
    assert data.target.train.start.max() + 8 + 2 <= 2 * 12
    # scoring: the test span (days 8-9) on the test split, the tuning span (day 7) on "val", raw labels
    val = cd.sensor_sources(Context(seed=0, split="val"), **SOURCES)
    assert data.scoring.start.min() >= 8 * 12 and val.scoring.start.min() >= 7 * 12
    assert val.scoring.start.max() + 10 <= 8 * 12
    raw = data.scoring.y * data.target_std + data.target_mean
    np.testing.assert_allclose(raw, data.scoring_raw, rtol=1e-4, atol=1e-3)
    np.testing.assert_array_equal(val.groups[0].train.x, data.groups[0].train.x)  # the split changes only scoring


def test_related_domains_co_move_and_the_unrelated_one_does_not():
    data = cd.sensor_sources(Context(seed=0), nodes=10, days=20, related=3, unrelated=1)
    # each sensor's daily profile removed: what is left co-moves across related domains only
    series = {g.name: (g.segments - g.segments.mean(0)).reshape(-1) for g in data.groups}
    related = np.corrcoef(series["related-1"], series["related-2"])[0, 1]
    unrelated = np.corrcoef(series["related-1"], series["unrelated-1"])[0, 1]
    assert related > 0.25 and abs(unrelated) < 0.1, (related, unrelated)


def test_the_zero_shot_period_is_never_in_the_groups_or_the_scaler():
    data = cd.sensor_periods(Context(seed=0), **PERIODS)
    assert [g.name for g in data.groups] == ["related-1:period-1", "related-1:period-2"]
    assert len(data.target.train) == 0 and data.selection is None
    period_len = 12 // 3
    for p, group in enumerate(data.groups):  # a window's period is that of its first forecast step
        assert set(((group.train.start + 8) % 12) // period_len) == {p}
    assert set(((data.scoring.start + 8) % 12) // period_len) == {2}
    series, _ = cd.simulate(Context(seed=0), data.instance.split(":zero-shot")[0], nodes=5, days=10, slots=12,
                            related=1, unrelated=0, radius=0.25, persistence=0.8, noise=0.3, observation=0.1,
                            max_lag=2)
    raw = series["related-1"][:6 * 12].reshape(6, 12, 5)[:, :2 * period_len]  # the training periods only
    assert data.target_mean == pytest.approx(raw.mean())
    assert data.target_std == pytest.approx(raw.std())


def test_loaders_refuse_what_cannot_run():
    context = Context(seed=0)
    for bad, says in (({"shots": 0.0}, "shots"), ({"spans": (0.6, 0.3, 0.2)}, "spans"), ({"inputs": 4}, "inputs"),
                      ({"days": 3}, "days"), ({"target": "nope"}, "target"), ({"persistence": 1.0}, "persistence"),
                      ({"every": 10}, "every")):
        with pytest.raises(DataError, match=says):
            cd.sensor_sources(context, **{**SOURCES, **bad})
    with pytest.raises(DataError, match="periods = 5"):
        cd.sensor_periods(context, **{**PERIODS, "periods": 5})  # 12 slots do not split into 5 periods


def _write_city(folder, days=10, slots=12, nodes=4, domains=("CrowdIn", "TaxiPick", "TaxiDrop")):
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    np.save(folder / "adj.npy", (rng.random((nodes, nodes)) > 0.5).astype(float))
    base = np.sin(np.arange(days * slots) * 2 * np.pi / slots)[:, None] + rng.normal(0, 0.1, (days * slots, nodes))
    for i, name in enumerate(domains):
        np.save(folder / f"{name}.npy", 10 + (i + 1) * base)


def test_city_arrays_reads_the_folder_and_says_what_is_wrong(tmp_path):
    _write_city(tmp_path / "synevo" / "NYC")
    context = Context(seed=0, data_dir=tmp_path)
    small = dict(slots=12, inputs=8, horizon=2, steps=8, finetune_steps=4, batch_size=4, every=2, hidden=4,
                 shots=0.3)
    data = cd.city_arrays(context, city="NYC", target="TaxiDrop", **small)
    assert [g.name for g in data.groups] == ["CrowdIn", "TaxiPick"]
    assert data.diffusion.shape == (4, 4) and np.allclose(data.diffusion.sum(1), 1)
    periods = cd.city_arrays(context, city="NYC", target="CrowdIn", protocol="zero-shot", periods=3,
                             **{**small, "finetune_steps": 0})
    assert len(periods.groups) == 2
    with pytest.raises(DataUnavailable, match="needs real data"):
        cd.city_arrays(Context(seed=0), city="NYC", target="TaxiDrop", **small)
    with pytest.raises(DataUnavailable, match="no file"):
        cd.city_arrays(context, city="CHI", target="TaxiDrop", **small)
    np.save(tmp_path / "synevo" / "NYC" / "Bad.npy", np.zeros((7, 4)))
    with pytest.raises(DataError, match="different lengths"):
        cd.city_arrays(context, city="NYC", target="TaxiDrop", **small)
    with pytest.raises(DataError, match="Missing.npy"):
        cd.city_arrays(context, city="NYC", target="TaxiDrop", domains=["CrowdIn", "Missing"], **small)
    (tmp_path / "synevo" / "NYC" / "Bad.npy").write_bytes(b"not an array")
    with pytest.raises(DataError, match="not a readable"):
        cd.city_arrays(context, city="NYC", target="TaxiDrop", **small)


def test_the_backbone_maps_windows_to_the_horizon_and_uses_the_graph():
    from harness.tasks.spatiotemporal.network import GraphWaveNet, set_dropout

    diffusion = torch.eye(4)
    torch.manual_seed(0)
    network = GraphWaveNet(4, diffusion, inputs=8, horizon=3, hidden=4, blocks=3)
    x = torch.randn(2, 8, 4, 3)
    assert network(x).shape == (2, 3, 4)
    # a change at sensor 0 reaches sensor 1's forecast only through the graph (fixed or adaptive)
    moved = x.clone()
    moved[:, :, 0, 0] += 1.0
    assert not torch.allclose(network(x)[:, :, 1], network(moved)[:, :, 1])
    set_dropout(network, 0.3)
    assert network.dropout.p == 0.3
    with pytest.raises(ValueError, match="probability"):
        set_dropout(network, 1.0)


def test_every_arm_spends_the_same_budget_and_the_budget_is_enforced():
    data = cd.sensor_sources(Context(seed=0), **SOURCES)
    for method in (SynEVO(probe_steps=4, extractor_steps=5), SynEVO(gate=False, probe_steps=4),
                   SynEVO(elasticity="matched", probe_steps=4, extractor_steps=5), Joint(), Sequential(),
                   Independent(), FullTarget()):
        session = cd.CrossDomainSession(data, Context(seed=0))
        method.fit(session)
        assert session.train_steps == SOURCES["steps"], type(method).__name__
    session = cd.CrossDomainSession(data, Context(seed=0))
    session.train(session.new_network(), data.groups[0].train, SOURCES["steps"])
    with pytest.raises(ValueError, match="budget"):
        session.train(session.new_network(), data.groups[0].train, 1)
    assert split_budget(10, 4) == [3, 3, 2, 2]


def test_every_arm_starts_from_the_same_weights():
    data = cd.sensor_sources(Context(seed=0), **SOURCES)
    first = cd.CrossDomainSession(data, Context(seed=0)).new_network()
    second = cd.CrossDomainSession(data, Context(seed=0)).new_network()
    for a, b in zip(first.parameters(), second.parameters()):
        assert torch.equal(a, b)
    other = cd.CrossDomainSession(data, Context(seed=1)).new_network()
    assert not all(torch.equal(a, b) for a, b in zip(first.parameters(), other.parameters()))


def test_the_gate_reports_every_group_and_the_task_counts_admissions():
    data = cd.sensor_sources(Context(seed=0), **SOURCES)
    evaluation = cd.TASK.evaluate(SynEVO(probe_steps=4, extractor_steps=20), data, Context(seed=0))
    curve = evaluation.curves["gate_distance"]
    assert len(curve.y) == 3 and min(curve.y) == 0.0  # the bench: distance 0, always admitted
    metrics = evaluation.metrics
    assert metrics["probe_steps"] == 4 * 4  # three groups and the target
    assert metrics["finetune_steps"] == SOURCES["finetune_steps"]
    no_gate = cd.TASK.evaluate(SynEVO(gate=False, probe_steps=4), data, Context(seed=0)).metrics
    assert no_gate["unrelated_admitted"] == 1.0 and no_gate["related_admitted"] == 1.0
    trivial = cd.TASK.evaluate(LastValue(), data, Context(seed=0)).metrics
    assert trivial["train_steps"] == 0 and trivial["finetune_steps"] == 0


def test_a_rejected_group_leaves_the_container_alone():
    """With κ tiny every group but the bench is rejected: only the bench's visits train the container; each
    rejected group's visits train a network of its own, and the rejected target starts from fresh weights."""
    data = cd.sensor_sources(Context(seed=0), **SOURCES)
    session = cd.CrossDomainSession(data, Context(seed=0))
    names = {id(g.train): g.name for g in data.groups}
    trained = []
    train = session.train
    session.train = lambda network, windows, steps, **kw: (trained.append((id(network), names[id(windows)])),
                                                           train(network, windows, steps, **kw))[1]
    container = SynEVO(kappa=1e-9, probe_steps=4, extractor_steps=5).fit(session)
    assert [r.admitted for r in session.gate.values()] == [True, False, False, False]
    assert session.train_steps == SOURCES["steps"]
    assert isinstance(container, cd.Container)
    bench = next(name for name, report in session.gate.items() if report.admitted)
    shared = {network for network, name in trained if name == bench}
    assert len(shared) == 1  # one container, every visit of the bench
    assert all(network not in shared for network, name in trained if name != bench)
    assert id(container.network) not in shared  # the rejected target: fine-tuned from the initial weights


def test_the_last_value_forecast_and_the_errors():
    data = cd.sensor_sources(Context(seed=0), **SOURCES)
    predicted = cd.forecast(LastValue().fit(cd.CrossDomainSession(data, Context(seed=0))), data.scoring)
    np.testing.assert_array_equal(predicted[:, 0], data.scoring.x[:, -1, :, 0])
    values = cd.errors(np.array([[1.0, 3.0]]), np.array([[2.0, 0.5]]), mape_floor=1.0)
    assert values["mae"] == pytest.approx(1.75)
    assert values["rmse"] == pytest.approx(math.sqrt((1 + 6.25) / 2))
    assert values["mape"] == pytest.approx(50.0)  # the label 0.5 is below the floor


def test_independent_cannot_run_zero_shot_and_bad_settings_are_refused():
    data = cd.sensor_periods(Context(seed=0), **PERIODS)
    with pytest.raises(DataUnavailable, match="zero-shot"):
        Independent().fit(cd.CrossDomainSession(data, Context(seed=0)))
    for bad in (dict(elasticity="other"), dict(p0=1.0), dict(kappa=0.0), dict(cycles=0)):
        with pytest.raises(ValueError, match="SynEVO"):
            SynEVO(**bad).fit(cd.CrossDomainSession(data, Context(seed=0)))


def test_without_reordering_synevo_visits_the_groups_in_the_sequential_baselines_order():
    data = cd.sensor_sources(Context(seed=3), **SOURCES)
    names = {id(g.train): g.name for g in data.groups}

    def visits(method):
        session = cd.CrossDomainSession(data, Context(seed=3))
        seen = []
        train = session.train
        session.train = lambda network, windows, steps, **kw: (seen.append(names[id(windows)]),
                                                               train(network, windows, steps, **kw))[1]
        method.fit(session)
        return seen

    sequential = visits(Sequential())
    assert visits(SynEVO(reorder=False, gate=False, probe_steps=2)) == sequential
    assert sorted(sequential[:3]) == sorted(names.values())  # each group once per cycle
    ordered = visits(SynEVO(gate=False, probe_steps=2))
    gradients = cd.CrossDomainSession(data, Context(seed=3)).group_gradients(2)
    assert ordered[:3] == curriculum(gradients, [g.name for g in data.groups])[0]
