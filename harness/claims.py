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

Two more kinds of claim (``kind:``), each with a verdict that has the same ``line``,
``details`` and ``to_dict``:

- ``scaling`` (:func:`check_scaling`): "A's metric grows with a smaller power of the size than
  B's". The size is a dataset parameter (``size: n``). For each seed and method, the slope of
  log(metric) against log(size) is fitted by least squares over the claim's datasets (at least
  :data:`MIN_SIZES` sizes spanning :data:`MIN_SIZE_SPAN`x, the sizes where both methods are ok
  in that seed); the seed's pair is the difference of the two slopes, oriented by the metric's
  goal, and the verdict is the same t-interval rule as above with the margin in exponent units.
  Each method's exponent (mean ± 95% half-width over seeds) goes on the page. A scaling claim that names
  ``methods`` and ``at_most`` (or ``at_least``) instead of ``better`` and ``than`` bounds each method's own
  exponent ("inference time grows at most like size^1.2"): per method, the t-interval over seeds of its
  exponents must lie wholly on the claimed side of the bound (:func:`check_exponent_bound`).
- ``bound`` (:func:`check_bound`): "the metric is at most (at least) a value on every cell of
  these methods", a theorem's guarantee. One cell beyond it (beyond float rounding) refutes it
  (``not reproduced``, naming the worst cell); no violation is ``reproduced`` only when every
  cell of the named methods finished (a failed cell is unchecked: ``inconclusive``).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar, Sequence

from harness.columns import ColumnRows
from harness.hardware import classes_apart, device_class
from harness.stats import FLOAT_NOISE, mean_and_half_width, means_and_half_widths, no_spread, one_sided_t

REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE = "reproduced", "not reproduced", "inconclusive"
SEED, DATASET_SEED = "seed", "dataset-seed"
REPLICATES = (SEED, DATASET_SEED)
PAPER, HARNESS = "paper", "harness"
TEST = "paired t-test over (dataset, seed), 95% interval of the mean difference"  # replicate: dataset-seed
TEST_BY_SEED = ("paired t-test over seeds (each seed's differences averaged over the claim's datasets), "
                "95% interval of the mean difference")
PAIRED, SCALING, BOUND = "paired", "scaling", "bound"
KINDS = (PAIRED, SCALING, BOUND)
MIN_SIZES, MIN_SIZE_SPAN = 5, 16.0  # a scaling claim's exponent: at least 5 sizes spanning 16x
TEST_SCALING = ("paired t-test over seeds of the difference of exponents (each the least-squares slope of "
                "log(metric) against log(size) over the claim's datasets), 95% interval of the mean difference")
TEST_BOUND = "every cell of the named methods against the bound; one cell beyond it refutes the claim"


def _provenance(source: str | None, quote: str | None) -> str:
    if source == PAPER:
        return f"from the paper: {quote}"
    if source == HARNESS:
        return "a hypothesis this harness tests" + (f"; {quote}" if quote else "")
    return "source not stated"


def _drop_absent_precondition(record: dict[str, Any]) -> dict[str, Any]:
    """A verdict's record without ``precondition`` when the claim states none (records of older claims unchanged)."""
    if record.get("precondition") is None:
        record.pop("precondition", None)
    return record


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
    precondition: str | None = None  # the precondition's own check, in words (absent when the claim states none)

    def pairs_text(self) -> str:
        return f"{self.pairs} independent pair{'' if self.pairs == 1 else 's'} ({self.unit})"

    kind: ClassVar[str] = PAIRED

    def provenance(self) -> str:
        """Where the claim comes from, for the page and ``harness check``."""
        return _provenance(self.source, self.quote)

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
        return _drop_absent_precondition(asdict(self))


