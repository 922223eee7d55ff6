"""online.ski_rental (calibrated-advice spec): Algorithm 1 and the paper's bounds, the baselines' rules, the
calibrators, the loaders' errors and the CSV loader on generated files."""
from __future__ import annotations

import math

import numpy as np
import pytest

from baselines.ski_rental import (
    BinaryPredictorSkiRental,
    BreakEven,
    ConformalSkiRental,
    QuantileConformalSkiRental,
    RandomizedSkiRental,
    RobustSkiRental,
    conformal_buy_day,
    randomized_buy_day,
    robust_buy_day,
    zeta,
)
from components.calibration import (
    HistogramCalibrator,
    IsotonicCalibrator,
    PlattCalibrator,
    balanced_indices,
    held_out_calibration_error,
    make_calibrator,
    max_calibration_error,
)
from harness.tasks.base import Context, DataError, DataUnavailable
from harness.tasks.online.ski_rental import (
    TASK,
    Sample,
    SkiProblem,
    equal_mass_calibration_error,
    global_bound,
    optimum_cost,
    per_prediction_bound,
    ski_bimodal,
    ski_cost,
    ski_csv,
    ski_smooth,
)
from harness.tasks.online.tables import write_citibike_like, write_csv
from implementations.calibrated_advice import CalibratedSkiRental, calibrated_buy_day

B = 1.0


def context(seed=0, split="test", dataset="d"):
    return Context(seed=seed, split=split, dataset=dataset)


# --------------------------------------------------------------------------- Algorithm 1 and Thms 3.1 / 3.3


def test_algorithm_1_threshold_and_early_buy_day():
    alpha = 0.05
    threshold = (4 + 3 * alpha) / 5
    assert calibrated_buy_day(np.array([0.3, threshold]), alpha, 2.0).tolist() == [2.0, 2.0]
    v = 0.95
    k = float(calibrated_buy_day(np.array([v]), alpha, 2.0)[0])
    assert k == pytest.approx(2.0 * math.sqrt((1 - v + alpha) / (v + alpha)))
    # the public code's precedence slip, √((1 − v + α)/v + α), gives another day once α > 0
    assert k != pytest.approx(2.0 * math.sqrt((1 - v + alpha) / v + alpha), rel=1e-3)


@pytest.mark.parametrize("v", [0.1, 0.5, 0.8, 0.85, 0.95, 0.99])
def test_per_prediction_bound_is_the_worst_case_of_algorithm_1(v):
    """Thm 3.3 at α = 0: the worst distribution given f = v (mass v beyond b, 1 − v just past the buy day) costs
    exactly 1 + min{v, 2√(v(1 − v))}."""
    k = float(calibrated_buy_day(np.array([v]), 0.0, B)[0])
    short = min(k, B) + 1e-12 if k < B else B - 1e-12  # just past k (k < b), or anything ≤ b at k = b
    z = np.array([short, 3 * B])
    ratio = ski_cost(np.array([k, k]), z, B) / optimum_cost(z, B)
    worst = (1 - v) * ratio[0] + v * ratio[1]
    assert worst == pytest.approx(float(per_prediction_bound(np.array([v]), 0.0)[0]), rel=1e-6)
    assert worst == pytest.approx(1 + min(v, 2 * math.sqrt(v * (1 - v))), rel=1e-6)


def test_theorem_3_1_holds_for_a_calibrated_predictor():
    """f = v ~ U(0, 1) with Z > b with probability v (calibrated, α = 0): E[CR] ≤ 1 + min{E f, 2√η}."""
    rng = np.random.default_rng(0)
    v = rng.random(200_000)
    long = rng.random(v.size) < v
    z = np.where(long, rng.uniform(1.01, 4, v.size), rng.uniform(0.01, 1, v.size))
    ratio = ski_cost(calibrated_buy_day(v, 0.0, B), z, B) / optimum_cost(z, B)
    eta = float(np.mean((v - long) ** 2))
    bound = global_bound(0.0, float(v.mean()), eta)
    assert bound == pytest.approx(1 + min(v.mean(), 2 * math.sqrt(eta)))
    assert ratio.mean() <= bound
    assert np.all(ratio <= 1 + math.sqrt((1 + 1e-9) / 1e-9))  # finite: robustness g(α) needs α > 0 …
    assert ratio.mean() <= 1.8  # … and E[CR] ≤ 1.8 always at α = 0 (paper note (a))


