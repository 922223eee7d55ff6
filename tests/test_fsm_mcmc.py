"""mcmc.vectorized: the samplers' invariance, the FSM and synchronised forms' identical draws, the task's scores."""
from __future__ import annotations

import dataclasses
import math
from types import SimpleNamespace

import numpy as np
import pytest

from harness.tasks.base import Context, DataError
from harness.tasks.mcmc.vectorized import (
    TASK,
    Chains,
    SamplesWrong,
    Target,
    bounds,
    effective_sample_size,
    funnel,
    funnel_whitened,
    gp_diabetes,
    importance_reference,
    logistic_breast_cancer,
    moment_check,
    split_rhat,
    standard_normal,
)

torch = pytest.importorskip("torch")

from baselines.mcmc import DelayedRejectionSync, EllipticalSliceSync, SliceSync, run_synchronised  # noqa: E402
from components.mcmc_samplers import (  # noqa: E402
    DelayedRejectionMH,
    EllipticalSlice,
    Sampler,
    SteppingOutSlice,
    chain_keys,
    make_sampler,
    normals,
    start,
    uniforms,
)
from implementations.fsm_mcmc import DelayedRejectionFSM, EllipticalSliceFSM, SliceFSM, run_fsm  # noqa: E402
from implementations.fsm_mcmc import first_samples, fsm_step  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

PAIRS = [(DelayedRejectionFSM, DelayedRejectionSync), (EllipticalSliceFSM, EllipticalSliceSync), (SliceFSM, SliceSync)]


def context(dataset="d", seed=0):
    return Context(seed=seed, split="test", dataset=dataset, device="cpu", threads=1, data_dir=None, precision="fp64")


def normal_problem(x0, n, seed=1, prior_scale=2.0):
    x0 = torch.as_tensor(x0, dtype=torch.float64)
    return Chains(lambda x: -0.5 * x.square().sum(1), x0, seed, n, torch.full((x0.shape[1],), prior_scale))


def exact_normal_target(problem):
    d = problem.x0.shape[1]
    return Target(problem, np.zeros(d), np.ones(d), np.zeros(d), np.zeros(d))


@pytest.mark.parametrize("fsm, sync", PAIRS, ids=["drmh", "ess", "slice"])
@pytest.mark.parametrize("loader", [standard_normal, funnel], ids=["normal", "funnel"])
def test_fsm_and_synchronised_forms_give_the_same_draws(fsm, sync, loader):
    # the same blocks, initial states and per-chain streams: only the scheduling differs
    target = loader(context(loader.__name__), chains=24, samples=30)
    a, b = fsm().sample(target.chains), sync().sample(target.chains)
    assert torch.equal(a.draws, b.draws)
    assert torch.equal(a.iterations, b.iterations)
    # the FSM needs about E N calls per sample, the synchronised form E max N (or more, with several loops)
    assert a.density_calls < b.density_calls
    assert b.density_calls >= int(a.iterations.max(0).values.sum())


def test_the_forms_agree_on_the_gp_posterior():
    target = gp_diabetes(context("gp"), chains=8, samples=5, rows=20, draws=4000)
    a, b = EllipticalSliceFSM().sample(target.chains), EllipticalSliceSync().sample(target.chains)
    assert torch.allclose(a.draws, b.draws, rtol=0, atol=1e-12)
    assert torch.equal(a.iterations, b.iterations)


@pytest.mark.parametrize("sampler", [DelayedRejectionMH(step=1.0), DelayedRejectionMH(step=3.0, max_tries=5),
                                     EllipticalSlice(prior_scale=2.0), SteppingOutSlice(width=0.5)],
                         ids=["drmh", "drmh-few-tries", "ess", "slice"])
def test_each_sampler_leaves_the_standard_normal_invariant(sampler):
    # from a point mass at x = 2.5 (far from stationary), the second half of a long run has N(0, 1)'s moments
    problem = normal_problem(np.full((48, 1), 2.5), 400, seed=7)
    run = run_fsm(sampler, problem)
    check, words = moment_check(run.draws[:, 200:].numpy(), exact_normal_target(problem))
    assert check <= 1.0, words


