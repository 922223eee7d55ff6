"""Task ``causal.pairwise``: local identification of causal relations with latent variables (Li et al., ICML 2025).

An instance. A DAG over observed and latent variables (a random DAG, or a bnlearn network bundled with pgmpy); the
latents are drawn among the nodes with at least two children, so each confounds a pair; n samples of a linear
Gaussian SEM on it (coefficients ±U(0.5, 1), N(0, 1) noise), or, for a bnlearn network with ``data: discrete``,
n samples from the network's own CPDs (pgmpy's forward sampler), of which only the observed columns are kept; and
``pairs`` ordered pairs (X, Y) of distinct observed variables drawn at random. The seed draws all of it.

Ground truth. The true PAG is FCI (causal-learn, without its selection-bias rules R5–R7) run with a d-separation
oracle on the full DAG, with the observed nodes labelled 0 … p−1 and the latents labelled "L…" so that they are
marginalised (causal-learn's ``dag2pag`` is
not used: the paper note found marks that contradict the DAG's ancestry with latents). Each pair's label is the
PAG criterion of :func:`harness.tasks.causal.pag.pag_relation`.

Protocol. A method sees the number of variables and the depth cap, and the data only through the task's
:class:`~harness.tasks.causal.tester.CITester` (Fisher z at level alpha on the sample correlation for Gaussian
data, causal-learn's G² for discrete data), which counts every distinct test. A ``global`` method gets one tester for all pairs of an instance (it learns one graph and
answers every pair from it; one pair alone would cost as much); a ``local`` method gets a fresh tester per pair. The
task reports, per pair answered, the CI tests and seconds that answer cost, the weighted F1 over the four relations
(per-class F1 weighted by the class's count among the true labels) and the accuracy.
"""
from __future__ import annotations

import gzip
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, Sequence

import numpy as np

from harness.tasks.base import Context, DataError, Task
from harness.tasks.causal.pag import RELATIONS, pag_relation
from harness.tasks.causal.tester import CITester

NETWORKS = ("alarm", "insurance", "child", "asia", "sachs", "mildew", "win95pts", "hailfinder", "water")


@dataclass(frozen=True)
class Problem:
    """What a method is told: the number of observed variables, the largest conditioning set to try in a skeleton
    search, and how a local method finds a Markov blanket (``total`` conditioning or ``iamb``, see
    :mod:`harness.tasks.causal.blanket`)."""

    p: int
    max_k: int
    blanket: str = "total"


class PairwiseIdentifier(Protocol):
    """Label pairs (X, Y) as 0 non-ancestor, 1 possible, 2 explicit, 3 implicit ancestor, asking only ``tester``.

    A local method may set ``blankets``, {X: the Markov blanket it found for X}, during ``identify``; the task scores
    it against the true blanket (``blanket_recall``, ``blanket_precision``)."""

    scope: str  # "global": one tester per instance; "local": one per pair

    def identify(self, problem: Problem, tester: CITester, pairs: Sequence[tuple[int, int]]) -> list[int]: ...


class TrivialAnswer(Protocol):
    """A trivial answer (``scope = "trivial"``): labels the pairs without a CI test, from nothing a real method could
    not also know: ``held_out()`` returns the true labels of the pairs of independent instances of the same
    generator (never this instance's)."""

    scope: str  # "trivial"

    def answer(self, problem: Problem, pairs: Sequence[tuple[int, int]], held_out) -> list[int]: ...


@dataclass
class Instance:
    dag: Any  # networkx DiGraph: observed nodes 0 … p−1, latents "L<name>"
    latents: tuple[str, ...]
    corr: np.ndarray | None  # Gaussian data: the sample correlation (Fisher z); None for discrete data
    n: int
    pag: np.ndarray
    pairs: tuple[tuple[int, int], ...]
    labels: tuple[int, ...]
    alpha: float
    max_k: int
    names: tuple[str, ...] = field(default=())
    codes: np.ndarray | None = None  # discrete data: n × p state codes (G²); None for Gaussian data
    blanket: str = "total"  # how local methods find Markov blankets (Problem.blanket)
    blankets: dict = field(default_factory=dict)  # X of a pair → its true Markov blanket (oracle total conditioning)
    held_out: Any = None  # () → the labels of independent instances of the same generator (trivial answers only)
    timed: bool = True  # False: one run per method, untimed, every tester reading the p-values of one shared memo
    memo: dict = field(default_factory=dict)  # the shared p-values where not timed (a cache: it changes no answer)

    @property
    def p(self) -> int:
        return self.pag.shape[0]

    def tester(self) -> CITester:
        memo = None if self.timed else self.memo
        if self.codes is not None:
            return CITester("gsq", self.p, self.alpha, n=self.n, data=self.codes, memo=memo)
        return CITester("fisherz", self.p, self.alpha, corr=self.corr, n=self.n, memo=memo)

    def oracle(self) -> CITester:
        return CITester("oracle", self.p, self.alpha, dag=self.dag)