def _indexed(rows) -> tuple[bool, dict[str, list]]:
    """Whether the rows span several device classes, and each method's rows in the order written.

    Kept in the ``memo`` of a :class:`harness.store.CellRows` (what the leaderboard reads), so the claims of a
    folder of a million rows index them once, not once per claim (a claim reads only its two methods' rows)."""
    memo = getattr(rows, "memo", None)
    if memo is not None and "claims" in memo:
        return memo["claims"]
    import itertools

    import numpy as np

    from harness.store import column

    methods = column(rows, "method")
    first: dict[str, int] = {}
    codes = np.fromiter(map(first.setdefault, methods, itertools.count()), dtype=np.int64, count=len(methods))
    order = np.argsort(codes, kind="stable")  # each method's rows together, in the order written
    ordered = np.empty(len(rows), dtype=object)
    ordered[:] = rows
    ordered = ordered[order].tolist()
    bounds = np.searchsorted(codes[order], list(first.values()) + [len(rows)]).tolist()
    by_method = {method: ordered[bounds[k]:bounds[k + 1]] for k, method in enumerate(first)}
    found = (classes_apart(rows), by_method)
    if memo is not None:
        memo["claims"] = found
    return found


def paired_cells(claim: dict, rows: list[dict], goal: str) -> dict[tuple[str, int], float]:
    """(dataset, seed) → difference (oriented so that positive favours ``better``), where both methods are ok;
    in the order of (dataset, seed).

    Where the rows span several device classes, the two cells of a difference are of one class (a GPU's time
    is never paired with a CPU's), and a (dataset, seed) measured on several classes gives the mean of its
    classes' differences: the seed's draw counts once, whatever ran it.
    """
    wanted = set(claim.get("datasets") or ()) or None
    metric, better, than = claim["metric"], claim.get("better"), claim.get("than")
    if isinstance(rows, ColumnRows):  # one device class, one row per (dataset, method, seed)
        found = {}
        for method in dict.fromkeys((better, than)):
            datasets, seeds, values = rows.narrow(("dataset", "seed"), metric, (method,), wanted, measured=True)
            found[method] = dict(zip(zip(datasets, seeds), values))
        return _joined(found[better], found[than], goal)
    apart, by_method = _indexed(rows)
    if not apart:  # one class: a join of the two methods' cells on (dataset, seed), the latest row of each winning
        found = {}
        for method in dict.fromkeys((better, than)):
            cells = found[method] = {}
            for row in by_method.get(method, ()):
                if (wanted is None or row["dataset"] in wanted) and row["status"] == "ok":
                    values = row["metrics"]
                    if metric in values:
                        cells[(row["dataset"], row["seed"])] = values[metric]
        return _joined(found[better], found[than], goal)
    by_cell: dict[tuple[str, int, str, str], float] = {}
    for method in dict.fromkeys((better, than)):  # only these two methods' rows count
        for row in by_method.get(method, ()):
            if row["status"] == "ok" and metric in row["metrics"] and (wanted is None or row["dataset"] in wanted):
                device = device_class(row.get("device")) or ""
                by_cell[(row["dataset"], row["seed"], device, row["method"])] = row["metrics"][metric]
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
    datasets = sorted(by_dataset, key=lambda d: (rank.get(d, len(rank)), d))
    summaries = means_and_half_widths([by_dataset[d] for d in datasets])  # at once: 16,667 datasets in one call
    return [DatasetEvidence(dataset, len(by_dataset[dataset]), mean, half, no_spread(by_dataset[dataset]))
            for dataset, (mean, half) in zip(datasets, summaries)]


def check_claim(claim: dict, rows: list[dict], goal: str, order: Sequence[str] = (),
                goals: dict[str, str] | None = None):
    """The claim's verdict on ``rows``; ``order`` lists dataset ids in the order the page shows them.

    A :class:`Verdict` for a paired claim (the default kind), a :class:`ScalingVerdict` or a
    :class:`BoundVerdict` for the others. With a ``precondition`` (a paired comparison that
    must hold for the claim to be testable at all, e.g. "the backbone beats raw pixels"),
    ``goals`` maps metric names to ``max`` / ``min`` for the precondition's metric; see
    :func:`apply_precondition`.
    """
    verdict = _check_kind(claim, rows, goal, order)
    if claim.get("precondition"):
        pre = claim["precondition"]
        if not goals or pre["metric"] not in goals:
            raise ValueError(f"claim {claim['id']!r}: the goal of its precondition's metric {pre['metric']!r} is unknown")
        verdict = apply_precondition(verdict, claim, rows, goals[pre["metric"]], order)
    return verdict