def test_the_invariance_check_catches_a_wrong_kernel():
    # a random walk that accepts every proposal spreads out instead of staying at N(0, 1)
    problem = normal_problem(np.full((48, 1), 2.5), 400, seed=7)
    wrong = run_fsm(_AcceptAll(step=1.0), problem).draws[:, 200:].numpy()
    assert moment_check(wrong, exact_normal_target(problem))[0] > 1.0


class _AcceptAll(DelayedRejectionMH):
    def advance(self, state, lp, mask):
        return super().advance(state, torch.full_like(lp, math.inf), mask)

    def bundled_step(self, state, lp, everyone):  # the FSM's step: DR-MH condenses it, without calling advance
        return super().bundled_step(state, torch.full_like(lp, math.inf), everyone)


def test_delayed_rejection_uses_later_stages():
    # with a wide step most first proposals are rejected: the counts show the later stages at work
    run = run_fsm(DelayedRejectionMH(step=4.0), normal_problem(np.zeros((32, 1)), 50))
    assert run.iterations.float().mean() > 1.5
    assert int(run.iterations.max()) <= 100


def test_task_scores_iterations_and_bound():
    # a fake method whose counts are N_ij = 1 except one chain taking 5 on every sample: E N = 1.5, E max N = 5
    problem = normal_problem(np.random.default_rng(0).standard_normal((8, 1)), 50)
    counts = torch.ones(8, 50, dtype=torch.int64)
    counts[3] = 5
    draws = torch.as_tensor(np.random.default_rng(1).standard_normal((8, 50, 1)))

    class Fake:
        def sample(self, p):
            return SimpleNamespace(draws=draws[:, : p.n], iterations=counts[:, : p.n], density_calls=2 * p.n)

    scores = TASK.evaluate(Fake(), exact_normal_target(problem), context())
    assert scores["mean_iterations"] == pytest.approx(1.5)
    assert scores["mean_max_iterations"] == pytest.approx(5.0)
    assert scores["r_bound"] == pytest.approx(5.0 / 1.5)
    assert scores["density_calls_per_sample"] == pytest.approx(2.0)
    assert scores["log_wall_s"] == pytest.approx(math.log(scores["wall_s"]))


def test_wrong_samples_fail_the_cell():
    problem = normal_problem(np.zeros((16, 1)), 200)

    class TooWide:
        def sample(self, p):
            g = torch.Generator().manual_seed(0)
            return SimpleNamespace(draws=1.5 * torch.randn(16, p.n, 1, generator=g, dtype=torch.float64),
                                   iterations=torch.ones(16, p.n, dtype=torch.int64), density_calls=p.n)

    with pytest.raises(SamplesWrong, match=r"E x² of coordinate 0: .* against 1"):
        TASK.evaluate(TooWide(), exact_normal_target(problem), context())


def test_first_samples_keeps_the_first_n_per_chain():
    finished = torch.tensor([[0, 1], [1, 0], [1, 1], [0, 1], [1, 1]], dtype=torch.bool)  # (steps, m)
    positions = torch.arange(10, dtype=torch.float64).view(5, 2, 1)
    run = first_samples(finished, positions, 2)
    assert run.draws[:, :, 0].tolist() == [[2.0, 4.0], [1.0, 5.0]]
    assert run.iterations.tolist() == [[2, 1], [1, 2]]
    assert run.density_calls == 5


def test_counter_based_streams():
    keys = chain_keys(3, 4000)
    counter = torch.zeros(4000, dtype=torch.int64)
    u = uniforms(keys, counter, 0, 4)
    assert float(u.min()) > 0 and float(u.max()) < 1
    assert abs(float(u.mean()) - 0.5) < 5 * math.sqrt(1 / 12 / u.numel())
    assert torch.equal(u[:10], uniforms(keys[:10], counter[:10], 0, 4))  # a chain's draws ignore the others
    assert not torch.equal(u, uniforms(keys, counter + 1, 0, 4))
    z = normals(keys, counter, 10, 3)
    assert abs(float(z.mean())) < 5 / math.sqrt(z.numel())
    assert abs(float(z.var()) - 1) < 5 * math.sqrt(2 / z.numel())


