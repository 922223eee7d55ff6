"""``kind: gap``: "A's lead over B is larger on these datasets than on those": the claim a paper makes when it says
its gain is largest with little data, or where a confounder is densest.

Per seed, the paired difference A − B (oriented by the metric's goal, as :mod:`harness.claims.paired` takes it) is
averaged over the claim's ``datasets`` and, apart, over its ``than_datasets``; the seed's pair is the first mean
minus the second (a difference of differences). Over the seeds where both groups have a difference, the 95%
t-interval of its mean is read against the margin by the one interval rule: wholly above it ``reproduced``, wholly
at or below it ``not reproduced``, straddling it ``inconclusive``. Each group's own mean difference is reported
beside it, so a larger gap made of a smaller loss reads as such.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Sequence

from harness.claims.base import (
    INCONCLUSIVE, ClaimKind, SpecContext, VerdictMixin, t_verdict,
)
from harness.claims.paired import PAIR_PROPERTIES, DatasetEvidence, paired_cells, per_dataset_evidence

GAP = "gap"
TEST_GAP = ("paired t-test over seeds of each seed's difference of differences (A − B averaged over `datasets`, "
            "minus A − B averaged over `than_datasets`), 95% interval of its mean")


@dataclass
class GapVerdict(VerdictMixin):
    claim: str
    says: str
    verdict: str
    metric: str
    better: str
    than: str
    datasets: list[str]
    than_datasets: list[str]
    pairs: int
    mean_difference: float | None  # of the difference of differences
    interval: tuple[float, float] | None
    gap_on_datasets: float | None  # the mean of A − B over `datasets`, over the seeds counted
    gap_on_than_datasets: float | None
    test: str
    reason: str
    unit: str = "seeds"
    cells: int = 0
    per_dataset: list[DatasetEvidence] = field(default_factory=list)
    source: str | None = None
    quote: str | None = None
    precondition: str | None = None

    kind: ClassVar[str] = GAP

    def evidence(self) -> str:
        if self.mean_difference is None:
            return self.reason
        lo, hi = self.interval
        return (f"{self.better} − {self.than} on {self.metric} (oriented, + favours {self.better}): "
                f"{self.gap_on_datasets:+.4g} on {', '.join(self.datasets)} against {self.gap_on_than_datasets:+.4g} "
                f"on {', '.join(self.than_datasets)}; the difference {self.mean_difference:+.4g}, 95% CI [{lo:+.4g}, "
                f"{hi:+.4g}], {self.pairs_text()}; {self.reason}")

    def line(self) -> str:
        return f"{self.claim}: {self.verdict} — {self.evidence()}"

    def details(self) -> list[str]:
        out = []
        if self.per_dataset:
            out.append(f"per dataset ({self.better} − {self.than}, + favours {self.better}): {self.spread_text()}")
        out.append(" ".join(self.provenance().split()))
        return out


def gap_verdict(claim: dict, rows, goal: str, order: Sequence[str] = ()) -> GapVerdict:
    larger, smaller = list(claim["datasets"]), list(claim["than_datasets"])
    min_pairs = int(claim.get("min_pairs", 3))
    margin = float(claim.get("margin", 0.0))
    cells = paired_cells({**claim, "datasets": larger + smaller}, rows, goal)
    by_seed: dict[int, dict[bool, list[float]]] = {}
    for (dataset, seed), difference in cells.items():
        by_seed.setdefault(seed, {True: [], False: []})[dataset in larger].append(difference)
    seeds = sorted(seed for seed, groups in by_seed.items() if groups[True] and groups[False])
    first = [sum(by_seed[s][True]) / len(by_seed[s][True]) for s in seeds]
    second = [sum(by_seed[s][False]) / len(by_seed[s][False]) for s in seeds]
    pairs = [a - b for a, b in zip(first, second)]
    base = dict(claim=claim["id"], says=claim["says"], metric=claim["metric"], better=claim["better"],
                than=claim["than"], datasets=larger, than_datasets=smaller, pairs=len(pairs), test=TEST_GAP,
                cells=len(cells), per_dataset=per_dataset_evidence(cells, order), source=claim.get("source"),
                quote=claim.get("quote"))
    if len(pairs) < min_pairs:
        return GapVerdict(verdict=INCONCLUSIVE, mean_difference=None, interval=None, gap_on_datasets=None,
                          gap_on_than_datasets=None,
                          reason=f"only {len(pairs)} seed{'' if len(pairs) == 1 else 's'} with both methods ok on "
                                 f"both groups of datasets; the claim needs at least {min_pairs}", **base)
    result, verdict, reason = t_verdict(pairs, margin)
    lo, hi = result.interval
    return GapVerdict(verdict=verdict, mean_difference=result.mean, interval=(lo, hi),
                      gap_on_datasets=sum(first) / len(first), gap_on_than_datasets=sum(second) / len(second),
                      reason=reason, **base)


class GapKind(ClaimKind):
    name = GAP
    order = 4
    summary = ("`gap`: `better`'s lead over `than` is larger on `datasets` than on `than_datasets`: the 95% interval "
               "of the seeds' difference of differences lies above `margin`.")
    properties = {
        **PAIR_PROPERTIES,
        "than_datasets": {"type": "array", "minItems": 1, "uniqueItems": True, "items": {"type": "string"},
                          "description": "kind: gap: the datasets where the lead is claimed smaller (`datasets`: "
                                         "where it is claimed larger)."},
    }
    rules = [{"required": ["better", "than", "datasets", "than_datasets"]}]
    method_keys = ("better", "than")
    heading = "Gap claims"
    about = ("Each claim compares one method's lead over another between two groups of datasets: per seed, the mean "
             "paired difference over the first group minus that over the second, a 95% t-interval over seeds of "
             "that difference of differences, read against the margin.")
    legend = ("(a gap claim: reproduced when the 95% interval of the seeds' difference of differences lies above the "
              "margin)")

    def problems(self, claim: dict, path: tuple, spec: SpecContext, report) -> None:
        larger = set(spec.named_datasets(claim.get("datasets") or ()))
        for j, name in enumerate(claim.get("than_datasets") or ()):
            if name not in spec.datasets and name not in spec.members:
                report(path + ("than_datasets", j), f"no dataset {name!r} in this spec; its datasets: "
                                                     + ", ".join(sorted(spec.datasets)))
            elif larger & set(spec.named_datasets([name])):
                report(path + ("than_datasets", j), f"{name!r} is also in `datasets`: the two groups must not share "
                                                     "a dataset")

    def check(self, claim: dict, rows, goal: str, order: Sequence[str] = ()) -> GapVerdict:
        return gap_verdict(claim, rows, goal, order)


KIND = GapKind()
