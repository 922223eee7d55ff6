"""LocICR (Algorithms 1 and 2 of the paper), asking one :class:`~harness.tasks.causal.tester.CITester`.

Algorithm 1, the local structure around X, MB-by-MB:

* MB(V) by total conditioning: W ∈ MB(V) iff V ⊥̸ W | O \\ {V, W} (one test per pair, shared between V and W);
* for each V taken from a waitlist that starts at X: a PC-style adjacency search over MB⁺(V) = MB(V) ∪ {V} with
  conditioning sets drawn from the current neighbours (size ≤ max_k); only V's own adjacencies are kept
  (Prop. 1), with every separation found; the unshielded colliders of the local skeleton that contain V, and the
  colliders on collider paths from V (Prop. 2), put their arrowheads into the accumulated PAG; then FCI's rules
  for models without selection bias, R1–R4 and R8–R10 (Zhang 2008), orient it (the authors' code runs R1–R4 only;
  with R1–R3 alone, 13 pairs of the oracle test got a label other than the true PAG's); a rule that
  needs two vertices non-adjacent fires only when they are known apart (a separating set was found), since the
  accumulated PAG is partial; V's neighbours join the waitlist;
* stop once every neighbour of X is done and either no edge among MB⁺(X) has a circle and every pair in it is
  decided (stop rule 1), or the waitlist is empty.

Then IPre_MB(X), the invariant non-descendants of X in MB(X): the V with V *→ X, grown by each W ∈ MB(X) \\ Adj(X)
separated from X by a subset (≤ max_k) of the current set (Prop. 4). Pa*(X), Ne*(X) and Ne*(X_M) are read off the
local PAG over MB⁺(X) (Defs. 2, 7, 8), and Algorithm 2 decides: X ⊥ Y | Pa* → non-ancestor (Thm 1); else
X ⊥̸ Y | Pa* ∪ Ne* → explicit (Thm 2); else X ⊥ Y | Pa* ∪ Ne*(X_M) for some clique M → possible; else implicit
(Thm 3). A Y adjacent to X is read off the edge (Y *→ X non-ancestor, X → Y explicit, else possible) and a Y in
IPre_MB(X) is a non-ancestor, as in the authors' code. Ne*(X) is read as the paper's note and the authors' code
define it (one-edge circle-collider paths X ∘–* V, so X's possible children X ∘→ C are in it); with the
d-separation oracle this makes Theorem 2 say "explicit" on a few pairs where the PAG has no directed path (a
collider at such a C opens a path to Y); tests/test_local_causal.py pins those pairs.
"""
from __future__ import annotations

from itertools import combinations
from typing import Sequence

import numpy as np

NONE, CIRCLE, ARROW, TAIL = 0, 1, 2, 3
NON_ANCESTOR, POSSIBLE, EXPLICIT, IMPLICIT = 0, 1, 2, 3


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


def orient_r4(mark: np.ndarray, separated: dict) -> bool:
    """FCI's R4 (discriminating paths): for θ *→ … ↔ a ←* b ∘–* c with every vertex between θ and b a collider on
    the path and a parent of c, and θ, c known apart: b → c if b is in the separating set of {θ, c}, else
    a ↔ b ↔ c. Only pairs recorded in ``separated`` count as non-adjacent (the local PAG is partial)."""
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
                theta = _discriminating_start(mark, separated, a, b, c)
                if theta is None:
                    continue
                if b in separated[frozenset((theta, c))]:
                    mark[b, c], mark[c, b] = ARROW, TAIL
                else:
                    mark[a, b] = mark[c, b] = mark[b, c] = ARROW
                changed = True
                break
    return changed


def _discriminating_start(mark, separated, a: int, b: int, c: int):
    """θ of the shortest discriminating path θ, …, a, b, c for b (breadth first from a), or None."""
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
                    return w
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


def orient(mark: np.ndarray, separated: dict) -> bool:
    """FCI's orientation rules without selection bias (R1–R4, R8–R10) on ``mark`` until nothing changes."""
    changed_any = False
    while True:
        changed = orient_r1_r3(mark, separated)
        changed |= orient_r4(mark, separated)
        changed |= orient_r8_r10(mark, separated)
        changed_any |= changed
        if not changed:
            return changed_any