def apply_precondition(verdict, claim: dict, rows: list[dict], goal: str, order: Sequence[str] = ()):
    """Check the claim's ``precondition`` on ``rows`` like a paired claim; unless it is reproduced, ``inconclusive``.

    The precondition (``better``, ``than``, ``metric``, optional ``datasets``, ``margin``,
    ``min_pairs``, ``replicate``) is what makes the claim's comparison meaningful. When its
    own paired verdict is ``reproduced`` the claim keeps its verdict, and the reason says
    the precondition was met; otherwise the claim's verdict becomes ``inconclusive`` with
    the reason "precondition not met: …", followed by what the claim's own test found. The
    precondition's check, in words, is kept in ``verdict.precondition``.
    """
    pre = dict(claim["precondition"])
    pre_claim = {**pre, "id": f"{claim['id']}:precondition", "says": "precondition"}
    result = _check_kind(pre_claim, rows, goal, order)
    where = f" on {', '.join(pre['datasets'])}" if pre.get("datasets") else ""
    text = f"{pre['better']} better than {pre['than']} on {pre['metric']}{where}: {result.verdict}"
    if result.mean_difference is not None:
        lo, hi = result.interval
        text += (f" (mean difference {result.mean_difference:+.4g}, 95% CI [{lo:+.4g}, {hi:+.4g}], "
                 f"{result.pairs_text()})")
    text += f"; {result.reason}"
    verdict.precondition = text
    if result.verdict == REPRODUCED:
        verdict.reason = f"{verdict.reason}; precondition met: {text}"
    else:
        verdict.reason = (f"precondition not met: {text}; so the claim cannot be tested here (its own test: "
                          f"{verdict.verdict}, {verdict.reason})")
        verdict.verdict = INCONCLUSIVE
    return verdict


def _check_kind(claim: dict, rows: list[dict], goal: str, order: Sequence[str] = ()):
    """The claim's verdict by its kind, without its precondition."""
    kind = claim.get("kind", PAIRED)
    if kind == SCALING:
        return check_scaling(claim, rows, goal)
    if kind == BOUND:
        return check_bound(claim, rows, order)
    if kind != PAIRED:
        raise ValueError(f"claim {claim['id']!r}: kind {kind!r}; expected one of {', '.join(KINDS)}")
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


# --- scaling claims: exponents over a size sweep ----------------------------------------------


@dataclass
class MethodExponent:
    """One method's fitted exponent: the mean over seeds of its log-log slope, with its 95% half-width."""

    method: str
    seeds: int
    mean: float
    half_width: float | None  # None with one seed

    def text(self) -> str:
        spread = " (1 seed)" if self.half_width is None else f" ± {self.half_width:.2g}"
        return f"{self.method} {self.mean:.3g}{spread}"


def log_log_slope(sizes: Sequence[float], values: Sequence[float]) -> float:
    """Least-squares slope of log(value) against log(size): the exponent k of value ∝ size^k."""
    import numpy as np

    x, y = np.log(np.asarray(sizes, dtype=float)), np.log(np.asarray(values, dtype=float))
    x = x - x.mean()
    return float((x * (y - y.mean())).sum() / (x * x).sum())


def _enough_sizes(sizes: Sequence[float]) -> bool:
    return len(set(sizes)) >= MIN_SIZES and max(sizes) >= MIN_SIZE_SPAN * min(sizes)


def _mean(values: list[float]) -> float:
    return values[0] if len(values) == 1 else sum(values) / len(values)