# --------------------------------------------------------------------------- structures


def random_dag(rng: np.random.Generator, nodes: int, degree: float):
    """An Erdős–Rényi DAG: each pair i < j of a random order gets i → j with probability degree/(nodes − 1)."""
    import networkx as nx

    order = rng.permutation(nodes)
    g = nx.DiGraph()
    g.add_nodes_from(range(nodes))
    prob = degree / max(nodes - 1, 1)
    for a in range(nodes):
        for b in range(a + 1, nodes):
            if rng.random() < prob:
                g.add_edge(int(order[a]), int(order[b]))
    return g


def _reader(network: str):
    """pgmpy's BIFReader on the .bif.gz that pgmpy (< 1.3) ships in its package (offline)."""
    from importlib.resources import files

    path = files("pgmpy") / "utils" / "example_models" / f"{network}.bif.gz"
    if not path.is_file():
        raise DataError(f"network={network!r}: pgmpy has no bundled {network}.bif.gz here (choose one of {NETWORKS})")
    from pgmpy.readwrite import BIFReader

    return BIFReader(string=gzip.decompress(path.read_bytes()).decode())


def bnlearn_edges(network: str) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """The node names and edges of a bnlearn network from the .bif.gz that pgmpy (< 1.3) ships in its package."""
    reader = _reader(network)
    nodes = tuple(str(v) for v in reader.variable_names)
    edges = tuple((str(a), str(b)) for a, b in reader.variable_edges)
    return nodes, edges


_STRUCTURES: dict[str, tuple] = {}
_MODELS: dict[str, Any] = {}


def _network(network: str):
    if network not in _STRUCTURES:
        _STRUCTURES[network] = bnlearn_edges(network)
    return _STRUCTURES[network]


def _model(network: str):
    """The network with its CPDs (pgmpy DiscreteBayesianNetwork), read once per process."""
    if network not in _MODELS:
        _MODELS[network] = _reader(network).get_model()
    return _MODELS[network]


# --------------------------------------------------------------------------- an instance


def choose_latents(rng: np.random.Generator, g, latents: int) -> list:
    """``latents`` nodes drawn among those with at least two children; DataError if too few have two."""
    candidates = sorted((v for v in g.nodes if g.out_degree(v) >= 2), key=str)
    if len(candidates) < latents:
        raise DataError(f"latents={latents}: only {len(candidates)} nodes of this DAG have two or more children")
    return [candidates[i] for i in rng.choice(len(candidates), size=latents, replace=False)]


def linear_gaussian(rng: np.random.Generator, g, n: int) -> dict:
    """n samples of X_v = Σ_{u→v} β_uv X_u + ε_v, β ~ ±U(0.5, 1), ε ~ N(0, 1), in topological order."""
    import networkx as nx

    values = {}
    for v in nx.topological_sort(g):
        x = rng.standard_normal(n)
        for u in sorted(g.predecessors(v), key=str):
            beta = rng.uniform(0.5, 1.0) * rng.choice([-1.0, 1.0])
            x = x + beta * values[u]
        values[v] = x
    return values


def discrete_sample(rng: np.random.Generator, model, n: int) -> dict:
    """n samples from a pgmpy discrete Bayesian network's own CPDs (forward sampling), each column coded 0 … k−1 in
    the order of the CPD's states; pgmpy's sampler is seeded from ``rng``."""
    from pgmpy.sampling import BayesianModelSampling

    frame = BayesianModelSampling(model).forward_sample(size=n, seed=int(rng.integers(2**31 - 1)),
                                                        show_progress=False)
    out = {}
    for cpd in model.get_cpds():
        states = list(cpd.state_names[cpd.variable])
        index = {s: i for i, s in enumerate(states)}
        out[str(cpd.variable)] = np.array([index[v] for v in frame[cpd.variable]], dtype=np.int64)
    return out


def true_pag(dag, p: int) -> np.ndarray:
    """FCI with the d-separation oracle on ``dag`` (observed nodes 0 … p−1, latents labelled otherwise), without
    the selection-bias rules R5–R7 (see :func:`~harness.tasks.causal.pag.fci_without_selection`)."""
    from harness.tasks.causal.pag import fci_without_selection, from_causallearn

    graph, _ = fci_without_selection(np.zeros((1, p)), "d_separation", true_dag=dag, depth=-1)
    return from_causallearn(graph.graph)


