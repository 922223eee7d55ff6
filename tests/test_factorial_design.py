"""design.factorial: Σ(d) and its gradient, the estimator's exact risk, the fractions' orthogonality, the active
rule's objectives, the loader's errors, and one cell end to end."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from baselines.factorial_design import FractionalFactorial, PerturbedDosage, RandomDosage, UniformDosage, fraction
from harness.tasks.base import Context, DataError
from harness.tasks.design.factorial import (
    TASK,
    DesignProblem,
    boolean_interactions,
    combinations,
    expected_information,
    expected_information_gradient,
    features,
    fit,
    floor_risk,
    interaction_sets,
    theory_risk,
)
from harness.tasks.evaluation import Evaluation
from implementations.factorial_design import (ActiveLambdaMin, ActiveTrace, HalfDosage, SupplyUniform, lambda_min_objective,
                                              optimise_dosage, trace_objective)


def _all_combinations(p):
    return np.array(list(itertools.product((-1.0, 1.0), repeat=p)))


def test_interaction_sets_count_every_subset_up_to_k():
    sets = interaction_sets(10, 2)
    assert len(sets) == 56  # the paper note: p = 10, k = 2 gives K = 56
    assert sets[0] == () and len(set(sets)) == 56 and max(map(len, sets)) == 2
    assert len(interaction_sets(15, 2)) == 121


def test_features_are_the_parities():
    x = np.array([[1.0, -1.0, -1.0], [-1.0, -1.0, 1.0]])
    phi = features(x, [(), (0,), (1, 2), (0, 1, 2)])
    assert phi.tolist() == [[1, 1, 1, 1], [1, -1, -1, 1]]


def test_expected_information_is_the_exact_expectation_over_the_cube():
    p, k = 4, 2
    sets = interaction_sets(p, k)
    d = np.array([0.2, 0.5, 0.7, 0.9])
    cube = _all_combinations(p)
    weights = np.prod(np.where(cube > 0, d, 1 - d), axis=1)  # product Bernoulli, P(x_i = +1) = d_i
    phi = features(cube, sets)
    exact = (phi * weights[:, None]).T @ phi
    assert np.allclose(expected_information(d, sets), exact, atol=1e-12)


def test_expected_information_has_trace_k_and_is_the_identity_at_half():
    sets = interaction_sets(6, 2)
    rng = np.random.default_rng(0)
    for d in rng.uniform(0, 1, size=(5, 6)):
        assert np.trace(expected_information(d, sets)) == pytest.approx(len(sets))
    assert np.allclose(expected_information(np.full(6, 0.5), sets), np.eye(len(sets)))


def test_half_minimises_the_trace_of_the_inverse_information():
    """tr Σ = K, so Σ 1/λ_i ≥ K with equality iff Σ = I (Cauchy–Schwarz): d = ½ is the passive optimum."""
    sets = interaction_sets(5, 2)
    rng = np.random.default_rng(1)
    at_half = np.trace(np.linalg.inv(expected_information(np.full(5, 0.5), sets)))
    assert at_half == pytest.approx(len(sets))
    for d in rng.uniform(0.05, 0.95, size=(20, 5)):
        assert np.trace(np.linalg.inv(expected_information(d, sets))) > at_half


def test_expected_information_gradient_matches_finite_differences():
    sets = interaction_sets(5, 2)
    d = np.array([0.3, 0.5, 0.62, 0.8, 0.45])  # 0.5 included: the product excluding i must not divide by 2d_i − 1
    grad = expected_information_gradient(d, sets)
    eps = 1e-6
    for i in range(5):
        step = np.eye(5)[i] * eps
        numeric = (expected_information(d + step, sets) - expected_information(d - step, sets)) / (2 * eps)
        assert np.allclose(grad[i], numeric, atol=1e-8)


@pytest.mark.parametrize("objective", [trace_objective, lambda_min_objective])
def test_active_objectives_gradients_match_finite_differences(objective):
    sets = interaction_sets(6, 2)
    rng = np.random.default_rng(2)
    past = features(np.where(rng.random((40, 6)) < 0.5, 1.0, -1.0), sets)
    information = past.T @ past / 40
    d = rng.uniform(0.2, 0.8, 6)
    value, grad = objective(d, sets, information)
    eps = 1e-6
    numeric = [(objective(d + eps * e, sets, information)[0] - objective(d - eps * e, sets, information)[0]) / (2 * eps)
               for e in np.eye(6)]
    assert np.allclose(grad, numeric, rtol=1e-5, atol=1e-8)


def test_active_rule_is_half_without_past_and_moves_away_from_it_to_balance_the_past():
    sets = interaction_sets(3, 1)
    problem = DesignProblem(3, 1, 16, 2, sets)
    assert ActiveTrace().design(problem, np.zeros((0, 3))).tolist() == [0.5, 0.5, 0.5]
    # the past units all had treatment 0 on: the next round should lean towards it off
    past = np.column_stack([np.ones(16), _all_combinations(3)[:, 1:].repeat(4, axis=0)[:16]])
    d = ActiveTrace().design(problem, past)
    assert d[0] < 0.45 and np.allclose(d[1:], 0.5, atol=0.05)
    phi = features(past, sets)
    information = phi.T @ phi / 16
    assert trace_objective(d, sets, information)[0] < trace_objective(np.full(3, 0.5), sets, information)[0]
    assert ActiveLambdaMin().design(problem, past)[0] < 0.45


def test_optimiser_stays_at_half_where_half_is_the_optimum():
    sets = interaction_sets(4, 2)
    d = optimise_dosage(trace_objective, sets, np.eye(len(sets)), 4)
    assert np.allclose(d, 0.5, atol=1e-6)


@pytest.mark.parametrize("p, k", [(3, 2), (4, 2), (5, 2), (6, 2), (7, 2), (8, 2), (5, 1), (8, 1)])
def test_resolution_v_fractions_are_orthogonal_up_to_two_way_interactions(p, k):
    runs = fraction(p)
    phi = features(runs, interaction_sets(p, k))
    assert np.array_equal(phi.T @ phi, len(runs) * np.eye(phi.shape[1]))
    assert {5: 16, 8: 64}.get(p, len(runs)) == len(runs)


def test_a_fraction_is_not_resolution_v_for_three_way_interactions():
    phi = features(fraction(5), interaction_sets(5, 3))  # E = ABCD aliases every two-way with a three-way
    assert np.linalg.matrix_rank(phi) < phi.shape[1]


def test_fraction_refuses_an_untabulated_p_and_a_round_it_cannot_fill():
    with pytest.raises(ValueError, match="no resolution-V fraction is tabulated for p = 9"):
        fraction(9)
    with pytest.raises(ValueError, match="not a multiple of the 16 runs"):
        FractionalFactorial().design(DesignProblem(5, 1, 20, 1, interaction_sets(5, 1)), np.zeros((0, 5)))


def test_fit_is_ordinary_least_squares_with_its_exact_risk():
    rng = np.random.default_rng(3)
    sets = interaction_sets(4, 1)
    x = np.where(rng.random((30, 4)) < 0.5, 1.0, -1.0)
    phi = features(x, sets)
    beta = rng.uniform(-1, 1, len(sets))
    y = phi @ beta + 2.0 * rng.standard_normal(30)
    estimate, risk, singular = fit(phi.T @ phi, phi.T @ y, beta, 2.0)
    assert not singular
    assert np.allclose(estimate, np.linalg.lstsq(phi, y, rcond=None)[0])
    assert risk == pytest.approx(4.0 * np.trace(np.linalg.inv(phi.T @ phi)))


def test_fit_falls_back_to_minimum_norm_with_the_bias_in_its_risk():
    rng = np.random.default_rng(4)
    sets = interaction_sets(4, 2)  # K = 11 > 6 units: singular
    phi = features(np.where(rng.random((6, 4)) < 0.5, 1.0, -1.0), sets)
    beta = rng.uniform(-1, 1, len(sets))
    y = phi @ beta + rng.standard_normal(6)
    estimate, risk, singular = fit(phi.T @ phi, phi.T @ y, beta, 1.0)
    assert singular
    assert np.allclose(estimate, np.linalg.pinv(phi) @ y)
    projection = np.linalg.pinv(phi) @ phi
    expected = np.sum((beta - projection @ beta) ** 2) + np.trace(np.linalg.pinv(phi.T @ phi))
    assert risk == pytest.approx(expected)


def test_fit_risk_is_the_monte_carlo_mean_error_under_ridge():
    rng = np.random.default_rng(5)
    sets = interaction_sets(4, 2)
    phi = features(np.where(rng.random((8, 4)) < 0.5, 1.0, -1.0), sets)
    beta = rng.uniform(-1, 1, len(sets))
    gram = phi.T @ phi
    _, risk, singular = fit(gram, phi.T @ (phi @ beta), beta, 0.5, "ridge", 0.1)
    noise = rng.standard_normal((20000, 8))
    errors = [np.sum((fit(gram, phi.T @ (phi @ beta + 0.5 * e), beta, 0.5, "ridge", 0.1)[0] - beta) ** 2)
              for e in noise[:4000]]
    assert singular
    assert np.mean(errors) == pytest.approx(risk, rel=0.05)


def test_theory_and_floor_agree_for_an_orthogonal_design_and_bound_any_other():
    sets = interaction_sets(5, 1)
    phi = features(fraction(5), sets)
    assert theory_risk(2 * phi.T @ phi, 5.0) == pytest.approx(floor_risk(5.0, 6, 32))
    rng = np.random.default_rng(6)
    for _ in range(10):
        x = np.where(rng.random((32, 5)) < 0.5, 1.0, -1.0)
        g = features(x, sets).T @ features(x, sets)
        assert theory_risk(g, 5.0) >= floor_risk(5.0, 6, 32) * (1 - 1e-12)
    assert theory_risk(np.zeros((6, 6)), 1.0) == math.inf


def test_combinations_draws_units_from_dosages_and_checks_what_a_design_returns():
    uniforms = np.array([[0.1, 0.6], [0.4, 0.2]])
    x, dosages = combinations(np.array([0.5, 0.5]), uniforms, "D")
    assert x.tolist() == [[1, -1], [1, 1]] and dosages.tolist() == [0.5, 0.5]
    with pytest.raises(ValueError, match=r"expected values in \[0, 1\]"):
        combinations(np.array([1.2, 0.5]), uniforms, "D")
    with pytest.raises(ValueError, match="entries other than ±1"):
        combinations(np.array([[1, 0], [1, 1]]), uniforms, "D")
    with pytest.raises(ValueError, match=r"expected dosages \(2,\) or combinations \(2, 2\)"):
        combinations(np.ones(3), uniforms, "D")


@pytest.mark.parametrize("params, word", [
    ({"p": 0}, "p = 0"), ({"k": 4, "p": 3}, "k = 4 > p = 3"), ({"units": 2, "rounds": 2}, "units × rounds = 4 < K = 6"),
    ({"sigma": 0.0}, "sigma = 0.0"), ({"fallback": "pinv"}, "fallback = 'pinv'"), ({"trials": 1.5}, "trials = 1.5"),
    ({"p": 40, "k": 3}, "p = 40, k = 3 give K = 10701"), ({"ridge": -1.0}, "ridge = -1.0"), ({"scale": 0}, "scale = 0"),
])
def test_loader_rejects_bad_parameters_naming_them(params, word):
    with pytest.raises(DataError, match=f"boolean-interactions: {word}"):
        boolean_interactions(Context(seed=0), **params)


def test_loader_draws_the_same_instance_per_seed_and_split_and_another_elsewhere():
    a = boolean_interactions(Context(seed=0, dataset="x"), trials=3)
    b = boolean_interactions(Context(seed=0, dataset="x"), trials=3)
    c = boolean_interactions(Context(seed=1, dataset="x"), trials=3)
    v = boolean_interactions(Context(seed=0, split="val", dataset="x"), trials=3)
    assert np.array_equal(a.betas, b.betas) and np.array_equal(a.uniforms, b.uniforms)
    assert not np.array_equal(a.betas, c.betas) and not np.array_equal(a.noise, v.noise)
    assert a.betas.shape == (3, 6) and a.uniforms.shape == (3, 10, 16, 5) and np.abs(a.betas).max() <= 1


def test_evaluate_scores_the_fraction_at_the_floor_and_returns_error_curves():
    context = Context(seed=0, dataset="t")
    data = boolean_interactions(context, p=5, k=1, units=16, rounds=3, sigma=5.0, trials=4)
    out = TASK.evaluate(FractionalFactorial(), data, context)
    assert isinstance(out, Evaluation)
    assert out.metrics["risk_over_floor"] == pytest.approx(1.0)
    assert out.metrics["final_risk"] == pytest.approx(floor_risk(5.0, 6, 48))
    assert out.metrics["singular_rounds"] == 0.0
    assert list(out.curves["risk"].y) == pytest.approx([floor_risk(5.0, 6, 16 * r) for r in (1, 2, 3)])
    assert list(out.curves["error"].theory) == pytest.approx(list(out.curves["risk"].y))
    assert out.metrics["error_area"] == pytest.approx(sum(out.curves["error"].y))
    assert out.metrics["final_error"] == pytest.approx(out.curves["error"].y[-1])


def test_common_random_numbers_make_dosage_half_and_uniform_half_identical():
    context = Context(seed=3, dataset="t")
    data = boolean_interactions(context, p=4, k=2, units=40, rounds=2, trials=3)
    a = TASK.evaluate(HalfDosage(), data, context).metrics
    b = TASK.evaluate(UniformDosage(dosage=0.5), data, context).metrics
    c = TASK.evaluate(UniformDosage(dosage=0.3), data, context).metrics
    assert a == b and a != c


def test_a_design_that_never_identifies_beta_fails_the_cell():
    context = Context(seed=0, dataset="t")
    data = boolean_interactions(context, p=3, k=1, units=8, rounds=2, trials=2)
    with pytest.raises(ValueError, match="singular after the last round in all 2 trials"):
        TASK.evaluate(UniformDosage(dosage=1.0), data, context)


def test_random_dosage_draws_from_the_methods_stream():
    problem = DesignProblem(4, 1, 8, 1, interaction_sets(4, 1), rng=np.random.default_rng(0))
    d = RandomDosage().design(problem, np.zeros((0, 4)))
    assert d.shape == (4,) and np.all((0 <= d) & (d <= 1))
    assert d.tolist() == np.random.default_rng(0).random(4).tolist()


def test_supply_uniform_spends_the_supply_evenly_and_is_half_without_a_limit():
    sets = interaction_sets(8, 1)
    assert SupplyUniform().design(DesignProblem(8, 1, 10, 1, sets, 2.0), np.zeros((0, 8))).tolist() == [0.25] * 8
    assert SupplyUniform().design(DesignProblem(8, 1, 10, 1, sets, 6.0), np.zeros((0, 8))).tolist() == [0.5] * 8
    assert SupplyUniform().design(DesignProblem(8, 1, 10, 1, sets), np.zeros((0, 8))).tolist() == [0.5] * 8


def test_uniform_supply_is_optimal_for_main_effects_among_dosages_with_the_same_total():
    """§5.1 for k = 1: under Σd = L < p/2, d = L/p minimises tr Σ(d)⁻¹."""
    sets = interaction_sets(6, 1)
    at_uniform = np.trace(np.linalg.inv(expected_information(np.full(6, 2.0 / 6), sets)))
    rng = np.random.default_rng(7)
    for _ in range(20):
        d = np.full(6, 2.0 / 6) + 0.2 * (rng.dirichlet(np.ones(6)) - 1 / 6)
        assert np.trace(np.linalg.inv(expected_information(d, sets))) > at_uniform


def test_perturbed_dosage_keeps_the_total_at_the_given_distance():
    problem = DesignProblem(7, 1, 10, 1, interaction_sets(7, 1), 2.0, np.random.default_rng(0))
    d = PerturbedDosage(distance=0.1).design(problem, np.zeros((0, 7)))
    assert d.sum() == pytest.approx(2.0) and np.abs(d - 2.0 / 7).max() == pytest.approx(0.1)
    assert sorted(np.round(d - 2.0 / 7, 12)) == [-0.1] * 3 + [0.0] + [0.1] * 3
    free = DesignProblem(4, 1, 10, 1, interaction_sets(4, 1), None, np.random.default_rng(0))
    assert sorted(PerturbedDosage(distance=0.2).design(free, np.zeros((0, 4))).round(12)) == [0.3, 0.3, 0.7, 0.7]
    with pytest.raises(ValueError, match=r"perturbed-dosage: distance = 0.3; expected 0 … 0.25"):
        PerturbedDosage(distance=0.3).design(DesignProblem(8, 1, 10, 1, (), 2.0, np.random.default_rng(0)), None)


def test_a_design_beyond_the_supply_fails_the_cell():
    context = Context(seed=0, dataset="t")
    data = boolean_interactions(context, p=8, k=1, units=64, rounds=1, trials=1, supply=2.0)
    with pytest.raises(ValueError, match="round 1 uses 4 treatments per unit on average, beyond the supply 2"):
        TASK.evaluate(HalfDosage(), data, context)
    with pytest.raises(ValueError, match="uses 4 treatments per unit on average, beyond the supply 2"):
        TASK.evaluate(FractionalFactorial(), data, context)
    assert TASK.evaluate(SupplyUniform(), data, context).metrics["singular_rounds"] == 0.0
    with pytest.raises(DataError, match=r"boolean-interactions: supply = 9.0; expected a number in \(0, p = 8\]"):
        boolean_interactions(context, p=8, k=1, supply=9.0)
