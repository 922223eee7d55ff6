"""Partial ancestral graphs (PAGs) as mark matrices, and the relation of a pair read off a PAG.

Convention (the paper's code's): ``mark[i, j]`` is the mark *at j* on the edge between i and j, one of
:data:`NONE` (no edge), :data:`CIRCLE`, :data:`ARROW`, :data:`TAIL`. So i → j is ``mark[i, j] = ARROW,
mark[j, i] = TAIL``; i ↔ j is ARROW both ways; i ∘→ j is ``mark[i, j] = ARROW, mark[j, i] = CIRCLE``.

Relations (Li et al., ICML 2025, §3): :data:`NON_ANCESTOR` (X is an ancestor of Y in no MAG of the PAG),
:data:`EXPLICIT` (a directed path X → … → Y in the PAG, common to every MAG), :data:`IMPLICIT` (an ancestor in every
MAG, with no directed path in the PAG), :data:`POSSIBLE` (none of these).

Criteria used for the ground truth and for the global baselines:

* explicit ⇔ a directed path from X to Y in the PAG (Zhang 2006);
* non-ancestor ⇔ no possibly directed path from X to Y, a path on which every edge Vᵢ *–* Vᵢ₊₁ has no arrowhead at
  Vᵢ and no tail at Vᵢ₊₁ (Zhang 2006);
* implicit ⇔ no directed path, but two uncovered possibly directed paths X, U, …, Y and X, W, …, Y with U and W
  non-adjacent (Roumpelaki et al. 2016, as the paper note states it; its exact statement is unverified there). An
  uncovered path has Vᵢ₋₁ and Vᵢ₊₁ non-adjacent for every inner Vᵢ. The tests check these labels against the true
  DAG's ancestry (explicit and implicit ancestors are ancestors, non-ancestors are not).
"""
from __future__ import annotations

from contextlib import contextmanager
from itertools import combinations

import numpy as np

NONE, CIRCLE, ARROW, TAIL = 0, 1, 2, 3
NON_ANCESTOR, POSSIBLE, EXPLICIT, IMPLICIT = 0, 1, 2, 3
RELATIONS = ("non-ancestor", "possible", "explicit", "implicit")


def adjacent(mark: np.ndarray, i: int, j: int) -> bool:
    return mark[i, j] != NONE


def neighbours(mark: np.ndarray, i: int) -> list[int]:
    return [int(j) for j in np.flatnonzero(mark[i] != NONE)]


def directed_step(mark: np.ndarray, i: int, j: int) -> bool:
    """i → j."""
    return mark[i, j] == ARROW and mark[j, i] == TAIL


def possibly_directed_step(mark: np.ndarray, i: int, j: int) -> bool:
    """The edge i *–* j is possibly directed from i to j: no arrowhead at i, no tail at j."""
    return mark[i, j] in (CIRCLE, ARROW) and mark[j, i] in (CIRCLE, TAIL)


def _reaches(mark: np.ndarray, x: int, y: int, step) -> bool:
    seen, stack = {x}, [x]
    while stack:
        v = stack.pop()
        for w in neighbours(mark, v):
            if w not in seen and step(mark, v, w):
                if w == y:
                    return True
                seen.add(w)
                stack.append(w)
    return False


def has_directed_path(mark: np.ndarray, x: int, y: int) -> bool:
    return _reaches(mark, x, y, directed_step)


def has_possibly_directed_path(mark: np.ndarray, x: int, y: int) -> bool:
    """A possibly directed walk exists iff a possibly directed path does (cut the walk's cycles)."""
    return _reaches(mark, x, y, possibly_directed_step)


def uncovered_starts(mark: np.ndarray, x: int, y: int, budget: int = 200_000) -> set[int]:
    """The U adjacent to X that start an uncovered possibly directed path X, U, …, Y (depth-first over simple paths;
    ``budget`` bounds the number of extensions, and running out of it raises, never guesses)."""
    starts: set[int] = set()
    work = [0]

    def extend(path: list[int], on: set[int]) -> bool:
        work[0] += 1
        if work[0] > budget:
            raise RuntimeError(f"uncovered-path search from {x} to {y} exceeded {budget} steps")
        v = path[-1]
        for w in neighbours(mark, v):
            if w in on or not possibly_directed_step(mark, v, w):
                continue
            if len(path) >= 2 and adjacent(mark, path[-2], w):
                continue  # covered at v
            if w == y:
                return True
            on.add(w)
            path.append(w)
            found = extend(path, on)
            path.pop()
            on.discard(w)
            if found:
                return True
        return False

    for u in neighbours(mark, x):
        if not possibly_directed_step(mark, x, u):
            continue
        if u == y:
            starts.add(u)
            continue
        if extend([x, u], {x, u}):
            starts.add(u)
    return starts


