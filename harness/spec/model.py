"""The typed spec: what a resolved profile of a YAML spec says, after validation."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

PROFILES = ("quick", "default", "paper")


@dataclass(frozen=True)
class DatasetEntry:
    id: str
    name: str
    params: dict[str, Any] = field(default_factory=dict)
    requires: str | None = None
    methods: tuple[str, ...] | None = None  # the method ids run on this dataset; None: all
    tuning_metric: str | None = None  # the metric its pairs are tuned on, where it is not the spec's (`tuning.metric`)

    def runs(self, method_id: str) -> bool:
        """Whether the spec runs (and tunes) this method on this dataset."""
        return self.methods is None or method_id in self.methods


@dataclass(frozen=True)
class MethodEntry:
    id: str
    name: str
    kind: str  # "implementation", "baseline" or "trivial" (the task's trivial answer)
    params: dict[str, Any] = field(default_factory=dict)
    search: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class Claim:
    id: str
    says: str
    better: str | None  # None for a kind that names `methods` instead of a pair
    than: str | None
    metric: str
    datasets: tuple[str, ...] | None = None
    margin: float = 0.0
    min_pairs: int = 3  # independent pairs
    replicate: str = "seed"  # or "dataset-seed": the unit of replication of the paired test
    source: str | None = None  # "paper" or "harness"
    quote: str | None = None  # the paper's sentence, table or figure
    kind: str = "paired"  # a module of harness.claims (or an outside package's), which reads the rest
    size: str | None = None  # scaling: the dataset parameter that is the size
    methods: tuple[str, ...] | None = None  # bound: the methods held to it
    at_most: float | None = None  # bound
    at_least: float | None = None  # bound
    precondition: dict | None = None  # a paired comparison the claim needs to be testable (better, than, metric, ...)
    written: dict = field(default_factory=dict, compare=False)  # the claim as written: a kind's own keys are here


@dataclass(frozen=True)
class Tuning:
    trials: int = 0
    sampler: str = "tpe"
    sampler_args: dict[str, Any] = field(default_factory=dict)
    seeds: tuple[int, ...] = (0,)
    sampler_seed: int = 0
    batch: int = 1  # trials asked at once per study
    metric: str | None = None  # what every study optimises; None: the primary metric


@dataclass(frozen=True)
class Hardware:
    device: str = "auto"
    precision: str = "fp32"
    threads: int = 1
    timeout_s: float = 600.0
    memory_gb: float | None = None  # what a cluster job asks for; not part of the spec hash
    slurm: dict[str, Any] = field(default_factory=dict)  # partition, account, ...: where jobs go, not what they compute


@dataclass
class Spec:
    name: str
    title: str
    task: str
    profile: str
    path: Path
    datasets: list[DatasetEntry]
    methods: list[MethodEntry]
    primary_metric: str
    report_metrics: list[str]
    seeds: list[int]
    tuning: Tuning
    hardware: Hardware
    claims: list[Claim]
    resolved: dict[str, Any]  # the profile merged over the base, as plain data (a dataset grid as written)

    def method(self, method_id: str) -> MethodEntry:
        return next(m for m in self.methods if m.id == method_id)

    def dataset(self, dataset_id: str) -> DatasetEntry:
        return next(d for d in self.datasets if d.id == dataset_id)

    def tuning_metric(self, dataset: DatasetEntry) -> str:
        """The metric the studies of ``dataset`` optimise: its own ``tuning.metric``, else the spec's, else the
        primary metric (a dataset may need another, where the primary one rewards what the claims do not ask for)."""
        return dataset.tuning_metric or self.tuning.metric or self.primary_metric

    @cached_property  # read for every recorded row: JSON-dumping the resolved spec each time was 58% of a re-run
    def spec_hash(self) -> str:
        """Hash of what determines results; seed and method/dataset selection are not part of it.

        A Spec is not changed in place once built (narrowing it makes a new one), so the hash is taken once.
        The spec's own ``hardware.timeout_s`` is part of it (every committed result was recorded with it); the
        command line's ``--timeout`` is not: :func:`harness.plan.apply_options` gives it to the cells only."""
        content = {k: v for k, v in self.resolved.items() if k not in ("seeds", "title", "description", "paper", "claims", "audit")}
        if "datasets" in content:  # a grid hashes as the datasets it stands for, as a spec listing them by hand
            content["datasets"] = dataset_entries(content)
        if "hardware" in content:  # where a job runs and what it asks of the cluster do not change its results
            content["hardware"] = {k: v for k, v in content["hardware"].items() if k not in ("memory_gb", "slurm")}
        return stable_hash(content)[:16]


