"""Rules on timing claims: a warm-up inside the measurement, and a difference within the method's own noise."""
from __future__ import annotations

import math
import statistics

from harness.audit.base import Folder, Rule, claim_methods

WARM_UP_RATIO = 1.3  # the first seed this much slower than the median of the others, on most datasets: a warm-up


def _timed(folder: Folder, claim: dict):
    """The claim's metric, when it is read off a clock and some row has it; else None."""
    from harness.metrics import WALL_CLOCK_UNITS

    metric = folder.metrics.get(claim["metric"])
    if metric is None or metric.unit not in WALL_CLOCK_UNITS or claim["metric"] not in folder.cells:
        return None
    return metric


class TimingIncludesWarmUp(Rule):
    name = "timing-includes-warm-up"
    about = (f"A timing claim's first seed, which a worker runs first, more than {WARM_UP_RATIO}x slower than the "
             "median of the method's other seeds on most datasets includes a warm-up (imports, compilation, "
             "caches) the other seeds do not pay: time with warm-up calls excluded.")

    def findings(self, folder: Folder):
        cells = folder.cells
        for claim in folder.claims.values():
            metric = _timed(folder, claim)
            if metric is None:
                continue
            log = metric.unit.startswith("ln")
            methods = claim_methods(claim)
            ok = cells[(cells["status"] == "ok") & cells[claim["metric"]].notna() & cells["method"].isin(methods)]
            first = ok["seed"].min() if len(ok) else None
            slow: dict[str, tuple[int, int]] = {}
            for (dataset, method), group in ok.groupby(["dataset", "method"], sort=False, observed=True):
                others = group.loc[group["seed"] != first, claim["metric"]].tolist()
                head = group.loc[group["seed"] == first, claim["metric"]].tolist()
                if not head or len(others) < 2:
                    continue
                ratio = (math.exp(head[0] - statistics.median(others)) if log
                         else head[0] / statistics.median(others) if statistics.median(others) > 0 else 1.0)
                hits, seen = slow.get(method, (0, 0))
                slow[method] = (hits + (ratio > WARM_UP_RATIO), seen + 1)
            flagged = [f"{m} on {h} of {n} datasets" for m, (h, n) in slow.items() if n and h > n / 2]
            if flagged:
                yield self.finding(folder, f"seed {first} is more than {WARM_UP_RATIO}x slower than the median of the "
                                           f"other seeds for {'; '.join(flagged)}", claim=claim["id"])


class TimingWithinNoise(Rule):
    name = "timing-within-noise"
    about = ("A timing claim's difference should be larger than the spread of the same method's repeats (the "
             "metric's spread, recorded by the timing helper, harness.tasks.timing): a difference inside it is "
             "the noise of one call.")

    def findings(self, folder: Folder):
        from harness.audit.base import compared_arms

        cells = folder.cells
        for claim in folder.claims.values():
            arms = compared_arms(claim)
            if arms is None or _timed(folder, claim) is None:
                continue
            spread = next((n for n, m in folder.metrics.items() if m.spread_of == claim["metric"] and n in cells), None)
            if spread is None:
                continue
            wanted = set(claim.get("datasets") or ()) or None
            ok = cells[(cells["status"] == "ok") & cells["method"].isin(arms)]
            if wanted is not None:
                ok = ok[ok["dataset"].isin(wanted)]
            by_arm = {arm: ok[ok["method"] == arm].set_index(["dataset", "seed"]) for arm in arms}
            both = by_arm[arms[0]].index.intersection(by_arm[arms[1]].index)
            if not len(both):
                continue
            a, b = (by_arm[arm].loc[both] for arm in arms)
            difference = float((a[claim["metric"]] - b[claim["metric"]]).abs().mean())
            noise = float(((a[spread] + b[spread]) / 2).mean())
            if difference <= noise:
                yield self.finding(folder, f"the mean |difference| of {arms[0]} and {arms[1]} ({difference:.4g} s) "
                                           f"is within the spread of their repeats ({noise:.4g} s, {spread})",
                                   claim=claim["id"])


RULES = [TimingIncludesWarmUp(), TimingWithinNoise()]