def claim_columns(rows, fields: tuple[str, ...], metric: str, methods=None, datasets=None) -> list[list]:
    """Each of ``fields`` of every row as a list, then the rows' values of ``metric`` (None where a row lacks it):
    what a claim that reads every row reads. From :class:`harness.columns.ColumnRows`, only the rows of ``methods``
    and ``datasets`` (None: all) and without building a row; from rows, every row (the caller keeps its own)."""
    from harness.store import column

    if isinstance(rows, ColumnRows):
        return rows.narrow(fields, metric, methods, datasets)
    return [*(column(rows, name) for name in fields), [found.get(metric) for found in column(rows, "metrics")]]


def _by_seed_and_method(claim: dict, rows: list[dict]) -> dict[tuple[int, str, str], dict[float, float]]:
    """(seed, method, device class) → {size: value} over the claim's datasets, from ok rows with a positive value.

    The device class is "" unless the rows span several: then each class's sizes are fitted on their own (an
    exponent never mixes a GPU's times with a CPU's) and a seed's exponent is the mean over its classes.
    """
    wanted = set(claim.get("datasets") or ()) or None
    size = claim["size"]
    apart = classes_apart(rows)
    out: dict[tuple[int, str, str], dict[float, float]] = {}
    for dataset, method, seed, status, device, params, value in zip(*claim_columns(
            rows, ("dataset", "method", "seed", "status", "device", "dataset_params"), claim["metric"], None, wanted)):
        value = value if status == "ok" else None
        at = (params or {}).get(size)
        if value is None or at is None or (wanted is not None and dataset not in wanted):
            continue
        if value > 0 and at > 0:  # a logarithm needs both positive; a zero time is no measurement
            device = (device_class(device) or "") if apart else ""
            out.setdefault((seed, method, device), {})[float(at)] = float(value)
    return out


def _seed_slopes(points: dict[tuple[int, str, str], dict[float, float]], method: str) -> list[float]:
    """The method's exponent per seed with enough sizes (the mean over its device classes), in seed order."""
    by_seed: dict[int, list[float]] = {}
    for (seed, m, _), p in sorted(points.items()):
        if m == method and _enough_sizes(list(p)):
            by_seed.setdefault(seed, []).append(log_log_slope(list(p), list(p.values())))
    return [_mean(slopes) for slopes in by_seed.values()]


def exponents(claim: dict, rows: list[dict]) -> list[MethodExponent]:
    """Every method's exponent on the claim's datasets: ``better`` and ``than`` first, then the others by name."""
    points = _by_seed_and_method(claim, rows)
    slopes = {method: found for method in sorted({m for _, m, _ in points}) if (found := _seed_slopes(points, method))}
    first = [m for m in (claim["better"], claim["than"]) if m in slopes]
    out = []
    for method in first + sorted(set(slopes) - set(first)):
        mean, half = mean_and_half_width(slopes[method])
        out.append(MethodExponent(method, len(slopes[method]), mean, half))
    return out