def _grid_label(value: Any) -> str:
    """A grid value as it reads in a dataset id: 100, 0.1, 1e-05, true, null, rbf."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return repr(value) if isinstance(value, float) else str(value)


def expand_grids(datasets: list[dict]) -> tuple[list[dict], list[int]]:
    """The dataset entries with each ``grid`` written out, and for each the index of the entry it came from.

    An entry with ``grid: {n: [100, 1000], noise: [0.1, 0.2]}`` stands for four datasets, in the order of
    ``itertools.product`` over the grid's keys as written (the first varies slowest): the entry's params plus
    one value of each key, and the id ``ID-n100-noise0.1``, ``ID-n100-noise0.2``, ... (ID: the entry's ``id``,
    else its ``name``). Each is exactly the entry that a spec listing it by hand would have, so a grid and its
    hand-written datasets have one spec_hash and one key per cell.
    """
    from itertools import product

    if not any("grid" in d for d in datasets):
        return datasets, list(range(len(datasets)))
    out, sources = [], []
    for index, entry in enumerate(datasets):
        grid = entry.get("grid")
        if not grid:
            out.append(entry)
            sources.append(index)
            continue
        base = {k: v for k, v in entry.items() if k != "grid"}
        stem, params = entry.get("id", entry["name"]), entry.get("params", {})
        keys = list(grid)
        labels = [[f"-{key}{_grid_label(v)}" for v in grid[key]] for key in keys]
        for point, label in zip(product(*grid.values()), product(*labels)):
            one = dict(base)
            one["id"] = stem + "".join(label)
            one["params"] = {**params, **dict(zip(keys, point))}
            out.append(one)
        sources += [index] * (len(out) - len(sources))
    return out, sources


def grid_members(datasets: list[dict], expansion: tuple[list[dict], list[int]] | None = None) -> dict[str, list[str]]:
    """Each grid entry's id (or name) → the ids of the datasets it stands for, in order (``expansion``: what
    :func:`expand_grids` gives for ``datasets``, where the caller has it)."""
    expanded, sources = expansion or expand_grids(datasets)
    members: dict[str, list[str]] = {}
    for entry, index in zip(expanded, sources):
        if "grid" in datasets[index]:
            members.setdefault(datasets[index].get("id", datasets[index]["name"]), []).append(entry["id"])
    return members


def named_datasets(names, members: dict[str, list[str]]) -> list[str]:
    """Dataset ids, each named itself or through its grid's id (``members``: :func:`grid_members`), once each."""
    return list(dict.fromkeys(i for name in names for i in members.get(name, (name,))))


def claim_entries(spec: dict[str, Any], members: dict[str, list[str]] | None = None) -> list[dict]:
    """A resolved spec's claims, a grid's id among their (and their preconditions') datasets written out as its
    datasets' ids (``members``: :func:`grid_members` of its datasets): what :func:`harness.claims.check_claim` takes."""
    claims = spec.get("claims", [])
    members = grid_members(spec.get("datasets", [])) if members is None else members
    if not members:
        return claims
    out = []
    for claim in claims:
        claim = dict(claim)
        if claim.get("datasets"):
            claim["datasets"] = named_datasets(claim["datasets"], members)
        if claim.get("precondition", {}).get("datasets"):
            pre = claim["precondition"]
            claim["precondition"] = {**pre, "datasets": named_datasets(pre["datasets"], members)}
        out.append(claim)
    return out


def dataset_entries(spec: dict[str, Any]) -> list[dict]:
    """A resolved spec's (or a results folder's ``spec.yaml``'s ``spec``'s) datasets, each grid written out."""
    return expand_grids(spec.get("datasets", []))[0]


def stable_hash(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str).encode()).hexdigest()


def from_resolved(resolved: dict[str, Any], profile: str, path: Path) -> Spec:
    """Build the typed spec from a validated, profile-merged dict."""
    tuning = resolved.get("tuning", {})
    sampler = tuning.get("sampler", {})
    expansion = expand_grids(resolved["datasets"])
    hardware = resolved.get("hardware", {})
    metrics = resolved["metrics"]
    return Spec(
        name=resolved["name"],
        title=resolved["title"],
        task=resolved["task"],
        profile=profile,
        path=path,
        datasets=[
            DatasetEntry(d.get("id", d["name"]), d["name"], dict(d.get("params", {})), d.get("requires"),
                         tuple(d["methods"]) if d.get("methods") else None, d.get("tuning", {}).get("metric"))
            for d in expansion[0]
        ],
        methods=[
            MethodEntry(
                m.get("id", m["name"]), m["name"], m["kind"], dict(m.get("params", {})), dict(m.get("search", {}))
            )
            for m in resolved["methods"]
        ],
        primary_metric=metrics["primary"],
        report_metrics=list(metrics["report"]),
        seeds=list(resolved["seeds"]),
        tuning=Tuning(
            trials=tuning.get("trials", 0),
            sampler=sampler.get("name", "tpe"),
            sampler_args=dict(sampler.get("args", {})),
            seeds=tuple(tuning.get("seeds", (0,))),
            sampler_seed=tuning.get("sampler_seed", 0),
            batch=tuning.get("batch", 1),
            metric=tuning.get("metric"),
        ),
        hardware=Hardware(
            device=hardware.get("device", "auto"),
            precision=hardware.get("precision", "fp32"),
            threads=hardware.get("threads", 1),
            timeout_s=float(hardware.get("timeout_s", 600.0)),
            memory_gb=float(hardware["memory_gb"]) if "memory_gb" in hardware else None,
            slurm=dict(hardware.get("slurm", {})),
        ),
        claims=[
            Claim(
                c["id"], c["says"], c.get("better"), c.get("than"), c["metric"],
                tuple(c["datasets"]) if c.get("datasets") else None,
                float(c.get("margin", 0.0)), int(c.get("min_pairs", 3)), c.get("replicate", "seed"),
                c.get("source"), c.get("quote"), c.get("kind", "paired"), c.get("size"),
                tuple(c["methods"]) if c.get("methods") else None,
                float(c["at_most"]) if "at_most" in c else None, float(c["at_least"]) if "at_least" in c else None,
                dict(c["precondition"]) if c.get("precondition") else None, dict(c),
            )
            for c in claim_entries(resolved, grid_members(resolved["datasets"], expansion))
        ],
        resolved=resolved,
    )
