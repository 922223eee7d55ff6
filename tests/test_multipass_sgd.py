"""The multipass-sgd spec's task (``sco.multipass``): the simplified hard instance's formulas pinned, its oracle's
subgradients checked against the subgradient inequality, the smooth control's closed forms, the loaders' errors."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from baselines.one_pass_sgd import OnePassSGD
from baselines.zero_point import ZeroPoint
from components.projected_sgd import sample_order, sgd_path
from harness.tasks.base import Context, DataError
from harness.tasks.sco.multipass import (
    TASK,
    FeldmanOracle,
    Problem,
    ball_least_squares_minimum,
    expected_max,
    feldman_blocks,
    feldman_constants,
    feldman_losses,
    guide,
    least_squares_losses,
    least_squares_sphere,
    predicted_excess,
    project_ball,
    rate,
    scores,
)
from implementations.multipass_sgd import MultiPassSGD


def context(seed: int = 0, dataset: str = "hard") -> Context:
    return Context(seed=seed, split="test", dataset=dataset, device="cpu", threads=1, data_dir=None, precision="fp64")


def small_instance(oracle: str = "adversarial", seed: int = 0, **params):
    return feldman_blocks(context(seed), **{"n": 6, "dim": 320, "packing": 4, "oracle": oracle, **params})


def loss(instance, alpha, c, w, i):
    """f(w, V_i) written out from its definition, for the subgradient inequality."""
    members = np.flatnonzero(instance.masks[i])
    top = max([c] + [float(instance.packing[u] @ w) for u in members])
    return top / math.sqrt(instance.dim) + alpha * guide(w, instance.block)[0]


# --------------------------------------------------------------------------- formulas


def test_expected_max_is_exact_against_every_subset():
    rng = np.random.default_rng(3)
    s = rng.normal(size=8)
    c = 0.1
    brute = np.mean([max([c] + [s[u] for u in range(8) if bits[u]]) for bits in itertools.product([0, 1], repeat=8)])
    assert expected_max(s, c) == pytest.approx(brute, abs=1e-14)


def test_guide_is_the_max_over_sets_of_at_most_b_coordinates():
    rng = np.random.default_rng(4)
    w = rng.normal(size=7)
    block = 3
    brute = max([0.0] + [-w[list(I)].sum() / math.sqrt(block) for r in range(1, block + 1)
                         for I in itertools.combinations(range(7), r)])
    value, active = guide(w, block)
    assert value == pytest.approx(brute, abs=1e-14)
    assert -w[active].sum() / math.sqrt(block) == pytest.approx(brute, abs=1e-14)
    assert guide(np.abs(w), block) == (0.0, pytest.approx(np.array([], dtype=int)))


def test_prediction_is_min_eta_sqrt_t_over_16_sqrt_3k_when_b_is_3d_over_n():
    n, d = 10, 2000
    block = 3 * d // n
    for k in (2, 3, 4, 5):
        for eta in (n ** -0.5, n ** -0.75, 1 / n):
            alpha, c = feldman_constants(eta, k * n, d, block)
            assert alpha == min(1.0, 1 / (eta * math.sqrt(k * n)))
            assert c == pytest.approx(eta * alpha * 5 * d / (16 * math.sqrt(block)))
            full = predicted_excess(eta, alpha, c, d, block, 7 * d // 16)
            assert full == pytest.approx(min(eta * math.sqrt(k * n), 1) / (16 * math.sqrt(3 * k)), rel=1e-12)
    alpha, c = feldman_constants(n ** -0.5, 2 * n, d, block)
    assert predicted_excess(n ** -0.5, alpha, c, d, block, 7 * d // 16) == pytest.approx(0.0255155, abs=1e-7)
    # one block of 600 < 5d/16 = 625 coordinates: no excess until the walk is over
    assert predicted_excess(n ** -0.5, alpha, c, d, block, block) == 0.0
    # a smaller step than the instance's η₀ walks to a lower height: under 5/7 of η₀ the walk stays under c
    assert predicted_excess(0.7 * n ** -0.5, alpha, c, d, block, 7 * d // 16) == 0.0
    assert predicted_excess(0.9 * n ** -0.5, alpha, c, d, block, 7 * d // 16) == pytest.approx(
        0.5 * (0.9 * 7 - 5) / 16 * n ** -0.5 * alpha * d / math.sqrt(block) / math.sqrt(d))


def test_rate_is_one_pass_then_multi_pass_and_capped():
    assert rate(0.1, 10, 10) == 1.0  # 1/(ηt) + η = 1.1, capped
    assert rate(0.5, 10, 10) == pytest.approx(1 / 5 + 0.5)
    assert rate(0.1, 40, 10) == pytest.approx(min(1.0, 1 / 4 + 0.1 * math.sqrt(40)))
    assert rate(0.01, 40, 10) == 1.0
    assert rate(0.3, 0, 10) == 1.0


# --------------------------------------------------------------------------- the instance and its oracle


def test_packing_rows_have_7d_over_16_ones_and_u0_lies_in_no_training_sample():
    inst = small_instance()
    assert set(inst.packing.sum(axis=1)) == {7 * 320 // 16}
    assert inst.packing.shape == (4 * 2 ** 6, 320) and inst.masks.shape == (6, 256)
    assert inst.free >= 0 and not inst.masks[:, inst.free].any()
    assert not (~inst.masks[:, :inst.free]).all(axis=0).any(), "u0 is the first vector in no sample"
    gram = inst.packing.astype(int) @ inst.packing.T.astype(int)
    np.fill_diagonal(gram, 0)
    assert gram.max() <= 5 * 320 // 16


def test_adversarial_subgradients_satisfy_the_subgradient_inequality_along_the_walk():
    inst = small_instance()
    method = MultiPassSGD(epochs=2)
    eta, steps = method.plan(inst.n)
    alpha, c = inst.alpha, inst.floor
    assert (alpha, c) == feldman_constants(eta, steps, inst.dim, inst.block), "the instance is built for K0 = 2"
    oracle = FeldmanOracle(inst)
    rng = np.random.default_rng(5)
    w = np.zeros(inst.dim)
    moved = 0
    for i in sample_order(inst.n, steps, "single-shuffle", np.random.default_rng(6)):
        g = oracle(w, int(i))
        for _ in range(20):
            other = project_ball(w + rng.normal(scale=0.05, size=inst.dim) * rng.integers(0, 2, size=inst.dim))
            assert loss(inst, alpha, c, other, i) >= loss(inst, alpha, c, w, i) + g @ (other - w) - 1e-12
        moved += bool(g.any())
        w = project_ball(w - eta * g)
    assert moved == len(inst.walk_blocks()) >= 1, "the walk takes one step per block of u0's support"
    assert np.allclose(w, eta * alpha / math.sqrt(inst.block) * inst.packing[inst.free])


def test_oracle_returns_the_active_terms_off_the_walk():
    inst = small_instance(oracle="lazy")
    alpha, c = 0.5, 0.01
    oracle = FeldmanOracle(inst, alpha, c)
    w = np.zeros(inst.dim)
    w[0] = -0.2
    g = oracle(w, 0)
    expected = np.zeros(inst.dim)
    expected[0] = -alpha / math.sqrt(inst.block)
    np.testing.assert_allclose(g, expected)  # the guide term only: with w ≤ 0 the floor c wins in the max term
    w = 0.05 * inst.packing[np.flatnonzero(inst.masks[1])[0]].astype(float)
    g = oracle(w, 1)
    assert g.max() > 0 and np.isclose(np.linalg.norm(g), math.sqrt(7 * 320 / 16) / math.sqrt(320))


def test_population_excess_matches_fresh_samples():
    inst = small_instance()
    alpha, c = 0.7, 0.02
    rng = np.random.default_rng(8)
    w = np.zeros(inst.dim)
    w[inst.packing[inst.free] == 1] = 0.004
    w[inst.packing[3] == 1] += 0.002
    population, empirical, gap = feldman_losses(inst, alpha, c, w)
    assert gap == pytest.approx(population - empirical)
    s = inst.packing @ w
    fresh = rng.random((20000, s.size)) < 0.5
    values = np.maximum(np.where(fresh, s, -np.inf).max(axis=1), c) / math.sqrt(inst.dim) - c / math.sqrt(inst.dim)
    assert population == pytest.approx(values.mean(), abs=5 * values.std() / math.sqrt(values.size))
    assert population > 0.001 and empirical >= 0


def test_two_passes_overfit_one_pass_and_the_lazy_oracle_do_not():
    inst = small_instance()
    ctx = context()
    two = TASK.evaluate(MultiPassSGD(epochs=2), inst, ctx)
    eta, _ = MultiPassSGD(epochs=2).plan(inst.n)
    predicted = predicted_excess(eta, inst.alpha, inst.floor, inst.dim, inst.block, 7 * inst.dim // 16)
    assert two.metrics["excess"] == pytest.approx(predicted, rel=1e-9)
    assert two.metrics["prediction_error"] < 1e-15
    assert two.metrics["steps"] == 2 * inst.n
    assert two.metrics["train_excess"] == 0.0
    assert two.metrics["excess_average"] == 0.0, "without App. B's shift the full average shows no excess"
    assert two.curves["excess"].y[1] == 0.0 and two.curves["excess"].theory[-1] == pytest.approx(predicted)
    one = TASK.evaluate(OnePassSGD(), inst, ctx)
    assert one.metrics["excess"] == 0.0
    lazy = TASK.evaluate(MultiPassSGD(epochs=5), small_instance(oracle="lazy"), ctx)
    assert lazy.metrics["excess"] == 0.0 and lazy.curves["excess"].theory == [0.0] * 6


def test_with_replacement_walks_only_after_every_sample_was_drawn():
    inst = small_instance()
    method = MultiPassSGD(epochs=5, order="with-replacement")
    eta, steps = method.plan(inst.n)
    oracle = FeldmanOracle(inst)
    problem = Problem(inst.n, inst.dim, eta, steps, oracle, project_ball)
    path = method.run(problem, np.random.default_rng(2))
    cover = oracle.cover_step
    assert cover == next(t + 1 for t in range(steps) if len(set(oracle.order[:t + 1])) == inst.n)
    assert not path[cover].any() and path[cover + 1].any()


# --------------------------------------------------------------------------- the smooth control


def test_least_squares_population_excess_is_half_the_distance_over_d():
    inst = least_squares_sphere(context(dataset="smooth"), n=6, dim=5, noise=0.3)
    rng = np.random.default_rng(9)
    w = project_ball(rng.normal(size=5))
    x = rng.normal(size=(200000, 5))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    eps = rng.choice([-1.0, 1.0], size=x.shape[0])
    population = np.mean(0.5 * (x @ w - x @ inst.w_star - 0.3 * eps) ** 2)
    excess, empirical, gap = least_squares_losses(inst, w, 0.0)
    assert excess == pytest.approx(population - 0.5 * 0.3 ** 2, rel=0.02)
    train = 0.5 * np.mean((inst.x @ w - inst.y) ** 2)
    assert empirical == pytest.approx(train) and gap == pytest.approx(population - train, abs=0.002)


def test_ball_least_squares_minimum_is_optimal_on_the_ball():
    rng = np.random.default_rng(10)
    x = rng.normal(size=(6, 12))
    y = 3 * rng.normal(size=6)  # the interpolant has norm > 1: the constraint is active
    best = ball_least_squares_minimum(x, y)
    for _ in range(500):
        w = rng.normal(size=12)
        w /= max(1.0, np.linalg.norm(w)) * rng.uniform(1, 3)
        assert 0.5 * np.mean((x @ w - y) ** 2) >= best - 1e-12
    small = 0.01 * y
    w_min_norm = np.linalg.pinv(x) @ small
    assert np.linalg.norm(w_min_norm) < 1 and ball_least_squares_minimum(x, small) == pytest.approx(0.0, abs=1e-20)


# --------------------------------------------------------------------------- methods and loaders


def test_single_shuffle_repeats_one_permutation():
    order = sample_order(5, 15, "single-shuffle", np.random.default_rng(1))
    assert sorted(order[:5]) == list(range(5)) and list(order[:5]) == list(order[5:10]) == list(order[10:])
    drawn = sample_order(5, 1000, "with-replacement", np.random.default_rng(1))
    assert set(drawn) == set(range(5))
    with pytest.raises(ValueError, match="order = 'cyclic'"):
        sample_order(5, 10, "cyclic", np.random.default_rng(1))


def test_sgd_path_projects_onto_the_unit_ball():
    problem = Problem(2, 3, 1.0, 4, lambda w, i: -np.ones(3), project_ball)
    path = sgd_path(problem, np.array([0, 1, 0, 1]))
    assert path.shape == (5, 3) and np.allclose(np.linalg.norm(path[1:], axis=1), 1.0)


def test_plans_are_eta_n_to_minus_exponent_and_t_kn():
    assert MultiPassSGD(epochs=3, step_exponent=0.75).plan(16) == (16 ** -0.75, 48)
    assert OnePassSGD(step_exponent=1.0).plan(16) == (1 / 16, 16)


@pytest.mark.parametrize("params, match", [
    ({"n": 1}, "n = 1"),
    ({"dim": 100}, "dim = 100"),
    ({"packing": 0}, "packing = 0"),
    ({"oracle": "min-norm"}, "oracle = 'min-norm'"),
    ({"block": 10, "n": 4, "dim": 320}, "block = 10"),
    ({"n": 20, "dim": 2000}, "packing · 2\\^n · dim"),
    ({"design_epochs": 0}, "design_epochs = 0"),
    ({"design_step_exponent": 0}, "design_step_exponent = 0"),
])
def test_feldman_loader_names_the_bad_parameter(params, match):
    with pytest.raises(DataError, match=match):
        feldman_blocks(context(), **params)


@pytest.mark.parametrize("params, match", [({"n": 1}, "n = 1"), ({"dim": 0}, "dim = 0"), ({"noise": 2.0}, "noise = 2.0")])
def test_least_squares_loader_names_the_bad_parameter(params, match):
    with pytest.raises(DataError, match=match):
        least_squares_sphere(context(), **params)


def test_task_refuses_iterates_outside_the_ball():
    class Wild(OnePassSGD):
        def run(self, problem, rng):
            path = np.zeros((problem.steps + 1, problem.dim))
            path[1:, 0] = 2.0
            return path

    with pytest.raises(ValueError, match="stay in the unit ball"):
        TASK.evaluate(Wild(), least_squares_sphere(context(), n=4, dim=3), context())


# --------------------------------------------------------------------------- one instance for every arm; the seed's draw


def test_every_arm_runs_on_the_instance_the_dataset_names():
    """α and c belong to the dataset (built for η₀ = n^-½, T₀ = 2n), not to the method: K = 5 walks to the same
    height as K = 2 on it, where an instance rebuilt for K = 5 (α = 1/√5) would give a smaller excess."""
    inst = small_instance()
    ctx = context()
    assert inst.alpha == pytest.approx(1 / math.sqrt(2)) and inst.design_eta == pytest.approx(6 ** -0.5)
    two = TASK.evaluate(MultiPassSGD(epochs=2), inst, ctx).metrics["excess"]
    five = TASK.evaluate(MultiPassSGD(epochs=5), inst, ctx).metrics["excess"]
    assert five == pytest.approx(two, rel=1e-12) and two > 0
    eta = 6 ** -0.5
    alpha5, c5 = feldman_constants(eta, 5 * 6, inst.dim, inst.block)
    assert predicted_excess(eta, alpha5, c5, inst.dim, inst.block, 7 * inst.dim // 16) < 0.7 * five


def test_design_step_exponent_sets_alpha_and_the_floor():
    inst = feldman_blocks(context(dataset="eta"), n=10, dim=2000, packing=2, design_step_exponent=0.75)
    eta = 10 ** -0.75
    assert (inst.alpha, inst.floor) == feldman_constants(eta, 20, 2000, 600) and inst.alpha == 1.0
    result = TASK.evaluate(MultiPassSGD(epochs=2, step_exponent=0.75), inst, context(dataset="eta")).metrics
    if inst.free >= 0:
        assert result["excess"] == pytest.approx(min(eta * math.sqrt(20), 1) / (16 * math.sqrt(6)), rel=1e-9)


def test_the_seed_draws_the_sample_and_whether_a_free_vector_exists():
    """|U| = 2^n: a free vector exists with probability 1 − (1 − 2^-n)^(2^n) ≈ 0.63; where none does every arm stays
    at w = 0, the draw the lower bound's "with probability ½" is about."""
    draws = [small_instance(seed=seed, packing=1) for seed in range(12)]
    assert len({d.masks.tobytes() for d in draws}) == 12 and len({d.packing.tobytes() for d in draws}) == 12
    missing = [(seed, d) for seed, d in enumerate(draws) if d.free < 0]
    present = [(seed, d) for seed, d in enumerate(draws) if d.free >= 0]
    assert missing and present
    seed, inst = missing[0]
    result = TASK.evaluate(MultiPassSGD(epochs=5), inst, context(seed)).metrics
    assert result["excess"] == 0.0 and result["prediction_error"] == 0.0
    seed, inst = present[0]
    assert TASK.evaluate(MultiPassSGD(epochs=2), inst, context(seed)).metrics["excess"] > 0.01


