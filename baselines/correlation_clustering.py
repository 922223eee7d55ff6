"""Baselines for constrained correlation clustering (task ``graph.correlation-clustering``).

- :class:`VanZuylenWilliamsonPivot`: the triangle LP with x = 0 on F and x = 1 on H, then
  Pivot on the graph {uv : x_uv < 1/2} (van Zuylen & Williamson, MOR 2009), with their
  deterministic pivot choice or uniformly random pivots.
- :class:`ConstrainedPivot`: LP-free randomised Pivot on the F-components.
- :class:`ExactILP`: an optimum from the Cluster LP with binary z (:func:`solve_cluster_ilp`).
"""
from __future__ import annotations

import math

import numpy as np

from components.correlation_clustering import FeasibleClusters, feasible_clusters, lp_parts
from harness.tasks.graph.correlation_clustering import (
    CCInstance,
    canonical_labels,
    check_consistent,
    cost,
    labels_from_clusters,
)

# |x_uv − 1/2| ≤ this is a tie at 1/2: the LP solver's own feasibility error is ~1e-7, so a value
# this close to 1/2 may be 1/2 exactly (half-integral LP vertices put many pairs there).
_TIE = 1e-6


def solve_triangle_lp(instance: CCInstance) -> tuple[np.ndarray, float]:
    """The standard LP: min Σ_{E⁺} x + Σ_{E⁻} (1 − x) over x ∈ [0, 1] with every triangle
    inequality, x = 0 on F and x = 1 on H. Returns the (n, n) matrix x and the LP value."""
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix

    n = instance.n
    iu, ju = np.triu_indices(n, k=1)
    index = np.full((n, n), -1, dtype=np.int64)
    index[iu, ju] = np.arange(len(iu))
    index[ju, iu] = np.arange(len(iu))
    triples = np.array([(i, j, k) for i in range(n) for j in range(i + 1, n) for k in range(j + 1, n)],
                       dtype=np.int64).reshape(-1, 3)
    rows, cols, vals = [], [], []
    for row, (a, b, c) in enumerate([(0, 1, 2), (0, 2, 1), (1, 2, 0)]):
        # x_{ab} − x_{ac} − x_{bc} ≤ 0 for each triple, one of three rotations per block
        ab = index[triples[:, a], triples[:, b]]
        ac = index[triples[:, a], triples[:, c]]
        bc = index[triples[:, b], triples[:, c]]
        r = row * len(triples) + np.arange(len(triples))
        rows += [r, r, r]
        cols += [ab, ac, bc]
        vals += [np.ones(len(r)), -np.ones(len(r)), -np.ones(len(r))]
    signs = instance.signs[iu, ju].astype(np.float64)
    bounds = np.tile([0.0, 1.0], (len(iu), 1))
    for u, v in instance.friendly:
        bounds[index[u, v]] = (0.0, 0.0)
    for u, v in instance.hostile:
        bounds[index[u, v]] = (1.0, 1.0)
    if len(triples):
        a_ub = coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                          shape=(3 * len(triples), len(iu))).tocsr()
        b_ub = np.zeros(3 * len(triples))
    else:
        a_ub, b_ub = None, None
    result = linprog(signs, A_ub=a_ub, b_ub=b_ub, bounds=bounds, method="highs")  # + pays x, − pays 1 − x
    if result.status != 0:
        raise RuntimeError(f"triangle LP failed: {result.message}")
    x = np.zeros((n, n))
    x[iu, ju] = np.clip(result.x, 0.0, 1.0)
    x += x.T
    plus, minus = lp_parts(instance, x)
    return x, plus + minus


def _component_matrix(components: np.ndarray) -> np.ndarray:
    k = int(components.max()) + 1
    return (components[None, :] == np.arange(k)[:, None]).astype(np.float64)  # (k, n)


def _best_of(runs, instance: CCInstance) -> np.ndarray:
    best, best_cost = None, math.inf
    for labels in runs:
        value = cost(instance, labels)
        if value < best_cost:
            best, best_cost = labels, value
    return canonical_labels(best)


