"""A spec's claims, checked on its runs: a paired comparison over independent replicates.

For a claim "A is better than B on metric M over datasets D", every (dataset, seed) cell
where both methods finished gives one difference, signed so that positive favours A. The
unit of replication is the **seed** (``replicate: seed``, the default): the differences of
one seed across the claim's datasets are averaged first, giving one independent pair per
seed, because the cells of one seed can share what the seed drew (one source model trained
per seed and evaluated on every target, say). A claim whose datasets are independent draws
at one seed (no shared training, no shared source data) says ``replicate: dataset-seed``,
and then every cell is a pair.

The verdict comes from the 95% t-interval of the mean of the independent pairs (a paired
t-test, :mod:`harness.stats`):

- ``reproduced``: the whole interval lies above the claim's margin;
- ``not reproduced``: the whole interval lies at or below it (B is at least as good);
- ``inconclusive``: the interval straddles the margin, or there are fewer independent pairs
  than ``min_pairs`` (3 by default). Too few seeds never passes silently.

Beside the pooled verdict each dataset's own mean difference is kept (``per_dataset``), so a
pooled win made of one large gain and four ties reads as such; and the claim's ``source``
(``paper``, with its ``quote``, or ``harness``: a hypothesis the paper does not test itself)
goes with the verdict, so a theory paper's "reproduced" reads as what it is.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

from harness.stats import mean_and_half_width, no_spread, one_sided_t

REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE = "reproduced", "not reproduced", "inconclusive"
SEED, DATASET_SEED = "seed", "dataset-seed"
REPLICATES = (SEED, DATASET_SEED)
PAPER, HARNESS = "paper", "harness"
TEST = "paired t-test over (dataset, seed), 95% interval of the mean difference"  # replicate: dataset-seed
TEST_BY_SEED = ("paired t-test over seeds (each seed's differences averaged over the claim's datasets), "
                "95% interval of the mean difference")


@dataclass
class DatasetEvidence:
    """One dataset's share of a claim: its mean difference over the seeds where both methods are ok."""

    dataset: str
    seeds: int
    mean_difference: float
    half_width: float | None  # of the 95% t-interval over seeds; None with one seed
    no_spread: bool  # the difference is the same in every seed: the seed does not change it

    def text(self) -> str:
        if self.no_spread:
            spread = f" (the same in all {self.seeds} seeds)"
        elif self.half_width is None:
            spread = " (1 seed)"
        else:
            spread = f" ± {self.half_width:.3g}"
        return f"{self.dataset} {self.mean_difference:+.4g}{spread}"


@dataclass
class Verdict:
    claim: str
    says: str
    verdict: str
    metric: str
    better: str
    than: str
    pairs: int  # independent pairs: seeds, or (dataset, seed) cells with replicate: dataset-seed
    mean_difference: float | None
    interval: tuple[float, float] | None
    p_value: float | None
    test: str
    reason: str
    replicate: str = SEED
    unit: str = "seeds"  # what one independent pair is, in words
    cells: int = 0  # (dataset, seed) cells where both methods are ok
    per_dataset: list[DatasetEvidence] = field(default_factory=list)
    source: str | None = None  # "paper" or "harness"
    quote: str | None = None

    def pairs_text(self) -> str:
        return f"{self.pairs} independent pair{'' if self.pairs == 1 else 's'} ({self.unit})"

    def provenance(self) -> str:
        """Where the claim comes from, for the page and ``harness check``."""
        if self.source == PAPER:
            return f"from the paper: {self.quote}"
        if self.source == HARNESS:
            return "a hypothesis this harness tests" + (f"; {self.quote}" if self.quote else "")
        return "source not stated"

    def spread_text(self) -> str:
        """Each dataset's mean difference (+ favours ``better``), with its 95% half-width over seeds."""
        return "; ".join(e.text() for e in self.per_dataset)

    def line(self) -> str:
        numbers = ""
        if self.mean_difference is not None:
            lo, hi = self.interval
            numbers = (f" — {self.better} vs {self.than} on {self.metric}: mean difference {self.mean_difference:+.4g} "
                       f"(95% CI [{lo:+.4g}, {hi:+.4g}], one-sided p = {self.p_value:.3g}, {self.pairs_text()})")
        return f"{self.claim}: {self.verdict}{numbers}; {self.reason}"

    def details(self) -> list[str]:
        """The lines that follow :meth:`line` in ``harness check``: the spread over datasets, the source."""
        out = []
        if self.per_dataset:
            out.append(f"per dataset ({self.better} − {self.than}, + favours {self.better}): {self.spread_text()}")
        out.append(" ".join(self.provenance().split()))
        return out

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def paired_cells(claim: dict, rows: list[dict], goal: str) -> dict[tuple[str, int], float]:
    """(dataset, seed) → difference (oriented so that positive favours ``better``), where both methods are ok."""
    wanted = set(claim.get("datasets") or ()) or None
    by_cell: dict[tuple[str, int, str], float] = {}
    for row in rows:
        if row["status"] == "ok" and claim["metric"] in row["metrics"] and (wanted is None or row["dataset"] in wanted):
            by_cell[(row["dataset"], row["seed"], row["method"])] = row["metrics"][claim["metric"]]
    differences = {}
    for (dataset, seed, method), value in sorted(by_cell.items()):
        if method == claim["better"] and (dataset, seed, claim["than"]) in by_cell:
            other = by_cell[(dataset, seed, claim["than"])]
            differences[(dataset, seed)] = value - other if goal == "max" else other - value
    return differences


