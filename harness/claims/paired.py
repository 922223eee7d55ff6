"""``kind: paired`` (the default): "A is better than B on metric M over datasets D", a paired comparison over
independent replicates.

For every (dataset, seed) cell where both methods finished there is one difference, signed so that positive
favours A. The unit of replication is the **seed** (``replicate: seed``, the default): the differences of one seed
across the claim's datasets are averaged first, giving one independent pair per seed, because the cells of one
seed can share what the seed drew (one source model trained per seed and evaluated on every target, say). A claim
whose datasets are independent draws at one seed (no shared training, no shared source data) says
``replicate: dataset-seed``, and then every cell is a pair.

The verdict comes from the 95% t-interval of the mean of the independent pairs (a paired t-test,
:mod:`harness.stats`) by the rule of :func:`harness.claims.base.interval_verdict`; fewer independent pairs than
``min_pairs`` (3 by default) is ``inconclusive``: too few seeds never passes silently. Beside the pooled verdict
each dataset's own mean difference is kept (``per_dataset``), so a pooled win made of one large gain and four ties
reads as such.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Sequence

from harness.claims._rows import claim_columns
from harness.claims.base import (
    DATASET_SEED, INCONCLUSIVE, REPLICATE_SCHEMA, REPLICATES, SEED, ClaimKind,
    SpecContext, VerdictMixin, t_verdict,
)

PAIRED = "paired"
TEST = "paired t-test over (dataset, seed), 95% interval of the mean difference"  # replicate: dataset-seed
TEST_BY_SEED = ("paired t-test over seeds (each seed's differences averaged over the claim's datasets), "
                "95% interval of the mean difference")
PAIR_PROPERTIES = {
    "better": {"type": "string", "description": (
        "Method id claimed to be better (paired, scaling: the one whose metric grows more slowly, for a metric to "
        "minimise).")},
    "than": {"type": "string", "description": "Method id it is compared with."},
}


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
class Verdict(VerdictMixin):
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
    precondition: str | None = None  # the precondition's own check, in words (absent when the claim states none)

    kind: ClassVar[str] = PAIRED

    def to_dict(self) -> dict:
        """The record :class:`~harness.claims.base.VerdictMixin` writes, each dataset's evidence copied as a dict of
        its fields rather than by dataclasses.asdict's deep copy (16,667 of them on the 1M-row folder: 0.3 s)."""
        import copy

        bare = copy.copy(self)
        bare.per_dataset = []
        record = VerdictMixin.to_dict(bare)
        record["per_dataset"] = [dict(vars(evidence)) for evidence in self.per_dataset]
        return record

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

    def evidence(self) -> str:
        """The numbers behind the verdict, for the page: the oriented difference, its interval, the pairs."""
        if self.mean_difference is None:
            return self.reason
        lo, hi = self.interval
        return (f"{self.better} − {self.than} on {self.metric} (oriented, + favours {self.better}): "
                f"{self.mean_difference:+.4g}, 95% CI [{lo:+.4g}, {hi:+.4g}], p = {self.p_value:.3g}, "
                f"{self.pairs_text()}; {self.reason}")


def paired_cells(claim: dict, rows, goal: str) -> dict[tuple[str, int], float]:
    """(dataset, seed) → difference (oriented so that positive favours ``better``), where both methods are ok;
    in the order of (dataset, seed).

    Where the rows span several device classes, the two cells of a difference are of one class (a GPU's time
    is never paired with a CPU's), and a (dataset, seed) measured on several classes gives the mean of its
    classes' differences: the seed's draw counts once, whatever ran it.
    """
    wanted = set(claim.get("datasets") or ()) or None
    metric, better, than = claim["metric"], claim.get("better"), claim.get("than")
    from harness.results_table import classes_apart

    if not classes_apart(rows):  # one class: a join of the two methods' cells on (dataset, seed), the latest winning
        found = {}
        for method in dict.fromkeys((better, than)):
            datasets, seeds, values = claim_columns(rows, ("dataset", "seed"), metric, (method,), wanted, measured=True)
            found[method] = dict(zip(zip(datasets, seeds), values))
        return _joined(found[better], found[than], goal)
    from harness.devices import device_class

    by_cell: dict[tuple[str, int, str, str], float] = {}
    for dataset, seed, device, method, value in zip(*claim_columns(
            rows, ("dataset", "seed", "device", "method"), metric, tuple(dict.fromkeys((better, than))), wanted,
            measured=True)):  # only these two methods' rows count
        by_cell[(dataset, seed, device_class(device) or "", method)] = value
    by_class: dict[tuple[str, int], list[float]] = {}
    for (dataset, seed, device, method), value in sorted(by_cell.items()):
        if method == better and (dataset, seed, device, than) in by_cell:
            other = by_cell[(dataset, seed, device, than)]
            by_class.setdefault((dataset, seed), []).append(value - other if goal == "max" else other - value)
    return {cell: d[0] if len(d) == 1 else sum(d) / len(d) for cell, d in by_class.items()}