def test_scores_on_known_chains():
    rng = np.random.default_rng(0)
    iid = rng.standard_normal((8, 500, 1))
    assert effective_sample_size(iid) == pytest.approx(8 * 500, rel=0.15)
    assert split_rhat(iid) < 1.02
    ar = np.zeros((8, 2000, 1))  # AR(1) with coefficient 0.9: ESS = mn (1 − 0.9)/(1 + 0.9)
    for t in range(1, 2000):
        ar[:, t] = 0.9 * ar[:, t - 1] + rng.standard_normal((8, 1))
    assert effective_sample_size(ar) == pytest.approx(8 * 2000 * 0.1 / 1.9, rel=0.25)
    stuck = iid + np.arange(8)[:, None, None]  # chains around different means
    assert split_rhat(stuck) > 2.0
    assert effective_sample_size(stuck) < 100


def test_funnel_whitening_and_importance_reference():
    rng = np.random.default_rng(0)
    v = 1.5 * rng.standard_normal((100000, 1))
    x = np.exp(v / 2) * rng.standard_normal((100000, 2))
    white = funnel_whitened(np.concatenate([v, x], 1))
    assert np.allclose(white.var(0), [2.25, 1, 1], rtol=0.03)
    mean = torch.tensor([1.0, -2.0], dtype=torch.float64)
    ref = importance_reference(lambda z: -0.5 * ((z - mean) / torch.tensor([0.5, 2.0])).square().sum(1), 2,
                               np.random.default_rng(1), draws=20000)
    assert np.allclose(ref["mean"], [1.0, -2.0], atol=5 * ref["mean_se"].max())
    assert np.allclose(ref["second"], [1.25, 8.0], atol=5 * ref["second_se"].max())


def test_loaders_draw_by_seed_and_check_their_input():
    a, b = standard_normal(context(seed=0), chains=4, samples=3), standard_normal(context(seed=1), chains=4, samples=3)
    assert not torch.equal(a.chains.x0, b.chains.x0) and a.chains.seed != b.chains.seed
    target = logistic_breast_cancer(context(), chains=4, samples=3, rows=60, draws=4000, features=[0, 1])
    assert target.chains.x0.shape == (4, 3)
    with pytest.raises(DataError, match=r"chains = 1: expected an integer of at least 2"):
        standard_normal(context(), chains=1)
    with pytest.raises(DataError, match=r"features = \[0, 99\]; expected column indices in 0 … 29"):
        logistic_breast_cancer(context(), features=[0, 99])
    with pytest.raises(DataError, match=r"rows = 5000; expected 10 … 442"):
        gp_diabetes(context(), rows=5000)
    with pytest.raises(DataError, match=r"funnel: dim = 1; expected at least 2"):
        funnel(context(), dim=1)
    with pytest.raises(ValueError, match=r"sampler 'nuts': expected one of drmh, ess, slice"):
        make_sampler("nuts")


def test_synchronised_slice_runs_its_loops_in_turn():
    # each of the three loops is synchronised separately: never fewer calls than the slowest chain's total
    run = run_synchronised(SteppingOutSlice(width=0.3), normal_problem(np.zeros((16, 1)), 20))
    assert run.density_calls >= int(run.iterations.max(0).values.sum())


class _Frozen:
    """A sampler that never moves: every sample is the chain's initial state."""

    def sample(self, p):
        m = p.x0.shape[0]
        return SimpleNamespace(draws=p.x0[:, None, :].expand(m, p.n, p.x0.shape[1]).clone(),
                               iterations=torch.ones(m, p.n, dtype=torch.int64), density_calls=p.n)


