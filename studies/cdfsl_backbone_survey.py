"""Which source training gives the plain ViT features that beat raw pixels? A survey for ``specs/cdfsl.yaml``.

Issue 9: at the default scale the plain ViT (vit-protonet) was below ProtoNet on raw pixels
on the near target (digits 5-9 in the source style), so the spec's ReCIT claims compared two
backbones weaker than pixels. This survey chooses the source training on the plain ViT
alone, before any test number is seen:

* only ``vit-protonet`` and ``raw-pixel-protonet`` run, only on the ``near`` target;
* only the *validation* split (the other half of each target digit class from the test's),
  and only seeds 100-102, which are not the spec's seeds (0-7);
* the candidates and the rule below are fixed before the first run (round 1); round 2 was
  added after round 1 had run and none of it passed (see the comment at ``CANDIDATES``).

Each candidate is (dataset params of ``cdfsl-digits``, method params of ``vit-protonet``);
the data are built with the task's own loader and scored with the task's own ``evaluate``
(600 episodes, 15 queries, as the default profile). Single-threaded, one process.

Rule: a candidate *passes* when its mean validation 5-shot accuracy over the three seeds
exceeds raw pixels' mean by more than twice the ViT's standard deviation over the seeds and
every seed is above raw pixels of that seed; among those whose mean training time is within
the budget (45 s single-threaded: 32 source trainings of the default profile on 2 workers in
15 minutes, ReCIT's arms a little slower than the plain ViT), the cheapest is chosen.

    PYTHONPATH=. python studies/cdfsl_backbone_survey.py [--only NAME ...]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

SEEDS = (100, 101, 102)
BUDGET_S = 45.0

# name: (cdfsl-digits params, vit-protonet params), fixed before the first run
CANDIDATES: dict[str, tuple[dict, dict]] = {
    "base-e30": ({"epochs": 30}, {}),  # the spec's training before issue 9: the reference
    "e100": ({"epochs": 100}, {}),  # longer training
    "rot4-e15": ({"source_rotations": 4, "epochs": 15}, {}),  # 20 source classes (4 turns of 0-4), 2x the steps
    "rot4-e30": ({"source_rotations": 4, "epochs": 30}, {}),
    "aug-e30": ({"epochs": 30}, {"scale": 0.25, "translate": 0.15}),  # stronger augmentation
    "p4-e30": ({"epochs": 30}, {"arch": "tiny-p4"}),  # 64 tokens of 4 px
    "conv-e30": ({"epochs": 30}, {"arch": "tiny-conv"}),  # conv stem
    "conv-rot4-e15": ({"source_rotations": 4, "epochs": 15}, {"arch": "tiny-conv"}),
    "conv-e100": ({"epochs": 100}, {"arch": "tiny-conv"}),
    # Round 2, written after round 1 ran and before round 2 did: no round-1 candidate passed. Its
    # best, conv-rot4-e15 (68.6 ± 6.4 against raw pixels' 63.1), fell below raw pixels on seed 102;
    # rotations and the conv stem were the two changes that helped, so round 2 trains that pair
    # longer (within the budget) and/or with a cosine learning-rate decay (lr_schedule, free).
    "conv-rot4-e15-cos": ({"source_rotations": 4, "epochs": 15}, {"arch": "tiny-conv", "lr_schedule": "cosine"}),
    "conv-rot4-e20": ({"source_rotations": 4, "epochs": 20}, {"arch": "tiny-conv"}),
    "conv-rot4-e20-cos": ({"source_rotations": 4, "epochs": 20}, {"arch": "tiny-conv", "lr_schedule": "cosine"}),
}


def run_candidate(name: str, data_params: dict, method_params: dict) -> dict:
    import torch

    from baselines.raw_pixels import RawPixelProtoNet
    from baselines.vit import ViTProtoNet
    from harness.tasks.base import Context
    from harness.tasks.fewshot.cdfsl import TASK, synthetic_digit_domains

    torch.set_num_threads(1)
    vit, raw, train = [], [], []
    for seed in SEEDS:
        context = Context(seed=seed, split="val", dataset="near", threads=1)
        data = synthetic_digit_domains(context, target="near", **data_params)
        started = time.perf_counter()
        metrics = TASK.evaluate(ViTProtoNet(**method_params), data, context)
        wall = time.perf_counter() - started
        vit.append(metrics["accuracy_5shot"])
        train.append(metrics["train_s"])
        raw.append(TASK.evaluate(RawPixelProtoNet(), data, context)["accuracy_5shot"])
        print(f"  {name} seed {seed}: vit {vit[-1]:.1f}  raw {raw[-1]:.1f}  train {train[-1]:.1f} s  "
              f"(cell {wall:.1f} s)", flush=True)
    vit_a, raw_a = np.array(vit), np.array(raw)
    sd = float(vit_a.std(ddof=1))
    passes = bool(vit_a.mean() - raw_a.mean() > 2 * sd and np.all(vit_a > raw_a))
    return {"name": name, "vit": float(vit_a.mean()), "vit_sd": sd, "raw": float(raw_a.mean()),
            "train_s": float(np.mean(train)), "passes": passes}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="candidate names to run (default: all, in order)")
    args = parser.parse_args()
    rows = []
    for name in args.only or CANDIDATES:
        data_params, method_params = CANDIDATES[name]
        rows.append(run_candidate(name, data_params, method_params))
        row = rows[-1]
        print(f"{row['name']:<14} vit {row['vit']:5.1f} ± {row['vit_sd']:4.1f}  raw {row['raw']:5.1f}  "
              f"train {row['train_s']:5.1f} s  {'PASS' if row['passes'] else 'fail'}", flush=True)
    eligible = [r for r in rows if r["passes"] and r["train_s"] <= BUDGET_S]
    if eligible:
        best = min(eligible, key=lambda r: r["train_s"])
        print(f"chosen: {best['name']} (cheapest passing candidate within {BUDGET_S:g} s)")
    else:
        print(f"no candidate passes within {BUDGET_S:g} s")


if __name__ == "__main__":
    main()
