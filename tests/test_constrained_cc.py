"""Constrained correlation clustering: the task's references, the paper's lemmas and the baselines.

Paper: Kalavas, Kipouridis & Varma, "Towards Better-than-2 Approximation for Constrained
Correlation Clustering", ICML 2025. E⁺(C) / E⁻(C) are the + / − pairs C pays for.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from baselines.correlation_clustering import (
    ConstrainedPivot,
    ExactILP,
    VanZuylenWilliamsonPivot,
    lp_pivot,
    solve_cluster_ilp,
    solve_triangle_lp,
)
from components.correlation_clustering import feasible_clusters, lp_parts
from harness.tasks.base import Context
from harness.tasks.graph.correlation_clustering import (
    TASK,
    CCBatch,
    ConstraintViolation,
    canonical_labels,
    cluster_lp_value,
    cost,
    disagreements,
    exact_optimum,
    lp_is_fractional,
    make_instance,
    planted_partition,
    ratio,
    violations,
)
from implementations.constrained_cc import (
    ClusterLPAlgorithm,
    ClusterLPSolution,
    local_search,
    lp_distances,
    pair_costs,
    pivot_mix,
    round_by_sampling,
    solve_cluster_lp,
)
import implementations.constrained_cc._algorithm as algorithm_module


def instances(count, seed, n=(4, 8), noise=(0.1, 0.45), constraints=None, at_least=0):
    """Random planted instances of varying size, noise and number of constraints.

    ``constraints=None`` draws the number of must-link (and of cannot-link) pairs from
    ``at_least`` .. size // 2 (capped by the pairs inside the planted clusters).
    """
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        size = int(rng.integers(n[0], n[1] + 1))
        clusters = int(rng.integers(2, 4))
        c = int(rng.integers(at_least, size // 2 + 1)) if constraints is None else constraints
        inside = sum(s * (s - 1) // 2 for s in np.bincount(np.arange(size) % clusters))
        batch = planted_partition(Context(seed=seed * 1000 + i, dataset="t"), n=size, clusters=clusters,
                                  noise=float(rng.uniform(*noise)), constraints=min(c, inside), instances=1)
        out.append(batch.instances[0])
    return out


def set_partitions(n):
    """All partitions of range(n) as restricted-growth label arrays."""
    def grow(prefix, top):
        if len(prefix) == n:
            yield np.array(prefix)
            return
        for label in range(top + 2):
            yield from grow(prefix + [label], max(top, label))
    yield from grow([0], 0) if n else iter(())


def random_feasible_partition(instance, rng):
    """A random clustering that respects F and H: shuffle the F-components into groups."""
    fc = feasible_clusters(instance)
    comps = fc.components
    k = comps.max() + 1
    unit_label = np.full(k, -1)
    for unit in rng.permutation(k):
        options = [lab for lab in np.unique(unit_label[unit_label >= 0])
                   if not any(unit_label[comps[u]] == lab and comps[v] == unit or
                              unit_label[comps[v]] == lab and comps[u] == unit for u, v in instance.hostile)]
        options.append(unit_label.max() + 1)
        unit_label[unit] = options[rng.integers(len(options))]
    return canonical_labels(unit_label[comps])


def convex_lp_point(instance, rng, parts=3):
    """A feasible, generally fractional, Cluster LP point: a convex mix of feasible partitions."""
    weights = rng.dirichlet(np.ones(parts))
    z = {}
    for w in weights:
        labels = random_feasible_partition(instance, rng)
        for lab in np.unique(labels):
            key = tuple(labels == lab)
            z[key] = z.get(key, 0.0) + w
    members = np.array(list(z.keys()), dtype=bool)
    return members, np.array(list(z.values()))


def lp_value(instance, x):
    plus, minus = lp_parts(instance, x)
    return plus + minus, minus


# --- problem utilities ------------------------------------------------------------------

def test_cost_and_violations_by_hand():
    # + pairs: 01, 12, 23; everything else −.
    signs = -np.ones((4, 4), dtype=int)
    for u, v in [(0, 1), (1, 2), (2, 3)]:
        signs[u, v] = signs[v, u] = 1
    inst = make_instance(signs, friendly=[(0, 1)], hostile=[(1, 3)])
    assert cost(inst, [0, 0, 1, 1]) == 1            # only + pair 12 is cut
    assert cost(inst, [0, 0, 0, 0]) == 3            # − pairs 02, 03, 13 inside
    assert cost(inst, [0, 1, 2, 3]) == 3            # all three + pairs cut
    assert violations(inst, [0, 0, 1, 1]) == 0
    assert violations(inst, [0, 1, 1, 1]) == 2      # 01 split and 13 joined
    for solve in (exact_optimum, solve_cluster_ilp):
        labels, opt = solve(inst)
        assert opt == 1 and cost(inst, labels) == 1 and list(canonical_labels(labels)) == [0, 0, 1, 1]


def test_feasible_clusters_respect_constraints_and_weights():
    inst = instances(1, seed=3, n=(7, 7), constraints=3)[0]
    fc = feasible_clusters(inst)
    for S, w in zip(fc.members, fc.weight):
        assert all(S[u] == S[v] for u, v in inst.friendly)
        assert not any(S[u] and S[v] for u, v in inst.hostile)
        nodes = np.flatnonzero(S)
        inside = inst.signs[np.ix_(nodes, nodes)][np.triu_indices(len(nodes), k=1)]
        assert w == (inside < 0).sum() - (inside > 0).sum()
    # every union of components without an H pair is there, and nothing else
    k = fc.components.max() + 1
    expected = sum(1 for code in range(1, 2**k)
                   if not any((code >> fc.components[u]) & 1 and (code >> fc.components[v]) & 1
                              for u, v in inst.hostile))
    assert fc.count == expected


def test_task_optimum_agrees_with_the_cluster_ilp_and_brute_force():
    # The task's OPT (edge-variable ILP) and the exact-ilp baseline (ILP over feasible clusters)
    # are independent solvers; on instances small enough, every set partition is tried too.
    checked = 0
    for inst in instances(20, seed=71, n=(4, 7), at_least=1):
        assert inst.friendly and inst.hostile
        labels, opt = exact_optimum(inst)
        assert cost(inst, labels) == opt and violations(inst, labels) == 0
        ilp_labels, ilp_opt = solve_cluster_ilp(inst)
        assert ilp_opt == opt and cost(inst, ilp_labels) == opt and violations(inst, ilp_labels) == 0
        best = min(cost(inst, p) for p in set_partitions(inst.n) if violations(inst, p) == 0)
        assert opt == best
        checked += opt > 0
    assert checked >= 15   # most instances are not solved by cost 0


def test_task_lp_agrees_with_the_methods_cluster_lp():
    # the paper's LP over every subset with x kept (the task's) and over the feasible clusters
    # of the F-components with x eliminated (the method's) have the same optimum
    fractional = 0
    for inst in instances(20, seed=73, n=(4, 8)) + instances(20, seed=74, n=(6, 9), noise=(0.3, 0.5)) + \
            instances(20, seed=79, n=(6, 9), constraints=0):
        value = cluster_lp_value(inst)
        assert value == pytest.approx(solve_cluster_lp(inst).value, abs=1e-7)
        opt = exact_optimum(inst)[1]
        assert value <= opt + 1e-7
        fractional += value < opt - 1e-6
    assert fractional >= 3   # the LP is integral on most small instances, not on all


def test_task_references_reject_what_they_cannot_solve():
    signs = np.ones((3, 3), dtype=int)
    inconsistent = make_instance(signs, friendly=[(0, 1), (1, 2)], hostile=[(0, 2)])
    with pytest.raises(ValueError, match="infeasible instance"):
        exact_optimum(inconsistent)
    with pytest.raises(ValueError, match="infeasible instance"):
        cluster_lp_value(inconsistent)
    with pytest.raises(ValueError, match="n = 17: the task's Cluster LP"):
        cluster_lp_value(make_instance(np.ones((17, 17), dtype=int)))
    assert exact_optimum(make_instance(np.ones((17, 17), dtype=int)))[1] == 0


def test_task_references_import_no_method():
    # a scorer never shares its solver with a method it scores: computing OPT and the LP
    # imports nothing from implementations/, baselines/ or components/
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from harness.tasks.base import Context\n"
        "from harness.tasks.graph.correlation_clustering import TASK, planted_partition\n"
        "batch = planted_partition(Context(seed=0, dataset='t'), n=7, instances=3)\n"
        "print([TASK.reference(i) for i in batch.instances])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('implementations', 'baselines', 'components')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[1]).stdout.splitlines()
    assert out[-1] == "[]"


def test_lp_objective_at_an_integral_point_is_the_clustering_cost():
    # pins the elimination x_uv = 1 − Σ_{S ⊇ uv} z_S: binary z of a partition gives its cost
    rng = np.random.default_rng(0)
    for inst in instances(10, seed=11):
        labels = random_feasible_partition(inst, rng)
        members = np.array([labels == lab for lab in np.unique(labels)])
        x = lp_distances(inst.n, members, np.ones(len(members)))
        assert np.array_equal(x, (labels[:, None] != labels[None, :]).astype(float))
        assert lp_value(inst, x)[0] == pytest.approx(cost(inst, labels))
        fc = feasible_clusters(inst)
        rows = [np.flatnonzero((fc.members == S).all(axis=1))[0] for S in members]
        assert fc.plus_pairs + fc.weight[rows].sum() == cost(inst, labels)


def test_cluster_lp_solution_is_feasible_and_below_opt():
    for inst in instances(15, seed=5, n=(5, 9), constraints=0):
        lp = solve_cluster_lp(inst)
        coverage = (lp.members * lp.z[:, None]).sum(axis=0)
        assert np.allclose(coverage, 1.0, atol=1e-7)
        assert np.all(lp.x >= -1e-7) and np.all(lp.x <= 1 + 1e-7)
        _, opt = exact_optimum(inst)
        _, tri = solve_triangle_lp(inst)
        assert tri <= lp.value + 1e-6 <= opt + 2e-6     # the cluster LP is the stronger relaxation


# --- the paper's algorithm ----------------------------------------------------------------

def test_local_search_is_a_feasible_local_optimum():
    rng = np.random.default_rng(1)
    for inst in instances(20, seed=7):
        found = ClusterLPAlgorithm().run(inst, rng, upto="penalised-local-search")
        moves = found["lp"].members
        L, Lp = found["L"], found["L'"]
        assert violations(inst, L) == 0 and violations(inst, Lp) == 0
        plus_L, _ = disagreements(inst, L)
        for C in moves:
            for start, penalised in ((L, False), (Lp, True)):
                moved = start.copy()
                moved[C] = start.max() + 1
                if penalised:  # cost_L(C) = cost(C) + |E⁺(C) ∩ E⁺(L)|
                    before = cost(inst, start) + (disagreements(inst, start)[0] & plus_L).sum()
                    after = cost(inst, moved) + (disagreements(inst, moved)[0] & plus_L).sum()
                else:
                    before, after = cost(inst, start), cost(inst, moved)
                assert after >= before


def check_lemmas_4_4_and_4_8(inst, members, z):
    """Lemma 4.4 and the exact inequality behind Lemma 4.8 for local optima w.r.t. supp(z)."""
    x = lp_distances(inst.n, members, z)
    lp, lp_minus = lp_value(inst, x)
    start = feasible_clusters(inst).components
    cut, join = pair_costs(inst)
    L = local_search(start, members, cut, join)
    plus_L, minus_L = disagreements(inst, L)
    # Lemma 4.4: cost(L) ≤ 2LP − LP⁻ − Σ_{uv ∈ E⁺(L) ∪ E⁻(L)} x_uv
    assert cost(inst, L) <= 2 * lp - lp_minus - x[plus_L | minus_L].sum() + 1e-7
    Lp = local_search(start, members, pair_costs(inst, extra_cut=plus_L)[0], join)
    plus_Lp, minus_Lp = disagreements(inst, Lp)
    both = plus_L & plus_Lp
    # Appendix A before relaxing: cost(L′) + Σ_{E⁺(L′)∪E⁻(L′)} x + |E⁺(L)∩E⁺(L′)| + Σ_{E⁺(L)∩E⁺(L′)} x
    #                             ≤ 2LP − LP⁻ + 2 Σ_{E⁺(L)} x
    lhs = cost(inst, Lp) + x[plus_Lp | minus_Lp].sum() + both.sum() + x[both].sum()
    assert lhs <= 2 * lp - lp_minus + 2 * x[plus_L].sum() + 1e-7
    return cost(inst, L), lp


def test_lemma_4_4_on_the_lp_optimum():
    tight = 0
    for inst in instances(25, seed=13, n=(5, 9)):
        lp = solve_cluster_lp(inst)
        paid, value = check_lemmas_4_4_and_4_8(inst, lp.members, lp.z)
        tight += abs(paid - value) < 1e-7
    assert tight > 0   # on an integral LP the inequality is an equality: cost(L) = OPT


def test_lemma_4_4_on_fractional_lp_points():
    # the proof uses only the LP's constraints, so any feasible fractional point must satisfy it
    rng = np.random.default_rng(2)
    fractional = 0
    for inst in instances(40, seed=17, n=(5, 9)):
        members, z = convex_lp_point(inst, rng)
        fractional += np.any((z > 1e-9) & (z < 1 - 1e-9))
        check_lemmas_4_4_and_4_8(inst, members, z)
    assert fractional >= 30


def test_rounding_separation_probability():
    # hand-made LP point on 3 nodes: x01 = 0.3, x02 = x12 = 0.6
    members = np.array([[1, 1, 1], [1, 1, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], dtype=bool)
    z = np.array([0.4, 0.3, 0.3, 0.3, 0.6])
    x = lp_distances(3, members, z)
    assert x[0, 1] == pytest.approx(0.3) and x[0, 2] == pytest.approx(0.6)
    rng = np.random.default_rng(0)
    draws = 20000
    apart = np.zeros((3, 3))
    for _ in range(draws):
        labels = round_by_sampling(members, z, rng)
        apart += labels[:, None] != labels[None, :]
    expected = 2 * x / (1 + x)
    assert np.abs(apart / draws - expected).max() < 0.015   # ≈ 4 standard errors


def test_rounding_separation_probability_on_a_mixed_point():
    rng = np.random.default_rng(4)
    inst = instances(1, seed=23, n=(6, 6), constraints=1)[0]
    members, z = convex_lp_point(inst, rng, parts=4)
    x = lp_distances(inst.n, members, z)
    draws = 10000
    apart = np.zeros_like(x)
    for _ in range(draws):
        labels = round_by_sampling(members, z, rng)
        apart += labels[:, None] != labels[None, :]
        assert violations(inst, labels) == 0
    off = ~np.eye(inst.n, dtype=bool)
    assert np.abs(apart / draws - 2 * x / (1 + x))[off].max() < 0.025


def test_pivot_mix_charging_bound_and_feasibility():
    # Lemma 4.16's argument: cost(P) ≤ 3·(# − pairs sharing a label coordinate
    #                                    + # + pairs differing in ≥ 2 coordinates)
    rng = np.random.default_rng(8)
    for inst in instances(40, seed=29, n=(5, 10)):
        three = [random_feasible_partition(inst, rng) for _ in range(3)]
        P = pivot_mix(*three)
        assert violations(inst, P) == 0
        iu = np.triu_indices(inst.n, k=1)
        differ = sum((t[:, None] != t[None, :]).astype(int) for t in three)[iu]
        signs = inst.signs[iu]
        charged = ((signs < 0) & (differ <= 2)).sum() + ((signs > 0) & (differ >= 2)).sum()
        assert cost(inst, P) <= 3 * charged
        # Corollary 4.14's form of the same budget
        plus = [disagreements(inst, t)[0] for t in three]
        minus = [disagreements(inst, t)[1] for t in three]
        budget = sum(m.sum() for m in minus) + (plus[0] & plus[1]).sum() + (plus[0] & plus[2]).sum() \
            + (plus[1] & plus[2]).sum()
        assert charged <= budget


def test_pivot_mix_by_hand():
    # classes: {0,1} = (0,0,0), {2} = (0,0,1) differs in one coordinate, {3} = (1,1,1)
    P = pivot_mix(np.array([0, 0, 0, 1]), np.array([0, 0, 0, 1]), np.array([0, 0, 1, 2]))
    assert list(canonical_labels(P)) == [0, 0, 0, 1]


def test_pivot_mix_takes_the_largest_class_first():
    # nodes 0-2 = (0,0,0), 3 = (0,0,1), 4 = (0,1,1): the big class takes 3 and leaves 4; had the
    # singleton class of node 3 gone first it would have taken everything
    P = pivot_mix(np.array([0, 0, 0, 0, 0]), np.array([0, 0, 0, 0, 1]), np.array([0, 0, 0, 1, 1]))
    assert list(canonical_labels(P)) == [0, 0, 0, 0, 1]


def fractional_lp(monkeypatch, rng):
    """Make the algorithm see a fractional LP point (a convex mix of feasible partitions)."""
    def fake(inst, clusters=None, support_tol=1e-9):
        members, z = convex_lp_point(inst, rng, parts=3)
        x = lp_distances(inst.n, members, z)
        return ClusterLPSolution(members, z, x, lp_value(inst, x)[0])
    monkeypatch.setattr(algorithm_module, "solve_cluster_lp", fake)


def test_best_is_the_cheapest_of_L_L_prime_and_P(monkeypatch):
    rng = np.random.default_rng(3)
    for inst in instances(10, seed=31, n=(6, 9), constraints=0):
        found = ClusterLPAlgorithm().run(inst, rng)
        assert cost(inst, found["best"]) == min(cost(inst, found[k]) for k in ("L", "L'", "P"))
    # L′ must be able to win: make it the optimum, L the start (V, F) and P the singletons
    inst = instances(1, seed=59, n=(8, 8), noise=(0.3, 0.3), constraints=0)[0]
    optimum, opt = exact_optimum(inst)
    calls = []
    monkeypatch.setattr(algorithm_module, "local_search",
                        lambda start, moves, cut, join: calls.append(1) or (optimum if len(calls) == 2 else start))
    monkeypatch.setattr(algorithm_module, "pivot_mix", lambda a, b, c: np.arange(inst.n))
    found = ClusterLPAlgorithm().run(inst, rng)
    assert cost(inst, found["L"]) > opt and cost(inst, found["P"]) > opt
    assert cost(inst, found["best"]) == opt


@pytest.mark.parametrize("select", ["paper", "cost"])
def test_rounding_keeps_the_draw_the_paper_asks_for(monkeypatch, select):
    # "paper": the draw minimising |E⁻(I)| + |E⁺(I) ∩ E⁺(L)| + |E⁺(I) ∩ E⁺(L′)| (Corollary 4.12)
    lp_rng = np.random.default_rng(10)
    fractional_lp(monkeypatch, lp_rng)
    differs = 0
    for seed, inst in enumerate(instances(12, seed=61, n=(6, 9))):
        found = ClusterLPAlgorithm(rounding_repeats=6, rounding_select=select).run(
            inst, np.random.default_rng(seed), upto="rounding")
        lp = found["lp"]
        replay = np.random.default_rng(seed)   # run() draws only in the rounding step
        draws = [round_by_sampling(lp.members, lp.z, replay) for _ in range(6)]
        plus_L, plus_Lp = disagreements(inst, found["L"])[0], disagreements(inst, found["L'"])[0]

        def paper(labels):
            plus, minus = disagreements(inst, labels)
            return minus.sum() + (plus & plus_L).sum() + (plus & plus_Lp).sum()

        score = paper if select == "paper" else (lambda labels: cost(inst, labels))
        assert score(found["I"]) == min(score(d) for d in draws)
        differs += len({score(d) for d in draws}) > 1
    assert differs >= 3


# --- baselines and every method --------------------------------------------------------------

def all_methods():
    return [ClusterLPAlgorithm(output=o) for o in
            ("best", "local-search", "penalised-local-search", "rounding", "pivot-mix")] + [
        ClusterLPAlgorithm(best_includes_rounding=True, rounding_select="cost"),
        VanZuylenWilliamsonPivot(), VanZuylenWilliamsonPivot(pivot="random", repeats=5),
        ConstrainedPivot(), ConstrainedPivot(join="all", repeats=3), ExactILP()]


def test_no_method_violates_constraints_and_lp_bounds_hold():
    rng = np.random.default_rng(5)
    methods = all_methods()
    for inst in instances(50, seed=37, n=(4, 9)):
        _, opt = exact_optimum(inst)
        lp = cluster_lp_value(inst)
        assert lp <= opt + 1e-7
        for method in methods:
            labels = method.cluster(inst, rng)
            assert violations(inst, labels) == 0, (method, inst.friendly, inst.hostile)
            assert cost(inst, labels) >= opt
        assert cost(inst, ExactILP().cluster(inst, rng)) == opt


def test_vzw_ratio_pivot_is_within_three_times_the_triangle_lp():
    rng = np.random.default_rng(6)
    worst = 0.0
    for inst in instances(60, seed=41, n=(5, 10), noise=(0.2, 0.5), constraints=0) + \
            instances(30, seed=43, n=(5, 10), noise=(0.2, 0.5)):
        _, tri = solve_triangle_lp(inst)
        paid = cost(inst, VanZuylenWilliamsonPivot().cluster(inst, rng))
        assert paid <= 3 * tri + 1e-6
        worst = max(worst, ratio(paid, tri))
    assert worst > 1.0   # the instances are not all solved by the LP alone


def test_vzw_on_a_half_integral_lp_cuts_strictly_only_for_cannot_link_pairs():
    # 0 is + to 1, 2, 3, which are pairwise cannot-link: the unique LP optimum is x_0i = ½.
    # Pivot 0 has three tied, pairwise cannot-link nodes: none joins (cost 3); pivot i takes 0
    # (its tie at ½, which nothing forbids) and pays the optimum 2.
    signs = -np.ones((4, 4), dtype=int)
    signs[0, 1:] = signs[1:, 0] = 1
    inst = make_instance(signs, hostile=[(1, 2), (1, 3), (2, 3)])
    x, tri = solve_triangle_lp(inst)
    assert tri == pytest.approx(1.5) and np.allclose(x[0, 1:], 0.5)
    assert list(canonical_labels(lp_pivot(inst, x))) == [0, 0, 1, 2]  # the ratio rule: pivot 1, cost 0 / mass 1
    rng = np.random.default_rng(0)
    for method in (VanZuylenWilliamsonPivot(), VanZuylenWilliamsonPivot(pivot="random", repeats=3)):
        labels = method.cluster(inst, rng)
        assert violations(inst, labels) == 0 and cost(inst, labels) == exact_optimum(inst)[1] == 2 <= 3 * tri
    costs = {cost(inst, lp_pivot(inst, x, rng)) for _ in range(40)}
    assert costs == {2, 3}


def test_vzw_joins_a_tie_at_one_half_unless_a_cannot_link_pair_needs_the_cut():
    # one + pair at x = ½ exactly: nothing needs the strict cut, so it joins (a strict < ½ split it)
    pair = make_instance(np.array([[0, 1], [1, 0]]))
    half = np.array([[0, 0.5], [0.5, 0]])
    assert list(lp_pivot(pair, half)) == [0, 0]
    assert list(lp_pivot(pair, half + np.array([[0, 4e-7], [4e-7, 0]]))) == [0, 0]  # solver noise is a tie too
    # 0 is + to 1 and 2, which are cannot-link: from pivot 0 both are tied and must not both join,
    # so neither does; from pivot 1 (or 2) the tie with 0 joins, the cannot-link partner is not a candidate
    inst = make_instance(np.array([[0, 1, 1], [1, 0, -1], [1, -1, 0]]), hostile=[(1, 2)])
    x = np.array([[0, 0.5, 0.5], [0.5, 0, 1.0], [0.5, 1.0, 0]])
    rng = np.random.default_rng(0)
    seen = {tuple(canonical_labels(lp_pivot(inst, x, rng))) for _ in range(40)}
    assert seen == {(0, 1, 2), (0, 0, 1), (0, 1, 0)}
    # a strict < ½ neighbour and a tied one that are cannot-link: the tied one stays out
    x = np.array([[0, 0.4, 0.5 + 5e-7], [0.4, 0, 1.0], [0.5 + 5e-7, 1.0, 0]])
    assert all(violations(inst, lp_pivot(inst, x, rng)) == 0 for _ in range(20))


def test_every_randomised_method_keeps_the_best_of_its_repeats():
    """repeats = k is the best of k runs: the first run is the one repeats = 1 makes, so never worse."""
    made = {"cluster-lp": lambda k: ClusterLPAlgorithm(repeats=k),
            "pivot-mix": lambda k: ClusterLPAlgorithm(output="pivot-mix", repeats=k),
            "vzw-random": lambda k: VanZuylenWilliamsonPivot(pivot="random", repeats=k),
            "pivot": lambda k: ConstrainedPivot(repeats=k)}
    better = {name: 0 for name in made}
    for index, inst in enumerate(instances(12, seed=71, n=(7, 9), noise=(0.3, 0.5), constraints=1)):
        for name, make in made.items():
            once = cost(inst, make(1).cluster(inst, np.random.default_rng(index)))
            thrice = cost(inst, make(3).cluster(inst, np.random.default_rng(index)))
            assert thrice <= once, name
            better[name] += thrice < once
    assert better["pivot"] > 0  # the repeats do something
    with pytest.raises(ValueError, match="repeats must be ≥ 1"):
        ClusterLPAlgorithm(repeats=0).cluster(instances(1, seed=1)[0], np.random.default_rng(0))


def test_vzw_ratio_rule_by_hand():
    # x01 = x12 = 0.3 (joined), x02 = 0.6 (not), all pairs +. Pivot 1 puts everyone together at
    # cost 0 (ratio 0); pivot 0 or 2 pays 02 and 12 for LP mass 1.2 (ratio 5/3).
    inst = make_instance(np.ones((3, 3), dtype=int))
    x = np.array([[0, 0.3, 0.6], [0.3, 0, 0.3], [0.6, 0.3, 0]])
    assert list(lp_pivot(inst, x)) == [0, 0, 0]
    rng = np.random.default_rng(0)
    seen = {tuple(canonical_labels(lp_pivot(inst, x, rng))) for _ in range(30)}
    assert seen == {(0, 0, 0), (0, 0, 1), (0, 1, 1)}


def test_triangle_lp_keeps_friendly_rows_equal_and_hostile_pairs_apart():
    for inst in instances(10, seed=47, n=(6, 9), noise=(0.3, 0.5)):
        x, _ = solve_triangle_lp(inst)
        for u, v in inst.friendly:
            assert x[u, v] == 0 and np.allclose(x[u], x[v], atol=1e-6)
        for u, v in inst.hostile:
            assert x[u, v] == 1 and np.all(x[u] + x[v] >= 1 - 1e-6)


def test_constrained_pivot_join_rules_by_hand():
    # F-components A = {0, 1}, B = {2, 3}: three + pairs and one − pair between them
    signs = np.ones((4, 4), dtype=int)
    signs[1, 3] = signs[3, 1] = -1
    inst = make_instance(signs, friendly=[(0, 1), (2, 3)])
    rng = np.random.default_rng(0)
    assert len(np.unique(ConstrainedPivot(join="majority").cluster(inst, rng))) == 1
    assert len(np.unique(ConstrainedPivot(join="all").cluster(inst, rng))) == 2
    # all + with a cannot-link 12: whatever the pivot, one of 1, 2 joins the other's cluster
    # with 0 and the cost is the optimum 2 (pair 12 is always paid), never singletons' 3
    inst = make_instance(np.ones((3, 3), dtype=int), hostile=[(1, 2)])
    assert exact_optimum(inst)[1] == 2
    for _ in range(10):
        labels = ConstrainedPivot().cluster(inst, rng)
        assert violations(inst, labels) == 0 and cost(inst, labels) == 2


# --- the task ------------------------------------------------------------------------------

def test_loader_is_reproducible_and_consistent():
    ctx = Context(seed=3, split="test", dataset="planted-partition-cc")
    a = planted_partition(ctx, n=9, clusters=3, noise=0.2, instances=5)
    b = planted_partition(ctx, n=9, clusters=3, noise=0.2, instances=5)
    val = planted_partition(Context(seed=3, split="val", dataset="planted-partition-cc"), n=9, instances=5)
    assert all(np.array_equal(x.signs, y.signs) and x.friendly == y.friendly for x, y in zip(a.instances, b.instances))
    assert not all(np.array_equal(x.signs, y.signs) for x, y in zip(a.instances, val.instances))
    for inst, planted in zip(a.instances, a.planted):
        assert len(inst.friendly) == len(inst.hostile) == 4
        assert violations(inst, planted) == 0
        assert np.array_equal(inst.signs, inst.signs.T) and np.all(np.diag(inst.signs) == 0)
    noiseless = planted_partition(ctx, n=9, noise=0.0, instances=3)
    assert all(cost(i, p) == 0 for i, p in zip(noiseless.instances, noiseless.planted))


def test_task_metrics_and_zero_optimum_rule():
    ctx = Context(seed=0, dataset="planted-partition-cc")
    data = planted_partition(ctx, **TASK.tiny(Path('.'))["planted-partition-cc"])
    metrics = TASK.evaluate(ExactILP(), data, ctx)
    assert set(metrics) == set(TASK.metrics)
    assert metrics["cost_over_opt"] == metrics["worst_cost_over_opt"] == 1.0
    assert metrics["violations"] == 0.0 and metrics["runtime_s"] > 0
    assert ratio(0, 0) == 1.0 and ratio(2, 0) == 3.0 and ratio(3, 2) == 1.5


def test_task_reports_the_fractional_share_and_the_worst_ratio_to_the_lp():
    # a + 5-cycle, every other pair −: the Cluster LP takes each cycle edge at z = ½ (value 5/2),
    # while a clustering cuts at least 3 cycle edges (OPT 3); the planted pairs are integral
    cycle = -np.ones((5, 5), dtype=int)
    for u in range(5):
        cycle[u, (u + 1) % 5] = cycle[(u + 1) % 5, u] = 1
    np.fill_diagonal(cycle, 0)
    pairs = make_instance(np.array([[0, 1, -1, -1], [1, 0, -1, -1], [-1, -1, 0, 1], [-1, -1, 1, 0]]))
    data = CCBatch((make_instance(cycle), pairs), (np.zeros(5, dtype=int), np.array([0, 0, 1, 1])))
    assert TASK.reference(data.instances[0]) == (3, pytest.approx(2.5))
    ctx = Context(seed=2, dataset="planted-partition-cc")
    metrics = TASK.evaluate(ExactILP(), data, ctx)
    assert metrics["lp_fractional"] == 0.5
    assert metrics["worst_cost_over_lp"] == pytest.approx(3 / 2.5) and metrics["cost_over_opt"] == 1.0
    assert metrics["cost_over_lp"] == pytest.approx((3 / 2.5 + 1.0) / 2)
    assert not lp_is_fractional(5, 5 - 1e-9) and lp_is_fractional(5, 4.5)


def test_task_counts_violations_over_every_instance_before_failing():
    class SplitsTheFirst:
        def __init__(self):
            self.calls = 0

        def cluster(self, instance, rng):
            self.calls += 1
            return np.arange(instance.n) if self.calls == 1 else exact_optimum(instance)[0]

    ctx = Context(seed=1, dataset="planted-partition-cc")
    data = planted_partition(ctx, n=6, instances=3)
    method = SplitsTheFirst()
    expected = violations(data.instances[0], np.arange(6))
    with pytest.raises(ConstraintViolation, match=rf"{expected} must-link or cannot-link pair\(s\) broken on 1 of 3"):
        TASK.evaluate(method, data, ctx)
    assert method.calls == 3  # every instance checked, then the cell fails


def test_task_rejects_a_violating_method():
    class Singletons:
        def cluster(self, instance, rng):
            return np.arange(instance.n)

    ctx = Context(seed=1, dataset="planted-partition-cc")
    data = planted_partition(ctx, n=6, instances=2)
    with pytest.raises(ConstraintViolation, match=r"instance 0: must-link pairs split \[\("):
        TASK.evaluate(Singletons(), data, ctx)
    free = CCBatch(tuple(make_instance(i.signs, (), i.hostile) for i in data.instances), data.planted)
    assert TASK.evaluate(Singletons(), free, ctx)["worst_cost_over_opt"] >= 1.0