def test_global_bound_uses_mse_and_alpha_as_stated():
    assert global_bound(0.1, 0.3, 0.2) == pytest.approx(1 + 0.2 + min(0.4, 2 * math.sqrt(0.2 + 0.3)))
    assert global_bound(0.0, 0.9, 0.01) == pytest.approx(1 + 2 * 0.1)


# --------------------------------------------------------------------------- baselines


def test_break_even_is_2_competitive():
    z = np.array([0.1, 0.999, 1.0, 1.0001, 50.0])
    ratio = ski_cost(np.full(z.size, B), z, B) / optimum_cost(z, B)
    assert ratio.max() == pytest.approx(2.0)
    assert ratio[:3].tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize("z", [0.3, 1.0, 2.5])
def test_randomized_rule_is_e_over_e_minus_1_competitive(z):
    u = (np.arange(200_000) + 0.5) / 200_000  # quadrature over the uniform
    k = randomized_buy_day(u, B)
    assert k.min() >= 0 and k.max() <= B
    expected = float(np.mean(ski_cost(k, np.full(k.size, z), B))) / min(z, B)
    assert expected == pytest.approx(math.e / (math.e - 1), rel=1e-4)  # the density equalises every z


def test_purohit_rule_trusts_the_prediction_by_lambda():
    assert robust_buy_day(np.array([2.0, 0.5]), 1.0, 0.25).tolist() == [0.25, 4.0]


def test_conformal_branches_and_the_fourth_buy_day_minimises_its_objective():
    delta, b = 0.1, 1.0
    assert conformal_buy_day(np.array([0.2]), np.array([0.9]), delta, b)[0] == b  # u < b
    assert conformal_buy_day(np.array([1.5]), np.array([3.0]), delta, b)[0] == pytest.approx(math.sqrt(delta / (1 - delta)))
    assert conformal_buy_day(np.array([0.05]), np.array([3.0]), delta, b)[0] == b  # ζ = 1 + b/ℓ ≥ 2, δ + u/b ≥ 2
    # fourth branch: ℓ = 0.8, u = 1.9: ζ < 2 and ζ ≤ δ + u/b; the day minimises (1 − δ)(k + b)/ℓ + δ(k + b)/k
    lower, upper = 0.8, 1.9
    z = float(zeta(delta, np.array([lower]), b)[0])
    assert z < 2 and z <= delta + upper / b
    k = float(conformal_buy_day(np.array([lower]), np.array([upper]), delta, b)[0])
    grid = np.linspace(1e-3, lower, 100_001)
    objective = (1 - delta) * (grid + b) / lower + delta * (grid + b) / grid
    assert k == pytest.approx(grid[np.argmin(objective)], abs=1e-4)
    assert k == pytest.approx(math.sqrt(b * lower * delta / (1 - delta)))
    assert objective.min() == pytest.approx(z, rel=1e-6)  # its value is ζ's first branch
    # the public code's √(bδ(1 − δ)/ℓ) is another day
    assert k != pytest.approx(math.sqrt(b * delta * (1 - delta) / lower), rel=1e-3)
    # fifth branch: ζ > δ + u/b → buy at u
    assert conformal_buy_day(np.array([0.5]), np.array([1.05]), 0.01, b)[0] == pytest.approx(1.05)


def test_conformal_interval_covers_at_the_stated_level():
    data = ski_smooth(context(), n_train=2000, n_val=2000, n_test=4000, sigma=1.0)
    method = ConformalSkiRental(delta=0.1)
    method.fit(data.problem, np.random.default_rng(0))
    lower, upper = method.intervals(data.test.x)
    covered = np.mean((data.test.z >= lower) & (data.test.z <= upper))
    assert 0.87 <= covered <= 0.93


