"""A synthetic results folder of any size: ``spec.yaml``, ``metrics.json`` and ``runs.jsonl`` shaped like a real one.

The template is the committed ``results/quick/tight-sgp`` folder (6 methods, paired claims over named
datasets, checks over every cell): its spec gets ``datasets`` copies of its dataset entries (the real
ones first, so the claims that name them still find them) and one more paired claim, ``pooled``, over
every dataset (the template's claims all name theirs; a board of many datasets is read through such a
claim), and its first test row is the shape
of every row (same keys, ``metrics``, ``params``, ``code``, ``versions``), with the dataset, method,
seed and key of the cell and metrics drawn from a fixed random generator: a per-(dataset, method)
level plus noise per seed. One row in a hundred is ``failed``. Nothing here is a result: it is the
load ``harness leaderboard`` and ``harness regress`` are measured on (``benchmarks/leaderboard_scale.py``
and docs/performance.md)::

    python -m benchmarks.synthetic_runs /tmp/board-1m --rows 1000000   # 16,667 datasets × 6 methods × 10 seeds
    /usr/bin/time -v harness leaderboard /tmp/board-1m
"""
from __future__ import annotations

import argparse
import json
import math
import random
import shutil
from pathlib import Path

TEMPLATE = Path(__file__).resolve().parents[1] / "results" / "quick" / "tight-sgp"
SEEDS = 10


def write_folder(out: Path, rows: int, seeds: int = SEEDS, template: Path = TEMPLATE) -> Path:
    """Write ``out`` (created, emptied first) with about ``rows`` rows: datasets × the template's methods × seeds."""
    import yaml

    out = Path(out)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    meta = yaml.safe_load((template / "spec.yaml").read_text())
    spec = meta["spec"]
    methods = [m.get("id", m["name"]) for m in spec["methods"]]
    datasets_needed = max(1, math.ceil(rows / (len(methods) * seeds)))
    real = spec["datasets"]
    entries = list(real)
    for i in range(len(real), datasets_needed):
        entry = dict(real[i % len(real)])
        entry["id"] = f"{real[i % len(real)].get('id', real[i % len(real)]['name'])}-{i:06d}"
        entries.append(entry)
    spec["datasets"] = entries[:datasets_needed]
    implementation = next(m for m in spec["methods"] if m.get("kind") == "implementation")
    baseline = next(m for m in spec["methods"] if m.get("kind") == "baseline")
    primary = spec["metrics"]["primary"]
    spec["claims"] = [*spec.get("claims", []), {
        "id": "pooled", "says": f"synthetic: {implementation['name']} beats {baseline['name']} over every dataset",
        "better": implementation.get("id", implementation["name"]), "than": baseline.get("id", baseline["name"]),
        "metric": primary, "margin_from": "prior",
        "source": "harness", "quote": "benchmarks/synthetic_runs.py: the load's claim over every dataset"}]
    meta["selection"] = {"datasets": [d.get("id", d["name"]) for d in spec["datasets"]], "methods": methods,
                         "seeds": list(range(seeds))}
    (out / "spec.yaml").write_text(yaml.safe_dump(meta, sort_keys=False, allow_unicode=True))
    for name in ("metrics.json", "chance.json"):
        if (template / name).exists():
            shutil.copy(template / name, out / name)
    with open(template / "runs.jsonl", "rb") as f:
        shape = next(r for r in map(json.loads, f) if r["split"] == "test" and r["status"] == "ok")
    shape["spec_hash"] = meta["spec_hash"]
    draw = random.Random(0)
    written = 0
    with open(out / "runs.jsonl", "w") as f:
        for dataset in meta["selection"]["datasets"]:
            for method in methods:
                levels = {m: v * (1 + 0.2 * draw.random()) for m, v in shape["metrics"].items()}
                for seed in range(seeds):
                    if written >= rows:
                        return out
                    row = dict(shape, dataset=dataset, method=method, seed=seed,
                               key=f"{written:020x}", method_name=method)
                    if draw.random() < 0.01:
                        row.update(status="failed", error="RuntimeError: synthetic failure", metrics={})
                    else:
                        row["metrics"] = {m: v * (1 + 0.05 * draw.gauss(0, 1)) for m, v in levels.items()}
                    f.write(json.dumps(row) + "\n")
                    written += 1
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--seeds", type=int, default=SEEDS)
    args = parser.parse_args()
    print(write_folder(args.out, args.rows, args.seeds))


if __name__ == "__main__":
    main()
