"""Why the naive local MB-FCI beats LocICR on CHILD in ``specs/local-causal.yaml`` (default profile): per pair.

The default profile's CHILD instances (seeds 0-7, the test split, 20 pairs each) are rebuilt with the task's own
loader. For every pair it prints the true label, LocICR's and mb-fci's with the instance's Fisher-z tester (what the
leaderboard scores) and with the d-separation oracle (no learning error), and which step of LocICR's Algorithm 2
gave its Fisher-z answer. Then, per seed, how many of the true total-conditioning dependencies (the pairs the oracle
puts in each other's Markov blanket) Fisher z misses, with the population partial correlation of the missed ones
(the SEM's coefficients are redrawn from the loader's own random stream and checked against the sample correlation),
and the totals: confusion counts, mean weighted F1 of each method and of answering "possible" everywhere, and the
number of variables mb-fci's FCI runs over.

Run from the repository root: ``python studies/local_causal_child_diagnosis.py`` (a few minutes on one core).
"""
from __future__ import annotations

import collections
import contextlib
import io
import math

import networkx as nx
import numpy as np

from baselines.causal import LocalMBFCI
from harness.tasks.base import Context
from harness.tasks.causal import pairwise as pw
from harness.tasks.causal.pag import ARROW, TAIL
from harness.tasks.causal.pairwise import Problem, bnlearn_network, weighted_f1
from harness.tasks.causal.tester import fisher_z_pvalue
from implementations.local_causal._locicr import LocalLearner

CODE = "NPEI"  # non-ancestor, possible, explicit, implicit
PARAMS = {"network": "child", "latents": 2, "samples": 1000, "pairs": 20, "alpha": 0.01, "max_k": 3}


def instance(seed: int):
    with contextlib.redirect_stdout(io.StringIO()):
        return bnlearn_network(Context(seed=seed, split="test", dataset="child"), **PARAMS)


def locicr_with_step(tester, p: int, x: int, y: int, max_k: int) -> tuple[int, str]:
    """LocICR's label of (x, y), as ``LocalLearner.relation`` decides it, and the step that decided it."""
    learner = LocalLearner(tester, p, x, max_k)
    learner.learn()
    if y in learner.adj[x]:
        if learner.mark[y, x] == ARROW:
            return 0, "adjacent, Y *-> X"
        if learner.mark[x, y] == ARROW and learner.mark[y, x] == TAIL:
            return 2, "adjacent, X -> Y"
        return 1, "adjacent, else"
    ipre = learner.ipre()
    if y in ipre:
        return 0, "Y in IPre"
    pa, ne, ne_m = learner.conditioning_sets(ipre)
    if y in pa or y in ne or any(y in s for s in ne_m):
        return 0, "Y in Pa*/Ne*"
    if learner.t.independent(x, y, pa):
        return 0, "Thm 1: X _||_ Y | Pa*"
    if not learner.t.independent(x, y, pa | ne):
        return 2, "Thm 2: dependent | Pa* + Ne*"
    if any(learner.t.independent(x, y, pa | s) for s in ne_m):
        return 1, "Thm 3: possible"
    return 3, "Thm 3: implicit"


def population_correlation(seed: int) -> np.ndarray:
    """The correlation of the observed variables implied by the SEM the loader drew (same stream, same order)."""
    nodes, edges = pw._network("child")
    g = nx.DiGraph()
    g.add_nodes_from(nodes)
    g.add_edges_from(edges)
    rng = Context(seed=seed, split="test", dataset="child").rng("instance")
    hidden = set(pw.choose_latents(rng, g, PARAMS["latents"]))
    order = sorted(g.nodes, key=str)
    index = {v: i for i, v in enumerate(order)}
    weights = np.zeros((len(order), len(order)))
    for v in nx.topological_sort(g):
        rng.standard_normal(PARAMS["samples"])  # the noise column, drawn before v's coefficients
        for u in sorted(g.predecessors(v), key=str):
            weights[index[u], index[v]] = rng.uniform(0.5, 1.0) * rng.choice([-1.0, 1.0])
    total = np.linalg.inv(np.eye(len(order)) - weights)  # X = total.T @ noise
    cov = total.T @ total
    observed = [index[v] for v in order if v not in hidden]
    cov = cov[np.ix_(observed, observed)]
    scale = np.sqrt(np.diag(cov))
    return cov / np.outer(scale, scale)


def partial(corr: np.ndarray, a: int, b: int) -> float:
    """The partial correlation of a and b given every other variable."""
    prec = np.linalg.inv(corr)
    return -prec[a, b] / math.sqrt(prec[a, a] * prec[b, b])


