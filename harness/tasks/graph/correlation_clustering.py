"""Constrained correlation clustering of a complete ± graph with must-link / cannot-link pairs.

The problem (Kalavas, Kipouridis & Varma, ICML 2025; van Zuylen & Williamson 2009): given a
complete signed graph on ``n`` nodes, friendly pairs ``F`` (must share a cluster) and
hostile pairs ``H`` (must not), find a clustering that respects ``F`` and ``H`` and
minimises the number of ``+`` pairs cut plus ``−`` pairs kept inside a cluster.

This module holds the problem: the instance type, ``cost``, ``violations``, the label and
F-component utilities the methods share, the planted-partition loader and the task. The
task scores against references computed by solvers of its own that no method uses, so
that one solver bug cannot move a method and its reference together:

* OPT: the classic edge-variable ILP (binary x_uv = 1 when u, v are separated, every
  triangle inequality, x = 0 on F and x = 1 on H), solved with HiGHS;
* the Constrained Cluster LP's value (for ``cost_over_lp``): the paper's LP as written, with
  z_S for every non-empty S ⊆ V and x_uv as variables, F and H as bounds on x; it is meant
  for n ≤ 16 (a guard raises beyond; the specs use n ≤ 12).

The methods solve the LP (and the ``exact-ilp`` baseline its binary version) over the
feasible clusters of the F-components with x eliminated: see
:mod:`components.correlation_clustering`.

Ratios on an instance whose optimum is 0 (a noise-free planted partition): the true ratio
is 1 when the method is exact and unbounded otherwise, and the engine rejects infinite
metrics, so there the ratio is taken as (cost + 1) / (OPT + 1) = cost + 1. The Cluster LP is
0 exactly when OPT is 0 (a zero-cost fractional clustering is a consistent 0/1 metric), so
``cost_over_lp`` follows the same rule.
"""
from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from harness.tasks.base import Context, Task, WorkerCache

# The LP reference has a variable for every subset of the nodes.
MAX_REFERENCE_NODES = 16


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


# --- F-components (the methods' starting point) -------------------------------------------

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


# --- the task's references: solvers of its own, which no method uses ----------------------------