def test_cqr_interval_covers_and_adapts_to_x_where_split_conformal_cannot():
    """Design B at γ = 8: Z's two modes depend on x. CQR covers at the stated level like split conformal, but its
    interval excludes the long mode where P(Z > b | x) is small (and the short one where it is large), while the
    split-conformal interval has one width for every x."""
    data = ski_bimodal(context(), n_train=4000, n_val=2000, n_test=4000, gamma=8.0)
    cqr, split = QuantileConformalSkiRental(delta=0.1), ConformalSkiRental(delta=0.1)
    for method in (cqr, split):
        method.fit(data.problem, np.random.default_rng(0))
    (lo, hi), (slo, shi) = cqr.intervals(data.test.x), split.intervals(data.test.x)
    assert 0.87 <= np.mean((data.test.z >= lo) & (data.test.z <= hi)) <= 0.93
    one_mode = (hi < B) | (lo > B)  # the interval lies on one side of b
    assert one_mode.mean() > 0.3
    assert np.ptp(np.log(shi / slo)) < 1e-9 and np.ptp(np.log(hi / lo)) > 1.0
    with pytest.raises(ValueError, match="delta = 1.5"):
        QuantileConformalSkiRental(delta=1.5).fit(data.problem, np.random.default_rng(0))


# --------------------------------------------------------------------------- calibrators


def test_histogram_binning_is_calibrated_on_its_own_sample():
    rng = np.random.default_rng(1)
    scores = rng.random(3000)
    y = (rng.random(3000) < scores**2).astype(float)
    calibrator = HistogramCalibrator(20).fit(scores, y)
    f = calibrator.predict(scores)
    assert np.unique(f).size == 20
    assert max_calibration_error(f, y, 100) < 1e-12
    assert max_calibration_error(scores, y, 100) > 0.1  # the raw score is not calibrated
    # equal-mass bins: each output is the mean label of 150 points
    first = scores <= np.quantile(scores, 0.05)
    assert f[np.argmin(scores)] == pytest.approx(y[first].mean())


def test_platt_and_isotonic_are_monotone_and_in_range():
    rng = np.random.default_rng(2)
    scores = rng.random(2000)
    y = (rng.random(2000) < scores).astype(float)
    grid = np.linspace(0, 1, 101)
    for calibrator in (PlattCalibrator().fit(scores, y), IsotonicCalibrator().fit(scores, y)):
        out = calibrator.predict(grid)
        assert np.all(np.diff(out) >= -1e-12) and out.min() >= 0 and out.max() <= 1
    with pytest.raises(ValueError, match="calibrator = 'beta'"):
        make_calibrator("beta")


def test_max_calibration_error_and_equal_mass_error_by_hand():
    f = np.array([0.1, 0.1, 0.9, 0.9])
    y = np.array([0.0, 1.0, 1.0, 1.0])
    assert max_calibration_error(f, y, 10) == pytest.approx(0.4)
    assert equal_mass_calibration_error(f, y, 2) == pytest.approx(0.4)
    assert equal_mass_calibration_error(f, y, 1) == pytest.approx(abs(0.5 - 0.75))


def test_balanced_indices_balance_the_classes():
    y = np.array([1] * 10 + [0] * 90)
    keep = balanced_indices(y, np.random.default_rng(0))
    assert keep.size == 20 and y[keep].sum() == 10


# --------------------------------------------------------------------------- methods on the designs


def test_calibrated_algorithm_estimates_alpha_on_held_out_points_and_beats_break_even_where_p_varies():
    data = ski_bimodal(context(), n_train=3000, n_val=1000, n_test=3000, gamma=8.0)
    rng = np.random.default_rng(0)
    method = CalibratedSkiRental(calibrator="histogram", bins=50)
    method.fit(data.problem, rng)
    # on the split it was fitted on, histogram binning is calibrated by construction: that estimate is 0 ...
    scores = method.model_.predict_proba(data.problem.val.x)[:, 1]
    assert max_calibration_error(method.calibrator_.predict(scores), data.problem.val.z > B, 100) < 1e-12
    # ... the held-out estimate the algorithm runs with is not, and it is what the task scores the bound at
    assert 0.01 < method.alpha_ < 0.3 and method.error_bound() == method.alpha_
    ratio = ski_cost(method.buy_days(data.test.x, rng), data.test.z, B) / optimum_cost(data.test.z, B)
    even = ski_cost(np.full(data.test.z.size, B), data.test.z, B) / optimum_cost(data.test.z, B)
    assert ratio.mean() < even.mean() - 0.1