def build_instance(context: Context, g, *, latents: int, samples: int, pairs: int, alpha: float, max_k: int,
                   names: Sequence[str] | None = None, model=None, blanket: str = "total",
                   labels_only: bool = False) -> Instance:
    """``model``: a pgmpy discrete network on ``g``'s nodes to sample from (G² tests); None for linear Gaussian data
    (Fisher z). ``labels_only``: the structure, latents, true PAG and labelled pairs without any data (a held-out
    instance, whose labels only a trivial answer reads)."""
    import networkx as nx

    from harness.tasks.causal.blanket import RULES, true_blanket

    if samples < 10:
        raise DataError(f"samples={samples}: Fisher z needs at least 10 samples")
    if pairs < 1:
        raise DataError(f"pairs={pairs}: need at least one pair")
    if not 0 < alpha < 1:
        raise DataError(f"alpha={alpha}: a level must lie in (0, 1)")
    if max_k < 0:
        raise DataError(f"max_k={max_k}: the depth cap cannot be negative")
    if blanket not in RULES:
        raise DataError(f"blanket={blanket!r}: choose one of {RULES}")
    rng = context.rng("instance")
    hidden = choose_latents(rng, g, latents)
    observed = [v for v in sorted(g.nodes, key=str) if v not in set(hidden)]
    if len(observed) < 2:
        raise DataError(f"latents={latents}: fewer than two observed variables are left")
    relabel = {v: i for i, v in enumerate(observed)}
    relabel.update({v: f"L{v}" for v in hidden})
    dag = nx.relabel_nodes(g, relabel, copy=True)
    if labels_only:
        corr, codes = None, None
    elif model is None:
        values = linear_gaussian(rng, g, samples)
        corr, codes = np.corrcoef(np.column_stack([values[v] for v in observed]), rowvar=False), None
    else:
        values = discrete_sample(rng, model, samples)
        corr, codes = None, np.column_stack([values[v] for v in observed])
    p = len(observed)
    pag = true_pag(dag, p)
    chosen = []
    for _ in range(pairs):
        x, y = rng.choice(p, size=2, replace=False)
        chosen.append((int(x), int(y)))
    labels = tuple(pag_relation(pag, x, y) for x, y in chosen)
    label_names = tuple(str(names[v]) if names is not None else str(v) for v in observed)
    instance = Instance(dag, tuple(relabel[v] for v in hidden), corr, samples, pag, tuple(chosen), labels, alpha,
                        max_k, label_names, codes, blanket)
    if not labels_only:
        oracle = instance.oracle()
        instance.blankets = {x: true_blanket(oracle, x, p) for x in sorted({x for x, _ in chosen})}
    return instance


HELD_OUT = 2  # independent instances whose labelled pairs a trivial answer may read
_HELD_OUT: dict[tuple, tuple[int, ...]] = {}
_STRUCTURE = {"random-network": ("nodes", "degree", "latents", "pairs"),
              "bnlearn-network": ("network", "latents", "pairs")}


def held_out_labels(loader: str, params: tuple) -> tuple[int, ...]:
    """The true labels of the pairs of :data:`HELD_OUT` instances of the generator ``loader`` with ``params``, drawn
    on the split ``held-out`` (streams no test or validation instance uses) with seeds 0 … HELD_OUT − 1 and named by
    the parameters that make the labels (the structure, the latents and the number of pairs; not the data, which
    labels do not depend on): the same for every cell of a dataset, kept once per process."""
    given = dict(params)
    structure = tuple((name, given[name]) for name in _STRUCTURE[loader])
    key = (loader, structure)
    if key not in _HELD_OUT:
        build = {"random-network": _random_network, "bnlearn-network": _bnlearn_network}[loader]
        name = f"{loader}:" + ",".join(f"{k}={v}" for k, v in structure)
        labels: list[int] = []
        for seed in range(HELD_OUT):
            instance = build(Context(seed=seed, split="held-out", dataset=name), labels_only=True, **given)
            labels.extend(instance.labels)
        _HELD_OUT[key] = tuple(labels)
    return _HELD_OUT[key]


def _held_out(loader: str, params: dict):
    from functools import partial

    return partial(held_out_labels, loader, tuple(sorted(params.items())))


