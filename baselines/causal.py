"""Baselines for ``causal.pairwise``: global FCI and global PC (causal-learn) with the PAG criteria, a local
MB-based FCI, and the trivial answers (always non-ancestor, always possible, the majority class). Every one asks the task's tester (registered with causal-learn as a custom CI test), so its CI tests
are counted like LocICR's. RFCI is not in causal-learn (0.1.4.8); :func:`run_rfci` implements it here.
"""
from __future__ import annotations

import warnings
from typing import Sequence

import numpy as np

_NAME = "harness_counted"


def _register():
    from causallearn.utils.cit import CIT_Base, register_ci_test

    class Counted(CIT_Base):
        """causal-learn's side of the task's tester: its p-value, no cache of its own."""

        def __init__(self, data, tester=None, columns=None, **kwargs):
            super().__init__(data, **kwargs)
            self.tester, self.columns = tester, columns
            self.method = _NAME

        def __call__(self, X, Y, condition_set=None):
            cols = self.columns
            cond = [] if condition_set is None else list(condition_set)
            return self.tester.pvalue(cols[X], cols[Y], [cols[c] for c in cond])

    register_ci_test(_NAME, Counted)


def run_fci(tester, columns: Sequence[int], depth: int) -> np.ndarray:
    """causal-learn's FCI over ``columns`` of the observed variables, without the selection-bias rules R5–R7 (the
    task's models have none); the PAG in harness marks (local indices)."""
    from harness.tasks.causal.pag import fci_without_selection, from_causallearn

    _register()
    graph, _ = fci_without_selection(np.zeros((1, len(columns))), _NAME, alpha=tester.alpha, depth=depth,
                                     tester=tester, columns=list(columns))
    return from_causallearn(graph.graph)


def run_pc(tester, p: int, depth: int) -> np.ndarray:
    """causal-learn's PC (stable, unshielded colliders by the separating sets); undirected edges read as ∘–∘."""
    from causallearn.search.ConstraintBased.PC import pc

    from harness.tasks.causal.pag import CIRCLE, TAIL, from_causallearn, stable_node_hash

    _register()
    import contextlib
    import io

    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), stable_node_hash():
        warnings.simplefilter("ignore")
        cg = pc(np.zeros((1, p)), tester.alpha, _NAME, stable=True, uc_rule=0, depth=depth, verbose=False,
                show_progress=False, tester=tester, columns=list(range(p)))
    mark = from_causallearn(cg.G.graph)
    both = (mark == TAIL) & (mark.T == TAIL)
    mark[both] = CIRCLE
    return mark


class GlobalFCI:
    """FCI over all observed variables (skeleton, possible-d-sep, R1–R10), then the PAG criteria per pair."""

    scope = "global"

    def identify(self, problem, tester, pairs):
        from harness.tasks.causal.pag import pag_relation

        mark = run_fci(tester, range(problem.p), problem.max_k)
        return [pag_relation(mark, x, y) for x, y in pairs]


class GlobalPC:
    """PC over all observed variables (assumes no latents), CPDAG read as a PAG, then the same criteria."""

    scope = "global"

    def identify(self, problem, tester, pairs):
        from harness.tasks.causal.pag import pag_relation

        mark = run_pc(tester, problem.p, problem.max_k)
        return [pag_relation(mark, x, y) for x, y in pairs]


class LocalMBFCI:
    """A naive local method: MB(X) by total conditioning (or IAMB, as LocICR finds it where the problem says
    ``blanket: iamb``), then FCI over MB(X) ∪ {X, Y} and the criteria there."""

    scope = "local"

    def identify(self, problem, tester, pairs):
        from harness.tasks.causal.blanket import markov_blanket
        from harness.tasks.causal.pag import pag_relation

        out, self.blankets = [], {}
        for x, y in pairs:
            mb, _ = markov_blanket(tester, x, problem.p, getattr(problem, "blanket", "total"))
            self.blankets[x] = frozenset(mb)
            columns = sorted(set(mb) | {x, y})
            mark = run_fci(tester, columns, problem.max_k)
            out.append(pag_relation(mark, columns.index(x), columns.index(y)))
        return out


# --------------------------------------------------------------------------- trivial answers (no CI test)


class AlwaysNonAncestor:
    """The trivial answer "X is an invariant non-ancestor of Y" for every pair."""

    scope = "trivial"

    def answer(self, problem, pairs, held_out):
        from harness.tasks.causal.pag import NON_ANCESTOR

        return [NON_ANCESTOR] * len(pairs)


class AlwaysPossible:
    """The trivial answer "X is a possible ancestor of Y" for every pair."""

    scope = "trivial"

    def answer(self, problem, pairs, held_out):
        from harness.tasks.causal.pag import POSSIBLE

        return [POSSIBLE] * len(pairs)