def test_held_out_calibration_error_sees_what_the_fitted_split_hides():
    """Scores that carry no information (y independent of s): a 100-bin histogram fitted on the points is calibrated
    there (α̂ = 0), while on held-out folds its bins are noise around the base rate."""
    rng = np.random.default_rng(3)
    scores = rng.random(2000)
    y = (rng.random(2000) < 0.4).astype(float)
    fitted = HistogramCalibrator(100).fit(scores, y)
    assert max_calibration_error(fitted.predict(scores), y, 100) < 1e-12
    held_out = held_out_calibration_error("histogram", 100, scores, y, folds=5, alpha_bins=10, rng=rng)
    assert held_out > 0.15  # 20 points a bin: each bin's value is the base rate ± 0.11
    # a calibrator that cannot overfit (one bin: the base rate) stays near the noise floor, 2.5·√(0.24·10/2000) ≈ 0.09
    assert held_out_calibration_error("histogram", 1, scores, y, folds=5, alpha_bins=10, rng=rng) < 0.15
    with pytest.raises(ValueError, match="folds = 1"):
        held_out_calibration_error("histogram", 10, scores, y, folds=1, rng=rng)


def test_theory_bound_is_taken_at_the_alpha_the_method_ran_with():
    data = ski_bimodal(context(), n_train=1000, n_val=500, n_test=1000, gamma=8.0)
    fixed = TASK.evaluate(CalibratedSkiRental(alpha=0.2), data, context()).metrics
    assert fixed["bound_alpha"] == 0.2
    f_mean_bound = fixed["theory_bound"]
    # the bound at α = 0.2 is at least 1 + 2·0.2, whatever the test split's α̂ is
    assert f_mean_bound >= 1.4 and fixed["calibration_error"] != pytest.approx(0.2)
    estimated = CalibratedSkiRental()
    metrics = TASK.evaluate(estimated, data, context()).metrics
    assert metrics["bound_alpha"] == pytest.approx(estimated.alpha_)
    no_alpha = TASK.evaluate(BreakEven(), data, context()).metrics
    assert no_alpha["bound_alpha"] == no_alpha["calibration_error"]  # a method without one: the test α̂


def test_the_constant_design_has_p_fixed_and_the_calibrated_rule_falls_back_to_break_even():
    data = ski_bimodal(context(), n_train=3000, n_val=1000, n_test=3000, gamma=0.0, base=0.3)
    assert np.mean(data.test.z > B) == pytest.approx(0.3, abs=0.03)
    method = CalibratedSkiRental()
    method.fit(data.problem, np.random.default_rng(0))
    assert np.all(method.buy_days(data.test.x, None) == B)


def test_smooth_design_probability_matches_phi():
    from scipy.stats import norm

    data = ski_smooth(context(), n_train=10, n_val=10, n_test=50_000, dim=1, sigma=0.5)
    x, z = data.test.x[:, 0], data.test.z
    w = np.sign(np.corrcoef(x, np.log(z))[0, 1])  # dim = 1: w = ±1
    near = np.abs(x - 0.25 * w) < 0.05
    assert np.mean(z[near] > B) == pytest.approx(norm.cdf(0.5), abs=0.03)


def test_the_task_scores_every_method_and_curves_only_with_a_predictor():
    data = ski_bimodal(context(), n_train=400, n_val=200, n_test=300)
    for method in (BreakEven(), RandomizedSkiRental(), RobustSkiRental(0.5), BinaryPredictorSkiRental(),
                   ConformalSkiRental(), QuantileConformalSkiRental(), CalibratedSkiRental(calibrator="isotonic")):
        result = TASK.evaluate(method, data, context())
        assert set(result.metrics) == set(TASK.metrics)
        assert result.metrics["competitive_ratio"] >= 1.0
        assert result.metrics["ratio_over_bound"] == pytest.approx(
            result.metrics["competitive_ratio"] / result.metrics["theory_bound"])
        assert bool(result.curves) == isinstance(method, CalibratedSkiRental)
    curve = result.curves["ratio_by_prediction"]
    assert len(curve.x) == len(curve.y) == len(curve.theory) == 10
    assert all(t >= 1 for t in curve.theory)


def test_robust_trust_outside_its_range_is_refused():
    data = ski_bimodal(context(), n_train=100, n_val=50, n_test=50)
    with pytest.raises(ValueError, match="trust = 1.5"):
        RobustSkiRental(trust=1.5).fit(data.problem, np.random.default_rng(0))


# --------------------------------------------------------------------------- loaders