def pag_relation(mark: np.ndarray, x: int, y: int) -> int:
    """The relation of X to Y in the PAG ``mark`` by the criteria in the module's docstring."""
    if x == y:
        raise ValueError("pag_relation: x and y are the same vertex")
    if has_directed_path(mark, x, y):
        return EXPLICIT
    if not has_possibly_directed_path(mark, x, y):
        return NON_ANCESTOR
    starts = uncovered_starts(mark, x, y)
    if any(not adjacent(mark, u, w) for u, w in combinations(sorted(starts), 2)):
        return IMPLICIT
    return POSSIBLE


def from_causallearn(graph: np.ndarray) -> np.ndarray:
    """causal-learn's ``G.graph`` (entry [i, j] is the mark at i: −1 tail, 1 arrow, 2 circle; [i, j] = −1 and
    [j, i] = 1 for i → j) to this module's convention."""
    g = np.asarray(graph)
    code = {0: NONE, -1: TAIL, 1: ARROW, 2: CIRCLE}
    p = g.shape[0]
    mark = np.zeros((p, p), dtype=np.int8)
    for i in range(p):
        for j in range(p):
            if i != j and g[i, j] != 0:
                mark[j, i] = code[int(g[i, j])]  # mark at i lives in mark[j, i]
    return mark


def _stable_hash(node) -> int:
    """A hash of a causal-learn node that is the same in every process: the index of a default name ``X<i>``, else
    the CRC-32 of the name."""
    name = node.get_name()
    if name[:1] == "X" and name[1:].isdigit():
        return int(name[1:])
    import zlib

    return zlib.crc32(name.encode())


@contextmanager
def stable_node_hash():
    """causal-learn's graph nodes hashed the same in every process, for the duration of the block.

    ``GraphNode.__hash__`` is ``hash(self.name)``, a string's hash, which Python salts per process
    (``PYTHONHASHSEED``), so the order in which a set of nodes is iterated changes from run to run. FCI's
    possible-d-sep stage depends on that order: ``getPossibleDsep`` walks a breadth-first search from
    ``set(graph.get_adjacent_nodes(x))`` and decides membership by ``existOnePathWithPossibleParents`` over the
    ``previous`` sets that the walk has filled so far, so the set it returns (not only its order), hence the CI
    tests that FCI runs, their count and sometimes the PAG, changed with the hash seed (e.g. random-20, seed 1:
    1341 or 1353 tests). Hashing a node by its column index (its default name is ``X<i>``) makes every set's
    order, and so FCI's run, the same in every process; the equality of nodes (by name) is unchanged."""
    from causallearn.graph.GraphNode import GraphNode

    saved = GraphNode.__dict__["__hash__"]
    GraphNode.__hash__ = _stable_hash
    try:
        yield
    finally:
        GraphNode.__hash__ = saved


def fci_without_selection(data: np.ndarray, test: str, **kwargs):
    """causal-learn's ``fci`` with its selection-bias rules R5–R7 switched off, returning ``(graph, edges)``.

    causal-learn (0.1.4.8) always applies Zhang's R5–R7, which assume selection variables may exist; this task's
    models have latents but no selection, where the complete rules are R1–R4 and R8–R10 (Zhang 2008). With the
    d-separation oracle its R5 still fired on some instances (on the CHILD structure, seed 1, it wrote tail–tail
    edges, a claim of selection bias, into the ground truth), so both the ground truth and the FCI baselines run
    without R5–R7. The rules are module-level functions of causal-learn's FCI module; they are swapped for the
    call's duration and restored after it, and the graph's nodes are hashed the same in every process
    (:func:`stable_node_hash`), so that the run does not depend on ``PYTHONHASHSEED``.
    """
    import contextlib
    import io
    import warnings

    import causallearn.search.ConstraintBased.FCI as fci_module

    def unchanged(graph, change_flag, verbose=False):
        return change_flag

    saved = {name: getattr(fci_module, name) for name in ("ruleR5", "ruleR6", "ruleR7")}
    try:
        for name in saved:
            setattr(fci_module, name, unchanged)
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), stable_node_hash():
            warnings.simplefilter("ignore")
            return fci_module.fci(data, test, verbose=False, show_progress=False, **kwargs)
    finally:
        for name, rule in saved.items():
            setattr(fci_module, name, rule)
