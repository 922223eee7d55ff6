"""Tests for the constrained-clustering task, CC / CC++ and the spectral baselines.

The theory checks follow Fabila Carrasco & Sun (ICML 2025): Lemma 3.4 (the negative loop
makes L_H' definite with λ1 ≤ λ2(Δ_H)), Lemma 3.5 (real, non-negative spectrum of
L_H'^{-1} L_G) and Theorem 3.2 (Cheeger-type bound), checked by brute force over all cuts.
"""
from __future__ import annotations

import itertools

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from baselines import CucuringuConstrainedSpectral, SpectralClustering
from components.laplacians import (
    degree_equalised_laplacians,
    graph_laplacian,
    laplacian_kernel_basis,
    smallest_eigenpair_on_complement,
    vertex_function,
)
from harness.tasks.graph import constrained_clustering as task_module
from harness.tasks.base import Context
from harness.tasks.graph.constrained_clustering import (
    TASK,
    ConstrainedClusteringInstance,
    crossing_weight,
    cut_ratio,
    round_bipartition,
)
from implementations.signed_laplacian import SignedLaplacianClustering, cannot_link_operator

LOADERS = {name: getattr(task_module, name.replace("-", "_")) for name in TASK.tiny(Path('.'))}


# --------------------------------------------------------------------------- helpers


def random_weighted_graph(rng: np.random.Generator, n: int, density: float = 0.5) -> sp.csr_matrix:
    """A connected weighted Erdős–Rényi graph (resampled until connected)."""
    while True:
        upper = np.triu((rng.random((n, n)) < density) * rng.uniform(0.5, 2.0, (n, n)), k=1)
        adjacency = upper + upper.T
        if connected_components(sp.csr_matrix(adjacency), directed=False)[0] == 1:
            return sp.csr_matrix(adjacency)


def all_cut_ratios(similarity, cannot_link) -> tuple[np.ndarray, np.ndarray]:
    """w_G/w_H of every cut S ∌ vertex n-1 (each cut once), and the masks, by brute force."""
    n = similarity.shape[0]
    masks = np.array(list(itertools.product([0.0, 1.0], repeat=n - 1)))[1:]
    masks = np.hstack([masks, np.zeros((masks.shape[0], 1))])
    g, h = similarity.toarray(), cannot_link.toarray()
    cut_g = np.einsum("ki,ij,kj->k", masks, g, 1.0 - masks)
    cut_h = np.einsum("ki,ij,kj->k", masks, h, 1.0 - masks)
    return cut_g / cut_h, masks


def preprocessed_operators(similarity, cannot_link):
    """The paper's preprocessing: scale G by c0, add loops so deg_G = deg_H; return Δ_G, Δ_H, c0, degrees."""
    g, h = similarity.toarray(), cannot_link.toarray()
    degree_g, degree_h = g.sum(axis=1), h.sum(axis=1)
    c0 = np.min(degree_h / degree_g)
    equalised = c0 * g + np.diag(degree_h - c0 * degree_g)  # loop weights ≥ 0 by the choice of c0
    scale = 1.0 / np.sqrt(degree_h)
    delta_g = np.eye(len(g)) - scale[:, None] * equalised * scale[None, :]
    delta_h = np.eye(len(h)) - scale[:, None] * h * scale[None, :]
    return delta_g, delta_h, c0, degree_h


def instance(similarity, cannot_link, labels) -> ConstrainedClusteringInstance:
    return ConstrainedClusteringInstance(sp.csr_matrix(similarity), sp.csr_matrix(cannot_link), np.asarray(labels))


# --------------------------------------------------------------------------- Laplacians


def test_normalized_laplacian_quadratic_form_is_a_sum_over_edges_of_the_vertex_function():
    rng = np.random.default_rng(0)
    adjacency = random_weighted_graph(rng, 9)
    f = rng.normal(size=9)
    y = vertex_function(f, adjacency)
    dense = adjacency.toarray()
    by_edges = sum(dense[u, v] * (y[u] - y[v]) ** 2 for u in range(9) for v in range(u + 1, 9))
    assert f @ graph_laplacian(adjacency, "normalized") @ f == pytest.approx(by_edges)
    combinatorial = sum(dense[u, v] * (f[u] - f[v]) ** 2 for u in range(9) for v in range(u + 1, 9))
    assert f @ graph_laplacian(adjacency, "combinatorial") @ f == pytest.approx(combinatorial)