def test_synthetic_loaders_draw_the_same_instance_for_a_seed_and_another_for_validation():
    a = ski_smooth(context(3), n_train=50, n_val=20, n_test=30)
    b = ski_smooth(context(3), n_train=50, n_val=20, n_test=30)
    c = ski_smooth(context(3, split="val"), n_train=50, n_val=20, n_test=30)
    assert np.array_equal(a.test.z, b.test.z) and not np.array_equal(a.test.z, c.test.z)


@pytest.mark.parametrize("loader, params, match", [
    (ski_smooth, {"sigma": 0.0}, "sigma = 0.0"),
    (ski_smooth, {"n_train": 5}, "n_train = 5"),
    (ski_smooth, {"dim": 0}, "dim = 0"),
    (ski_bimodal, {"base": 1.0}, "base = 1.0"),
    (ski_bimodal, {"gamma": -1.0}, "gamma = -1.0"),
])
def test_synthetic_loaders_name_the_bad_parameter(loader, params, match):
    with pytest.raises(DataError, match=match):
        loader(context(), **params)


def test_csv_loader_reads_a_generated_citibike_file(tmp_path):
    write_citibike_like(tmp_path / "rides.csv", 500)
    data = ski_csv(context(), file="rides.csv", root=str(tmp_path), b=600.0, rows=400)
    assert data.problem.train.x.shape == (256, 5) and data.problem.val.x.shape == (64, 5)
    assert data.test.x.shape == (80, 5) and np.all(data.test.z > 0)
    again = ski_csv(context(), file="rides.csv", root=str(tmp_path), b=600.0, rows=400)
    assert np.array_equal(again.test.z, data.test.z)
    result = TASK.evaluate(CalibratedSkiRental(bins=10), data, context())
    assert 1.0 <= result.metrics["competitive_ratio"] <= 2.0


def test_csv_loader_drops_missing_cells_and_nonpositive_durations(tmp_path):
    rows = [[100 + 10 * i, 1970 + i % 30, i % 3] for i in range(60)]
    rows[3][1] = "\\N"
    rows[4][0] = 0
    write_csv(tmp_path / "r.csv", ["tripduration", "birth year", "gender"], np.array(rows, dtype=object))
    data = ski_csv(context(), file="r.csv", root=str(tmp_path), b=300.0, features=["birth year", "gender"],
                   rows=1000, train_fraction=0.5, val_fraction=0.25)
    total = data.problem.train.z.size + data.problem.val.z.size + data.test.z.size
    assert total == 58


def test_csv_loader_errors_name_the_file_line_and_column(tmp_path):
    write_csv(tmp_path / "bad.csv", ["tripduration", "gender"], np.array([[100, 1], [200, "male"]], dtype=object))
    with pytest.raises(DataError, match=r"bad.csv:3: column 'gender' holds 'male'"):
        ski_csv(context(), file="bad.csv", root=str(tmp_path), features=["gender"])
    with pytest.raises(DataError, match="column\\(s\\) 'birth year' not in the header"):
        ski_csv(context(), file="bad.csv", root=str(tmp_path), features=["birth year"])
    write_citibike_like(tmp_path / "ok.csv", 100)
    with pytest.raises(DataError, match="b = 1e\\+06: 0% of the durations"):
        ski_csv(context(), file="ok.csv", root=str(tmp_path), b=1e6)
    with pytest.raises(DataError, match="train_fraction = 0.9"):
        ski_csv(context(), file="ok.csv", root=str(tmp_path), train_fraction=0.9, val_fraction=0.2)
    with pytest.raises(DataUnavailable, match="no --data-dir given"):
        ski_csv(context())
    with pytest.raises(DataUnavailable, match="is not there"):
        ski_csv(context(), file="absent.csv", root=str(tmp_path))


# --------------------------------------------------------------------------- online.scheduling

from itertools import permutations  # noqa: E402

from baselines.scheduling import BinaryScheduler, ConstantScheduler  # noqa: E402
from components.scheduling_rule import threshold_plan  # noqa: E402
from harness.tasks.online.scheduling import TASK as SCHEDULING  # noqa: E402
from harness.tasks.online.scheduling import (  # noqa: E402
    beta_threshold,
    sched_csv,
    sched_synthetic,
    schedule_cost,
    theorem_4_3,
)
from harness.tasks.online.tables import write_sepsis_like  # noqa: E402
from implementations.calibrated_advice import CalibratedScheduler  # noqa: E402