def _joined(mine: dict[tuple[str, int], float], theirs: dict[tuple[str, int], float],
            goal: str) -> dict[tuple[str, int], float]:
    """The (dataset, seed) cells both methods have, in order, each difference oriented to favour ``mine``."""
    if goal == "max":
        return {cell: mine[cell] - theirs[cell] for cell in sorted(mine) if cell in theirs}
    return {cell: theirs[cell] - mine[cell] for cell in sorted(mine) if cell in theirs}


class _Pairs:
    """:func:`paired_cells` as arrays, for a claim on float metrics in a folder of one device class (the paired
    claim's usual case: 166,670 cells on the 1M-row folder, whose dicts, sorts and lists per seed and per dataset
    took a second). The cells in the order of (dataset, seed): ``dataset`` (codes into ``datasets``, numbered in
    the datasets' sorted order), ``seed`` (codes into ``seeds``, sorted) and ``difference``, oriented so that
    positive favours ``better``. :meth:`replicates` and :meth:`per_dataset` give what :func:`replicates` and
    :func:`per_dataset_evidence` give for the dict, float for float (tests/test_claim_arrays.py)."""

    def __init__(self, datasets: list[str], dataset, seeds: list[int], seed, difference):
        self.datasets, self.dataset, self.seeds, self.seed, self.difference = datasets, dataset, seeds, seed, difference

    def __len__(self) -> int:
        return len(self.difference)

    @classmethod
    def of(cls, claim: dict, rows, goal: str) -> "_Pairs | None":
        """The claim's cells, or None where the dicts are needed: rows on several device classes (a mean of each
        cell's classes' differences) or a metric some row recorded as an integer (a difference of two integers is
        one)."""
        import numpy as np
        import pandas as pd

        from harness.results_table import INTEGER, classes_apart, is_in, metric_array

        metric, better, than = claim["metric"], claim.get("better"), claim.get("than")
        if INTEGER + metric in rows or rows["seed"].dtype != np.int64 or classes_apart(rows):
            return None
        values = metric_array(rows, metric)
        keep = is_in(rows, "status", ("ok",)) & is_in(rows, "method", (better, than)) & ~np.isnan(values)
        wanted = set(claim.get("datasets") or ())
        if wanted:
            keep &= is_in(rows, "dataset", wanted)
        at = np.flatnonzero(keep)  # the rows that count, in order
        values, method = values[at], rows["method"].cat.codes.to_numpy()[at]
        dataset = rows["dataset"].cat.codes.to_numpy()[at].astype(np.int64)
        names = rows["dataset"].cat.categories
        used = np.sort(pd.unique(dataset))
        texts = names[used].tolist()
        in_order = sorted(range(len(texts)), key=texts.__getitem__)
        rank = np.zeros(len(names), dtype=np.int64)
        rank[used[in_order]] = np.arange(len(used))  # a dataset's place among the claim's in sorted order
        seed, seeds = pd.factorize(rows["seed"].to_numpy()[at])  # hashed; then numbered in sorted order
        by_value = np.argsort(seeds)
        place = np.empty(len(seeds), dtype=np.int64)
        place[by_value] = np.arange(len(seeds))
        seeds, width = seeds[by_value], max(len(seeds), 1)
        key = rank[dataset] * width + place[seed]
        found = {}
        for name in dict.fromkeys((better, than)):
            code = _code_of(rows, "method", name)
            mine = np.flatnonzero(method == code)[::-1]
            cells, last = np.unique(key[mine], return_index=True)  # sorted; each cell's last row
            found[name] = cells, values[mine[last]]
        (mine, ours), (theirs, others) = found[better], found[than]
        cells, at_mine, at_theirs = np.intersect1d(mine, theirs, assume_unique=True, return_indices=True)
        difference = ours[at_mine] - others[at_theirs] if goal == "max" else others[at_theirs] - ours[at_mine]
        return cls([texts[i] for i in in_order], cells // width, seeds.tolist(), cells % width, difference)

    def cells(self) -> dict[tuple[str, int], float]:
        """As :func:`paired_cells` gives them."""
        datasets, seeds = _lookup(self.datasets, self.dataset), _lookup(self.seeds, self.seed)
        return dict(zip(zip(datasets, seeds), self.difference.tolist()))

    def replicates(self, replicate: str = SEED) -> tuple[list[float], str]:
        """:func:`replicates` of these cells."""
        import numpy as np

        if replicate not in REPLICATES:
            raise ValueError(f"replicate {replicate!r}: expected one of {', '.join(REPLICATES)}")
        datasets = len(np.unique(self.dataset))
        if replicate == DATASET_SEED and datasets > 1:
            return self.difference.tolist(), "(dataset, seed) cells: the claim declares its datasets independent draws"
        by_seed = np.lexsort((self.dataset, self.seed))  # by seed, then dataset
        values = self.difference[by_seed].tolist()
        ends = np.cumsum(np.bincount(self.seed, minlength=len(self.seeds))).tolist()
        samples = [values[start:end] for start, end in zip([0] + ends[:-1], ends) if end > start]
        return [sum(v) / len(v) for v in samples], _unit(datasets, sorted({len(v) for v in samples}))

    def per_dataset(self, order: Sequence[str] = ()) -> list[DatasetEvidence]:
        """:func:`per_dataset_evidence` of these cells."""
        import numpy as np

        from harness.stats import FLOAT_NOISE, summarise_arrays

        if not len(self):
            return []
        used, starts, sizes = np.unique(self.dataset, return_index=True, return_counts=True)  # cells are by dataset
        names = [self.datasets[d] for d in used.tolist()]
        mine = set(names)
        rank = {d: i for i, d in enumerate(order) if d in mine}  # as per_dataset_evidence's, for these datasets
        last = len(set(order))  # where a dataset the order does not name goes
        places = [rank.get(name, last) for name in names]
        shown = sorted(range(len(names)), key=lambda k: (places[k], names[k]))
        means, halves, flat = (np.empty(len(shown)) for _ in range(3))
        sizes, starts = sizes[shown], starts[shown]
        for size in dict.fromkeys(sizes.tolist()):  # the samples of one size at once, in the order shown
            at = np.flatnonzero(sizes == size)
            data = self.difference[starts[at][:, None] + np.arange(size)]
            means[at], halves[at] = summarise_arrays(data)
            low, high = data.min(axis=1), data.max(axis=1)
            flat[at] = (size >= 2) & (high - low <= FLOAT_NOISE * np.maximum(np.maximum(1.0, np.abs(low)),
                                                                           np.abs(high)))
        return [DatasetEvidence(names[k], size, mean, half if size >= 2 else None, bool(same))
                for k, size, mean, half, same in zip(shown, sizes.tolist(), means.tolist(), halves.tolist(),
                                                     flat.tolist())]


def _code_of(rows, name: str, value) -> int:
    """The code of ``value`` in categorical column ``name`` (-2 where no row can have it: no code matches)."""
    found = rows[name].cat.categories.get_indexer([value])[0]
    return int(found) if found >= 0 else -2


def _lookup(values: list, codes) -> list:
    import numpy as np

    table = np.empty(len(values), dtype=object)
    table[:] = values
    return table[codes].tolist()


def _unit(datasets: int, counts: list[int]) -> str:
    """What one independent pair of a seed-replicated claim is, in words (``counts``: the datasets per seed)."""
    if datasets <= 1:
        return "seeds; one dataset" if datasets else "seeds"
    if len(counts) == 1:
        return f"seeds; each the mean over {counts[0]} datasets"
    return f"seeds; each the mean over {counts[0]}–{counts[-1]} datasets"


def paired_differences(claim: dict, rows, goal: str) -> list[float]:
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
    return [sum(v) / len(v) for v in by_seed.values()], _unit(len(datasets), sorted({len(v) for v in by_seed.values()}))


def per_dataset_evidence(cells: dict[tuple[str, int], float], order: Sequence[str] = ()) -> list[DatasetEvidence]:
    by_dataset: dict[str, list[float]] = {}
    for (dataset, _), difference in cells.items():
        by_dataset.setdefault(dataset, []).append(difference)
    rank = {d: i for i, d in enumerate(order)}
    datasets = sorted(by_dataset, key=lambda d: (rank.get(d, len(rank)), d))
    from harness.stats import means_and_half_widths, no_spread

    summaries = means_and_half_widths([by_dataset[d] for d in datasets])  # at once: 16,667 datasets in one call
    return [DatasetEvidence(dataset, len(by_dataset[dataset]), mean, half, no_spread(by_dataset[dataset]))
            for dataset, (mean, half) in zip(datasets, summaries)]



def paired_verdict(claim: dict, rows, goal: str, order: Sequence[str] = ()) -> Verdict:
    """A paired comparison's verdict: the t-interval over independent pairs against the claim's margin."""
    margin = float(claim.get("margin", 0.0))
    min_pairs = int(claim.get("min_pairs", 3))
    replicate = claim.get("replicate", SEED)
    pairs = _Pairs.of(claim, rows, goal) if len(rows) else None
    if pairs is None:
        cells = paired_cells(claim, rows, goal)
        (d, unit), evidence, count = replicates(cells, replicate), per_dataset_evidence(cells, order), len(cells)
    else:
        (d, unit), evidence, count = pairs.replicates(replicate), pairs.per_dataset(order), len(pairs)
    base = dict(claim=claim["id"], says=claim["says"], metric=claim["metric"], better=claim["better"],
                than=claim["than"], pairs=len(d), test=TEST if replicate == DATASET_SEED else TEST_BY_SEED,
                replicate=replicate, unit=unit, cells=count, per_dataset=evidence,
                source=claim.get("source"), quote=claim.get("quote"))
    if len(d) < min_pairs:
        return Verdict(verdict=INCONCLUSIVE, mean_difference=None, interval=None, p_value=None,
                       reason=f"only {len(d)} independent pair{'' if len(d) == 1 else 's'} ({unit}) with both methods "
                              f"ok; the claim needs at least {min_pairs}", **base)
    more = "more seeds or datasets" if replicate == DATASET_SEED else "more seeds"
    result, verdict, reason = t_verdict(d, margin, f"{claim['than']} is at least as good", more)
    lo, hi = result.interval
    return Verdict(verdict=verdict, mean_difference=result.mean, interval=(lo, hi), p_value=result.p_value,
                   reason=reason, **base)


SPREAD_EXTREMES = 3  # beyond the page's limit of datasets, a claim's cell names this many datasets at each end


def spread_summary(evidence: list[DatasetEvidence], chance_datasets: set[str], at_chance: str) -> str:
    """A claim's per-dataset differences in one cell, beyond the page's limit of datasets: how many favour each
    side, the median, the datasets at each end; every dataset's own difference is in claims.json."""
    ordered = sorted(evidence, key=lambda e: e.mean_difference)
    values = [e.mean_difference for e in ordered]
    middle = len(values) // 2
    median = values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2
    ahead = sum(v > 0 for v in values)
    behind = sum(v < 0 for v in values)
    text = (f"{len(values)} datasets: + on {ahead}, − on {behind}, 0 on {len(values) - ahead - behind}; median "
            f"{median:+.4g}; most against: " + "; ".join(e.text() for e in ordered[:SPREAD_EXTREMES])
            + "; most for: " + "; ".join(e.text() for e in reversed(ordered[-SPREAD_EXTREMES:])))
    if chance_datasets:
        at = sum(e.dataset in chance_datasets for e in evidence)
        text += f"; every method {at_chance} on {at} of them"
    return text + "; every dataset's difference is in claims.json (per_dataset)"


class PairedKind(ClaimKind):
    name = PAIRED
    order = 0
    summary = "`paired` (the default): A is better than B on the metric, a paired test over independent replicates."
    properties = {**PAIR_PROPERTIES, "replicate": REPLICATE_SCHEMA}
    rules = [{"required": ["better", "than"]}]
    method_keys = ("better", "than")
    heading = "Claims"
    legend = ("(reproduced: the 95% interval of the paired difference over independent seeds lies above the "
              "claim's margin; not reproduced: at or below it; inconclusive: it straddles it, or too few pairs)")

    def problems(self, claim: dict, path: tuple, spec: SpecContext, report) -> None:
        if claim.get("better") is not None and claim.get("better") == claim.get("than"):
            report(path + ("than",), "a claim compares two different methods")

    def check(self, claim: dict, rows, goal: str, order: Sequence[str] = ()) -> Verdict:
        return paired_verdict(claim, rows, goal, order)

    def page_blocks(self, verdicts: list, board) -> list:
        from harness.report.blocks import AT_CHANCE, PAGE_LIMIT, Table, verdict_cell

        blocks: list = [("h2", self.heading), ("p",
                        "Each claim is a paired t-test over independent pairs: by default one per seed, the mean of "
                        "that seed's differences over the claim's datasets (they share what the seed drew); one per "
                        "(dataset, seed) cell only where the claim declares its datasets independent draws. "
                        "Per dataset: the mean difference over seeds ± the half-width of its 95% t-interval"
                        + (f"; “every method {AT_CHANCE}”: no method is above chance there, so its difference "
                           f"compares noise" if any(board.chance.values()) else "") + ".")]
        rows = []
        for v in verdicts:
            chance_datasets = set(board.datasets_at_chance(v.metric))
            if len(v.per_dataset) > PAGE_LIMIT:
                spread = spread_summary(v.per_dataset, chance_datasets, AT_CHANCE)
            else:
                spread = "; ".join(e.text() + (f" (every method {AT_CHANCE})" if e.dataset in chance_datasets else "")
                                   for e in v.per_dataset)
            rows.append([f"`{v.claim}`", verdict_cell(v), v.says, v.provenance(), v.evidence(), spread or "—"])
        blocks.append(("table", Table(["claim", "verdict", "says", "source", "evidence", "per dataset"], rows)))
        return blocks


KIND = PairedKind()