class MajorityClass:
    """The majority class of the dataset: the relation most frequent among the true labels of the pairs of
    independent held-out instances of the same generator (``held_out()``; the lower code on a tie), for every pair.
    It never sees this instance's labels."""

    scope = "trivial"

    def answer(self, problem, pairs, held_out):
        labels = np.asarray(held_out(), dtype=int)
        if labels.size == 0:
            raise ValueError("MajorityClass: the held-out instances have no labelled pairs")
        return [int(np.argmax(np.bincount(labels, minlength=4)))] * len(pairs)


def _minimal_separator(tester, a: int, b: int, candidates) -> frozenset | None:
    """The first subset of ``candidates``, smallest first, that makes a ⊥ b; None if none does."""
    from itertools import combinations

    pool = sorted(candidates)
    for size in range(len(pool) + 1):
        for cond in combinations(pool, size):
            if tester.independent(a, b, cond):
                return frozenset(cond)
    return None


def run_rfci(tester, p: int, depth: int) -> np.ndarray:
    """RFCI (Colombo, Maathuis, Kalisch & Richardson 2012, Algorithms 4.1–4.5) on observed variables 0 … p−1, asking
    ``tester``; the RFCI-PAG in harness marks (mark[i, j] is the mark at j).

    1. Skeleton: PC's stable adjacency search, conditioning sets drawn from the current adjacencies, size ≤ ``depth``
       (all sizes when negative); no possible-d-sep stage (that is what RFCI saves against FCI).
    2. Unshielded triples i – j – k (Lemma 3.1): with S the separating set of i and k, test i ⊥ j | S \\ {j} and
       j ⊥ k | S \\ {j}. Both dependent: the triple is kept, a collider iff j ∉ S. Otherwise the independent edge is
       removed with a minimal separating set (a subset of S \\ {j}), and the triples it unshields join the list.
    3. The kept colliders are oriented, then FCI's rules for no selection bias (R1–R4, R8–R10) run, R4 with RFCI's
       check (Lemma 3.2): on a shortest discriminating path ⟨θ, …, a, b, c⟩, every two successive vertices and every
       collider with c are tested given Sepset(θ, c) minus the pair; an independence removes that edge (with a
       minimal separating set) and the rule does not orient; else R4 orients as in FCI.
    """
    from itertools import combinations

    from components.pag_rules import ARROW, CIRCLE, NONE, orient

    adj = {v: set(range(p)) - {v} for v in range(p)}
    sepset: dict[frozenset, frozenset] = {}

    def remove(a: int, b: int, cond) -> None:
        adj[a].discard(b), adj[b].discard(a)
        sepset[frozenset((a, b))] = frozenset(cond)

    size = 0
    while depth < 0 or size <= depth:
        frozen = {v: set(adj[v]) for v in range(p)}  # stable: conditioning sets from the level's start
        going = False
        for a in range(p):
            for b in sorted(frozen[a]):
                if b not in adj[a]:
                    continue
                others = frozen[a] - {b}
                if len(others) < size:
                    continue
                going = True
                for cond in combinations(sorted(others), size):
                    if tester.independent(a, b, cond):
                        remove(a, b, cond)
                        break
        if not going:
            break
        size += 1

    def unshielded(a: int, b: int) -> list[tuple[int, int, int]]:
        return [(min(a, b), j, max(a, b)) for j in sorted(adj[a] & adj[b])]

    queue = [t for i, k in combinations(range(p), 2) if k not in adj[i] for t in unshielded(i, k)]
    colliders = set()
    while queue:
        i, j, k = queue.pop(0)
        if k in adj[i] or j not in adj[i] or j not in adj[k]:
            continue  # no longer an unshielded triple
        s = sepset[frozenset((i, k))] - {j}
        apart = [(u, v) for u, v in ((i, j), (j, k)) if tester.independent(u, v, s)]
        if not apart:
            if j not in sepset[frozenset((i, k))]:
                colliders.add((i, j, k))
            continue
        for u, v in apart:
            remove(u, v, _minimal_separator(tester, u, v, s))
            queue.extend(unshielded(u, v))

    mark = np.zeros((p, p), dtype=np.int8)
    for a in range(p):
        for b in adj[a]:
            mark[a, b] = CIRCLE
    for i, j, k in sorted(colliders):
        if j in adj[i] and j in adj[k] and k not in adj[i]:
            mark[i, j] = mark[k, j] = ARROW

    def check(path) -> bool:
        theta, c = path[0], path[-1]
        s = sepset[frozenset((theta, c))]
        pairs = list(zip(path[:-1], path[1:])) + [(v, c) for v in path[1:-2]]
        for u, v in pairs:
            rest = s - {u, v}
            if tester.independent(u, v, rest):
                remove(u, v, _minimal_separator(tester, u, v, rest))
                mark[u, v] = mark[v, u] = NONE
                return False
        return True

    orient(mark, sepset, check)
    return mark


class GlobalRFCI:
    """RFCI over all observed variables (our implementation of Colombo et al. 2012), then the PAG criteria."""

    scope = "global"

    def identify(self, problem, tester, pairs):
        from harness.tasks.causal.pag import pag_relation

        mark = run_rfci(tester, problem.p, problem.max_k)
        return [pag_relation(mark, x, y) for x, y in pairs]
