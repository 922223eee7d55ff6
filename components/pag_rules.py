"""FCI's orientation rules for PAGs without selection bias (Zhang 2008: R1–R4, R8–R10), on mark matrices.

Shared by LocICR (which orients a partial, local PAG) and the RFCI baseline. ``mark[i, j]`` is the mark at j on the
edge between i and j: NONE (no edge), CIRCLE, ARROW or TAIL. ``separated`` maps a frozenset {a, c} of vertices known
to be non-adjacent to a separating set; a rule that needs two vertices non-adjacent fires only for such pairs, so the
rules are sound on a partial graph where a missing edge may only be unexplored.
"""
from __future__ import annotations

from itertools import combinations

import numpy as np

NONE, CIRCLE, ARROW, TAIL = 0, 1, 2, 3


def orient_r1_r3(mark: np.ndarray, separated: dict) -> bool:
    """FCI's R1–R3 on ``mark`` (mark[i, j] is the mark at j) until nothing changes; ``separated`` maps a frozenset
    {a, c} of known non-adjacent vertices to a separating set. Returns whether anything changed."""
    changed_any = False
    p = mark.shape[0]
    changed = True
    while changed:
        changed = False
        for b in range(p):
            nb = np.flatnonzero(mark[b] != NONE)
            for a in nb:
                if mark[a, b] != ARROW:
                    continue
                for c in nb:
                    if c == a or frozenset((int(a), int(c))) not in separated:
                        continue
                    # R1: a *→ b ∘–* c, a and c non-adjacent → b → c
                    if mark[c, b] == CIRCLE:
                        mark[c, b] = TAIL
                        mark[b, c] = ARROW
                        changed = True
        for a in range(p):
            for c in np.flatnonzero(mark[a] == CIRCLE):
                # R2: a → b *→ c or a *→ b → c, and a *–∘ c → a *→ c
                for b in np.flatnonzero(mark[a] != NONE):
                    if b == c or mark[b, c] == NONE:
                        continue
                    if (mark[a, b] == ARROW and mark[b, a] == TAIL and mark[b, c] == ARROW) or \
                       (mark[a, b] == ARROW and mark[b, c] == ARROW and mark[c, b] == TAIL):
                        mark[a, c] = ARROW
                        changed = True
                        break
        for b in range(p):
            into = [int(v) for v in np.flatnonzero(mark[:, b] == ARROW)]
            for a, c in combinations(into, 2):
                if frozenset((a, c)) not in separated:
                    continue
                # R3: a *→ b ←* c, a *–∘ d ∘–* c, a, c non-adjacent, d *–∘ b → d *→ b
                for d in np.flatnonzero(mark[:, b] == CIRCLE):
                    if d in (a, c) or mark[d, b] == NONE:
                        continue
                    if mark[a, d] == CIRCLE and mark[c, d] == CIRCLE:
                        mark[d, b] = ARROW
                        changed = True
        changed_any |= changed
    return changed_any


def _parent(mark: np.ndarray, a: int, b: int) -> bool:
    """a → b."""
    return mark[a, b] == ARROW and mark[b, a] == TAIL


def orient_r4(mark: np.ndarray, separated: dict, check=None) -> bool:
    """FCI's R4 (discriminating paths): for θ *→ … ↔ a ←* b ∘–* c with every vertex between θ and b a collider on
    the path and a parent of c, and θ, c known apart: b → c if b is in the separating set of {θ, c}, else
    a ↔ b ↔ c. Only pairs recorded in ``separated`` count as non-adjacent (a local PAG is partial). ``check``, if
    given, is called with the path (θ, …, a, b, c) first and may veto the orientation by returning False (RFCI
    tests the path's edges there and may remove one)."""
    changed = False
    p = mark.shape[0]
    for c in range(p):
        for b in np.flatnonzero(mark[c] != NONE):
            b = int(b)
            if mark[c, b] != CIRCLE:  # the mark at b on b–c
                continue
            for a in np.flatnonzero(mark[b] != NONE):
                a = int(a)
                if a == c or mark[b, a] != ARROW or not _parent(mark, a, c):
                    continue
                path = _discriminating_path(mark, separated, a, b, c)
                if path is None:
                    continue
                if check is not None and not check(path):
                    changed = True
                    break
                theta = path[0]
                if b in separated[frozenset((theta, c))]:
                    mark[b, c], mark[c, b] = ARROW, TAIL
                else:
                    mark[a, b] = mark[c, b] = mark[b, c] = ARROW
                changed = True
                break
    return changed


