"""What the paper's designs are compared against: fixed uniform dosages, random dosages, and a regular two-level
fractional factorial of resolution ≥ max(V, 2k + 1) (the classical design: orthogonal for the k-way model when the
round is a whole number of its replicates)."""
from __future__ import annotations

import itertools
from functools import lru_cache

import numpy as np

from harness.tasks.design.factorial import DesignProblem

SEARCH_NODES = 200_000  # the generator search's budget per number of base factors before it tries one more


def _letters(word: int) -> str:
    return "".join(chr(ord("A") + i) for i in range(word.bit_length()) if word >> i & 1)


@lru_cache(maxsize=None)
def generators(p: int, resolution: int) -> tuple[int, tuple[int, ...]]:
    """The base b and the p − b added columns of the smallest regular 2^{p−(p−b)} fraction of resolution ≥
    ``resolution`` this search finds, each added column a generator word over the b base factors (bit i = factor i).

    A regular fraction is p columns c_1 … c_p of F_2^b (its runs u ∈ F_2^b, x_i = (−1)^{u·c_i}); the base factors are
    the unit vectors and an added factor of word w has the defining word w + itself, of length |w| + 1. The
    resolution is the shortest defining word, i.e. the fewest columns that sum to 0; it is ≥ R when no R − 1 or
    fewer columns do, so an added column must have weight ≥ R − 1 and differ from every sum of ≤ R − 2 columns
    chosen before it. For each b from the smallest that can hold p distinct columns, a depth-first search takes
    candidate words by weight, then by their factors (ABCD before ABCE), and returns the first complete set; b = p
    is the full factorial."""
    if p < 1 or resolution < 1:
        raise ValueError(f"fractional-factorial: p = {p}, resolution = {resolution}; expected positive integers")
    base = max(1, (p).bit_length())  # 2^b − 1 ≥ p distinct nonzero columns
    while base < p:
        found = _search(p, base, resolution)
        if found is not None:
            return base, found
        base += 1
    return p, ()


def _search(p: int, base: int, resolution: int) -> tuple[int, ...] | None:
    need = p - base
    candidates = sorted((w for w in range(1, 1 << base) if bin(w).count("1") >= resolution - 1),
                        key=lambda w: (bin(w).count("1"), [i for i in range(base) if w >> i & 1]))
    depth = resolution - 2  # an added column must differ from every sum of ≤ depth chosen columns

    def sums(columns: list[int]) -> set[int]:
        out = {0}
        for size in range(1, depth + 1):
            for subset in itertools.combinations(columns, size):
                acc = 0
                for c in subset:
                    acc ^= c
                out.add(acc)
        return out

    nodes = 0

    def extend(chosen: list[int], start: int) -> list[int] | None:
        nonlocal nodes
        if len(chosen) == base + need:
            return chosen
        forbidden = sums(chosen)
        for j in range(start, len(candidates)):
            nodes += 1
            if nodes > SEARCH_NODES:
                return None
            w = candidates[j]
            if w not in forbidden:
                found = extend(chosen + [w], j + 1)
                if found is not None:
                    return found
        return None

    found = extend([1 << i for i in range(base)], 0)
    return None if found is None else tuple(found[base:])


def fraction(p: int, k: int = 1, resolution: int | None = None) -> np.ndarray:
    """The runs (2^b, p) in ±1 of the fraction ``generators`` finds for resolution max(V, 2k + 1) (or the one
    given): every parity of order ≤ k is orthogonal to every other over its runs when the resolution is ≥ 2k + 1."""
    resolution = max(5, 2 * k + 1) if resolution is None else resolution
    base, words = generators(p, resolution)
    full = np.array(list(itertools.product((-1.0, 1.0), repeat=base)))[:, ::-1]  # column i: factor i
    added = [full[:, [i for i in range(base) if w >> i & 1]].prod(axis=1) for w in words]
    return np.column_stack([full, *added]) if added else full


class UniformDosage:
    """Every treatment at ``dosage`` in every round."""

    def __init__(self, dosage: float = 0.5):
        self.dosage = dosage

    def design(self, problem: DesignProblem, past: np.ndarray) -> np.ndarray:
        return np.full(problem.p, float(self.dosage))


class PerturbedDosage:
    """Every treatment ``distance`` away from the centre (L/p under a supply limit, else ½), half of them up and
    half down (one at the centre when p is odd), the signs drawn each round: the total dosage is the centre's, the
    ℓ∞ distance from it is ``distance`` (§6's dosages at a given distance, Sim 1 and the supply experiment)."""

    def __init__(self, distance: float = 0.1):
        self.distance = distance

    def design(self, problem: DesignProblem, past: np.ndarray) -> np.ndarray:
        p = problem.p
        centre = 0.5 if problem.supply is None else min(0.5, problem.supply / p)
        if not 0 <= self.distance <= centre:
            raise ValueError(f"perturbed-dosage: distance = {self.distance}; expected 0 … {centre:g} (the centre)")
        signs = np.array([1.0] * (p // 2) + [-1.0] * (p // 2) + [0.0] * (p % 2))
        return centre + self.distance * problem.rng.permutation(signs)


class RandomDosage:
    """A fresh d ~ U(0, 1)^p each round, from the method's stream."""

    def design(self, problem: DesignProblem, past: np.ndarray) -> np.ndarray:
        return problem.rng.random(problem.p)


class FractionalFactorial:
    """The fraction's runs (resolution max(V, 2k + 1), or ``resolution``), repeated to fill the round's n units; when
    n is not a multiple of the run count, the units left over get runs drawn without replacement from one more
    replicate (the method's stream, each round), and the round is no longer orthogonal; with fewer units than
    runs, every unit's run is so drawn."""

    def __init__(self, resolution: int | None = None):
        self.resolution = resolution

    def design(self, problem: DesignProblem, past: np.ndarray) -> np.ndarray:
        runs = fraction(problem.p, problem.k, self.resolution)
        whole, left = divmod(problem.units, len(runs))
        blocks = [np.tile(runs, (whole, 1))]
        if left:
            blocks.append(runs[problem.rng.choice(len(runs), size=left, replace=False)])
        return np.concatenate(blocks)