@dataclass
class ScalingVerdict:
    claim: str
    says: str
    verdict: str
    metric: str
    better: str
    than: str
    size: str
    pairs: int  # seeds with both methods ok on enough sizes
    mean_difference: float | None  # of the exponents, + favours ``better``
    interval: tuple[float, float] | None
    p_value: float | None
    test: str
    reason: str
    margin: float = 0.0
    unit: str = "seeds"
    sizes: list[float] = field(default_factory=list)  # the sizes measured, over every seed
    exponents: list[MethodExponent] = field(default_factory=list)
    source: str | None = None
    quote: str | None = None
    precondition: str | None = None

    kind: ClassVar[str] = SCALING

    def pairs_text(self) -> str:
        return f"{self.pairs} independent pair{'' if self.pairs == 1 else 's'} ({self.unit})"

    def provenance(self) -> str:
        return _provenance(self.source, self.quote)

    def sizes_text(self) -> str:
        return f"{self.size} = {', '.join(f'{s:g}' for s in self.sizes)}" if self.sizes else f"no {self.size} measured"

    def spread_text(self) -> str:
        """Each method's exponent of ``metric`` in ``size``, mean ± 95% half-width over seeds."""
        return "; ".join(e.text() for e in self.exponents)

    def evidence(self) -> str:
        if self.mean_difference is None:
            return self.reason
        lo, hi = self.interval
        return (f"exponent of {self.than} − exponent of {self.better} (oriented, + favours {self.better}): "
                f"{self.mean_difference:+.3g}, 95% CI [{lo:+.3g}, {hi:+.3g}], p = {self.p_value:.3g}, "
                f"{self.pairs_text()}; {self.reason}")

    def line(self) -> str:
        numbers = ""
        if self.mean_difference is not None:
            lo, hi = self.interval
            numbers = (f" — {self.better} vs {self.than}, exponent of {self.metric} in {self.size}: difference "
                       f"{self.mean_difference:+.3g} (+ favours {self.better}; 95% CI [{lo:+.3g}, {hi:+.3g}], "
                       f"one-sided p = {self.p_value:.3g}, {self.pairs_text()})")
        return f"{self.claim}: {self.verdict}{numbers}; {self.reason}"

    def details(self) -> list[str]:
        out = [f"exponents of {self.metric} in {self.size} (mean ± 95% half-width over seeds; {self.sizes_text()}): "
               f"{self.spread_text() or 'none fitted'}"]
        out.append(" ".join(self.provenance().split()))
        return out

    def to_dict(self) -> dict[str, Any]:
        return _drop_absent_precondition({"kind": self.kind, **asdict(self)})


@dataclass
class MethodExponentCheck:
    """One method of an exponent bound: its per-seed exponents against the bound, and that method's own verdict."""

    method: str
    seeds: int
    mean: float | None
    interval: tuple[float, float] | None
    verdict: str

    def text(self, side: str, bound: float) -> str:
        if self.mean is None:
            return f"{self.method}: {self.verdict} ({self.seeds} seed(s) with {MIN_SIZES} sizes spanning {MIN_SIZE_SPAN:g}x)"
        lo, hi = self.interval
        return (f"{self.method} exponent {self.mean:.3g}, 95% CI [{lo:.3g}, {hi:.3g}] over {self.seeds} seeds "
                f"against {'≤' if side == 'at_most' else '≥'} {bound:g}: {self.verdict}")


@dataclass
class ExponentBoundVerdict:
    """A scaling claim on each named method's own exponent: "the metric grows with at most (at least) the power
    ``bound`` of the size". Per method, the 95% t-interval over seeds of the fitted exponents: wholly on the claimed
    side of the bound is ``reproduced``, wholly on the other side ``not reproduced``. The claim is reproduced when
    every method's is, not reproduced when any method's is not, else inconclusive."""

    claim: str
    says: str
    verdict: str
    metric: str
    methods: list[str]
    side: str  # "at_most" or "at_least"
    bound: float
    size: str
    test: str
    reason: str
    checks: list[MethodExponentCheck] = field(default_factory=list)
    sizes: list[float] = field(default_factory=list)
    exponents: list[MethodExponent] = field(default_factory=list)
    source: str | None = None
    quote: str | None = None
    precondition: str | None = None

    kind: ClassVar[str] = SCALING

    def provenance(self) -> str:
        return _provenance(self.source, self.quote)

    def sizes_text(self) -> str:
        return f"{self.size} = {', '.join(f'{s:g}' for s in self.sizes)}" if self.sizes else f"no {self.size} measured"

    def spread_text(self) -> str:
        return "; ".join(e.text() for e in self.exponents)

    def evidence(self) -> str:
        return "; ".join(c.text(self.side, self.bound) for c in self.checks) + f"; {self.reason}"

    def line(self) -> str:
        return (f"{self.claim}: {self.verdict} — exponent of {self.metric} in {self.size} "
                f"{'≤' if self.side == 'at_most' else '≥'} {self.bound:g}: {self.evidence()}")

    def details(self) -> list[str]:
        out = [f"exponents of {self.metric} in {self.size} (mean ± 95% half-width over seeds; {self.sizes_text()}): "
               f"{self.spread_text() or 'none fitted'}"]
        out.append(" ".join(self.provenance().split()))
        return out

    def to_dict(self) -> dict[str, Any]:
        return _drop_absent_precondition({"kind": self.kind, **asdict(self)})