@pytest.mark.parametrize("loader, extra", [(standard_normal, {}), (funnel, {}),
                                           (logistic_breast_cancer, {"rows": 60, "draws": 4000}),
                                           (gp_diabetes, {"rows": 20, "draws": 4000})],
                         ids=["normal", "funnel", "logistic", "gp"])
def test_a_frozen_sampler_fails_the_check_cells_but_passes_a_stationary_start(loader, extra):
    # the spec's check cells (chains 4 standard deviations off, second half tested, m = 16) have power against a
    # sampler that never moves; the timing cells' stationary start (exact draws) has none: it passes there
    for seed in range(3):
        away = loader(context(loader.__name__, seed), chains=16, samples=20, shift=4.0, burn_in=0.5, repeats=1, **extra)
        with pytest.raises(SamplesWrong, match="do not have the target's moments"):
            TASK.evaluate(_Frozen(), away, context())
    if loader in (standard_normal, funnel):  # exact starting draws: the frozen chains are exact draws
        still = loader(context(loader.__name__), chains=16, samples=20, repeats=1)
        assert TASK.evaluate(_Frozen(), still, context())["moment_check"] <= 1.0


@pytest.mark.parametrize("fsm", [DelayedRejectionFSM, SliceFSM], ids=["drmh", "slice"])
def test_the_samplers_pass_a_check_cell(fsm):
    # a moving sampler, started 4 standard deviations off, reaches the target within the burn-in (DR-MH here with a
    # wider step than the spec's 0.1, so that the test stays short)
    method = DelayedRejectionFSM(step=1.0) if fsm is DelayedRejectionFSM else fsm()
    away = standard_normal(context("n"), chains=16, samples=400, shift=4.0, burn_in=0.5, repeats=1)
    assert TASK.evaluate(method, away, context())["moment_check"] <= 1.0


def test_shifted_starts_need_a_burn_in():
    with pytest.raises(DataError, match="need a burn_in"):
        standard_normal(context(), chains=4, samples=3, shift=4.0)
    with pytest.raises(DataError, match="repeats = 0"):
        funnel(context(), chains=4, samples=3, repeats=0)


def test_loop_counts_split_the_iterations_identically_in_both_forms():
    # per sample and chain, the iterations of each of the slice sampler's three loops: the same in both forms,
    # summing to the iterations, and the synchronised form's calls are exactly Σ_i Σ_loops max_j N_ijl
    problem = normal_problem(np.random.default_rng(2).standard_normal((16, 1)), 25)
    a, b = run_fsm(SteppingOutSlice(width=0.3), problem), run_synchronised(SteppingOutSlice(width=0.3), problem)
    assert a.loop_iterations.shape == (16, 25, 3)
    assert torch.equal(a.loop_iterations, b.loop_iterations)
    assert torch.equal(a.loop_iterations.sum(-1), a.iterations)
    assert b.density_calls == int(b.loop_iterations.max(0).values.sum())
    assert b.density_calls > int(b.iterations.max(0).values.sum())  # the old bound understated the sync's cost


def test_bounds_for_loops_in_turn_and_at_finite_n():
    # two chains, two samples, two loops: loop maxima per sample (3 + 2) and (1 + 4); E N = 14 / 4
    loops = np.array([[[3, 0], [1, 1]], [[1, 2], [0, 4]]], dtype=float)  # (m, n, L)
    iterations = loops.sum(-1)  # chain 0: 3, 2; chain 1: 3, 4
    b = bounds(iterations, loops)
    assert b["sync_iterations"] == pytest.approx(5.0)
    assert b["r_bound"] == pytest.approx(5.0 / 3.0)
    assert b["r_bound_n"] == pytest.approx(10.0 / 7.0)  # the slowest chain's total: 7 steps for the FSM
    one = bounds(iterations, None)  # one loop: per sample max_j N = 3, 4
    assert one["r_bound"] == pytest.approx(3.5 / 3.0) and one["r_bound_n"] == pytest.approx(7.0 / 7.0)


