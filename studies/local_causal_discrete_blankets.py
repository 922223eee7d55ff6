"""Why ``specs/local-causal.yaml`` finds Markov blankets by IAMB on discrete data: total conditioning under G².

The default profile's discrete instances (child-discrete and alarm-discrete, seeds 0-7, the test split) are rebuilt
with the task's own loader. For every distinct X of a pair, MB(X) is found twice with the instance's G² tester: by
total conditioning (X ⊥̸ W | all other observed variables, the paper's rule, which the profile used before issue 29)
and by IAMB (tests given the blanket found so far, what the profile uses now). Each is compared with the true
blanket (total conditioning asked of the d-separation oracle). Printed per dataset: the mean recall and precision
of each, the mean size of the blankets found and of the true ones, the mean number of tests per blanket, and the
largest conditioning set each asked.

Run from the repository root: ``python studies/local_causal_discrete_blankets.py [SEEDS]`` (SEEDS: how many of
0-7, default 8; a few minutes on one core).
"""
from __future__ import annotations

import contextlib
import io
import sys

import numpy as np

from harness.tasks.base import Context
from harness.tasks.causal.blanket import iamb, total_conditioning
from harness.tasks.causal.pairwise import bnlearn_network

DATASETS = {
    "child-discrete": dict(network="child", latents=2, samples=5000, pairs=20, alpha=0.01, max_k=3, data="discrete",
                           blanket="iamb", timed=False),
    "alarm-discrete": dict(network="alarm", latents=4, samples=5000, pairs=20, alpha=0.01, max_k=3, data="discrete",
                           blanket="iamb", timed=False),
}


def main(seeds: int = 8) -> None:
    for name, params in DATASETS.items():
        rows = {"total": [], "iamb": []}
        for seed in range(seeds):
            with contextlib.redirect_stdout(io.StringIO()):
                inst = bnlearn_network(Context(seed=seed, dataset=name), **params)
            for x, truth in inst.blankets.items():
                for rule, find in (("total", total_conditioning), ("iamb", iamb)):
                    tester = inst.tester()
                    found, _ = find(tester, x, inst.p)
                    largest = max(len(cond) for _, _, cond in tester._cache)
                    recall = len(found & truth) / len(truth) if truth else np.nan
                    precision = len(found & truth) / len(found) if found else np.nan
                    rows[rule].append((recall, precision, len(found), len(truth), tester.count, largest))
        print(f"{name}: {seeds} seeds, {len(rows['total'])} targets X, {inst.p} observed variables")
        for rule, got in rows.items():
            a = np.array(got, dtype=float)
            print(f"  {rule:5s}: recall {np.nanmean(a[:, 0]):.3f}, precision {np.nanmean(a[:, 1]):.3f} "
                  f"({int(np.sum(a[:, 2] == 0))} of {len(a)} blankets empty), size {a[:, 2].mean():.2f} "
                  f"against {a[:, 3].mean():.2f} true, {a[:, 4].mean():.0f} tests per blanket, largest conditioning "
                  f"set {int(a[:, 5].max())}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 8)