@pytest.mark.parametrize("kind", ["normalized", "combinatorial"])
def test_kernel_basis_spans_one_direction_per_component_including_isolated_vertices(kind):
    rng = np.random.default_rng(1)
    blocks = [random_weighted_graph(rng, 4).toarray(), random_weighted_graph(rng, 3).toarray(), np.zeros((1, 1))]
    adjacency = sp.csr_matrix(sp.block_diag(blocks))
    basis = laplacian_kernel_basis(adjacency, kind)
    laplacian = graph_laplacian(adjacency, kind)
    assert basis.shape == (8, 3)
    np.testing.assert_allclose(basis.T @ basis, np.eye(3), atol=1e-12)
    np.testing.assert_allclose(laplacian @ basis, 0.0, atol=1e-12)
    assert np.sum(np.linalg.eigvalsh(laplacian) < 1e-10) == 3  # and nothing else is in the kernel


# --------------------------------------------------------------------------- Lemmas 3.4 and 3.5


@pytest.mark.parametrize("seed", range(10))
def test_lemma_3_4_loop_makes_cannot_link_operator_definite_below_lambda2(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 15))
    cannot_link = random_weighted_graph(rng, n, density=0.4)
    lambda2_h = np.linalg.eigvalsh(graph_laplacian(cannot_link, "normalized"))[1]
    for epsilon in (1e-4, 1e-2, 1.0, 100.0):
        v0 = int(rng.integers(n))
        # As implemented: L_sym,H + ε e_v0 e_v0ᵀ.
        lambda1 = np.linalg.eigvalsh(cannot_link_operator(cannot_link, "normalized", epsilon, np.array([v0])))[0]
        assert 0.0 < lambda1 <= lambda2_h + 1e-12
        # The paper's signed normalised Laplacian: a negative loop of weight ε adds ε to the
        # degree and 2ε to the quadratic form at v0.
        degree = np.asarray(cannot_link.sum(axis=1)).ravel()
        degree[v0] += epsilon
        signed = graph_laplacian(cannot_link, "combinatorial")
        signed[v0, v0] += 2.0 * epsilon
        scale = 1.0 / np.sqrt(degree)
        lambda1_signed = np.linalg.eigvalsh(scale[:, None] * signed * scale[None, :])[0]
        assert 0.0 < lambda1_signed <= lambda2_h + 1e-12


def test_one_loop_per_component_of_a_disconnected_cannot_link_graph():
    rng = np.random.default_rng(3)
    cannot_link = sp.csr_matrix(sp.block_diag([random_weighted_graph(rng, 5).toarray(), random_weighted_graph(rng, 4).toarray()]))
    similarity = random_weighted_graph(rng, 9)
    method = SignedLaplacianClustering()
    method.embed(similarity, cannot_link, np.random.default_rng(0))
    components = connected_components(cannot_link, directed=False)[1]
    assert sorted(components[method.loop_vertices_]) == [0, 1]
    operator = cannot_link_operator(cannot_link, "normalized", 1e-2, method.loop_vertices_)
    assert np.linalg.eigvalsh(operator)[0] > 0
    one_loop = cannot_link_operator(cannot_link, "normalized", 1e-2, method.loop_vertices_[:1])
    assert np.linalg.eigvalsh(one_loop)[0] == pytest.approx(0.0, abs=1e-10)  # a loop per component is needed


@pytest.mark.parametrize("kind", ["normalized", "combinatorial"])
def test_lemma_3_5_generalised_spectrum_is_real_and_non_negative(kind):
    rng = np.random.default_rng(4)
    similarity, cannot_link = random_weighted_graph(rng, 10), random_weighted_graph(rng, 10)
    operator = cannot_link_operator(cannot_link, kind, 1e-2, np.array([3]))
    laplacian_g = graph_laplacian(similarity, kind)
    eigenvalues = np.linalg.eigvals(np.linalg.solve(operator, laplacian_g))
    assert np.max(np.abs(eigenvalues.imag)) < 1e-8
    assert eigenvalues.real.min() > -1e-10
    from scipy.linalg import eigh

    np.testing.assert_allclose(np.sort(eigenvalues.real), eigh(laplacian_g, operator, eigvals_only=True), rtol=1e-7, atol=1e-9)