def paired_differences(claim: dict, rows: list[dict], goal: str) -> list[float]:
    """Every (dataset, seed) cell's difference, oriented so that positive favours ``better``."""
    return list(paired_cells(claim, rows, goal).values())


def replicates(cells: dict[tuple[str, int], float], replicate: str = SEED) -> tuple[list[float], str]:
    """The independent pairs of a claim and what one of them is, in words.

    ``seed``: one pair per seed, the mean of that seed's differences over the datasets;
    ``dataset-seed``: one pair per cell.
    """
    if replicate not in REPLICATES:
        raise ValueError(f"replicate {replicate!r}: expected one of {', '.join(REPLICATES)}")
    datasets = {dataset for dataset, _ in cells}
    if replicate == DATASET_SEED and len(datasets) > 1:
        return list(cells.values()), "(dataset, seed) cells: the claim declares its datasets independent draws"
    by_seed: dict[int, list[float]] = {}
    for (_, seed), difference in sorted(cells.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        by_seed.setdefault(seed, []).append(difference)
    counts = sorted({len(v) for v in by_seed.values()})
    if len(datasets) <= 1:
        unit = "seeds; one dataset" if datasets else "seeds"
    elif len(counts) == 1:
        unit = f"seeds; each the mean over {counts[0]} datasets"
    else:
        unit = f"seeds; each the mean over {counts[0]}–{counts[-1]} datasets"
    return [sum(v) / len(v) for v in by_seed.values()], unit


def per_dataset_evidence(cells: dict[tuple[str, int], float], order: Sequence[str] = ()) -> list[DatasetEvidence]:
    by_dataset: dict[str, list[float]] = {}
    for (dataset, _), difference in cells.items():
        by_dataset.setdefault(dataset, []).append(difference)
    rank = {d: i for i, d in enumerate(order)}
    evidence = []
    for dataset in sorted(by_dataset, key=lambda d: (rank.get(d, len(rank)), d)):
        values = by_dataset[dataset]
        mean, half = mean_and_half_width(values)
        evidence.append(DatasetEvidence(dataset, len(values), mean, half, no_spread(values)))
    return evidence


def check_claim(claim: dict, rows: list[dict], goal: str, order: Sequence[str] = ()) -> Verdict:
    """The claim's verdict on ``rows``; ``order`` lists dataset ids in the order the page shows them."""
    margin = float(claim.get("margin", 0.0))
    min_pairs = int(claim.get("min_pairs", 3))
    replicate = claim.get("replicate", SEED)
    cells = paired_cells(claim, rows, goal)
    d, unit = replicates(cells, replicate)
    base = dict(claim=claim["id"], says=claim["says"], metric=claim["metric"], better=claim["better"],
                than=claim["than"], pairs=len(d), test=TEST if replicate == DATASET_SEED else TEST_BY_SEED,
                replicate=replicate, unit=unit, cells=len(cells), per_dataset=per_dataset_evidence(cells, order),
                source=claim.get("source"), quote=claim.get("quote"))
    if len(d) < min_pairs:
        return Verdict(verdict=INCONCLUSIVE, mean_difference=None, interval=None, p_value=None,
                       reason=f"only {len(d)} independent pair{'' if len(d) == 1 else 's'} ({unit}) with both methods "
                              f"ok; the claim needs at least {min_pairs}", **base)
    result = one_sided_t(d, margin)
    lo, hi = result.interval
    side = f"the margin {margin:g}" if margin else "0"
    if lo > margin:
        verdict, reason = REPRODUCED, f"the whole interval is above {side}"
    elif hi <= margin:
        verdict, reason = NOT_REPRODUCED, f"the whole interval is at or below {side}: {claim['than']} is at least as good"
    else:
        more = "more seeds or datasets" if replicate == DATASET_SEED else "more seeds"
        verdict, reason = INCONCLUSIVE, f"the interval contains {side}; {more} could decide it"
    return Verdict(verdict=verdict, mean_difference=result.mean, interval=(lo, hi), p_value=result.p_value,
                   reason=reason, **base)