def test_task_times_with_repeats_and_cpu_time():
    problem = normal_problem(np.random.default_rng(0).standard_normal((8, 1)), 30)
    calls = []

    class Counting:
        def sample(self, p):
            calls.append(p.n)
            return DelayedRejectionFSM(step=1.0).sample(p)

    target = dataclasses.replace(exact_normal_target(problem), repeats=3)
    scores = TASK.evaluate(Counting(), target, context())
    assert calls == [1, 30, 30, 30]  # the one-sample warm-up, then the repeats
    assert scores["log_cpu_s"] == pytest.approx(math.log(scores["wall_s_cpu"]))
    assert scores["wall_s_spread"] >= 0 and scores["log_cpu_s_spread"] == pytest.approx(
        scores["wall_s_spread"] / scores["wall_s"])


# ---------------------------------------------------------------- issue 29: the faster step draws what the old one did
# The DR-MH blocks and the random stream as they were before the step was made cheaper (every draw hashed from
# scratch, INIT run after the try on every chain and masked): a slow reference the optimised code must match exactly.

_M32 = 0xFFFFFFFF


def _reference_mix(x):
    x = x & _M32
    x = x ^ (x >> 16)
    x = (x * 0x7FEB352D) & _M32
    x = x ^ (x >> 15)
    x = (x * 0x846CA68B) & _M32
    return x ^ (x >> 16)


def _reference_uniforms(keys, counter, offset, k):
    base = _reference_mix(keys ^ _reference_mix(counter + 0x3C6EF372))
    slots = _reference_mix(torch.arange(offset, offset + k, dtype=torch.int64) * 0x9E3779B9 + 0x632BE5AB)
    bits = _reference_mix(base[:, None] ^ slots[None, :])
    return (bits.to(torch.float64) + 0.5) / 2.0**32


def _reference_normals(keys, counter, offset, k):
    u = _reference_uniforms(keys, counter, offset, 2 * k)
    return torch.sqrt(-2.0 * torch.log(u[:, :k])) * torch.cos(2.0 * math.pi * u[:, k:])


def _reference_put(state, mask, **values):
    for name, value in values.items():
        old = state[name]
        state[name] = torch.where(mask.view(-1, *([1] * (old.dim() - 1))), value, old)


class _ReferenceDelayedRejection(DelayedRejectionMH):
    def begin(self, state, mask):
        eps = _reference_normals(state["keys"], state["counter"], 100, state["x"].shape[1])
        _reference_put(state, mask, req=state["x"] + self.step * eps, lp_max=torch.full_like(state["lp"], -math.inf),
                       tries=torch.ones_like(state["tries"]))

    def advance(self, state, lp, mask):
        lp = torch.nan_to_num(lp, nan=-math.inf)
        u = _reference_uniforms(state["keys"], state["counter"], 0, 1)[:, 0]
        floor = torch.exp(state["lp_max"] - state["lp"])
        accept = u * (1.0 - floor) < torch.exp(lp - state["lp"]) - floor
        done = mask & (accept | (state["tries"] >= self.max_tries))
        _reference_put(state, mask & accept, x=state["req"], lp=lp)
        going = mask & ~done
        eps = _reference_normals(state["keys"], state["counter"], 200, state["x"].shape[1])
        _reference_put(state, going, lp_max=torch.maximum(state["lp_max"], lp), tries=state["tries"] + 1,
                       req=state["req"] + self.step * eps)
        state["counter"] = state["counter"] + mask.to(torch.int64)
        return done

    def bundled_step(self, state, lp, everyone):
        return Sampler.bundled_step(self, state, lp, everyone)  # the try, then INIT masked: no condensing


@pytest.mark.parametrize("params", [{}, {"step": 1.0, "max_tries": 5}], ids=["spec", "wide-few-tries"])
@pytest.mark.parametrize("loader", [standard_normal, funnel], ids=["normal-d1", "funnel-d3"])
def test_the_optimised_delayed_rejection_draws_what_the_reference_does(loader, params):
    # the condensed FSM step and the cheaper blocks give bit-identical draws and counts to the slow reference
    problem = loader(context(loader.__name__, 3), chains=40, samples=25).chains
    for run in (run_fsm, run_synchronised):
        new, old = run(DelayedRejectionMH(**params), problem), run(_ReferenceDelayedRejection(**params), problem)
        assert torch.equal(new.draws, old.draws)
        assert torch.equal(new.iterations, old.iterations)
        assert new.density_calls == old.density_calls