# --------------------------------------------------------------------------- Theorem 3.2


def random_weighted_path(rng: np.random.Generator, n: int) -> sp.csr_matrix:
    """A path through the vertices in random order with random weights: a poor expander."""
    order = rng.permutation(n)
    adjacency = np.zeros((n, n))
    adjacency[order[:-1], order[1:]] = rng.uniform(0.2, 2.0, n - 1)
    return sp.csr_matrix(adjacency + adjacency.T)


@pytest.mark.parametrize("family", ["dense", "path"])
@pytest.mark.parametrize("seed", range(8))
def test_cheeger_type_bound_by_brute_force_over_all_cuts(seed, family):
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(6, 13))
    if family == "dense":
        similarity = random_weighted_graph(rng, n, density=float(rng.uniform(0.3, 0.8)))
    else:
        similarity = random_weighted_path(rng, n)
    cannot_link = random_weighted_graph(rng, n, density=float(rng.uniform(0.3, 0.8)))
    ratios, masks = all_cut_ratios(similarity, cannot_link)
    delta_g, delta_h, c0, degree = preprocessed_operators(similarity, cannot_link)
    # λ2(Δ_G^H) = min over x ⊥ ker Δ_H = D^{1/2}1 of ⟨x, Δ_G x⟩ / ⟨x, Δ_H x⟩.
    kernel = np.sqrt(degree)[:, None] / np.linalg.norm(np.sqrt(degree))
    lambda2, x = smallest_eigenpair_on_complement(delta_g, delta_h, kernel)
    lambda2_h = np.linalg.eigvalsh(delta_h)[1]
    phi = c0 * ratios.min()  # Φ of the preprocessed G (its loops cross no cut)

    # The equal-degree operator is the combinatorial pencil (L_G, L_H) scaled by c0.
    combinatorial, _ = smallest_eigenpair_on_complement(
        graph_laplacian(similarity, "combinatorial"), graph_laplacian(cannot_link, "combinatorial"), np.full((n, 1), n**-0.5)
    )
    assert lambda2 == pytest.approx(c0 * combinatorial, rel=1e-8)
    assert lambda2 <= phi + 1e-12  # the easy side: an indicator vector is a feasible x
    bound = 4.0 * np.sqrt(lambda2) / lambda2_h
    assert phi <= bound
    # The bound is met by a threshold cut of y = D^{-1/2} x, found by the unrestricted sweep.
    swept = round_bipartition(x / np.sqrt(degree), similarity, cannot_link, "sweep", min_side_fraction=0.0)
    swept_ratio = c0 * cut_ratio(similarity, cannot_link, swept)
    assert phi - 1e-12 <= swept_ratio <= bound


def test_the_bound_needs_the_square_root_path_against_complete_graph():
    """Φ ≤ 4 λ2/λ2(Δ_H) without the square root fails: G a path, H complete, n = 12."""
    n = 12
    path = sp.diags([np.ones(n - 1), np.ones(n - 1)], [-1, 1], format="csr")
    complete = sp.csr_matrix(np.ones((n, n)) - np.eye(n))
    ratios, _ = all_cut_ratios(path, complete)
    delta_g, delta_h, c0, degree = preprocessed_operators(path, complete)
    kernel = np.sqrt(degree)[:, None] / np.linalg.norm(np.sqrt(degree))
    lambda2, _ = smallest_eigenpair_on_complement(delta_g, delta_h, kernel)
    lambda2_h = np.linalg.eigvalsh(delta_h)[1]
    phi = c0 * ratios.min()
    assert phi > 4.0 * lambda2 / lambda2_h  # the linear form is violated ...
    assert phi <= 4.0 * np.sqrt(lambda2) / lambda2_h  # ... the square-root form holds


# --------------------------------------------------------------------------- methods


