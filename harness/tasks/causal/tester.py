"""The one conditional-independence tester every method of ``causal.pairwise`` asks: cached and counted.

A query X ⊥ Y | S is counted once per tester (the cache key is the unordered pair and the set), so counts are
comparable across methods: a method pays for each distinct test it runs, never for asking twice. Testers on the same
data may share a ``memo`` of p-values: a query another tester already computed is then read from it instead of
being computed again, and still counted by this tester (the memo saves time and changes no count and no answer).
"""
from __future__ import annotations

import math

import numpy as np


class CITester:
    """``independent(a, b, cond)`` and ``pvalue(a, b, cond)`` over observed variables 0 … p−1.

    kind ``fisherz``: Fisher's z on the partial correlation, computed from the sample correlation matrix, with n
    samples, at level ``alpha``; kind ``gsq``: causal-learn's G² test on ``data`` (n × p, discrete states coded
    0, 1, …), whose degrees of freedom drop the empty rows and columns of each stratum; kind ``oracle``:
    d-separation in the true DAG with latents (p-value 1 or 0).
    """

    KINDS = ("fisherz", "gsq", "oracle")

    def __init__(self, kind: str, p: int, alpha: float, corr: np.ndarray | None = None, n: int = 0, dag=None,
                 data: np.ndarray | None = None, memo: dict | None = None):
        if kind not in self.KINDS:
            raise ValueError(f"CITester: unknown kind {kind!r}; expected one of {self.KINDS}")
        if kind == "gsq" and (data is None or data.shape[1] != p):
            raise ValueError(f"CITester: kind 'gsq' needs data with {p} columns")
        self.kind, self.p, self.alpha = kind, p, alpha
        self.corr, self.n, self.dag, self.data = corr, n, dag, data
        self.count = 0
        self.memo = memo  # p-values shared with other testers on the same data (uncounted there), or None
        self._cache: dict[tuple, float] = {}
        self._gsq = None  # causal-learn's test object, built on first use; one per tester, so no cache is shared

    def fresh(self) -> "CITester":
        """The same test on the same data, with an empty cache and a zero count."""
        return CITester(self.kind, self.p, self.alpha, self.corr, self.n, self.dag, self.data, self.memo)

    def pvalue(self, a: int, b: int, cond=()) -> float:
        a, b = int(a), int(b)
        cond = frozenset(int(c) for c in cond)
        if a == b or a in cond or b in cond:
            raise ValueError(f"CITester: invalid query {a} ⊥ {b} | {sorted(cond)}")
        key = (min(a, b), max(a, b), cond)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        self.count += 1
        if self.memo is not None and key in self.memo:
            value = self.memo[key]
        elif self.kind == "oracle":
            value = self._oracle(a, b, cond)
        elif self.kind == "gsq":
            value = self._g_squared(a, b, cond)
        else:
            value = fisher_z_pvalue(self.corr, self.n, a, b, cond)
        if self.memo is not None:
            self.memo[key] = value
        self._cache[key] = value
        return value

    def independent(self, a: int, b: int, cond=()) -> bool:
        return self.pvalue(a, b, cond) > self.alpha

    def _g_squared(self, a: int, b: int, cond: frozenset) -> float:
        if self._gsq is None:
            from causallearn.utils.cit import CIT

            self._gsq = CIT(self.data, "gsq")
        return float(self._gsq(a, b, sorted(cond)))

    def _oracle(self, a: int, b: int, cond: frozenset) -> float:
        import networkx as nx

        return float(nx.is_d_separator(self.dag, {a}, {b}, set(cond)))


def fisher_z_pvalue(corr: np.ndarray, n: int, a: int, b: int, cond) -> float:
    """Two-sided p-value of Fisher's z for ρ(a, b | cond): z = ½ ln((1 + r)/(1 − r)) · √(n − |cond| − 3)."""
    idx = [a, b, *sorted(cond)]
    sub = corr[np.ix_(idx, idx)]
    try:
        prec = np.linalg.inv(sub)
    except np.linalg.LinAlgError:
        prec = np.linalg.pinv(sub)
    r = -prec[0, 1] / math.sqrt(abs(prec[0, 0] * prec[1, 1]))
    r = min(max(r, -1 + 1e-12), 1 - 1e-12)
    dof = n - len(idx) + 2 - 3
    if dof <= 0:
        raise ValueError(f"Fisher z with {len(idx) - 2} conditioning variables needs more than {len(idx) + 1} samples; got {n}")
    z = 0.5 * math.log((1 + r) / (1 - r)) * math.sqrt(dof)
    return float(math.erfc(abs(z) / math.sqrt(2.0)))