class LocalLearner:
    """Algorithm 1 for one target X, and Algorithm 2 for any Y, asking ``tester``."""

    def __init__(self, tester, p: int, target: int, max_k: int):
        self.t, self.p, self.x, self.max_k = tester, p, int(target), int(max_k)
        self.mark = np.zeros((p, p), dtype=np.int8)
        self.adjacent: set[frozenset] = set()
        self.separated: dict[frozenset, frozenset] = {}
        self.mb: dict[int, set[int]] = {}
        self.adj: dict[int, set[int]] = {}
        self.done: list[int] = []

    # ----------------------------------------------------------------- Markov blankets, by total conditioning
    def blanket(self, v: int) -> set[int]:
        if v not in self.mb:
            rest = set(range(self.p))
            found = set()
            for w in range(self.p):
                if w == v:
                    continue
                cond = rest - {v, w}
                if self.t.independent(v, w, cond):
                    self._separate(v, w, cond)
                else:
                    found.add(w)
            self.mb[v] = found
        return self.mb[v]

    def _separate(self, a: int, b: int, cond) -> None:
        key = frozenset((a, b))
        if key not in self.adjacent and key not in self.separated:
            self.separated[key] = frozenset(cond)

    def _decided(self, a: int, b: int) -> bool:
        key = frozenset((a, b))
        return key in self.adjacent or key in self.separated

    def _arrow(self, a: int, b: int) -> None:
        """An arrowhead at b on a–b."""
        self.mark[a, b] = ARROW
        if self.mark[b, a] == NONE:
            self.mark[b, a] = CIRCLE

    # ----------------------------------------------------------------- local structure over MB⁺(v)
    def learn_local(self, v: int) -> None:
        plus = sorted(self.blanket(v) | {v})
        nbrs = {a: set(plus) - {a} for a in plus}
        sepset: dict[frozenset, frozenset] = {}
        for a, b in combinations(plus, 2):
            key = frozenset((a, b))
            if key in self.separated:
                nbrs[a].discard(b), nbrs[b].discard(a)
                sepset[key] = self.separated[key]
        size = 0
        while size <= self.max_k:
            going = False
            for a, b in combinations(plus, 2):
                key = frozenset((a, b))
                if b not in nbrs[a] or key in self.adjacent:
                    continue
                for side in (nbrs[a] - {b}, nbrs[b] - {a}):
                    if len(side) < size:
                        continue
                    going = True
                    for cond in combinations(sorted(side), size):
                        if self.t.independent(a, b, cond):
                            sepset[key] = frozenset(cond)
                            self._separate(a, b, cond)
                            nbrs[a].discard(b), nbrs[b].discard(a)
                            break
                    if b not in nbrs[a]:
                        break
            if not going:
                break
            size += 1
        self.adj[v] = set(nbrs[v])
        for w in nbrs[v]:
            key = frozenset((v, w))
            self.adjacent.add(key)
            self.separated.pop(key, None)
            if self.mark[v, w] == NONE:
                self.mark[v, w] = self.mark[w, v] = CIRCLE
        for w in self.blanket(v) - nbrs[v]:
            self._separate(v, w, sepset.get(frozenset((v, w)), frozenset()))
        # unshielded colliders a *→ b ←* c of the local skeleton
        colliders = []
        for b in plus:
            for a, c in combinations(sorted(nbrs[b]), 2):
                key = frozenset((a, c))
                if c in nbrs[a] or key not in sepset or b in sepset[key]:
                    continue
                colliders.append((a, b, c))
        local = np.zeros((self.p, self.p), dtype=np.int8)
        for a in plus:
            for b in nbrs[a]:
                local[a, b] = CIRCLE
        for a, b, c in colliders:
            local[a, b] = local[c, b] = ARROW
        for a, b, c in colliders:
            if v in (a, b, c):
                self._arrow(a, b), self._arrow(c, b)
        # collider paths from v: v, …, a, b, c with every inner vertex a collider in the local skeleton
        paths = self._collider_paths(v, nbrs, local)
        for path in paths:
            for i in range(1, len(path) - 1):
                self._arrow(path[i - 1], path[i]), self._arrow(path[i + 1], path[i])

    def _collider_paths(self, v: int, nbrs: dict, local: np.ndarray) -> list[list[int]]:
        out = []

        def grow(path: list[int]) -> None:
            last = path[-1]
            for w in sorted(nbrs[last]):
                if w in path:
                    continue
                # last must be a collider on (prev, last, w)
                if len(path) >= 2 and not (local[path[-2], last] == ARROW and local[w, last] == ARROW):
                    continue
                new = path + [w]
                if len(new) >= 4:
                    out.append(new)
                if len(new) < 8:
                    grow(new)

        grow([v])
        return out

    # ----------------------------------------------------------------- Algorithm 1
    def learn(self) -> None:
        waitlist = [self.x]
        while waitlist:
            v = waitlist.pop(0)
            self.learn_local(v)
            orient(self.mark, self.separated)
            self.done.append(v)
            for w in sorted(self.adj[v]):
                if w not in self.done and w not in waitlist:
                    waitlist.append(w)
            if all(w in self.done for w in self.adj[self.x]) and self._stop_one():
                break

    def _stop_one(self) -> bool:
        plus = sorted(self.mb[self.x] | {self.x})
        for a, b in combinations(plus, 2):
            if not self._decided(a, b):
                return False
            if frozenset((a, b)) in self.adjacent and CIRCLE in (self.mark[a, b], self.mark[b, a]):
                return False
        return True

    def ipre(self) -> set[int]:
        """IPre_MB(X) (Prop. 4)."""
        x = self.x
        chosen = {v for v in self.adj[x] if self.mark[v, x] == ARROW}
        candidates = sorted(self.mb[x] - self.adj[x])
        grown = True
        while grown:
            grown = False
            for w in list(candidates):
                for size in range(min(len(chosen), self.max_k) + 1):
                    if any(self.t.independent(x, w, z) for z in combinations(sorted(chosen), size)):
                        chosen.add(w)
                        candidates.remove(w)
                        grown = True
                        break
        return chosen

    # ----------------------------------------------------------------- Pa*, Ne*, Ne*(X_M)
    def conditioning_sets(self, ipre: set[int]):
        x = self.x
        plus = self.mb[x] | {x}
        m = np.zeros_like(self.mark)
        idx = sorted(plus)
        m[np.ix_(idx, idx)] = self.mark[np.ix_(idx, idx)]

        def collider_reach(first_ok) -> dict[int, set[int]]:
            """For each V reachable from X by X–V1 (first_ok) then V1 ↔ … ↔ Vk ←* V with V2 … V in IPre: the first
            vertices V1 of such paths."""
            reach: dict[int, set[int]] = {}
            for v1 in np.flatnonzero(m[x] != NONE):
                v1 = int(v1)
                if not first_ok(v1):
                    continue
                reach.setdefault(v1, set()).add(v1)
                if m[x, v1] != ARROW:
                    continue
                # extend: v1 must be a collider: arrow at v1 from x (m[x, v1] == ARROW) and from the next
                stack = [(v1, (x, v1))]
                while stack:
                    last, path = stack.pop()
                    for w in np.flatnonzero(m[:, last] == ARROW):
                        w = int(w)
                        if w in path or w not in ipre:
                            continue
                        reach.setdefault(w, set()).add(v1)
                        if m[last, w] == ARROW:
                            stack.append((w, path + (w,)))
            return reach

        pa_reach = collider_reach(lambda v1: m[v1, x] == ARROW)
        pa_star = {v for v in pa_reach if v != x}
        ne_reach = collider_reach(lambda v1: m[v1, x] == CIRCLE)
        ne_star = {v for v in ne_reach if v != x} - pa_star
        poss = [int(v) for v in np.flatnonzero(m[:, x] == CIRCLE) if m[x, v] in (ARROW, CIRCLE)]
        cliques = self._cliques(poss, m)
        ne_m = []
        for clique in cliques:
            members = set(clique)
            members |= {v for v, firsts in ne_reach.items() if v not in pa_star and firsts & set(clique)}
            ne_m.append(members - {x})
        return pa_star, ne_star, ne_m

    @staticmethod
    def _cliques(vertices: list[int], m: np.ndarray) -> list[list[int]]:
        import networkx as nx

        if not vertices:
            return []
        g = nx.Graph()
        g.add_nodes_from(vertices)
        g.add_edges_from((a, b) for a, b in combinations(vertices, 2) if m[a, b] != NONE)
        return [sorted(c) for c in nx.find_cliques(g)]

    # ----------------------------------------------------------------- Algorithm 2
    def relation(self, y: int) -> int:
        x, y = self.x, int(y)
        if y == x:
            raise ValueError("LocICR: X and Y are the same variable")
        if not self.done:
            self.learn()
        if y in self.adj[x]:
            if self.mark[y, x] == ARROW:
                return NON_ANCESTOR
            if self.mark[x, y] == ARROW and self.mark[y, x] == TAIL:
                return EXPLICIT
            return POSSIBLE
        ipre = self.ipre()
        if y in ipre:
            return NON_ANCESTOR
        pa_star, ne_star, ne_m = self.conditioning_sets(ipre)
        if y in pa_star or y in ne_star or any(y in s for s in ne_m):
            return NON_ANCESTOR
        if self.t.independent(x, y, pa_star):
            return NON_ANCESTOR
        if not self.t.independent(x, y, pa_star | ne_star):
            return EXPLICIT
        if any(self.t.independent(x, y, pa_star | s) for s in ne_m):
            return POSSIBLE
        return IMPLICIT


class LocICR:
    """The paper's method: a local learner per target X, one per pair."""

    scope = "local"

    def __init__(self, max_k: int | None = None):
        self.max_k = max_k

    def identify(self, problem, tester, pairs: Sequence[tuple[int, int]]) -> list[int]:
        depth = problem.max_k if self.max_k is None else self.max_k
        learners: dict[int, LocalLearner] = {}
        out = []
        for x, y in pairs:
            if x not in learners:
                learners[x] = LocalLearner(tester, problem.p, x, depth)
            out.append(learners[x].relation(y))
        return out