def random_network(context: Context, *, nodes: int = 20, degree: float = 2.0, latents: int = 2, samples: int = 1000,
                   pairs: int = 20, alpha: float = 0.01, max_k: int = 3, blanket: str = "total",
                   timed: bool = True) -> Instance:
    """A random DAG (networkx) of ``nodes`` nodes and expected degree ``degree``; latents among nodes with ≥ 2
    children. ``blanket``: how local methods find Markov blankets (``total`` conditioning or ``iamb``); ``timed``:
    False runs each method once, untimed, its CI tests answered from p-values shared between testers."""
    params = dict(nodes=nodes, degree=degree, latents=latents, samples=samples, pairs=pairs, alpha=alpha, max_k=max_k,
                  blanket=blanket)
    instance = _random_network(context, **params)
    instance.held_out, instance.timed = _held_out("random-network", params), bool(timed)
    return instance


def _random_network(context: Context, *, nodes: int, degree: float, latents: int, samples: int, pairs: int,
                    alpha: float, max_k: int, blanket: str, labels_only: bool = False) -> Instance:
    if nodes < 4:
        raise DataError(f"nodes={nodes}: a random network needs at least 4 nodes")
    if degree <= 0:
        raise DataError(f"degree={degree}: the expected degree must be positive")
    g = random_dag(context.rng("structure"), nodes, degree)
    return build_instance(context, g, latents=latents, samples=samples, pairs=pairs, alpha=alpha, max_k=max_k,
                          blanket=blanket, labels_only=labels_only)


def bnlearn_network(context: Context, *, network: str = "alarm", latents: int = 4, samples: int = 1000,
                    pairs: int = 20, alpha: float = 0.01, max_k: int = 3, data: str = "gaussian",
                    blanket: str = "total", timed: bool = True) -> Instance:
    """A bnlearn network's structure (the .bif.gz bundled with pgmpy); ``data: gaussian`` puts a linear Gaussian SEM
    on it (Fisher z), ``data: discrete`` samples the network's own CPDs (G²). ``blanket``: how local methods find
    Markov blankets (``total`` conditioning or ``iamb``); ``timed``: False runs each method once, untimed, its CI
    tests answered from p-values shared between testers."""
    params = dict(network=network, latents=latents, samples=samples, pairs=pairs, alpha=alpha, max_k=max_k, data=data,
                  blanket=blanket)
    instance = _bnlearn_network(context, **params)
    instance.held_out, instance.timed = _held_out("bnlearn-network", params), bool(timed)
    return instance


def _bnlearn_network(context: Context, *, network: str, latents: int, samples: int, pairs: int, alpha: float,
                     max_k: int, data: str, blanket: str, labels_only: bool = False) -> Instance:
    import networkx as nx

    if network not in NETWORKS:
        raise DataError(f"network={network!r}: choose one of {NETWORKS}")
    if data not in ("gaussian", "discrete"):
        raise DataError(f"data={data!r}: choose 'gaussian' (linear SEM, Fisher z) or 'discrete' (the CPDs, G²)")
    nodes, edges = _network(network)
    g = nx.DiGraph()
    g.add_nodes_from(nodes)
    g.add_edges_from(edges)
    model = _model(network) if data == "discrete" and not labels_only else None
    return build_instance(context, g, latents=latents, samples=samples, pairs=pairs, alpha=alpha, max_k=max_k,
                          names=None, model=model, blanket=blanket, labels_only=labels_only)


# --------------------------------------------------------------------------- scores


def weighted_f1(truth: Sequence[int], predicted: Sequence[int]) -> float:
    """Σ_c w_c F1_c over the relations c present among the true labels, w_c their share (sklearn's 'weighted')."""
    truth, predicted = np.asarray(truth), np.asarray(predicted)
    total = 0.0
    for c in np.unique(truth):
        tp = float(np.sum((truth == c) & (predicted == c)))
        fp = float(np.sum((truth != c) & (predicted == c)))
        fn = float(np.sum((truth == c) & (predicted != c)))
        f1 = 0.0 if tp == 0 else 2 * tp / (2 * tp + fp + fn)
        total += f1 * np.mean(truth == c)
    return float(total)


def class_f1(truth: Sequence[int], predicted: Sequence[int]) -> dict[str, float]:
    """F1 of each relation, ``f1_<relation>``, for the relations among the true or predicted labels (a relation
    neither true nor answered on any pair has no F1 and is left out)."""
    truth, predicted = np.asarray(truth), np.asarray(predicted)
    out = {}
    for c, name in enumerate(RELATIONS):
        tp = float(np.sum((truth == c) & (predicted == c)))
        fp = float(np.sum((truth != c) & (predicted == c)))
        fn = float(np.sum((truth == c) & (predicted != c)))
        if tp + fp + fn > 0:
            out["f1_" + name.replace("-", "_")] = 2 * tp / (2 * tp + fp + fn)
    return out


