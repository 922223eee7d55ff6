"""Constrained correlation clustering of a complete ± graph with must-link / cannot-link pairs.

The problem (Kalavas, Kipouridis & Varma, ICML 2025; van Zuylen & Williamson 2009): given a
complete signed graph on ``n`` nodes, friendly pairs ``F`` (must share a cluster) and
hostile pairs ``H`` (must not), find a clustering that respects ``F`` and ``H`` and
minimises the number of ``+`` pairs cut plus ``−`` pairs kept inside a cluster.

This module holds the problem utilities that both the task (to score) and the methods
(to solve) need: the instance type, ``cost``, ``violations``, the enumeration of feasible
clusters, the exact Constrained Cluster LP and the exact optimum. Everything exact here
enumerates clusters, so it is meant for n ≲ 14 (a guard raises beyond 20 free units).

Ratios on an instance whose optimum is 0 (a noise-free planted partition): the true ratio
is 1 when the method is exact and unbounded otherwise, and the engine rejects infinite
metrics, so there the ratio is taken as (cost + 1) / (OPT + 1) = cost + 1. The Cluster LP is
0 exactly when OPT is 0 (a zero-cost fractional clustering is a consistent 0/1 metric), so
``cost_over_lp`` follows the same rule.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from harness.tasks.base import Context, Task

# Beyond this many F-components the 2^k cluster enumeration is not a sensible exact oracle.
MAX_FREE_UNITS = 20


# --- the instance ---------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class CCInstance:
    """A constrained correlation clustering instance.

    Attributes
    ----------
    signs : (n, n) int8 array, symmetric, ``+1`` for a pair in E⁺, ``−1`` for E⁻, 0 on the
        diagonal.
    friendly : must-link pairs ``(u, v)`` with ``u < v``.
    hostile : cannot-link pairs ``(u, v)`` with ``u < v``.
    """

    signs: np.ndarray
    friendly: tuple[tuple[int, int], ...] = ()
    hostile: tuple[tuple[int, int], ...] = ()

    @property
    def n(self) -> int:
        return int(self.signs.shape[0])

    def key(self) -> tuple:
        """A hashable fingerprint (the instance itself holds a mutable array)."""
        return (self.n, self.signs.tobytes(), self.friendly, self.hostile)


def make_instance(signs, friendly=(), hostile=()) -> CCInstance:
    """Build a checked :class:`CCInstance` from a sign matrix and two pair lists."""
    signs = np.asarray(signs)
    n = signs.shape[0]
    if signs.ndim != 2 or signs.shape != (n, n):
        raise ValueError(f"signs must be a square matrix, got shape {signs.shape}")
    off = ~np.eye(n, dtype=bool)
    if not np.array_equal(signs, signs.T) or not np.all(np.isin(signs[off], (-1, 1))):
        raise ValueError("signs must be symmetric with entries ±1 off the diagonal")
    signs = signs.astype(np.int8)
    np.fill_diagonal(signs, 0)
    signs.setflags(write=False)

    def canon(pairs, what):
        out = set()
        for u, v in pairs:
            u, v = int(u), int(v)
            if u == v or not (0 <= u < n and 0 <= v < n):
                raise ValueError(f"{what} pair ({u}, {v}) is not a pair of distinct nodes in 0..{n - 1}")
            out.add((min(u, v), max(u, v)))
        return tuple(sorted(out))

    return CCInstance(signs, canon(friendly, "friendly"), canon(hostile, "hostile"))


# --- scoring --------------------------------------------------------------------------------

def _check_labels(instance: CCInstance, labels) -> np.ndarray:
    labels = np.asarray(labels)
    if labels.shape != (instance.n,):
        raise ValueError(f"labels must have shape ({instance.n},), got {labels.shape}")
    return labels


def disagreements(instance: CCInstance, labels) -> tuple[np.ndarray, np.ndarray]:
    """Upper-triangle masks of the paid pairs: (E⁺(C): + pairs cut, E⁻(C): − pairs inside)."""
    labels = _check_labels(instance, labels)
    together = labels[:, None] == labels[None, :]
    upper = np.triu(np.ones((instance.n, instance.n), dtype=bool), k=1)
    plus_cut = upper & (instance.signs > 0) & ~together
    minus_inside = upper & (instance.signs < 0) & together
    return plus_cut, minus_inside


def cost(instance: CCInstance, labels) -> int:
    """|E⁺ pairs in different clusters| + |E⁻ pairs in the same cluster|."""
    plus_cut, minus_inside = disagreements(instance, labels)
    return int(plus_cut.sum() + minus_inside.sum())


def violated_pairs(instance: CCInstance, labels) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(friendly pairs that are split, hostile pairs that share a cluster)."""
    labels = _check_labels(instance, labels)
    split = [(u, v) for u, v in instance.friendly if labels[u] != labels[v]]
    joined = [(u, v) for u, v in instance.hostile if labels[u] == labels[v]]
    return split, joined