def test_sparse_scores_equal_the_dense_product():
    inst = small_instance()
    w = np.random.default_rng(11).normal(size=inst.dim)
    np.testing.assert_allclose(scores(inst.packing, w, inst.sparse), inst.packing @ w, atol=1e-12)
    np.testing.assert_allclose(scores(inst.packing, w), inst.packing @ w, atol=1e-12)
    assert not scores(inst.packing, np.zeros(inst.dim), inst.sparse).any()


def test_the_trivial_answer_takes_no_step():
    ctx = context()
    hard = TASK.evaluate(ZeroPoint(), small_instance(), ctx)
    assert hard.metrics["steps"] == 0 and hard.metrics["excess"] == hard.metrics["excess_average"] == 0.0
    assert hard.curves["excess"].x == [0]
    smooth = least_squares_sphere(context(dataset="smooth"), n=6, dim=5)
    level = TASK.evaluate(ZeroPoint(), smooth, ctx).metrics["excess"]
    assert level == pytest.approx(1 / (2 * 5))  # ‖w*‖² / (2d) with ‖w*‖ = 1
    assert TASK.evaluate(OnePassSGD(), smooth, ctx).metrics["steps"] == 6


def test_smooth_control_replays_sgd_on_the_indices_asked():
    smooth = least_squares_sphere(context(dataset="smooth"), n=6, dim=5)
    assert TASK.evaluate(MultiPassSGD(epochs=3), smooth, context()).metrics["prediction_error"] < 1e-15

    class DoubleStep(MultiPassSGD):  # asks the oracle as SGD does, then moves twice as far
        def run(self, problem, rng):
            from dataclasses import replace
            return super().run(replace(problem, eta=2 * problem.eta), rng)

    assert TASK.evaluate(DoubleStep(epochs=3), smooth, context()).metrics["prediction_error"] > 1e-6


def test_the_catalogue_declares_the_zero_point_trivial():
    from harness.registry import default_registry

    assert default_registry().trivial_methods("sco.multipass") == ["zero-point"]