CLASS_F1 = tuple("f1_" + name.replace("-", "_") for name in RELATIONS)
REPEATS, WARMUP = 3, 1  # timing: each method's answer is computed 1 + 3 times on a fresh tester, the 3 timed


class PairwiseTask(Task):
    name = "causal.pairwise"
    version = "3"  # 2: ground truth without causal-learn's R5–R7; discrete data (G²). 3: trivial answers, per-class
    # F1, blanket recall and precision, IAMB blankets, timing by time_call, FCI independent of PYTHONHASHSEED
    metrics = ("weighted_f1", "accuracy", *CLASS_F1, "ci_tests", "log_ci_tests", "blanket_recall",
               "blanket_precision", "seconds", "seconds_cpu", "seconds_spread")
    protocol = PairwiseIdentifier
    framework = None

    def tiny(self, workdir: Path) -> dict[str, dict[str, Any]]:
        return {
            "random-network": {"nodes": 10, "degree": 3.0, "latents": 1, "samples": 300, "pairs": 3},
            "bnlearn-network": {"network": "asia", "latents": 1, "samples": 300, "pairs": 3},
        }

    def evaluate(self, method: PairwiseIdentifier, data: Instance, context: Context) -> dict[str, float]:
        from harness.tasks.timing import time_call

        who = type(method).__name__
        problem = Problem(data.p, data.max_k, data.blanket)
        scope = getattr(method, "scope", None)
        timing: dict[str, float] = {}
        recall, precision = [], []

        def answer(pairs):
            """A fresh tester, the method's labels and the tests it asked (and the blankets a local method found)."""
            tester = data.tester()
            labels = [int(r) for r in method.identify(problem, tester, list(pairs))]
            return labels, tester.count, dict(getattr(method, "blankets", None) or {})

        def repeated(pairs):
            """The answer timed by :func:`~harness.tasks.timing.time_call`; every call must ask the same tests and
            give the same labels (a method whose run depends on anything but its input fails the cell)."""
            seen = []
            if not data.timed:
                return answer(pairs), None
            result, timed = time_call(lambda: seen.append(answer(pairs)) or seen[-1], repeats=REPEATS, warmup=WARMUP)
            if any((labels, count) != (result[0], result[1]) for labels, count, _ in seen):
                raise ValueError(f"{who}: its {len(seen)} runs on the same input asked "
                                 f"{sorted({c for _, c, _ in seen})} CI tests or gave different labels")
            return result, timed

        if scope == "global":
            (predicted, count, _), timed = repeated(data.pairs)
            tests = float(count)
            timing = timed.metrics("seconds") if timed else {}
        elif scope == "local":
            predicted, counts, timings = [], [], []
            for pair in data.pairs:
                (labels, count, blankets), timed = repeated([pair])
                predicted.extend(labels)
                counts.append(count)
                if timed:
                    timings.append(timed.metrics("seconds"))
                x = pair[0]
                if x in blankets and x in data.blankets:
                    found, true = set(blankets[x]), set(data.blankets[x])
                    if true:
                        recall.append(len(found & true) / len(true))
                    if found:
                        precision.append(len(found & true) / len(found))
            tests = float(np.mean(counts))
            timing = {name: float(np.mean([t[name] for t in timings])) for name in timings[0]} if timings else {}
        elif scope == "trivial":
            predicted = [int(r) for r in method.answer(problem, list(data.pairs), data.held_out)]
            tests = 0.0
        else:
            raise ValueError(f"{who}.scope is {scope!r}; expected 'global', 'local' or 'trivial'")
        if len(predicted) != len(data.pairs) or any(int(r) not in range(len(RELATIONS)) for r in predicted):
            raise ValueError(f"{who} returned {predicted!r}; expected one of 0–3 per pair")
        truth = list(data.labels)
        predicted = [int(r) for r in predicted]
        out = {
            "weighted_f1": weighted_f1(truth, predicted),
            "accuracy": float(np.mean(np.asarray(truth) == np.asarray(predicted))),
            **class_f1(truth, predicted),
            "ci_tests": tests,
            "log_ci_tests": float(np.log(max(tests, 1.0))),
            **timing,
        }
        if recall:
            out["blanket_recall"] = float(np.mean(recall))
        if precision:
            out["blanket_precision"] = float(np.mean(precision))
        return out


TASK = PairwiseTask()
