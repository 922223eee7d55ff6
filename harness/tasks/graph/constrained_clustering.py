"""Task ``graph.constrained-clustering``: split a similarity graph G in two under a cannot-link graph H.

A method receives G, H (both symmetric, non-negative ``scipy.sparse`` CSR matrices on the
same vertices), the number of clusters and a random generator, and returns one label per
vertex. It never sees the planted labels. The task scores the returned partition by

* ``ari``: adjusted Rand index against the planted labels;
* ``cut_ratio``: w_G(S, S̄) / w_H(S, S̄), the objective of Fabila Carrasco & Sun (ICML 2025).
  When w_H(S, S̄) = 0 the ratio is ``inf`` (``nan`` if w_G(S, S̄) = 0 too), which the engine
  records as a failed cell: such a cut separates no cannot-link pair at all;
* ``runtime_s``: wall time of the method's ``fit_predict``.

All spectral methods of this task turn their embedding vector into a bipartition with the
one shared rule :func:`round_bipartition`, so that they differ only in their eigenproblem.

Loaders: :func:`two_block_sbm`, :func:`two_disk_rgg` (the paper's synthetic families) and
:func:`digits_knn` (scikit-learn's bundled digits, cannot-links from a few labels).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from harness.tasks.base import Context, Task

ROUNDING_RULES = ("sweep", "median", "kmeans")
# Sweep restricted to cuts with at least a quarter of the vertices on each side: half of a fair
# share n/k for k = 2. It excludes the near-singleton cuts that an unrestricted sweep picks
# under noise, and still allows a 3:1 imbalance, so it does not assume equal cluster sizes.
DEFAULT_ROUNDING = "sweep"
DEFAULT_MIN_SIDE_FRACTION = 0.25


@dataclass(frozen=True)
class ConstrainedClusteringInstance:
    """One problem instance: the two graphs, the planted labels and the number of clusters.

    ``labels`` (and ``points``) are for scoring and inspection only;
    :meth:`ConstrainedClusteringTask.evaluate` never hands them to a method.
    """

    similarity: Any  # scipy.sparse.csr_matrix, n × n, symmetric, non-negative, zero diagonal
    cannot_link: Any  # same
    labels: np.ndarray  # planted cluster of every vertex, ints in [0, n_clusters)
    n_clusters: int = 2
    points: np.ndarray | None = None  # coordinates or features of the vertices, for plots and tests

    @property
    def n(self) -> int:
        return int(self.labels.shape[0])


class ConstrainedClusterer(Protocol):
    """What a method of this task implements."""

    def fit_predict(self, similarity, cannot_link, n_clusters: int, rng: np.random.Generator) -> np.ndarray:
        """Return one integer label per vertex, with exactly ``n_clusters`` distinct values.

        ``similarity`` (G) and ``cannot_link`` (H) are symmetric non-negative CSR matrices
        (the method's own copies); ``rng`` is the method's only source of randomness.
        """
        ...


# --------------------------------------------------------------------------- cut weights


def crossing_weight(adjacency, labels: np.ndarray) -> float:
    """Total weight of the edges whose two ends carry different labels (w(S, S̄) for two labels)."""
    import scipy.sparse as sp

    edges = sp.coo_matrix(adjacency)
    labels = np.asarray(labels)
    crossing = labels[edges.row] != labels[edges.col]
    return float(edges.data[crossing].sum()) / 2.0  # each undirected edge is stored twice


def cut_ratio(similarity, cannot_link, labels: np.ndarray) -> float:
    """w_G(cut) / w_H(cut) of a labelling; ``inf`` when only w_H is zero, ``nan`` when both are."""
    cut_g = crossing_weight(similarity, labels)
    cut_h = crossing_weight(cannot_link, labels)
    if cut_h > 0:
        return cut_g / cut_h
    return float("inf") if cut_g > 0 else float("nan")


def _sweep_cut_weights(adjacency, order: np.ndarray) -> np.ndarray:
    """w(S_k, S̄_k) for every prefix S_k = order[:k], k = 1 .. n-1, in O(nnz log n)."""
    import scipy.sparse as sp

    permuted = sp.csr_matrix(adjacency)[order][:, order]
    degree = np.asarray(permuted.sum(axis=1)).ravel() - permuted.diagonal()  # a self-loop never crosses
    # Moving vertex k into S adds its degree to the cut and removes twice its weight to S.
    to_earlier = np.asarray(sp.tril(permuted, k=-1).sum(axis=1)).ravel()
    return np.cumsum(degree - 2.0 * to_earlier)[:-1]


# --------------------------------------------------------------------------- rounding


def round_bipartition(
    vector: np.ndarray,
    similarity,
    cannot_link,
    rule: str = DEFAULT_ROUNDING,
    min_side_fraction: float = DEFAULT_MIN_SIDE_FRACTION,
) -> np.ndarray:
    """Turn an embedding vector into a 0/1 labelling (the one rounding every method uses).

    Parameters
    ----------
    vector : (n,) array
        One real value per vertex; only the order of the values matters for ``sweep`` and
        ``median``.
    similarity, cannot_link : sparse (n, n)
        G and H, used by ``sweep`` to score the threshold cuts.
    rule : {"sweep", "median", "kmeans"}
        ``sweep``: the threshold cut S = {v : vector[v] ≤ t} of least w_G(S, S̄)/w_H(S, S̄)
        among those with at least ``ceil(min_side_fraction · n)`` vertices on each side
        (Algorithm 1's sweep, restricted so that it cannot return a near-singleton cut);
        ``median``: the lower half of the order against the upper half;
        ``kmeans``: the exact 1-D 2-means split of the values.
    min_side_fraction : float in [0, 0.5]
        Only used by ``sweep``; 0 is the paper's unrestricted sweep (each side ≥ 1 vertex).

    Returns
    -------
    (n,) int array of 0/1 labels.
    """
    values = np.asarray(vector, dtype=float).ravel()
    n = values.shape[0]
    if n < 2:
        raise ValueError(f"cannot split {n} vertex(es) in two")
    if not np.all(np.isfinite(values)):
        raise ValueError("the embedding vector has non-finite entries")
    if rule not in ROUNDING_RULES:
        raise ValueError(f"rounding rule {rule!r} is unknown; expected one of {ROUNDING_RULES}")
    if not 0.0 <= min_side_fraction <= 0.5:
        raise ValueError(f"min_side_fraction={min_side_fraction} must lie in [0, 0.5]")
    order = np.argsort(values, kind="stable")
    if rule == "median":
        split = n // 2
    elif rule == "kmeans":
        split = _one_dimensional_two_means(values[order])
    else:
        split = _best_sweep_split(order, similarity, cannot_link, min_side_fraction)
    labels = np.zeros(n, dtype=int)
    labels[order[split:]] = 1
    return labels


def _best_sweep_split(order: np.ndarray, similarity, cannot_link, min_side_fraction: float) -> int:
    """Size k of the prefix S = order[:k] with the least cut ratio among the allowed k."""
    n = order.shape[0]
    smallest_side = max(1, int(np.ceil(min_side_fraction * n - 1e-9)))
    smallest_side = min(smallest_side, n // 2)
    sizes = np.arange(1, n)
    allowed = (sizes >= smallest_side) & (n - sizes >= smallest_side)
    cut_g = _sweep_cut_weights(similarity, order)
    cut_h = _sweep_cut_weights(cannot_link, order)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(cut_h > 0, cut_g / np.where(cut_h > 0, cut_h, 1.0), np.inf)
    ratio[~allowed] = np.inf
    if not np.isfinite(ratio).any():
        # No allowed cut separates a cannot-link pair: the ratio cannot choose, so split evenly.
        return n // 2
    return int(sizes[np.argmin(ratio)])


def _one_dimensional_two_means(sorted_values: np.ndarray) -> int:
    """Split point k minimising the within-cluster sum of squares of sorted[:k], sorted[k:]."""
    n = sorted_values.shape[0]
    centred = sorted_values - sorted_values.mean()
    prefix_sum = np.cumsum(centred)[:-1]
    sizes = np.arange(1, n)
    # Between-cluster sum of squares of a split at k; maximising it minimises the within part.
    between = prefix_sum**2 * n / (sizes * (n - sizes))
    return int(sizes[np.argmax(between)])


# --------------------------------------------------------------------------- loaders


def _symmetric_from_upper(upper_mask: np.ndarray, weights: np.ndarray | float = 1.0):
    """CSR matrix of the undirected graph whose edges are ``upper_mask``'s strict upper triangle."""
    import scipy.sparse as sp

    rows, cols = np.nonzero(np.triu(upper_mask, k=1))
    values = np.broadcast_to(np.asarray(weights, dtype=float), upper_mask.shape)[rows, cols]
    n = upper_mask.shape[0]
    upper = sp.coo_matrix((values, (rows, cols)), shape=(n, n))
    return (upper + upper.T).tocsr()


def _shuffled_labels(sizes: list[int], rng: np.random.Generator) -> np.ndarray:
    """Cluster labels in a random vertex order, so that a vertex's index says nothing of its cluster."""
    labels = np.concatenate([np.full(size, cluster) for cluster, size in enumerate(sizes)])
    return rng.permutation(labels)


def two_block_sbm(context: Context, *, n: int = 400, p: float = 0.2, q: float = 0.15) -> ConstrainedClusteringInstance:
    """Two equal blocks. G: edge probability p inside a block, q across; H: q inside, p across.

    G and H are drawn independently. The planted cut has w_G/w_H ≈ q/p, so the constraints
    help most where q approaches p and G alone hardly shows the blocks.
    """
    if n < 4:
        raise ValueError(f"n={n}: need at least 4 vertices")
    for name, value in (("p", p), ("q", q)):
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{name}={value} is not a probability")
    rng = context.rng("data")
    labels = _shuffled_labels([n // 2, n - n // 2], rng)
    same = labels[:, None] == labels[None, :]
    similarity = _symmetric_from_upper(rng.random((n, n)) < np.where(same, p, q))
    cannot_link = _symmetric_from_upper(rng.random((n, n)) < np.where(same, q, p))
    return ConstrainedClusteringInstance(similarity, cannot_link, labels)


def two_disk_rgg(
    context: Context,
    *,
    points_per_disk: int = 200,
    radius: float = 0.2,
    separation: float = 0.1,
    r_in: float = 0.1,
    r_out: float = 0.05,
) -> ConstrainedClusteringInstance:
    """Random geometric graphs on two disks whose centres are ``separation`` apart.

    Points are uniform on two disks of ``radius`` centred at (∓separation/2, 0). G joins two
    points of the same disk within distance ``r_in`` and of different disks within ``r_out``;
    H does the reverse (``r_out`` inside a disk, ``r_in`` across). The disks overlap when
    separation < 2·radius; at 0 they coincide and only the radii tell the clusters apart.
    A negative separation mirrors the picture (the paper sweeps −0.35 … 0.35).
    """
    if points_per_disk < 2:
        raise ValueError(f"points_per_disk={points_per_disk}: need at least 2")
    if radius <= 0 or r_in < 0 or r_out < 0:
        raise ValueError("radius must be positive and r_in, r_out non-negative")
    rng = context.rng("data")
    labels = _shuffled_labels([points_per_disk, points_per_disk], rng)
    n = labels.shape[0]
    distance_from_centre = radius * np.sqrt(rng.random(n))  # uniform on the disk
    angle = rng.uniform(0.0, 2.0 * np.pi, n)
    centre_x = np.where(labels == 0, -separation / 2.0, separation / 2.0)
    points = np.column_stack([centre_x + distance_from_centre * np.cos(angle), distance_from_centre * np.sin(angle)])
    distance = np.sqrt(((points[:, None, :] - points[None, :, :]) ** 2).sum(axis=-1))
    same = labels[:, None] == labels[None, :]
    similarity = _symmetric_from_upper(distance <= np.where(same, r_in, r_out))
    cannot_link = _symmetric_from_upper(distance <= np.where(same, r_out, r_in))
    return ConstrainedClusteringInstance(similarity, cannot_link, labels, points=points)


def digits_knn(
    context: Context,
    *,
    classes: tuple[int, int] = (3, 8),
    n_neighbors: int = 10,
    labelled_per_class: int = 10,
    far_neighbors: int = 10,
    far_weight: float = 0.1,
    points_per_class: int | None = None,
) -> ConstrainedClusteringInstance:
    """Two classes of scikit-learn's bundled 8×8 digits (no download).

    G: the symmetrised ``n_neighbors``-nearest-neighbour graph of the 64 pixel values (an
    edge when either point is among the other's neighbours) joined with a Euclidean minimum
    spanning tree, unit weights. The tree makes G connected: kNN graphs of digits fall apart
    into clumps (1 vs 7 at k = 10 leaves 27 ones on their own), and a spectral method on a
    disconnected G only finds the component split.
    H: cannot-links of weight 1 between every pair of labelled points from different classes
    (``labelled_per_class`` labelled points per class, drawn from ``context.rng("data")`` so
    that validation and test label different points), plus a weak dissimilarity graph of
    weight ``far_weight`` joining each point to its ``far_neighbors`` farthest points. The
    second part uses no labels (for 3 vs 8, 84 % of far pairs straddle the classes, hence
    the low weight). It makes H connected: otherwise every unlabelled vertex is isolated in
    H, CC's constraint x ⊥ ker(L_H) forces x = 0 on all of them, and the Cheeger bound
    (which divides by λ2 of H) says nothing.
    ``points_per_class`` subsamples each class (``None``: all of it, about 180 points).
    """
    from scipy.sparse.csgraph import minimum_spanning_tree
    from sklearn.datasets import load_digits

    classes = tuple(int(c) for c in classes)
    if len(classes) != 2 or classes[0] == classes[1] or not all(0 <= c <= 9 for c in classes):
        raise ValueError(f"classes={list(classes)}: need two different digits in 0..9")
    if n_neighbors < 1 or labelled_per_class < 0 or far_neighbors < 0 or far_weight < 0:
        raise ValueError("n_neighbors must be ≥ 1; labelled_per_class, far_neighbors, far_weight ≥ 0")
    rng = context.rng("data")
    digits = load_digits()
    chosen: list[np.ndarray] = []
    for digit in classes:
        members = np.flatnonzero(digits.target == digit)
        if points_per_class is not None:
            if not 2 <= points_per_class <= members.size:
                raise ValueError(f"points_per_class={points_per_class}: digit {digit} has {members.size} images")
            members = rng.choice(members, size=points_per_class, replace=False)
        chosen.append(members)
    index = rng.permutation(np.concatenate(chosen))
    features = digits.data[index].astype(float)
    labels = (digits.target[index] == classes[1]).astype(int)
    n = labels.shape[0]
    if labelled_per_class > min(np.bincount(labels, minlength=2)):
        raise ValueError(f"labelled_per_class={labelled_per_class} exceeds a class's size")
    if not n_neighbors < n or not far_neighbors < n:
        raise ValueError(f"n_neighbors and far_neighbors must be below the number of points ({n})")

    squared = (features**2).sum(axis=1)
    distance = np.sqrt(np.maximum(squared[:, None] + squared[None, :] - 2.0 * features @ features.T, 0.0))
    np.fill_diagonal(distance, np.inf)
    near = np.zeros((n, n), dtype=bool)
    near[np.arange(n)[:, None], np.argsort(distance, axis=1, kind="stable")[:, :n_neighbors]] = True
    # The offset keeps duplicate images (distance 0) as edges: csgraph reads 0 as "no edge".
    spanning = minimum_spanning_tree(np.where(np.isfinite(distance), distance + 1e-9, 0.0)).toarray() > 0
    similarity = _symmetric_from_upper(near | near.T | spanning | spanning.T)

    np.fill_diagonal(distance, -np.inf)
    far = np.zeros((n, n), dtype=bool)
    if far_neighbors:
        far[np.arange(n)[:, None], np.argsort(-distance, axis=1, kind="stable")[:, :far_neighbors]] = True
    labelled = np.zeros(n, dtype=bool)
    for cluster in (0, 1):
        labelled[rng.choice(np.flatnonzero(labels == cluster), size=labelled_per_class, replace=False)] = True
    known_apart = labelled[:, None] & labelled[None, :] & (labels[:, None] != labels[None, :])
    weights = np.where(known_apart, 1.0, far_weight)
    cannot_link = _symmetric_from_upper(known_apart | far | far.T, weights)
    cannot_link.eliminate_zeros()
    return ConstrainedClusteringInstance(similarity, cannot_link, labels, points=features)


# --------------------------------------------------------------------------- the task


class ConstrainedClusteringTask(Task):
    """Two-way clustering of G under H, scored by ARI, the cut ratio and the method's time."""

    name = "graph.constrained-clustering"
    version = "1"
    metrics = ("ari", "cut_ratio", "runtime_s")
    protocol = ConstrainedClusterer

    def tiny(self, workdir: Path) -> dict[str, dict[str, Any]]:
        return {
            "two-block-sbm": {"n": 48},
            "two-disk-rgg": {"points_per_disk": 25},
            "digits-knn": {"points_per_class": 25, "labelled_per_class": 3, "n_neighbors": 5, "far_neighbors": 5},
        }

    def chance(self, dataset: str, params: dict[str, Any]) -> dict[str, float]:
        """The adjusted Rand index is 0 in expectation for a labelling drawn at random."""
        return {"ari": 0.0}

    def evaluate(
        self, method: ConstrainedClusterer, data: ConstrainedClusteringInstance, context: Context
    ) -> dict[str, float]:
        from sklearn.metrics import adjusted_rand_score

        # Copies, because the engine reuses one loaded instance for every method of a cell.
        similarity, cannot_link = data.similarity.copy(), data.cannot_link.copy()
        rng = context.rng("method")
        started = time.perf_counter()
        predicted = method.fit_predict(similarity, cannot_link, data.n_clusters, rng)
        runtime_s = time.perf_counter() - started

        predicted = np.asarray(predicted)
        who = type(method).__name__
        if predicted.shape != (data.n,):
            raise ValueError(f"{who} returned labels of shape {predicted.shape}; expected ({data.n},)")
        if not np.issubdtype(predicted.dtype, np.integer):
            raise ValueError(f"{who} returned labels of dtype {predicted.dtype}; expected integers")
        found = np.unique(predicted).size
        if found != data.n_clusters:
            raise ValueError(f"{who} returned {found} cluster(s); the task asks for exactly {data.n_clusters}")
        return {
            "ari": float(adjusted_rand_score(data.labels, predicted)),
            "cut_ratio": cut_ratio(data.similarity, data.cannot_link, predicted),
            "runtime_s": runtime_s,
        }


TASK = ConstrainedClusteringTask()