def test_cc_plus_plus_tends_to_cc_for_combinatorial_laplacians_as_epsilon_vanishes():
    """With D − A both kernels are the constants, so the loop's limit is the restriction to 1^⊥."""
    rng = np.random.default_rng(5)
    similarity, cannot_link = random_weighted_graph(rng, 12), random_weighted_graph(rng, 12)
    looped = SignedLaplacianClustering(epsilon=1e-7, laplacian="combinatorial")
    restricted = SignedLaplacianClustering(self_loop=False, laplacian="combinatorial")
    a = looped.embed(similarity, cannot_link, np.random.default_rng(0))
    b = restricted.embed(similarity, cannot_link, np.random.default_rng(0))
    assert looped.eigenvalue_ == pytest.approx(restricted.eigenvalue_, rel=1e-5)
    a, b = a - a.mean(), b - b.mean()
    assert abs(a @ b) / (np.linalg.norm(a) * np.linalg.norm(b)) == pytest.approx(1.0, abs=1e-6)


def test_degree_equalised_operator_is_the_papers_preprocessing():
    """Scale G by c0, add loops so deg_G = deg_H, normalise both by that degree (the tests' own helper)."""
    rng = np.random.default_rng(11)
    similarity, cannot_link = random_weighted_graph(rng, 14), random_weighted_graph(rng, 14)
    delta_g, delta_h, degree, c0 = degree_equalised_laplacians(similarity, cannot_link)
    expected_g, expected_h, expected_c0, expected_degree = preprocessed_operators(similarity, cannot_link)
    np.testing.assert_allclose(delta_g, expected_g, atol=1e-12)
    np.testing.assert_allclose(delta_h, expected_h, atol=1e-12)
    np.testing.assert_allclose(degree, expected_degree)
    assert c0 == pytest.approx(expected_c0)
    # Δ_H is H's own normalised Laplacian; Δ_G is not G's (its degrees are H's)
    np.testing.assert_allclose(delta_h, graph_laplacian(cannot_link, "normalized"), atol=1e-12)
    assert not np.allclose(delta_g, graph_laplacian(similarity, "normalized"))


def test_degree_equalised_cc_plus_plus_solves_algorithm_1_as_written():
    """Its vertex function is the eigenvector of (c0 L_G, L_H + ε d_H(v0) e e^T): the combinatorial pencil."""
    rng = np.random.default_rng(12)
    similarity, cannot_link = random_weighted_graph(rng, 13), random_weighted_graph(rng, 13)
    method = SignedLaplacianClustering(epsilon=1e-2, laplacian="degree-equalised")
    vector = method.embed(similarity, cannot_link, np.random.default_rng(0))
    (v0,) = method.loop_vertices_
    _, _, degree, c0 = degree_equalised_laplacians(similarity, cannot_link)
    right = graph_laplacian(cannot_link, "combinatorial")
    right[v0, v0] += 1e-2 * degree[v0]
    from scipy.linalg import eigh

    values, vectors = eigh(c0 * graph_laplacian(similarity, "combinatorial"), right)
    assert method.eigenvalue_ == pytest.approx(values[1], rel=1e-8)
    cosine = abs(vector @ vectors[:, 1]) / (np.linalg.norm(vector) * np.linalg.norm(vectors[:, 1]))
    assert cosine == pytest.approx(1.0, abs=1e-8)
    # CC with the same operator: x ⊥ ker(Δ_H), as for the normalised one
    restricted = SignedLaplacianClustering(self_loop=False, laplacian="degree-equalised")
    restricted.embed(similarity, cannot_link, np.random.default_rng(0))
    assert restricted.eigenvalue_ == pytest.approx(method.eigenvalue_, rel=0.2)


def test_degree_equalisation_needs_a_cannot_link_edge_at_every_vertex():
    rng = np.random.default_rng(13)
    similarity = random_weighted_graph(rng, 8)
    cannot_link = random_weighted_graph(rng, 8).toarray()
    cannot_link[3, :] = cannot_link[:, 3] = 0.0
    with pytest.raises(ValueError, match="no cannot-link edge"):
        degree_equalised_laplacians(similarity, sp.csr_matrix(cannot_link))


def test_cucuringu_with_complete_cannot_link_graph_and_no_demand_is_the_combinatorial_fiedler_vector():
    rng = np.random.default_rng(6)
    n = 10
    similarity = random_weighted_graph(rng, n)
    complete = sp.csr_matrix(np.ones((n, n)) - np.eye(n))
    method = CucuringuConstrainedSpectral(mu=0.0)
    vector = method.embed(similarity, complete, rng)
    values, vectors = np.linalg.eigh(graph_laplacian(similarity, "combinatorial"))
    assert method.eigenvalue_ == pytest.approx(values[1] / n)  # L_H = n I − 11ᵀ is n I on 1^⊥
    assert abs(vector @ vectors[:, 1]) / np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-8)
    # The demand graph adds μ to the denominator on 1^⊥: λ = λ2(L_G) / (n + μ).
    shifted = CucuringuConstrainedSpectral(mu=5.0)
    shifted.embed(similarity, complete, rng)
    assert shifted.eigenvalue_ == pytest.approx(values[1] / (n + 5.0))