TEST_EXPONENT_BOUND = ("per method, a one-sample t-test over seeds of the exponent (the least-squares slope of "
                       "log(metric) against log(size) over the claim's datasets) against the bound, 95% interval")


def check_exponent_bound(claim: dict, rows: list[dict]) -> ExponentBoundVerdict:
    """A scaling claim with ``methods`` and ``at_most`` / ``at_least``: each method's exponent against the bound."""
    side = "at_most" if claim.get("at_most") is not None else "at_least"
    bound = float(claim[side])
    min_pairs = int(claim.get("min_pairs", 3))
    points = _by_seed_and_method(claim, rows)
    checks = []
    for method in claim["methods"]:
        slopes = _seed_slopes(points, method)
        if len(slopes) < min_pairs:
            checks.append(MethodExponentCheck(method, len(slopes), None, None, INCONCLUSIVE))
            continue
        # oriented so that a positive difference is on the claimed side of the bound
        result = one_sided_t([bound - s if side == "at_most" else s - bound for s in slopes])
        lo, hi = result.interval
        verdict = REPRODUCED if lo > 0 else NOT_REPRODUCED if hi <= 0 else INCONCLUSIVE
        mean = float(sum(slopes) / len(slopes))
        interval = (bound - hi, bound - lo) if side == "at_most" else (lo + bound, hi + bound)
        checks.append(MethodExponentCheck(method, len(slopes), mean, interval, verdict))
    verdicts = [c.verdict for c in checks]
    if NOT_REPRODUCED in verdicts:
        verdict, reason = NOT_REPRODUCED, "a method's whole interval is on the wrong side of the bound"
    elif all(v == REPRODUCED for v in verdicts):
        verdict, reason = REPRODUCED, "every method's whole interval is on the claimed side of the bound"
    elif any(c.mean is None for c in checks):
        verdict, reason = INCONCLUSIVE, (f"a method has fewer than {min_pairs} seeds with {MIN_SIZES} sizes spanning "
                                         f"{MIN_SIZE_SPAN:g}x")
    else:
        verdict, reason = INCONCLUSIVE, "a method's interval contains the bound; more seeds could decide it"
    measured = sorted({s for (_, m, _), p in points.items() if m in claim["methods"] for s in p})
    return ExponentBoundVerdict(claim=claim["id"], says=claim["says"], verdict=verdict, metric=claim["metric"],
                                methods=list(claim["methods"]), side=side, bound=bound, size=claim["size"],
                                test=TEST_EXPONENT_BOUND, reason=reason, checks=checks, sizes=measured,
                                exponents=[e for e in exponents({**claim, "better": "", "than": ""}, rows)
                                           if e.method in claim["methods"]],
                                source=claim.get("source"), quote=claim.get("quote"))


