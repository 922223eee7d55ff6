"""``kind: equivalence``: "A and B are on par on the metric, within ±margin", the claim a paper makes when it says
its method matches a baseline.

The evidence is the paired one of :mod:`harness.claims.paired` (the same independent pairs, the same 95%
t-interval of the mean difference), read against both ends of the margin: the whole interval inside
(−margin, +margin) is ``reproduced``; the whole interval at or beyond one end (the two differ by at least the margin)
is ``not reproduced``; an interval that crosses an end is ``inconclusive``. Two one-sided paired claims with
opposite signs could say half of this each; one equivalence claim says it at once and cannot be read as a win.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Sequence

from harness.claims.base import (
    DATASET_SEED, INCONCLUSIVE, NOT_REPRODUCED, REPLICATE_SCHEMA, REPRODUCED, SEED, ClaimKind, MarginGap,
    SpecContext, VerdictMixin, decided_by_precondition, interval_verdict,
)
from harness.claims.paired import DatasetEvidence, paired_cells, per_dataset_evidence, replicates

EQUIVALENCE = "equivalence"
TEST_EQUIVALENCE = ("paired t-test over independent pairs, 95% interval of the mean difference, against both ends of "
                    "±margin")


@dataclass
class EquivalenceVerdict(VerdictMixin):
    claim: str
    says: str
    verdict: str
    metric: str
    methods: list[str]  # the two methods, the difference taken as first − second (oriented by the metric's goal)
    margin: float
    pairs: int
    mean_difference: float | None
    interval: tuple[float, float] | None
    test: str
    reason: str
    replicate: str = SEED
    unit: str = "seeds"
    cells: int = 0
    per_dataset: list[DatasetEvidence] = field(default_factory=list)
    source: str | None = None
    quote: str | None = None
    precondition: str | None = None

    kind: ClassVar[str] = EQUIVALENCE

    def evidence(self) -> str:
        if self.mean_difference is None:
            return self.reason
        lo, hi = self.interval
        first, second = self.methods
        return (f"{first} − {second} on {self.metric} (oriented, + favours {first}): {self.mean_difference:+.4g}, "
                f"95% CI [{lo:+.4g}, {hi:+.4g}] against ±{self.margin:g}, {self.pairs_text()}; {self.reason}")

    def line(self) -> str:
        return f"{self.claim}: {self.verdict} — {self.evidence()}"

    def details(self) -> list[str]:
        out = []
        if self.per_dataset:
            first, second = self.methods
            out.append(f"per dataset ({first} − {second}, + favours {first}): {self.spread_text()}")
        out.append(" ".join(self.provenance().split()))
        return out


def equivalence_verdict(claim: dict, rows, goal: str, order: Sequence[str] = ()) -> EquivalenceVerdict:
    first, second = claim["methods"]
    margin = float(claim["margin"])
    min_pairs = int(claim.get("min_pairs", 3))
    replicate = claim.get("replicate", SEED)
    cells = paired_cells({**claim, "better": first, "than": second}, rows, goal)
    d, unit = replicates(cells, replicate)
    base = dict(claim=claim["id"], says=claim["says"], metric=claim["metric"], methods=[first, second], margin=margin,
                pairs=len(d), test=TEST_EQUIVALENCE, replicate=replicate, unit=unit, cells=len(cells),
                per_dataset=per_dataset_evidence(cells, order), source=claim.get("source"), quote=claim.get("quote"))
    if len(d) < min_pairs:
        return EquivalenceVerdict(verdict=INCONCLUSIVE, mean_difference=None, interval=None,
                                  reason=f"only {len(d)} independent pair{'' if len(d) == 1 else 's'} ({unit}) with "
                                         f"both methods ok; the claim needs at least {min_pairs}", **base)
    from harness.stats import one_sided_t

    result = one_sided_t(d)
    lo, hi = result.interval
    # each end read by the one interval rule: above −margin, and (mirrored) below +margin
    above = interval_verdict(lo, hi, -margin)
    below = interval_verdict(-hi, -lo, -margin)
    if above == below == REPRODUCED:
        verdict, reason = REPRODUCED, f"the whole interval lies inside ±{margin:g}"
    elif NOT_REPRODUCED in (above, below):
        verdict, reason = NOT_REPRODUCED, f"the whole interval lies at or beyond ±{margin:g}: the two are not on par"
    else:
        more = "more seeds or datasets" if replicate == DATASET_SEED else "more seeds"
        verdict, reason = INCONCLUSIVE, f"the interval crosses ±{margin:g}; {more} could decide it"
    return EquivalenceVerdict(verdict=verdict, mean_difference=result.mean, interval=(lo, hi), reason=reason, **base)


class EquivalenceKind(ClaimKind):
    name = EQUIVALENCE
    order = 5
    summary = ("`equivalence`: the two `methods` are on par on the metric: the 95% interval of their paired "
               "difference lies wholly inside ±`margin`.")
    properties = {"methods": {"type": "array", "minItems": 1, "uniqueItems": True, "items": {"type": "string"},
                              "description": "kind: equivalence: the two method ids claimed on par."},
                  "replicate": REPLICATE_SCHEMA}
    rules = [{"required": ["methods", "margin"]}]
    method_keys = ("methods",)
    heading = "Equivalence claims"
    about = ("Each claim is the paired t-test of the claims above, read against both ends of its margin: the whole "
             "95% interval of the mean difference inside ±margin is reproduced, wholly beyond one end not reproduced.")
    legend = "(an equivalence claim: reproduced when the whole 95% interval of the paired difference lies inside ±margin)"

    def problems(self, claim: dict, path: tuple, spec: SpecContext, report) -> None:
        if len(claim.get("methods", ())) != 2:
            report(path + ("methods",), f"an equivalence claim names two methods; found {len(claim['methods'])}")
        if not claim.get("margin", 0) > 0:
            report(path + ("margin",), "an equivalence claim needs a margin above 0: the difference that still counts "
                                       "as on par, in the metric's units")

    def check(self, claim: dict, rows, goal: str, order: Sequence[str] = ()) -> EquivalenceVerdict:
        return equivalence_verdict(claim, rows, goal, order)

    def margin_gaps(self, verdict, claim: dict) -> list[MarginGap]:
        """The interval against whichever end of ±margin it comes nearer."""
        if verdict.interval is None or decided_by_precondition(verdict):
            return []
        low, high = map(float, verdict.interval)
        margin = float(claim["margin"])
        nearer = min((-margin, margin), key=lambda end: min(abs(low - end), abs(high - end)))
        return [MarginGap("", low, high, nearer)]


KIND = EquivalenceKind()