def _pairs(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The unordered pairs u < v in row-major order (iu, ju), and the (n, n) map to their number."""
    iu, ju = np.triu_indices(n, k=1)
    index = np.full((n, n), -1, dtype=np.int64)
    index[iu, ju] = index[ju, iu] = np.arange(len(iu))
    return iu, ju, index


def _separation_bounds(instance: CCInstance, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bounds of x_uv (1: u and v separated): 0 on a must-link pair, 1 on a cannot-link pair, else [0, 1]."""
    pairs = instance.n * (instance.n - 1) // 2
    lower, upper = np.zeros(pairs), np.ones(pairs)
    for u, v in instance.friendly:
        upper[index[u, v]] = 0.0
    for u, v in instance.hostile:
        lower[index[u, v]] = 1.0
    return lower, upper


_INFEASIBLE = "infeasible instance: no clustering keeps every must-link pair together and every cannot-link pair apart"


def exact_optimum(instance: CCInstance) -> tuple[np.ndarray, int]:
    """An optimal feasible clustering and its cost, from the edge-variable ILP (HiGHS MILP).

    Binary x_uv = 1 when u and v are separated; x_ab ≤ x_ac + x_cb for every triple makes
    "x_uv = 0" an equivalence relation, that is a clustering; x = 0 on F and x = 1 on H;
    minimise Σ_{E⁺} x_uv + Σ_{E⁻} (1 − x_uv). The clustering read off x is checked against x
    and the constraints, and its :func:`cost` is returned.
    """
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import csr_matrix

    n = instance.n
    iu, ju, index = _pairs(n)
    if len(iu) == 0:
        return np.zeros(n, dtype=np.int64), 0
    signs = instance.signs[iu, ju].astype(np.float64)  # + pays x, − pays 1 − x = 1 + (−1)·x
    lower, upper = _separation_bounds(instance, index)
    triples = np.array(list(itertools.combinations(range(n), 3)), dtype=np.int64).reshape(-1, 3)
    constraints = None
    if len(triples):
        # x_ab − x_ac − x_cb ≤ 0, once with each node of the triple as c
        columns = np.concatenate([
            np.stack([index[triples[:, a], triples[:, b]], index[triples[:, a], triples[:, c]],
                      index[triples[:, c], triples[:, b]]], axis=1)
            for a, b, c in ((0, 1, 2), (0, 2, 1), (1, 2, 0))])
        rows = np.repeat(np.arange(len(columns)), 3)
        values = np.tile([1.0, -1.0, -1.0], len(columns))
        matrix = csr_matrix((values, (rows, columns.ravel())), shape=(len(columns), len(iu)))
        constraints = LinearConstraint(matrix, -np.inf, 0.0)
    result = milp(signs, constraints=constraints, integrality=np.ones(len(iu)), bounds=Bounds(lower, upper))
    if result.status == 2:
        raise ValueError(_INFEASIBLE)
    if result.status != 0:
        raise RuntimeError(f"the edge-variable ILP for OPT failed: {result.message}")
    separated = np.zeros((n, n), dtype=bool)
    separated[iu, ju] = separated[ju, iu] = np.asarray(result.x) > 0.5
    labels = np.argmin(separated, axis=1)  # the first node u is not separated from (u itself at the latest)
    if not np.array_equal(labels[:, None] != labels[None, :], separated):
        raise RuntimeError("the edge-variable ILP returned an x that is not a clustering")
    split, joined = violated_pairs(instance, labels)
    paid = cost(instance, labels)
    if split or joined or abs(paid - (result.fun + (signs < 0).sum())) > 1e-6:
        raise RuntimeError(f"the edge-variable ILP's solution is inconsistent: objective {result.fun}, "
                           f"cost {paid}, must-link pairs split {split}, cannot-link pairs joined {joined}")
    return canonical_labels(labels), paid


def cluster_lp_value(instance: CCInstance) -> float:
    """The optimum of the Constrained Cluster LP, written as the paper states it (HiGHS).

    Variables z_S ≥ 0 for every non-empty S ⊆ V and x_uv for every pair; rows Σ_{S ∋ u} z_S = 1
    for every node and Σ_{S ⊇ {u, v}} z_S + x_uv = 1 for every pair; x = 0 on F and x = 1 on H
    as bounds; minimise Σ_{E⁺} x_uv + Σ_{E⁻} (1 − x_uv).
    """
    from scipy.optimize import linprog
    from scipy.sparse import csr_matrix, hstack, identity, vstack

    n = instance.n
    if n > MAX_REFERENCE_NODES:
        raise ValueError(f"n = {n}: the task's Cluster LP has a variable for each of the 2^{n} subsets of the "
                         f"nodes, which is too many above n = {MAX_REFERENCE_NODES}; use a smaller n")
    iu, ju, index = _pairs(n)
    subsets = np.arange(1, 2**n, dtype=np.int64)
    contains = ((subsets[:, None] >> np.arange(n)) & 1).astype(bool)  # (2^n − 1, n)
    node_rows = csr_matrix(contains.T.astype(np.float64))
    pair_rows = csr_matrix((contains[:, iu] & contains[:, ju]).T.astype(np.float64))
    a_eq = vstack([hstack([node_rows, csr_matrix((n, len(iu)))]),
                   hstack([pair_rows, identity(len(iu), format="csr")])]).tocsr()
    lower, upper = _separation_bounds(instance, index)
    bounds = np.vstack([np.column_stack([np.zeros(len(subsets)), np.full(len(subsets), np.inf)]),
                        np.column_stack([lower, upper])])
    signs = instance.signs[iu, ju].astype(np.float64)
    objective = np.concatenate([np.zeros(len(subsets)), signs])
    result = linprog(objective, A_eq=a_eq, b_eq=np.ones(n + len(iu)), bounds=bounds, method="highs")
    if result.status == 2:
        raise ValueError(_INFEASIBLE)
    if result.status != 0:
        raise RuntimeError(f"the task's Constrained Cluster LP failed: {result.message}")
    return float(result.fun) + float((signs < 0).sum())


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


def lp_is_fractional(opt: int, lp: float) -> bool:
    """The Cluster LP's optimum lies below OPT (integrality gap > 1), past the LP solver's tolerance."""
    return opt - lp > 1e-6 * max(1.0, opt)


def ratio(value: float, reference: float) -> float:
    """value / reference, with (value + 1) / 1 when the reference is 0 (see the module docstring)."""
    if reference > 1e-9:
        return value / reference
    return value + 1.0


class CorrelationClusteringTask(Task):
    """Score a method on a batch of instances against the exact optimum and the Cluster LP."""

    name = "graph.correlation-clustering"
    version = "2"  # 2: violations counted from the partition; worst_cost_over_lp and lp_fractional added
    metrics = ("cost_over_opt", "worst_cost_over_opt", "cost_over_lp", "worst_cost_over_lp", "lp_fractional",
               "violations", "runtime_s")
    protocol = ConstrainedClusterer

    def tiny(self, workdir: Path) -> dict[str, dict[str, Any]]:
        return {"planted-partition-cc": {"n": 6, "instances": 2}}

    def __init__(self):
        # OPT and LP per instance fingerprint: the data object is shared by the methods of a
        # worker, and this is the task's own work, never handed to a method.
        self._reference = WorkerCache(4096)

    def reference(self, instance: CCInstance) -> tuple[int, float]:
        """(OPT, Constrained Cluster LP value), from the task's own solvers."""
        return self._reference.get_or_build(instance.key(), lambda: self._solve_reference(instance))

    @staticmethod
    def _solve_reference(instance: CCInstance) -> tuple[int, float]:
        _, opt = exact_optimum(instance)
        lp = cluster_lp_value(instance)
        if lp > opt + 1e-6:
            raise RuntimeError(f"Cluster LP {lp} exceeds the optimum {opt}: one of the task's reference solvers is wrong")
        return opt, lp

    def evaluate(self, method: ConstrainedClusterer, data: CCBatch, context: Context) -> dict[str, float]:
        rng = context.rng("method")
        over_opt, over_lp, seconds, fractional, broken = [], [], [], [], []
        first_broken = None
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
            broken.append(len(split) + len(joined))
            if split or joined:
                first_broken = first_broken or (index, split, joined)
                continue  # counted; the cell fails below, once every instance is checked
            paid = cost(instance, labels)
            if paid < opt:
                raise RuntimeError(f"instance {index}: cost {paid} is below the optimum {opt}: the task's OPT is wrong")
            over_opt.append(ratio(paid, opt))
            over_lp.append(ratio(paid, lp))
            fractional.append(lp_is_fractional(opt, lp))
        violations = int(np.sum(broken))
        if violations:
            index, split, joined = first_broken
            raise ConstraintViolation(
                f"{violations} must-link or cannot-link pair(s) broken on {sum(b > 0 for b in broken)} of "
                f"{len(broken)} instances; the first, instance {index}: must-link pairs split {split}, "
                f"cannot-link pairs joined {joined}")
        return {
            "cost_over_opt": float(np.mean(over_opt)),
            "worst_cost_over_opt": float(np.max(over_opt)),
            "cost_over_lp": float(np.mean(over_lp)),
            "worst_cost_over_lp": float(np.max(over_lp)),
            "lp_fractional": float(np.mean(fractional)),
            "violations": float(violations),  # counted on the returned partitions: 0 here, else the cell failed
            "runtime_s": float(np.mean(seconds)),
        }


TASK = CorrelationClusteringTask()