def violations(instance: CCInstance, labels) -> int:
    """Number of must-link and cannot-link pairs the clustering breaks."""
    split, joined = violated_pairs(instance, labels)
    return len(split) + len(joined)


def labels_from_clusters(n: int, clusters) -> np.ndarray:
    """Labels 0..k−1 from a list of disjoint node sets (boolean masks or index lists) covering V."""
    labels = np.full(n, -1, dtype=np.int64)
    for index, cluster in enumerate(clusters):
        cluster = np.asarray(cluster)
        nodes = np.flatnonzero(cluster) if cluster.dtype == bool else cluster
        if np.any(labels[nodes] >= 0):
            raise ValueError("clusters overlap")
        labels[nodes] = index
    if np.any(labels < 0):
        raise ValueError(f"clusters leave nodes {np.flatnonzero(labels < 0).tolist()} uncovered")
    return labels


def canonical_labels(labels) -> np.ndarray:
    """Relabel so that clusters are numbered 0, 1, ... in order of their smallest node."""
    _, first, inverse = np.unique(np.asarray(labels), return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    return rank[inverse.ravel()]


# --- feasible clusters ----------------------------------------------------------------------

def friendly_components(instance: CCInstance) -> np.ndarray:
    """Component index (0..k−1, numbered by smallest node) of every node in the graph (V, F)."""
    parent = list(range(instance.n))

    def find(u):
        while parent[u] != u:
            parent[u] = parent[parent[u]]
            u = parent[u]
        return u

    for u, v in instance.friendly:
        parent[find(u)] = find(v)
    return canonical_labels([find(u) for u in range(instance.n)])


def check_consistent(instance: CCInstance, components: np.ndarray | None = None) -> np.ndarray:
    """Return the F-components, raising ``ValueError`` if an H pair lies inside one (infeasible)."""
    components = friendly_components(instance) if components is None else components
    bad = [(u, v) for u, v in instance.hostile if components[u] == components[v]]
    if bad:
        raise ValueError(f"infeasible instance: hostile pairs {bad} are forced together by friendly pairs")
    return components


@dataclass(frozen=True)
class FeasibleClusters:
    """Every feasible cluster: a non-empty union of F-components with no H pair inside.

    ``members`` is (m, n) boolean, ``units`` is (m, k) boolean over the F-components, and
    ``weight[i]`` = |E⁻ inside S_i| − |E⁺ inside S_i|, so that the cost of a clustering made
    of clusters S is |E⁺| + Σ weight(S).
    """

    members: np.ndarray
    units: np.ndarray
    weight: np.ndarray
    components: np.ndarray
    plus_pairs: int

    @property
    def count(self) -> int:
        return int(self.members.shape[0])


def feasible_clusters(instance: CCInstance) -> FeasibleClusters:
    """Enumerate all feasible clusters (2^k − 1 candidates over the k F-components)."""
    components = check_consistent(instance)
    k = int(components.max()) + 1
    if k > MAX_FREE_UNITS:
        raise ValueError(f"{k} F-components: enumerating 2^{k} clusters is too large for the exact oracle "
                         f"(at most {MAX_FREE_UNITS}); use a smaller n or more must-link pairs")
    codes = np.arange(1, 2**k, dtype=np.int64)
    units = ((codes[:, None] >> np.arange(k)) & 1).astype(bool)
    unit_nodes = components[None, :] == np.arange(k)[:, None]  # (k, n)
    members = (units.astype(np.int32) @ unit_nodes.astype(np.int32)) > 0
    keep = np.ones(len(codes), dtype=bool)
    for u, v in instance.hostile:
        keep &= ~(members[:, u] & members[:, v])
    members, units = members[keep], units[keep]
    signs = instance.signs.astype(np.float64)
    m = members.astype(np.float64)
    inside_sum = 0.5 * np.einsum("si,ij,sj->s", m, signs, m)  # |E⁺ inside| − |E⁻ inside|
    plus_pairs = int((np.triu(instance.signs, k=1) > 0).sum())
    return FeasibleClusters(members, units, -inside_sum, components, plus_pairs)


# --- the Constrained Cluster LP and the exact optimum -----------------------------------------

@dataclass(frozen=True)
class ClusterLPSolution:
    """A solution of the Constrained Cluster LP restricted to its support.

    ``members`` (m, n) are the clusters with z_S > ``support_tol``, ``z`` their values,
    ``x`` the (n, n) distances x_uv = 1 − Σ_{S ⊇ uv} z_S, ``value`` the LP objective
    Σ_{E⁺} x + Σ_{E⁻} (1 − x) of this z.
    """

    members: np.ndarray
    z: np.ndarray
    x: np.ndarray
    value: float


def lp_distances(n: int, members: np.ndarray, z: np.ndarray) -> np.ndarray:
    """x_uv = 1 − Σ_{S ⊇ {u, v}} z_S, with a zero diagonal."""
    m = members.astype(np.float64)
    x = 1.0 - (m.T * z) @ m
    np.fill_diagonal(x, 0.0)
    return x


def lp_parts(instance: CCInstance, x: np.ndarray) -> tuple[float, float]:
    """(LP⁺, LP⁻) = (Σ_{uv ∈ E⁺} x_uv, Σ_{uv ∈ E⁻} (1 − x_uv)) over unordered pairs."""
    upper = np.triu(np.ones_like(x, dtype=bool), k=1)
    plus = upper & (instance.signs > 0)
    minus = upper & (instance.signs < 0)
    return float(x[plus].sum()), float((1.0 - x[minus]).sum())


def solve_cluster_lp(instance: CCInstance, clusters: FeasibleClusters | None = None,
                     support_tol: float = 1e-9) -> ClusterLPSolution:
    """Solve the Constrained Cluster LP exactly over all feasible clusters (HiGHS).

    x is eliminated through x_uv = 1 − Σ_{S ⊇ uv} z_S, which leaves min Σ_S weight(S) z_S
    subject to Σ_{S ∋ u} z_S = 1. One row per F-component stands for the rows of its nodes,
    which are identical because a feasible S holds a component whole; x = 0 on F and x = 1
    on H then hold by construction.
    """
    from scipy.optimize import linprog

    clusters = feasible_clusters(instance) if clusters is None else clusters
    result = linprog(clusters.weight, A_eq=clusters.units.T.astype(np.float64),
                     b_eq=np.ones(clusters.units.shape[1]), bounds=(0, None), method="highs")
    if result.status != 0:
        raise RuntimeError(f"Constrained Cluster LP failed: {result.message}")
    z = np.asarray(result.x)
    support = z > support_tol
    members, z = clusters.members[support], z[support]
    x = lp_distances(instance.n, members, z)
    plus, minus = lp_parts(instance, x)
    return ClusterLPSolution(members, z, x, plus + minus)


def solve_exact(instance: CCInstance, clusters: FeasibleClusters | None = None) -> tuple[np.ndarray, int]:
    """An optimal feasible clustering and its cost: the Cluster LP with binary z (HiGHS MILP)."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    clusters = feasible_clusters(instance) if clusters is None else clusters
    ones = np.ones(clusters.units.shape[1])
    result = milp(clusters.weight, constraints=LinearConstraint(clusters.units.T.astype(np.float64), ones, ones),
                  integrality=np.ones(clusters.count), bounds=Bounds(0, 1))
    if result.status != 0:
        raise RuntimeError(f"exact optimum (MILP) failed: {result.message}")
    chosen = clusters.members[np.asarray(result.x) > 0.5]
    labels = labels_from_clusters(instance.n, chosen)
    return labels, cost(instance, labels)


# --- data -----------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class CCBatch:
    """The instances of one cell, with the planted clusterings (never shown to a method)."""

    instances: tuple[CCInstance, ...]
    planted: tuple[np.ndarray, ...]


def planted_partition(context: Context, *, n: int = 10, clusters: int = 3, noise: float = 0.1,
                      constraints: int | None = None, instances: int = 20) -> CCBatch:
    """Planted clusters of near-equal size; every pair's sign flipped with probability ``noise``.

    ``constraints`` friendly pairs are drawn among the pairs inside a planted cluster and as
    many hostile pairs among the pairs across clusters (default ``n // 2`` each), so the
    planted clustering is always feasible.
    """
    if n < 2 or not 1 <= clusters <= n:
        raise ValueError(f"need n ≥ 2 and 1 ≤ clusters ≤ n, got n={n}, clusters={clusters}")
    if not 0.0 <= noise <= 1.0:
        raise ValueError(f"noise is a probability, got {noise}")
    if instances < 1:
        raise ValueError(f"instances must be ≥ 1, got {instances}")
    constraints = n // 2 if constraints is None else int(constraints)
    rng = context.rng("data")
    upper = np.triu_indices(n, k=1)
    batch, planted = [], []
    for _ in range(instances):
        labels = rng.permutation(np.arange(n) % clusters)
        same = labels[:, None] == labels[None, :]
        flip = np.triu(rng.random((n, n)) < noise, k=1)
        flip = flip | flip.T
        signs = np.where(same ^ flip, 1, -1).astype(np.int8)
        np.fill_diagonal(signs, 0)
        inside = [(u, v) for u, v in zip(*upper) if same[u, v]]
        across = [(u, v) for u, v in zip(*upper) if not same[u, v]]
        if constraints > min(len(inside), len(across)):
            raise ValueError(f"{constraints} must-link and cannot-link pairs asked for, but the planted "
                             f"partition has only {len(inside)} pairs inside and {len(across)} across clusters")
        friendly = [inside[i] for i in rng.choice(len(inside), size=constraints, replace=False)]
        hostile = [across[i] for i in rng.choice(len(across), size=constraints, replace=False)]
        batch.append(make_instance(signs, friendly, hostile))
        planted.append(labels)
    return CCBatch(tuple(batch), tuple(planted))


# --- protocol and task ----------------------------------------------------------------------

@runtime_checkable
class ConstrainedClusterer(Protocol):
    """What a method implements: a feasible clustering of one instance."""

    def cluster(self, instance: CCInstance, rng: np.random.Generator) -> np.ndarray:
        """Labels of length ``instance.n``; nodes with equal labels share a cluster."""
        ...


class ConstraintViolation(RuntimeError):
    """A method returned a clustering that splits a must-link or joins a cannot-link pair."""


def ratio(value: float, reference: float) -> float:
    """value / reference, with (value + 1) / 1 when the reference is 0 (see the module docstring)."""
    if reference > 1e-9:
        return value / reference
    return value + 1.0


class CorrelationClusteringTask(Task):
    """Score a method on a batch of instances against the exact optimum and the Cluster LP."""

    name = "graph.correlation-clustering"
    version = "1"
    metrics = ("cost_over_opt", "worst_cost_over_opt", "cost_over_lp", "violations", "runtime_s")
    protocol = ConstrainedClusterer

    def tiny(self, workdir: Path) -> dict[str, dict[str, Any]]:
        return {"planted-partition-cc": {"n": 6, "instances": 2}}

    def __init__(self):
        # OPT and LP per instance fingerprint: the data object is shared by the methods of a
        # worker, and this is the task's own work, never handed to a method.
        self._reference: dict[tuple, tuple[int, float]] = {}

    def reference(self, instance: CCInstance) -> tuple[int, float]:
        """(OPT, Constrained Cluster LP value), enumerating the feasible clusters once."""
        key = instance.key()
        if key not in self._reference:
            clusters = feasible_clusters(instance)
            _, opt = solve_exact(instance, clusters)
            lp = solve_cluster_lp(instance, clusters).value
            if lp > opt + 1e-6:
                raise RuntimeError(f"Cluster LP {lp} exceeds the optimum {opt}: the exact oracle is wrong")
            if len(self._reference) >= 4096:
                self._reference.pop(next(iter(self._reference)))
            self._reference[key] = (opt, lp)
        return self._reference[key]

    def evaluate(self, method: ConstrainedClusterer, data: CCBatch, context: Context) -> dict[str, float]:
        rng = context.rng("method")
        over_opt, over_lp, seconds = [], [], []
        for index, instance in enumerate(data.instances):
            opt, lp = self.reference(instance)  # before the clock, so scipy's import is not billed to the method
            started = time.perf_counter()
            labels = method.cluster(instance, rng)
            seconds.append(time.perf_counter() - started)
            labels = np.asarray(labels)
            if labels.shape != (instance.n,):
                raise ValueError(f"instance {index}: the method returned labels of shape {labels.shape}, "
                                 f"expected ({instance.n},)")
            split, joined = violated_pairs(instance, labels)
            if split or joined:
                raise ConstraintViolation(f"instance {index}: must-link pairs split {split}, "
                                          f"cannot-link pairs joined {joined}")
            paid = cost(instance, labels)
            if paid < opt:
                raise RuntimeError(f"instance {index}: cost {paid} is below the optimum {opt}: the exact oracle is wrong")
            over_opt.append(ratio(paid, opt))
            over_lp.append(ratio(paid, lp))
        return {
            "cost_over_opt": float(np.mean(over_opt)),
            "worst_cost_over_opt": float(np.max(over_opt)),
            "cost_over_lp": float(np.mean(over_lp)),
            "violations": 0.0,  # any violation raised above, failing the cell
            "runtime_s": float(np.mean(seconds)),
        }


TASK = CorrelationClusteringTask()