def test_beta_threshold_formula():
    assert beta_threshold(0.1, 1.0, 2.0) == pytest.approx(0.1 / 0.9 * 2)
    assert beta_threshold(0.5, 1.0, 5.0) == pytest.approx(1.25)  # θ ≥ ½: β > 1, nothing is probed


def test_schedule_cost_by_hand():
    # jobs 0 (low), 1 (high), 2 (low); probe 0 then 1, then run 2; θ = 0.25, ω0 = 1, ω1 = 3
    run = schedule_cost(np.array([0, 1, 2]), 2, np.array([0, 1, 0]), 0.25, 1.0, 3.0)
    # 0 probed [0, .25], set aside; 1 runs [.25, 1.25]; 0 finishes at 2; 2 runs to 3
    assert run["alg"] == pytest.approx(3 * 1.25 + 1 * 2 + 1 * 3)
    assert run["opt"] == pytest.approx(3 * 1 + 1 * 2 + 1 * 3)
    assert (run["L"], run["M"], run["N"]) == (1, 0, 0)
    assert run["alg"] - run["opt"] == pytest.approx(0.25 * 3 * 1)


@pytest.mark.parametrize("seed", range(5))
def test_decomposition_is_an_identity_for_any_plan(seed):
    rng = np.random.default_rng(seed)
    y = (rng.random(30) < 0.4).astype(int)
    theta, w0, w1 = 0.3, 0.5, 2.0
    for probed in (0, 7, 30):
        run = schedule_cost(rng.permutation(30), probed, y, theta, w0, w1)
        assert run["alg"] - run["opt"] == pytest.approx(
            theta * w1 * run["L"] + theta * w0 * run["M"] + (w1 - w0) * run["N"], abs=1e-9)


def test_optimum_is_the_best_non_preemptive_order():
    y = np.array([0, 1, 0, 1, 1])
    best = min(schedule_cost(np.array(order), 0, y, 0.2, 1.0, 4.0)["alg"] for order in permutations(range(5)))
    assert schedule_cost(np.arange(5), 0, y, 0.2, 1.0, 4.0)["opt"] == pytest.approx(best)


def _binary_population():
    """ρ = 0.3, ε0 = P(p > β | y = 0) = 0.2, ε1 = P(p ≤ β | y = 1) = 0.1, two values of p: κ1 = κ2 = 0."""
    y = np.array([1] * 300 + [0] * 700)
    p = np.array([0.6] * 270 + [0.1] * 30 + [0.6] * 140 + [0.1] * 560)
    return p, y


def test_theorem_4_3_appendix_form_matches_the_note_for_a_binary_predictor():
    p, y = _binary_population()
    theta, w0, w1 = 0.1, 1.0, 2.0  # β = 0.222: 0.6 is probed, 0.1 is not
    theorem = theorem_4_3(p, y, theta, w0, w1)
    assert theorem["L"] == pytest.approx(0.0378) and theorem["M"] == pytest.approx(0.0196)
    assert theorem["N"] == pytest.approx(0.0252)
    assert theorem["kappa"] == pytest.approx(0.0, abs=1e-12)  # one value on each side of β
    # the §4.2 statement's swapped leading terms would give other values
    assert theorem["L"] != pytest.approx(0.21 * 1.2 * 0.1) and theorem["N"] != pytest.approx(0.21 * 0.2 * 0.9)
    # and the binary predictor meets them with equality (simulated, i.i.d. draws of n = 100)
    rng = np.random.default_rng(0)
    n, counts = 100, {"L": [], "M": [], "N": []}
    for _ in range(1500):
        pick = rng.integers(0, y.size, n)
        order, probed = threshold_plan(p[pick], theta, w0, w1, rng)
        run = schedule_cost(order, probed, y[pick], theta, w0, w1)
        for key in counts:
            counts[key].append(run[key] / (n * (n - 1) / 2))
    for key in counts:
        assert np.mean(counts[key]) == pytest.approx(theorem[key], rel=0.03)


def test_threshold_plan_orders_by_p_and_probes_above_beta():
    p = np.array([0.1, 0.9, 0.5, 0.9, 0.05])
    order, probed = threshold_plan(p, 0.1, 1.0, 2.0, np.random.default_rng(0))  # β = 0.222
    assert probed == 3 and set(order[:2].tolist()) == {1, 3} and order[2:].tolist() == [2, 0, 4]