def test_spectral_clustering_uses_the_fiedler_value_of_the_normalised_laplacian():
    rng = np.random.default_rng(7)
    similarity = random_weighted_graph(rng, 11)
    method = SpectralClustering()
    method.embed(similarity, None, rng)
    assert method.eigenvalue_ == pytest.approx(np.linalg.eigvalsh(graph_laplacian(similarity, "normalized"))[1])


ALL_METHODS = {
    "cc++": SignedLaplacianClustering,
    "cc": lambda: SignedLaplacianClustering(self_loop=False),
    "combinatorial": lambda: SignedLaplacianClustering(laplacian="combinatorial"),
    "degree-equalised": lambda: SignedLaplacianClustering(laplacian="degree-equalised"),
    "spectral": SpectralClustering,
    "cucuringu": CucuringuConstrainedSpectral,
}


@pytest.mark.parametrize("name", ALL_METHODS)
def test_easy_two_block_sbm_is_recovered_exactly(name):
    context = Context(seed=0, split="test", dataset="two-block-sbm")
    data = task_module.two_block_sbm(context, n=120, p=0.3, q=0.03)
    scores = TASK.evaluate(ALL_METHODS[name](), data, context)
    assert scores["ari"] == 1.0
    planted = cut_ratio(data.similarity, data.cannot_link, data.labels)
    assert scores["cut_ratio"] == pytest.approx(planted)


def test_cc_plus_plus_beats_spectral_clustering_in_the_hard_band():
    """n = 400, q = 0.16: over 3 seeds CC++ keeps ARI ≈ 0.5 where SC is near 0.1 (paper Fig. 2 trend)."""
    gains = []
    for seed in range(3):
        context = Context(seed=seed, split="test", dataset="two-block-sbm")
        data = task_module.two_block_sbm(context, n=400, p=0.2, q=0.16)
        ours = TASK.evaluate(SignedLaplacianClustering(), data, context)["ari"]
        theirs = TASK.evaluate(SpectralClustering(), data, context)["ari"]
        gains.append(ours - theirs)
    assert np.mean(gains) > 0.2


# --------------------------------------------------------------------------- rounding and metrics


def test_sweep_cut_weights_match_direct_computation_for_every_prefix():
    rng = np.random.default_rng(8)
    adjacency = random_weighted_graph(rng, 9)
    order = rng.permutation(9)
    expected = []
    for k in range(1, 9):
        labels = np.zeros(9, dtype=int)
        labels[order[:k]] = 1
        expected.append(crossing_weight(adjacency, labels))
    np.testing.assert_allclose(task_module._sweep_cut_weights(adjacency, order), expected)


def test_unrestricted_sweep_returns_the_best_threshold_cut_and_restriction_bounds_sides():
    rng = np.random.default_rng(9)
    n = 12
    similarity, cannot_link = random_weighted_graph(rng, n), random_weighted_graph(rng, n)
    vector = rng.normal(size=n)
    order = np.argsort(vector)
    prefix_ratios = []
    for k in range(1, n):
        side = np.zeros(n, dtype=int)
        side[order[:k]] = 1
        prefix_ratios.append(cut_ratio(similarity, cannot_link, side))
    labels = round_bipartition(vector, similarity, cannot_link, "sweep", 0.0)
    assert cut_ratio(similarity, cannot_link, labels) == pytest.approx(min(prefix_ratios))
    for fraction in (0.25, 0.4, 0.5):
        labels = round_bipartition(vector, similarity, cannot_link, "sweep", fraction)
        smaller = min(labels.sum(), n - labels.sum())
        assert smaller >= np.ceil(fraction * n)
        allowed = [r for k, r in enumerate(prefix_ratios, start=1) if min(k, n - k) >= np.ceil(fraction * n)]
        assert cut_ratio(similarity, cannot_link, labels) == pytest.approx(min(allowed))


