"""Where is the Constrained Cluster LP fractional? A survey of planted-partition settings.

Used to choose the regimes of ``specs/constrained-cc.yaml`` by the LP's integrality gap
alone, never by a method's score: for each setting it draws instances with the spec's own
loader (``planted_partition``) on streams disjoint from the spec's (split ``survey``), solves
the task's own references (the edge-variable ILP for OPT, the Cluster LP over every subset)
and reports the share of instances with LP < OPT, the mean and largest OPT / LP, and the
seconds the two references take per instance. No method is run.

    PYTHONPATH=. python studies/lp_gap_survey.py --instances 30
"""
from __future__ import annotations

import argparse
import itertools
import time

import numpy as np

from harness.tasks.base import Context
from harness.tasks.graph.correlation_clustering import cluster_lp_value, exact_optimum, lp_is_fractional, planted_partition


def survey(n: int, noise: float, constraints: int, clusters: int, instances: int, stage: str = "survey") -> dict:
    context = Context(seed=0, split=stage, dataset=f"lp-gap-survey-n{n}-noise{noise}-c{constraints}-k{clusters}")
    batch = planted_partition(context, n=n, clusters=clusters, noise=noise, constraints=constraints,
                              instances=instances)
    gaps, fractional, seconds = [], [], []
    for instance in batch.instances:
        started = time.perf_counter()
        _, opt = exact_optimum(instance)
        lp = cluster_lp_value(instance)
        seconds.append(time.perf_counter() - started)
        fractional.append(lp_is_fractional(opt, lp))
        gaps.append(opt / lp if lp > 1e-9 else 1.0)
    return {"n": n, "noise": noise, "constraints": constraints, "clusters": clusters,
            "fractional": float(np.mean(fractional)), "mean_gap": float(np.mean(gaps)),
            "max_gap": float(np.max(gaps)), "s_per_instance": float(np.mean(seconds))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[10, 12, 14])
    parser.add_argument("--noise", type=float, nargs="+", default=[0.2, 0.3, 0.4, 0.5])
    parser.add_argument("--constraints", type=int, nargs="+", default=[0, 2])
    parser.add_argument("--clusters", type=int, nargs="+", default=[3])
    parser.add_argument("--instances", type=int, default=30)
    parser.add_argument("--settings", nargs="+", metavar="N,NOISE,CONSTRAINTS,CLUSTERS",
                        help="survey these settings instead of the grid of --n × --noise × --constraints × --clusters")
    parser.add_argument("--stage", default="survey",
                        help="names the random streams: a second stage on fresh instances uses another name")
    args = parser.parse_args()
    print("| n | noise | constraints | clusters | LP < OPT | mean OPT/LP | max OPT/LP | s / instance |")
    print("|---|---|---|---|---|---|---|---|")
    grid = itertools.product(args.n, args.noise, args.constraints, args.clusters)
    if args.settings:
        grid = [(int(n), float(noise), int(c), int(k)) for n, noise, c, k in (s.split(",") for s in args.settings)]
    for n, noise, constraints, clusters in grid:
        try:
            row = survey(n, noise, constraints, clusters, args.instances, args.stage)
        except ValueError as exc:  # e.g. must-link pairs asked for where no planted cluster has a pair
            print(f"| {n} | {noise:g} | {constraints} | {clusters} | — | — | — | — ({exc}) |", flush=True)
            continue
        print(f"| {n} | {noise:g} | {constraints} | {clusters} | {row['fractional']:.2f} | {row['mean_gap']:.4f} "
              f"| {row['max_gap']:.4f} | {row['s_per_instance']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
