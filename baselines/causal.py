"""Baselines for ``causal.pairwise``: global FCI and global PC (causal-learn) with the PAG criteria, and a local
MB-based FCI. Every one asks the task's tester (registered with causal-learn as a custom CI test), so its CI tests
are counted like LocICR's. RFCI is not in causal-learn (0.1.4.8) and is left out.
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

    from harness.tasks.causal.pag import CIRCLE, TAIL, from_causallearn

    _register()
    import contextlib
    import io

    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
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
    """A naive local method: MB(X) by total conditioning, then FCI over MB(X) ∪ {X, Y} and the criteria there."""

    scope = "local"

    def identify(self, problem, tester, pairs):
        from harness.tasks.causal.pag import pag_relation

        out = []
        for x, y in pairs:
            rest = set(range(problem.p))
            mb = [w for w in range(problem.p) if w != x and not tester.independent(x, w, rest - {x, w})]
            columns = sorted(set(mb) | {x, y})
            mark = run_fci(tester, columns, problem.max_k)
            out.append(pag_relation(mark, columns.index(x), columns.index(y)))
        return out