def test_median_and_two_means_rules():
    values = np.array([0.3, -2.0, 5.0, 0.1, 4.0, 0.2, 4.5])
    graph = sp.csr_matrix((7, 7))
    median = round_bipartition(values, graph, graph, "median")
    assert median.tolist() == [1, 0, 1, 0, 1, 0, 1]  # the 4 largest against the 3 smallest
    two_means = round_bipartition(values, graph, graph, "kmeans")
    assert two_means.tolist() == [0, 0, 1, 0, 1, 0, 1]
    with pytest.raises(ValueError, match="rounding rule"):
        round_bipartition(values, graph, graph, "spectral")


def test_cut_ratio_by_hand_and_its_guards():
    # G: triangle 0-1-2 plus edge 2-3 (weight 2); H: edges 0-3 (weight 1) and 1-3 (weight 3).
    g = np.zeros((4, 4))
    g[0, 1] = g[1, 2] = g[0, 2] = 1.0
    g[2, 3] = 2.0
    h = np.zeros((4, 4))
    h[0, 3], h[1, 3] = 1.0, 3.0
    g, h = sp.csr_matrix(g + g.T), sp.csr_matrix(h + h.T)
    assert cut_ratio(g, h, np.array([0, 0, 0, 1])) == pytest.approx(2.0 / 4.0)
    assert cut_ratio(g, h, np.array([1, 0, 0, 1])) == pytest.approx((1 + 1 + 2) / 3.0)
    assert cut_ratio(g, h, np.array([0, 1, 1, 1])) == pytest.approx(2.0 / 1.0)
    assert cut_ratio(g, h, np.array([0, 0, 1, 0])) == float("inf")  # w_H = 0 < w_G
    empty = sp.csr_matrix((4, 4))
    assert np.isnan(cut_ratio(empty, empty, np.array([0, 0, 1, 1])))


# --------------------------------------------------------------------------- data and protocol


@pytest.mark.parametrize("name", LOADERS)
def test_data_is_identical_for_a_seed_and_split_and_differs_between_splits(name):
    params = TASK.tiny(Path('.'))[name]

    def load(split, seed=0):
        return LOADERS[name](Context(seed=seed, split=split, dataset=name), **params)

    first, again = load("test"), load("test")
    assert (first.similarity != again.similarity).nnz == 0
    assert (first.cannot_link != again.cannot_link).nnz == 0
    np.testing.assert_array_equal(first.labels, again.labels)
    for other in (load("val"), load("test", seed=1)):
        differs = (
            (first.cannot_link != other.cannot_link).nnz > 0
            or (first.similarity != other.similarity).nnz > 0
            or not np.array_equal(first.labels, other.labels)
        )
        assert differs
    for matrix in (first.similarity, first.cannot_link):
        assert sp.isspmatrix_csr(matrix) and (matrix != matrix.T).nnz == 0
        assert matrix.diagonal().max() == 0 and matrix.min() >= 0
    assert np.array_equal(np.unique(first.labels), [0, 1])


def test_digits_labelled_points_change_between_val_and_test():
    params = dict(labelled_per_class=4, far_neighbors=0)

    def labelled_images(split):
        data = task_module.digits_knn(Context(seed=0, split=split, dataset="digits-knn"), **params)
        # Without far edges H is exactly the complete bipartite graph between the labelled points.
        rows, cols = sp.triu(data.cannot_link).nonzero()
        assert len(rows) == 16 and np.all(data.labels[rows] != data.labels[cols])
        labelled = np.unique(np.concatenate([rows, cols]))
        return {tuple(image) for image in data.points[labelled]}

    test, val = labelled_images("test"), labelled_images("val")
    assert len(test) == len(val) == 8 and test != val


def test_digits_subsample_is_drawn_by_the_seed():
    """With points_per_class the seed draws which images (and which labelled ones) form the instance."""
    def images(seed):
        data = task_module.digits_knn(Context(seed=seed, split="test", dataset="digits-3v8"), points_per_class=120)
        assert data.n == 240 and np.bincount(data.labels).tolist() == [120, 120]
        return {tuple(image) for image in data.points}

    first, second = images(0), images(1)
    assert first != second and len(first & second) < 0.9 * len(first)