@pytest.mark.parametrize("params, match", [
    ({"theta": 1.0}, "theta = 1.0"),
    ({"w0": 2.0, "w1": 2.0}, "w0 = 2.0, w1 = 2.0"),
    ({"jobs": 1}, "jobs = 1"),
    ({"n_pool": 3}, "n_pool = 3"),
    ({"base": 0.0}, "base = 0.0"),
])
def test_scheduling_loader_names_the_bad_parameter(params, match):
    with pytest.raises(DataError, match=match):
        sched_synthetic(context(), **params)


def test_sepsis_loader_reads_a_generated_file_and_balances(tmp_path):
    write_sepsis_like(tmp_path / "s.csv", 2000)
    data = sched_csv(context(), file="s.csv", root=str(tmp_path), jobs=10, draws=3)
    everyone = np.concatenate([data.problem.train.y, data.problem.val.y, data.pool.y])
    assert everyone.mean() == pytest.approx(0.5)
    assert data.problem.train.x.shape[1] == 3
    unbalanced = sched_csv(context(), file="s.csv", root=str(tmp_path), balance=False, jobs=10, draws=3)
    assert unbalanced.problem.train.y.size > data.problem.train.y.size
    write_csv(tmp_path / "bad.csv", ["age_years", "sex_0male_1female", "episode_number", "hospital_outcome_1alive_0dead"],
              np.array([[50, 1, 1, 2]] * 40))
    with pytest.raises(DataError, match="values other than 0 and 1"):
        sched_csv(context(), file="bad.csv", root=str(tmp_path))
    with pytest.raises(DataUnavailable, match="DATA_DIR/sepsis/sepsis.csv"):
        sched_csv(context())


def test_scheduling_task_scores_both_schedulers():
    data = sched_synthetic(context(), n_train=1000, n_val=500, n_pool=1000, jobs=50, draws=40)
    for method in (CalibratedScheduler(), BinaryScheduler()):
        result = SCHEDULING.evaluate(method, data, context())
        assert set(result.metrics) == set(SCHEDULING.metrics)
        assert result.metrics["decomposition_error"] < 1e-12
        assert result.metrics["excess_cost_per_job"] > 0
        curve = result.curves["lmn_per_pair"]
        assert list(curve.x) == [1, 2, 3] and len(curve.theory) == 3
    assert np.unique(method.probabilities(data.pool.x)).size <= 2  # the binary scheduler's two values


def test_kappa_is_the_spread_within_each_side_of_beta():
    y = np.zeros(8, dtype=int)
    p = np.array([0.1, 0.1, 0.3, 0.3, 0.6, 0.6, 0.6, 1.0])  # β = 0.222 at θ = 0.1, ω = (1, 2)
    theorem = theorem_4_3(p, y, 0.1, 1.0, 2.0)
    above, below = p[p > 0.222], p[p <= 0.222]
    assert theorem["kappa"] == pytest.approx((6 / 8) ** 2 * above.var() + (2 / 8) ** 2 * below.var())
    # spreading the values within a side of β raises κ
    finer = np.array([0.05, 0.15, 0.3, 0.3, 0.5, 0.7, 0.6, 1.0])
    assert theorem_4_3(finer, y, 0.1, 1.0, 2.0)["kappa"] > theorem["kappa"]


def test_constant_scheduler_probes_all_or_none_and_more_bins_give_a_finer_predictor():
    data = sched_synthetic(context(), n_train=1000, n_val=1000, n_pool=1000, jobs=50, draws=30, theta=0.1)
    constant = ConstantScheduler()
    constant.fit(data.problem, np.random.default_rng(0))
    assert np.unique(constant.probabilities(data.pool.x)).size == 1
    _, probed = constant.plan(data.pool.x[:50], np.random.default_rng(0))
    assert probed in (0, 50)
    coarse, fine = CalibratedScheduler(bins=2), CalibratedScheduler(bins=20)
    for method in (coarse, fine):
        method.fit(data.problem, np.random.default_rng(0))
    assert np.unique(coarse.probabilities(data.pool.x)).size == 2
    assert np.unique(fine.probabilities(data.pool.x)).size > 10
    results = {m: SCHEDULING.evaluate(m, data, context()).metrics for m in (constant, coarse, fine)}
    assert results[constant]["kappa"] == pytest.approx(0.0, abs=1e-12)
    assert results[fine]["excess_cost_per_job"] < results[constant]["excess_cost_per_job"]