def _discriminating_path(mark, separated, a: int, b: int, c: int):
    """The shortest discriminating path (θ, …, a, b, c) for b (breadth first from a), or None."""
    queue = [(a, (b, c, a))]
    seen = {a, b, c}
    while queue:
        v, on = queue.pop(0)
        for w in np.flatnonzero(mark[:, v] == ARROW):  # w *→ v
            w = int(w)
            if w in on or w in seen or mark[w, v] == NONE:
                continue
            if mark[w, c] == NONE:
                if frozenset((w, c)) in separated:
                    return (w,) + tuple(reversed(on[2:])) + (b, c)
                continue
            if _parent(mark, w, c) and mark[v, w] == ARROW:  # w ↔ v: a collider on the path, and a parent of c
                seen.add(w)
                queue.append((w, on + (w,)))
    return None


def _possibly_directed(mark: np.ndarray, a: int, b: int) -> bool:
    """a *–* b can be directed a → b: no arrowhead at a, no tail at b."""
    return mark[b, a] in (CIRCLE, TAIL) and mark[a, b] in (CIRCLE, ARROW)


def uncovered_pd_starts(mark: np.ndarray, separated: dict, a: int, end: int, avoid=(), budget: int = 100_000) -> set[int]:
    """The μ adjacent to a that start an uncovered possibly directed path a, μ, …, end avoiding ``avoid`` (each
    inner vertex's two path neighbours known apart, i.e. in ``separated``). ``budget`` bounds the search; running
    out of it raises."""
    work = [0]
    starts: set[int] = set()

    def extend(path: list[int]) -> bool:
        work[0] += 1
        if work[0] > budget:
            raise RuntimeError(f"uncovered-path search from {a} to {end} exceeded {budget} steps")
        v = path[-1]
        for w in np.flatnonzero(mark[v] != NONE):
            w = int(w)
            if w in path or w in avoid or not _possibly_directed(mark, v, w):
                continue
            if frozenset((path[-2], w)) not in separated:
                continue  # covered at v, or not known to be uncovered
            if w == end or extend(path + [w]):
                return True
        return False

    for mu in np.flatnonzero(mark[a] != NONE):
        mu = int(mu)
        if mu in avoid or not _possibly_directed(mark, a, mu):
            continue
        if mu == end or extend([a, mu]):
            starts.add(mu)
    return starts


def orient_r8_r10(mark: np.ndarray, separated: dict) -> bool:
    """FCI's tail rules for a ∘→ c (Zhang 2008): R8 (a → b → c or a –∘ b → c), R9 (an uncovered possibly directed
    path a, b, θ, …, c with b, c known apart), R10 (b → c ← θ and uncovered possibly directed paths from a to b and
    to θ whose first vertices differ and are known apart): each makes it a → c."""
    changed = False
    p = mark.shape[0]
    for a in range(p):
        for c in np.flatnonzero(mark[a] == ARROW):
            c = int(c)
            if mark[c, a] != CIRCLE:
                continue
            done = False
            for b in np.flatnonzero(mark[a] != NONE):  # R8
                b = int(b)
                if b != c and mark[b, a] == TAIL and mark[a, b] in (ARROW, CIRCLE) and _parent(mark, b, c):
                    done = True
                    break
            if not done:  # R9
                starts = uncovered_pd_starts(mark, separated, a, c)
                done = any(b != c and frozenset((b, c)) in separated for b in starts)
            if not done:  # R10
                parents = [int(v) for v in np.flatnonzero(mark[:, c] == ARROW) if v != a and _parent(mark, int(v), c)]
                for b, theta in combinations(parents, 2):
                    s1 = uncovered_pd_starts(mark, separated, a, b, avoid=(c,))
                    s2 = uncovered_pd_starts(mark, separated, a, theta, avoid=(c,))
                    if any(mu != om and frozenset((mu, om)) in separated for mu in s1 for om in s2):
                        done = True
                        break
            if done:
                mark[c, a] = TAIL
                changed = True
    return changed


def orient(mark: np.ndarray, separated: dict, check=None) -> bool:
    """FCI's orientation rules without selection bias (R1–R4, R8–R10) on ``mark`` until nothing changes; ``check``
    is R4's hook (see :func:`orient_r4`)."""
    changed_any = False
    while True:
        changed = orient_r1_r3(mark, separated)
        changed |= orient_r4(mark, separated, check)
        changed |= orient_r8_r10(mark, separated)
        changed_any |= changed
        if not changed:
            return changed_any