def test_digits_cannot_link_graph_is_connected_and_far_edges_use_no_labels():
    data = task_module.digits_knn(Context(seed=0, split="test", dataset="digits-knn"))
    assert connected_components(data.cannot_link, directed=False)[0] == 1
    assert connected_components(data.similarity, directed=False)[0] == 1
    weights = set(np.unique(data.cannot_link.data).tolist())
    assert weights == {0.1, 1.0}


def test_method_receives_only_the_protocol_arguments_and_copies_of_the_graphs():
    context = Context(seed=0, split="test", dataset="two-block-sbm")
    data = task_module.two_block_sbm(context, n=40)
    seen = {}

    class Spy:
        def fit_predict(self, *args, **kwargs):
            seen["args"], seen["kwargs"] = args, kwargs
            args[0].data[:] = 0.0  # a careless method must not corrupt the shared instance
            return np.arange(40) % 2

    TASK.evaluate(Spy(), data, context)
    similarity, cannot_link, n_clusters, rng = seen["args"]
    assert seen["kwargs"] == {} and n_clusters == 2 and isinstance(rng, np.random.Generator)
    for given in (similarity, cannot_link):
        assert sp.issparse(given) and given.shape == (40, 40)
    assert data.similarity.sum() > 0
    assert not any(isinstance(a, np.ndarray) and np.array_equal(a, data.labels) for a in seen["args"])


@pytest.mark.parametrize("bad", [np.zeros(40, dtype=int), np.arange(40) % 3, (np.arange(40) % 2)[:-1], np.full(40, 0.5)])
def test_evaluate_rejects_outputs_that_break_the_protocol(bad):
    context = Context(seed=0, split="test", dataset="two-block-sbm")
    data = task_module.two_block_sbm(context, n=40)

    class Fixed:
        def fit_predict(self, similarity, cannot_link, n_clusters, rng):
            return bad

    with pytest.raises(ValueError, match="Fixed returned"):
        TASK.evaluate(Fixed(), data, context)


def two_cliques_with_cannot_links_across() -> ConstrainedClusteringInstance:
    """Blocks A (even vertices) and B (odd vertices) of 0..11. G: a clique on each block and one
    bridge 0–5; H: the path 0–1–2–…–11, each of whose 11 edges joins A and B.

    The planted cut crosses the bridge in G and every edge of H: w_G/w_H = 1/11.
    """
    n = 12
    labels = np.arange(n) % 2
    similarity = (labels[:, None] == labels[None, :]).astype(float)
    np.fill_diagonal(similarity, 0.0)
    similarity[0, 5] = similarity[5, 0] = 1.0
    cannot_link = np.zeros((n, n))
    path = np.arange(n - 1)
    cannot_link[path, path + 1] = cannot_link[path + 1, path] = 1.0
    return ConstrainedClusteringInstance(sp.csr_matrix(similarity), sp.csr_matrix(cannot_link), labels)


def _registered_methods() -> list[tuple[str, dict]]:
    from harness.registry import default_registry

    names = default_registry().names("methods", task=TASK.name)
    variants = [("signed-laplacian", {"self_loop": False}), ("signed-laplacian", {"laplacian": "combinatorial"}),
                ("signed-laplacian", {"self_loop": False, "laplacian": "combinatorial"}),
                ("signed-laplacian", {"laplacian": "degree-equalised"}),
                ("signed-laplacian", {"self_loop": False, "laplacian": "degree-equalised"})]
    return [(name, {}) for name in names] + variants


@pytest.mark.parametrize("rounding", task_module.ROUNDING_RULES)
@pytest.mark.parametrize("name, params", _registered_methods(), ids=lambda v: v if isinstance(v, str) else
                         ",".join(f"{k}={w}" for k, w in v.items()) or "defaults")
def test_every_registered_method_recovers_two_separated_blocks(name, params, rounding):
    # Every registered method of the task (and both CC variants and Laplacians of CC/CC++),
    # under each rounding rule, finds the planted cut of an instance where it is unambiguous.
    from harness.registry import default_registry

    data = two_cliques_with_cannot_links_across()
    method = default_registry().load("methods", name)(rounding=rounding, **params)
    scores = TASK.evaluate(method, data, Context(seed=0, dataset="two-cliques"))
    assert set(scores) == set(TASK.metrics)
    assert scores["ari"] == 1.0
    assert scores["cut_ratio"] == 1.0 / 11.0   # one bridge of G over the 11 edges of H, all crossing