def check_scaling(claim: dict, rows: list[dict], goal: str) -> ScalingVerdict | ExponentBoundVerdict:
    """A scaling claim's verdict: per seed, the exponent of ``than`` minus that of ``better`` (goal min); or, with
    ``methods`` and a bound, each named method's exponent against it (:func:`check_exponent_bound`)."""
    if claim.get("methods"):
        return check_exponent_bound(claim, rows)
    margin = float(claim.get("margin", 0.0))
    min_pairs = int(claim.get("min_pairs", 3))
    points = _by_seed_and_method(claim, rows)
    better, than = claim["better"], claim["than"]
    differences, skipped = [], 0
    for seed in sorted({seed for seed, _, _ in points}):
        by_class = []  # one difference per device class with both methods on enough sizes
        for device in sorted({d for s, _, d in points if s == seed}):
            a, b = points.get((seed, better, device), {}), points.get((seed, than, device), {})
            common = sorted(set(a) & set(b))
            if not _enough_sizes(common):
                continue
            slope_a = log_log_slope(common, [a[s] for s in common])
            slope_b = log_log_slope(common, [b[s] for s in common])
            # a metric to minimise: better's grows more slowly; to maximise: better's grows faster
            by_class.append(slope_b - slope_a if goal == "min" else slope_a - slope_b)
        if not by_class:
            skipped += 1
            continue
        differences.append(_mean(by_class))
    unit = "seeds; each the difference of two slopes fitted over the sizes"
    if skipped:
        unit += f"; {skipped} seed(s) without both methods on {MIN_SIZES} sizes spanning {MIN_SIZE_SPAN:g}x left out"
    base = dict(claim=claim["id"], says=claim["says"], metric=claim["metric"], better=better, than=than,
                size=claim["size"], pairs=len(differences), test=TEST_SCALING, margin=margin, unit=unit,
                sizes=sorted({s for p in points.values() for s in p}), exponents=exponents(claim, rows),
                source=claim.get("source"), quote=claim.get("quote"))
    if len(differences) < min_pairs:
        return ScalingVerdict(verdict=INCONCLUSIVE, mean_difference=None, interval=None, p_value=None,
                              reason=f"only {len(differences)} seed(s) with both methods ok on at least {MIN_SIZES} "
                                     f"sizes spanning {MIN_SIZE_SPAN:g}x; the claim needs at least {min_pairs}", **base)
    result = one_sided_t(differences, margin)
    lo, hi = result.interval
    side = f"the margin {margin:g}" if margin else "0"
    if lo > margin:
        verdict, reason = REPRODUCED, f"the whole interval is above {side}"
    elif hi <= margin:
        verdict, reason = NOT_REPRODUCED, (f"the whole interval is at or below {side}: {than}'s exponent does not "
                                           f"exceed {better}'s by more than {margin:g}" if goal == "min" else
                                           f"the whole interval is at or below {side}")
    else:
        verdict, reason = INCONCLUSIVE, f"the interval contains {side}; more seeds could decide it"
    return ScalingVerdict(verdict=verdict, mean_difference=result.mean, interval=(lo, hi), p_value=result.p_value,
                          reason=reason, **base)


# --- bound claims: a theorem's guarantee on every cell -----------------------------------------


@dataclass
class BoundCell:
    dataset: str
    seed: int
    method: str
    value: float

    def text(self) -> str:
        return f"{self.method} on {self.dataset}, seed {self.seed}: {self.value:.6g}"


@dataclass
class BoundDataset:
    """One dataset's share of a bound claim: its cells checked and its worst value."""

    dataset: str
    cells: int
    worst: float
    violations: int

    def text(self) -> str:
        over = f", {self.violations} beyond the bound" if self.violations else ""
        return f"{self.dataset} worst {self.worst:.4g} over {self.cells} cell{'' if self.cells == 1 else 's'}{over}"


