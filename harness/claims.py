"""A spec's claims, checked on its runs: a paired comparison over (dataset, seed).

For a claim "A is better than B on metric M", every (dataset, seed) where both methods
finished gives one difference, signed so that positive favours A. The verdict comes from
the 95% t-interval of the mean difference (a paired t-test, :mod:`harness.stats`):

- ``reproduced``: the whole interval lies above the claim's margin;
- ``not reproduced``: the whole interval lies at or below it (B is at least as good);
- ``inconclusive``: the interval straddles the margin, or there are fewer pairs than
  ``min_pairs`` (3 by default). Too few seeds never passes silently.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from harness.stats import one_sided_t

REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE = "reproduced", "not reproduced", "inconclusive"
TEST = "paired t-test over (dataset, seed), 95% interval of the mean difference"


@dataclass
class Verdict:
    claim: str
    says: str
    verdict: str
    metric: str
    better: str
    than: str
    pairs: int
    mean_difference: float | None
    interval: tuple[float, float] | None
    p_value: float | None
    test: str
    reason: str

    def line(self) -> str:
        numbers = ""
        if self.mean_difference is not None:
            lo, hi = self.interval
            numbers = (f" — {self.better} vs {self.than} on {self.metric}: mean difference {self.mean_difference:+.4g} "
                       f"(95% CI [{lo:+.4g}, {hi:+.4g}], one-sided p = {self.p_value:.3g}, {self.pairs} pairs)")
        return f"{self.claim}: {self.verdict}{numbers}; {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def paired_differences(claim: dict, rows: list[dict], goal: str) -> list[float]:
    """Differences (oriented so that positive favours ``better``) over shared (dataset, seed)."""
    wanted = set(claim.get("datasets") or ()) or None
    by_cell: dict[tuple[str, int, str], float] = {}
    for row in rows:
        if row["status"] == "ok" and claim["metric"] in row["metrics"] and (wanted is None or row["dataset"] in wanted):
            by_cell[(row["dataset"], row["seed"], row["method"])] = row["metrics"][claim["metric"]]
    differences = []
    for (dataset, seed, method), value in sorted(by_cell.items()):
        if method == claim["better"] and (dataset, seed, claim["than"]) in by_cell:
            other = by_cell[(dataset, seed, claim["than"])]
            differences.append(value - other if goal == "max" else other - value)
    return differences


def check_claim(claim: dict, rows: list[dict], goal: str) -> Verdict:
    margin = float(claim.get("margin", 0.0))
    min_pairs = int(claim.get("min_pairs", 3))
    d = paired_differences(claim, rows, goal)
    base = dict(claim=claim["id"], says=claim["says"], metric=claim["metric"], better=claim["better"],
                than=claim["than"], pairs=len(d), test=TEST)
    if len(d) < min_pairs:
        return Verdict(verdict=INCONCLUSIVE, mean_difference=None, interval=None, p_value=None,
                       reason=f"only {len(d)} paired results (both methods ok on the same dataset and seed); "
                              f"the claim needs at least {min_pairs}", **base)
    result = one_sided_t(d, margin)
    lo, hi = result.interval
    side = f"the margin {margin:g}" if margin else "0"
    if lo > margin:
        verdict, reason = REPRODUCED, f"the whole interval is above {side}"
    elif hi <= margin:
        verdict, reason = NOT_REPRODUCED, f"the whole interval is at or below {side}: {claim['than']} is at least as good"
    else:
        verdict, reason = INCONCLUSIVE, f"the interval contains {side}; more seeds or datasets could decide it"
    return Verdict(verdict=verdict, mean_difference=result.mean, interval=(lo, hi), p_value=result.p_value,
                   reason=reason, **base)