class VanZuylenWilliamsonPivot:
    """Triangle-LP rounding by Pivot (van Zuylen & Williamson, SODA'07 / MOR'09).

    Solve the triangle LP with x = 0 on F and x = 1 on H, and run Pivot on G′ = {uv : x_uv ≤ ½}:
    the pivot k takes every unclustered j with x_kj ≤ ½, except where a cannot-link pair needs
    the cut to be strict. x = 0 on F and the triangle inequality give x_uj = x_vj for a friendly
    uv, so u and v go together; x_uv = 1 on H gives x_ku + x_kv ≥ 1, so both can join k only
    when x_ku = x_kv = ½: such tied nodes are left out of k's cluster (see :func:`lp_pivot`),
    and every other tie at ½ joins.

    Parameters
    ----------
    pivot : ``"ratio"`` is their derandomisation: pivot on the unclustered node minimising
        (cost of the pairs its cluster decides) / (LP cost Σ c_uv of those pairs), where
        c_uv = x_uv for + and 1 − x_uv for −; this gives cost ≤ 3·LP. ``"random"`` picks
        pivots uniformly (3·LP in expectation) and keeps the cheapest of ``repeats`` runs.
    repeats : runs of the random version (ignored by ``"ratio"``).
    """

    def __init__(self, *, pivot: str = "ratio", repeats: int = 50):
        self.pivot = pivot
        self.repeats = repeats

    def cluster(self, instance: CCInstance, rng: np.random.Generator) -> np.ndarray:
        if self.pivot not in ("ratio", "random"):
            raise ValueError(f"pivot={self.pivot!r}; expected 'ratio' or 'random'")
        if self.pivot == "random" and self.repeats < 1:
            raise ValueError(f"repeats must be ≥ 1, got {self.repeats}")
        x, _ = solve_triangle_lp(instance)
        if self.pivot == "ratio":
            return canonical_labels(lp_pivot(instance, x))
        return _best_of((lp_pivot(instance, x, rng) for _ in range(self.repeats)), instance)