@dataclass
class BoundVerdict:
    claim: str
    says: str
    verdict: str
    metric: str
    methods: list[str]
    side: str  # "at_most" or "at_least"
    bound: float
    cells: int  # cells of the named methods that finished and were checked
    failed: int  # cells of the named methods that did not finish: unchecked
    violations: int
    worst: BoundCell | None
    test: str
    reason: str
    per_dataset: list[BoundDataset] = field(default_factory=list)
    source: str | None = None
    quote: str | None = None
    precondition: str | None = None

    kind: ClassVar[str] = BOUND

    def provenance(self) -> str:
        return _provenance(self.source, self.quote)

    def bound_text(self) -> str:
        return f"{self.metric} {'≤' if self.side == 'at_most' else '≥'} {self.bound:g}"

    def spread_text(self) -> str:
        return "; ".join(e.text() for e in self.per_dataset)

    def evidence(self) -> str:
        worst = f"; the worst cell: {self.worst.text()}" if self.worst else ""
        return (f"{self.bound_text()} on every cell of {', '.join(self.methods)}: {self.cells} cell(s) checked, "
                f"{self.violations} beyond the bound{worst}; {self.reason}")

    def line(self) -> str:
        return f"{self.claim}: {self.verdict} — {self.evidence()}"

    def details(self) -> list[str]:
        out = []
        if self.per_dataset:
            out.append(f"per dataset: {self.spread_text()}")
        out.append(" ".join(self.provenance().split()))
        return out

    def to_dict(self) -> dict[str, Any]:
        return _drop_absent_precondition({"kind": self.kind, **asdict(self)})


def check_bound(claim: dict, rows: list[dict], order: Sequence[str] = ()) -> BoundVerdict:
    """A bound claim's verdict: every finished cell of ``methods`` against ``at_most`` / ``at_least``."""
    side = "at_most" if claim.get("at_most") is not None else "at_least"
    bound = float(claim[side])
    sign = 1.0 if side == "at_most" else -1.0  # sign · (value − bound) > 0 is a violation
    slack = FLOAT_NOISE * max(1.0, abs(bound))
    wanted = set(claim.get("datasets") or ()) or None
    methods = list(claim["methods"])
    checked: list[BoundCell] = []
    failed = 0
    for dataset, method, seed, status, value in zip(*claim_columns(
            rows, ("dataset", "method", "seed", "status"), claim["metric"], methods, wanted)):
        if method not in methods or (wanted is not None and dataset not in wanted):
            continue
        value = value if status == "ok" else None
        if value is None:
            failed += 1
            continue
        checked.append(BoundCell(dataset, seed, method, float(value)))
    violates = [sign * (c.value - bound) > slack for c in checked]
    beyond = [c for c, bad in zip(checked, violates) if bad]
    worst = max(checked, key=lambda c: (sign * c.value, c.dataset, c.seed, c.method)) if checked else None
    rank = {d: i for i, d in enumerate(order)}
    by_dataset: dict[str, list[tuple[BoundCell, bool]]] = {}
    for cell, bad in zip(checked, violates):  # one pass: a scan of every cell per dataset was quadratic
        by_dataset.setdefault(cell.dataset, []).append((cell, bad))
    per_dataset = []
    for dataset in sorted(by_dataset, key=lambda d: (rank.get(d, len(rank)), d)):
        cells = by_dataset[dataset]
        extreme = max(sign * c.value for c, _ in cells) * sign
        per_dataset.append(BoundDataset(dataset, len(cells), extreme, sum(bad for _, bad in cells)))
    what = f"{claim['metric']} {'≤' if side == 'at_most' else '≥'} {bound:g}"
    if beyond:
        verdict, reason = NOT_REPRODUCED, f"{len(beyond)} cell(s) violate {what}, so the bound does not hold here"
    elif not checked:
        verdict, reason = INCONCLUSIVE, f"no cell of {', '.join(methods)} finished; nothing to check"
    elif failed:
        verdict, reason = INCONCLUSIVE, (f"no finished cell violates {what}, but {failed} cell(s) did not finish "
                                         f"and are unchecked")
    else:
        verdict, reason = REPRODUCED, f"no cell violates {what}"
    return BoundVerdict(claim=claim["id"], says=claim["says"], verdict=verdict, metric=claim["metric"],
                        methods=methods, side=side, bound=bound, cells=len(checked), failed=failed,
                        violations=len(beyond), worst=worst, test=TEST_BOUND, reason=reason,
                        per_dataset=per_dataset, source=claim.get("source"), quote=claim.get("quote"))