def test_the_condensed_step_is_the_try_then_init():
    # from states whose chains are at different draw numbers, tries and stages (d = 3): one condensed step leaves
    # every entry of the state exactly as the try on every chain followed by INIT on the done ones
    sampler = DelayedRejectionMH(step=0.7, max_tries=4)
    problem = normal_problem(np.random.default_rng(4).standard_normal((64, 3)), 10, seed=9)
    state = start(sampler, problem)
    masks = torch.as_tensor(np.random.default_rng(5).random((12, 64)) < 0.6)
    for live in masks:
        sampler.advance(state, problem.log_density(state["req"]), live)
    everyone = torch.ones(64, dtype=torch.bool)
    for _ in range(20):
        split = {name: value.clone() for name, value in state.items()}
        done = fsm_step(sampler, problem, state, everyone)
        assert torch.equal(done, Sampler.bundled_step(sampler, split, problem.log_density(split["req"]), everyone))
        assert state.keys() == split.keys()
        for name in state:
            assert torch.equal(state[name], split[name]), name


# Computed with the code before issue 29's change (commit 6eb7c04): 6 chains in 2-D from these starts, 8 samples
# each; the counts exactly, the last draws to 1e-12 (the transcendental functions may round differently elsewhere).
_BEFORE = {
    "drmh": ([[1, 1, 1, 2, 1, 1, 2, 1], [1, 2, 43, 1, 1, 32, 100, 1], [1, 20, 45, 100, 1, 1, 1, 1],
              [1, 4, 7, 3, 100, 1, 1, 1], [100, 1, 2, 100, 1, 2, 3, 2], [100, 100, 100, 1, 1, 100, 3, 1]],
             [1.3425618068882645, 1.0678919821869068, 0.5102339942397812, 0.5626916098491154, -2.3022297429561136,
              1.4023408430273607]),
    "ess": ([[4, 1, 1, 1, 3, 2, 1, 1], [2, 1, 1, 1, 1, 6, 4, 3], [1, 1, 4, 3, 2, 1, 1, 6], [3, 1, 1, 1, 1, 5, 1, 1],
             [1, 2, 2, 1, 2, 2, 3, 4], [11, 1, 1, 1, 1, 1, 1, 1]],
            [-0.1603158079051005, -0.08599905786525164, 0.6218036006098726, 0.3348535280949553, 0.012584738812248086,
             0.6756498644438883]),
    "slice": ([[18, 6, 13, 6, 4, 7, 10, 9], [9, 9, 11, 9, 10, 10, 7, 10], [8, 7, 8, 8, 9, 13, 10, 8],
               [12, 12, 14, 13, 12, 6, 6, 7], [18, 9, 11, 10, 8, 10, 9, 11], [6, 8, 13, 7, 6, 21, 8, 8]],
              [0.8084097096656355, 1.1227733236308592, 1.1157486410056243, -0.1002811876940465, 0.5312890594530795,
               -0.25845459315547537]),
}


@pytest.mark.parametrize("kind, sampler", [("drmh", DelayedRejectionMH(step=1.0)), ("ess", EllipticalSlice(2.0)),
                                           ("slice", SteppingOutSlice(0.5))], ids=["drmh", "ess", "slice"])
def test_the_samplers_draw_what_they_drew_before(kind, sampler):
    problem = normal_problem(np.random.default_rng(3).standard_normal((6, 2)), 8, seed=11)
    iterations, last = _BEFORE[kind]
    for run in (run_fsm(sampler, problem), run_synchronised(sampler, problem)):
        assert run.iterations.tolist() == iterations
        assert run.draws[:, -1, 0].tolist() == pytest.approx(last, rel=1e-12, abs=1e-12)