def lp_pivot(instance: CCInstance, x: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
    """Pivot on G′ = {uv : x_uv ≤ ½}; ``rng=None`` takes the minimum-ratio pivot, else a random one.

    The pivot k's cluster is k, every unclustered j with x_kj < ½, and every unclustered j with
    x_kj = ½ (up to :data:`_TIE`) unless j has a cannot-link partner among those candidates:
    the strict cut applies only to the tied nodes a cannot-link pair forces apart (both ends,
    so no arbitrary preference between them).

    The ratio of a pivot k is (pairs its cluster decides that the clustering pays) / (Σ c_uv
    over those pairs), the decided pairs being every unclustered pair with an end in the
    cluster. Summed over k the costs are ≤ 3× the budgets (vZW's triangle argument), so the
    minimum ratio is ≤ 3, and every pair is decided once: cost ≤ 3·LP.
    """
    n = instance.n
    components = check_consistent(instance)
    onehot = _component_matrix(components)
    # Friendly nodes have equal rows of x up to solver tolerance; averaging over the
    # components makes them exactly equal, so the threshold can never split them.
    sizes = onehot.sum(axis=1)
    x_units = (onehot @ x @ onehot.T) / np.outer(sizes, sizes)
    np.fill_diagonal(x_units, 0.0)
    x_nodes = x_units[components][:, components]
    below = x_units < 0.5 - _TIE
    tied = np.abs(x_units - 0.5) <= _TIE
    hostile = np.zeros_like(below)
    for u, v in instance.hostile:
        hostile[components[u], components[v]] = hostile[components[v], components[u]] = True

    def cluster_of(unit, units):
        candidates = units[below[unit, units] | tied[unit, units] | (units == unit)]
        conflicted = tied[unit, candidates] & hostile[np.ix_(candidates, candidates)].any(axis=1)
        return candidates[~conflicted]

    upper = np.triu(np.ones((n, n), dtype=bool), k=1)
    cut = upper & (instance.signs > 0)
    join = upper & (instance.signs < 0)
    budget = np.where(instance.signs > 0, x_nodes, 1.0 - x_nodes) * upper
    labels = np.full(n, -1, dtype=np.int64)
    remaining = np.ones(n, dtype=bool)
    next_label = 0
    while remaining.any():
        units = np.unique(components[remaining])
        candidates = units if rng is None else [components[rng.choice(np.flatnonzero(remaining))]]
        best, best_ratio = None, math.inf
        for unit in candidates:
            members = remaining & np.isin(components, cluster_of(unit, units))
            decided = upper & ((members[:, None] & remaining[None, :]) | (remaining[:, None] & members[None, :]))
            together = members[:, None] & members[None, :]
            paid = float((decided & np.where(together, join, cut)).sum())
            lp_mass = float(budget[decided].sum())
            ratio = paid / lp_mass if lp_mass > 0 else (0.0 if paid == 0 else math.inf)
            if best is None or ratio < best_ratio:
                best, best_ratio = members, ratio
        labels[best] = next_label
        remaining &= ~best
        next_label += 1
    return labels


class ConstrainedPivot:
    """Randomised Pivot (Ailon, Charikar & Newman) made to respect F and H, without an LP.

    Nodes of an F-component move as one super-node, but costs stay on the original pairs.
    A uniformly random unclustered node's component is the pivot A; every other unclustered
    component B that A attracts joins, strongest attraction first, unless B has a cannot-link
    pair with a component already in the cluster (then B waits for a later pivot).

    Parameters
    ----------
    join : ``"majority"``: A attracts B when the + pairs between them outnumber the − pairs
        (joining is then cheaper for the pairs between A and B); ``"all"``: when every pair
        between them is +. On singletons both are the usual "join the pivot's + neighbours".
    repeats : independent runs; the cheapest is returned.
    """

    def __init__(self, *, join: str = "majority", repeats: int = 1):
        self.join = join
        self.repeats = repeats

    def cluster(self, instance: CCInstance, rng: np.random.Generator) -> np.ndarray:
        if self.join not in ("majority", "all"):
            raise ValueError(f"join={self.join!r}; expected 'majority' or 'all'")
        if self.repeats < 1:
            raise ValueError(f"repeats must be ≥ 1, got {self.repeats}")
        components = check_consistent(instance)
        onehot = _component_matrix(components)
        signs = instance.signs.astype(np.float64)
        net = onehot @ signs @ onehot.T                           # (+ pairs) − (− pairs) between units
        minus = onehot @ (signs < 0).astype(np.float64) @ onehot.T
        attracts = net > 0 if self.join == "majority" else minus == 0
        np.fill_diagonal(attracts, False)
        hostile = np.zeros_like(attracts)
        for u, v in instance.hostile:
            hostile[components[u], components[v]] = hostile[components[v], components[u]] = True
        runs = (self._once(components, net, attracts, hostile, rng) for _ in range(self.repeats))
        return _best_of(runs, instance)

    @staticmethod
    def _once(components, net, attracts, hostile, rng) -> np.ndarray:
        k = net.shape[0]
        unit_label = np.full(k, -1, dtype=np.int64)
        remaining_nodes = np.ones(len(components), dtype=bool)
        next_label = 0
        while remaining_nodes.any():
            pivot = components[rng.choice(np.flatnonzero(remaining_nodes))]
            cluster = [pivot]
            candidates = [b for b in range(k) if unit_label[b] < 0 and b != pivot and attracts[pivot, b]]
            for b in sorted(candidates, key=lambda b: (-net[pivot, b], b)):
                if not hostile[b, cluster].any():
                    cluster.append(b)
            unit_label[cluster] = next_label
            remaining_nodes &= unit_label[components] < 0
            next_label += 1
        return unit_label[components]


def solve_cluster_ilp(instance: CCInstance, clusters: FeasibleClusters | None = None) -> tuple[np.ndarray, int]:
    """An optimal feasible clustering and its cost: the Cluster LP with binary z (HiGHS MILP).

    Pick a set of feasible clusters, each F-component in exactly one, minimising Σ weight(S).
    """
    from scipy.optimize import Bounds, LinearConstraint, milp

    clusters = feasible_clusters(instance) if clusters is None else clusters
    ones = np.ones(clusters.units.shape[1])
    result = milp(clusters.weight, constraints=LinearConstraint(clusters.units.T.astype(np.float64), ones, ones),
                  integrality=np.ones(clusters.count), bounds=Bounds(0, 1))
    if result.status != 0:
        raise RuntimeError(f"cluster ILP (MILP) failed: {result.message}")
    chosen = clusters.members[np.asarray(result.x) > 0.5]
    labels = labels_from_clusters(instance.n, chosen)
    return labels, cost(instance, labels)


class ExactILP:
    """An optimal clustering: the Constrained Cluster LP with binary z over all feasible clusters
    (HiGHS MILP, :func:`solve_cluster_ilp`). Exponential in the number of F-components; for
    small instances only.

    The task scores it against an optimum of its own (the edge-variable ILP): a bug in the
    cluster enumeration shows as a ratio above 1 or a failed cell, instead of moving the
    reference with it.
    """

    def cluster(self, instance: CCInstance, rng: np.random.Generator) -> np.ndarray:
        labels, _ = solve_cluster_ilp(instance)
        return canonical_labels(labels)