def main() -> None:
    confusion = collections.Counter()
    steps = collections.Counter()
    scores = collections.defaultdict(list)
    predicted = collections.defaultdict(collections.Counter)
    sizes, missed_pop, dependencies = [], [], 0
    for seed in range(8):
        inst = instance(seed)
        p, truth = inst.p, list(inst.labels)
        problem = Problem(p, inst.max_k)
        answers = collections.defaultdict(list)
        for x, y in inst.pairs:
            for kind, make in (("fisher-z", inst.tester), ("oracle", inst.oracle)):
                label, step = locicr_with_step(make(), p, x, y, inst.max_k)
                answers[("locicr", kind)].append(label)
                if kind == "fisher-z":
                    answers["step"].append(step)
                with contextlib.redirect_stdout(io.StringIO()):
                    answers[("mb-fci", kind)] += LocalMBFCI().identify(problem, make(), [(x, y)])
            tester = inst.tester()
            blanket = {w for w in range(p) if w != x and not tester.independent(x, w, set(range(p)) - {x, w})}
            sizes.append(len(blanket | {x, y}))
        print(f"seed {seed}, latents {', '.join(inst.latents)}: weighted F1 with Fisher z locicr "
              f"{weighted_f1(truth, answers[('locicr', 'fisher-z')]):.3f}, mb-fci "
              f"{weighted_f1(truth, answers[('mb-fci', 'fisher-z')]):.3f}; with the oracle locicr "
              f"{weighted_f1(truth, answers[('locicr', 'oracle')]):.3f}, mb-fci "
              f"{weighted_f1(truth, answers[('mb-fci', 'oracle')]):.3f}")
        for i, (x, y) in enumerate(inst.pairs):
            print(f"  ({x:2d}, {y:2d}) true {CODE[truth[i]]}  Fisher z: locicr {CODE[answers[('locicr', 'fisher-z')][i]]}"
                  f" mb-fci {CODE[answers[('mb-fci', 'fisher-z')][i]]}  oracle: locicr "
                  f"{CODE[answers[('locicr', 'oracle')][i]]} mb-fci {CODE[answers[('mb-fci', 'oracle')][i]]}"
                  f"  locicr's step: {answers['step'][i]}")
            steps[(CODE[truth[i]], CODE[answers[("locicr", "fisher-z")][i]], answers["step"][i])] += 1
        for key in (("locicr", "fisher-z"), ("mb-fci", "fisher-z"), ("locicr", "oracle"), ("mb-fci", "oracle")):
            scores[key].append(weighted_f1(truth, answers[key]))
            predicted[key].update(CODE[r] for r in answers[key])
            confusion.update((key, CODE[t], CODE[r]) for t, r in zip(truth, answers[key]))
        scores["always possible"].append(weighted_f1(truth, [1] * len(truth)))
        # the blankets: Fisher z against the oracle, on every pair of observed variables
        corr = population_correlation(seed)
        assert np.abs(corr - inst.corr).max() < 0.1, "the redrawn SEM does not match the loader's data"
        oracle, missed = inst.oracle(), []
        for a in range(p):
            for b in range(a + 1, p):
                rest = set(range(p)) - {a, b}
                if oracle.independent(a, b, rest):
                    continue
                dependencies += 1
                if fisher_z_pvalue(inst.corr, inst.n, a, b, rest) > inst.alpha:
                    missed.append(abs(partial(corr, a, b)))
        missed_pop += missed
        print(f"  blankets: Fisher z misses {len(missed)} true total-conditioning dependencies; population |partial"
              f" correlation| of those: max {max(missed, default=0.0):.3f}")
    threshold = math.tanh(2.5758 / math.sqrt(PARAMS["samples"] - 16 - 3))
    print(f"\nmissed dependencies: {len(missed_pop)} of {dependencies}; {sum(m < threshold for m in missed_pop)} with "
          f"population |partial correlation| below {threshold:.3f}, the smallest Fisher z detects at alpha 0.01 "
          f"given 16 variables (n = {PARAMS['samples']})")
    for key, values in scores.items():
        name = key if isinstance(key, str) else f"{key[0]} ({key[1]})"
        extra = f", answers {dict(sorted(predicted[key].items()))}" if key in predicted else ""
        print(f"mean weighted F1 {name}: {np.mean(values):.3f}{extra}")
        if key in predicted:
            for t in CODE:
                row = {r: confusion[(key, t, r)] for r in CODE if confusion[(key, t, r)]}
                if row:
                    print(f"    true {t}: {row}")
    print("locicr (Fisher z), by true label, answer and step:")
    for (t, r, step), count in sorted(steps.items()):
        print(f"    true {t} -> {r} by {step}: {count}")
    print(f"mb-fci's FCI runs over {np.mean(sizes):.1f} variables per pair on average (of {p}; max {max(sizes)})")


if __name__ == "__main__":
    main()
