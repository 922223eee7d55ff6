"""``kind: scaling``: "A's metric grows with a smaller power of the size than B's", or "each of these methods'
metric grows with at most (at least) this power".

The size is a dataset parameter (``size: n``). For each seed and method, the slope of log(metric) against
log(size) is fitted by least squares over the claim's datasets (at least :data:`MIN_SIZES` sizes spanning
:data:`MIN_SIZE_SPAN`x, the sizes where both methods are ok in that seed); the seed's pair is the difference of the
two slopes, oriented by the metric's goal, and the verdict is the paired rule with the margin in exponent units.
Each method's exponent (mean ± 95% half-width over seeds) goes on the page. A claim that names ``methods`` and
``at_most`` (or ``at_least``) instead of ``better`` and ``than`` bounds each method's own exponent: per method,
the t-interval over seeds of its exponents must lie wholly on the claimed side of the bound
(:func:`check_exponent_bound`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Sequence

from harness.claims._rows import claim_columns
from harness.claims.base import (
    INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, ClaimKind, MarginGap, SpecContext, VerdictMixin, interval_verdict,
    t_verdict,
)
from harness.claims.paired import PAIR_PROPERTIES

SCALING = "scaling"
MIN_SIZES, MIN_SIZE_SPAN = 5, 16.0  # a scaling claim's exponent: at least 5 sizes spanning 16x
ALL_SIZES, TOP_OCTAVE = "all", "top-octave"  # what a slope is fitted over (a claim's `fit`)
TEST_SCALING = ("paired t-test over seeds of the difference of exponents (each the least-squares slope of "
                "log(metric) against log(size) over the claim's datasets), 95% interval of the mean difference")
BOUND_PROPERTIES = {
    "methods": {"type": "array", "minItems": 1, "uniqueItems": True, "items": {"type": "string"}, "description": (
        "kind: bound: the method ids whose every cell must respect the bound; kind: scaling: the method ids whose "
        "exponent `at_most` / `at_least` bounds.")},
    "at_most": {"type": "number", "description": "kind: bound: the largest value the metric may take on any cell."},
    "at_least": {"type": "number", "description": "kind: bound: the smallest value the metric may take on any cell."},
}
ONE_BOUND = {"required": ["methods"], "anyOf": [{"required": ["at_most"]}, {"required": ["at_least"]}]}


@dataclass
class MethodExponent:
    """One method's fitted exponent: the mean over seeds of its log-log slope, with its 95% half-width."""

    method: str
    seeds: int
    mean: float
    half_width: float | None  # None with one seed
    top_octave: float | None = None  # the mean over seeds of the slope over the sizes in [max/2, max]

    def text(self) -> str:
        spread = " (1 seed)" if self.half_width is None else f" ± {self.half_width:.2g}"
        top = "" if self.top_octave is None else f" (top octave {self.top_octave:.3g})"
        return f"{self.method} {self.mean:.3g}{spread}{top}"


def sizes_text(size: str, sizes: Sequence[float]) -> str:
    """The sizes measured, and the decades they span."""
    if not sizes:
        return f"no {size} measured"
    return f"{size} = {', '.join(f'{s:g}' for s in sizes)} ({decades(sizes):.2g} decades)"


def log_log_slope(sizes: Sequence[float], values: Sequence[float]) -> float:
    """Least-squares slope of log(value) against log(size): the exponent k of value ∝ size^k."""
    import numpy as np

    x, y = np.log(np.asarray(sizes, dtype=float)), np.log(np.asarray(values, dtype=float))
    x = x - x.mean()
    return float((x * (y - y.mean())).sum() / (x * x).sum())


def _enough_sizes(sizes: Sequence[float]) -> bool:
    return len(set(sizes)) >= MIN_SIZES and max(sizes) >= MIN_SIZE_SPAN * min(sizes)


def fitted_slope(points: dict[float, float], fit: str = ALL_SIZES) -> float | None:
    """The log-log slope of ``points`` (size → value) over every size, or over the top octave (the sizes in
    [max/2, max], where lower-order terms bend the slope least); None when the top octave holds fewer than 2 sizes."""
    sizes = sorted(points)
    if fit == TOP_OCTAVE:
        sizes = [s for s in sizes if s >= sizes[-1] / 2]
        if len(sizes) < 2:
            return None
    return log_log_slope(sizes, [points[s] for s in sizes])


def decades(sizes: Sequence[float]) -> float:
    """How many powers of ten the sizes span."""
    import math

    return math.log10(max(sizes) / min(sizes)) if sizes and min(sizes) > 0 else 0.0


def _mean(values: list[float]) -> float:
    return values[0] if len(values) == 1 else sum(values) / len(values)



def _by_seed_and_method(claim: dict, rows) -> dict[tuple[int, str, str], dict[float, float]]:
    """(seed, method, device class) → {size: value} over the claim's datasets, from ok rows with a positive value.

    The device class is "" unless the rows span several: then each class's sizes are fitted on their own (an
    exponent never mixes a GPU's times with a CPU's) and a seed's exponent is the mean over its classes.
    """
    wanted = set(claim.get("datasets") or ()) or None
    size = claim["size"]
    from harness.results_table import classes_apart
    from harness.devices import device_class

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


def _seed_slopes(points: dict[tuple[int, str, str], dict[float, float]], method: str,
                 fit: str = ALL_SIZES) -> list[float]:
    """The method's exponent per seed with enough sizes (the mean over its device classes), in seed order, fitted
    over every size or over the top octave (``fit``)."""
    by_seed: dict[int, list[float]] = {}
    for (seed, m, _), p in sorted(points.items()):
        if m == method and _enough_sizes(list(p)):
            slope = log_log_slope(list(p), list(p.values())) if fit == ALL_SIZES else fitted_slope(p, fit)
            if slope is not None:
                by_seed.setdefault(seed, []).append(slope)
    return [_mean(slopes) for slopes in by_seed.values()]


def exponents(claim: dict, rows) -> list[MethodExponent]:
    """Every method's exponent on the claim's datasets: ``better`` and ``than`` first, then the others by name."""
    points = _by_seed_and_method(claim, rows)
    slopes = {method: found for method in sorted({m for _, m, _ in points}) if (found := _seed_slopes(points, method))}
    first = [m for m in (claim["better"], claim["than"]) if m in slopes]
    out = []
    for method in first + sorted(set(slopes) - set(first)):
        from harness.stats import mean_and_half_width

        mean, half = mean_and_half_width(slopes[method])
        top = _seed_slopes(points, method, TOP_OCTAVE)
        out.append(MethodExponent(method, len(slopes[method]), mean, half, _mean(top) if top else None))
    return out


@dataclass
class ScalingVerdict(VerdictMixin):
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

    def sizes_text(self) -> str:
        return sizes_text(self.size, self.sizes)

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
class ExponentBoundVerdict(VerdictMixin):
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

    def sizes_text(self) -> str:
        return sizes_text(self.size, self.sizes)

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


TEST_EXPONENT_BOUND = ("per method, a one-sample t-test over seeds of the exponent (the least-squares slope of "
                       "log(metric) against log(size) over the claim's datasets) against the bound, 95% interval")


def check_exponent_bound(claim: dict, rows) -> ExponentBoundVerdict:
    """A scaling claim with ``methods`` and ``at_most`` / ``at_least``: each method's exponent against the bound."""
    side = "at_most" if claim.get("at_most") is not None else "at_least"
    bound = float(claim[side])
    from harness.stats import one_sided_t

    min_pairs = int(claim.get("min_pairs", 3))
    points = _by_seed_and_method(claim, rows)
    checks = []
    fit = claim.get("fit", ALL_SIZES)
    for method in claim["methods"]:
        slopes = _seed_slopes(points, method, fit)
        if len(slopes) < min_pairs:
            checks.append(MethodExponentCheck(method, len(slopes), None, None, INCONCLUSIVE))
            continue
        # oriented so that a positive difference is on the claimed side of the bound
        result = one_sided_t([bound - s if side == "at_most" else s - bound for s in slopes])
        lo, hi = result.interval
        verdict = interval_verdict(lo, hi)
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
    if fit == TOP_OCTAVE:
        reason += "; each exponent fitted over the top octave of the sizes"
    measured = sorted({s for (_, m, _), p in points.items() if m in claim["methods"] for s in p})
    return ExponentBoundVerdict(claim=claim["id"], says=claim["says"], verdict=verdict, metric=claim["metric"],
                                methods=list(claim["methods"]), side=side, bound=bound, size=claim["size"],
                                test=TEST_EXPONENT_BOUND, reason=reason, checks=checks, sizes=measured,
                                exponents=[e for e in exponents({**claim, "better": "", "than": ""}, rows)
                                           if e.method in claim["methods"]],
                                source=claim.get("source"), quote=claim.get("quote"))


def check_scaling(claim: dict, rows, goal: str) -> ScalingVerdict | ExponentBoundVerdict:
    """A scaling claim's verdict: per seed, the exponent of ``than`` minus that of ``better`` (goal min); or, with
    ``methods`` and a bound, each named method's exponent against it (:func:`check_exponent_bound`)."""
    if claim.get("methods"):
        return check_exponent_bound(claim, rows)
    margin = float(claim.get("margin", 0.0))
    min_pairs = int(claim.get("min_pairs", 3))
    points = _by_seed_and_method(claim, rows)
    better, than = claim["better"], claim["than"]
    fit = claim.get("fit", ALL_SIZES)
    differences, skipped = [], 0
    for seed in sorted({seed for seed, _, _ in points}):
        by_class = []  # one difference per device class with both methods on enough sizes
        for device in sorted({d for s, _, d in points if s == seed}):
            a, b = points.get((seed, better, device), {}), points.get((seed, than, device), {})
            common = sorted(set(a) & set(b))
            if not _enough_sizes(common):
                continue
            slope_a = fitted_slope({s: a[s] for s in common}, fit)
            slope_b = fitted_slope({s: b[s] for s in common}, fit)
            if slope_a is None or slope_b is None:
                continue
            # a metric to minimise: better's grows more slowly; to maximise: better's grows faster
            by_class.append(slope_b - slope_a if goal == "min" else slope_a - slope_b)
        if not by_class:
            skipped += 1
            continue
        differences.append(_mean(by_class))
    unit = "seeds; each the difference of two slopes fitted over the " + (
        "sizes" if fit == ALL_SIZES else "top octave of the sizes")
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
    why_not = f"{than}'s exponent does not exceed {better}'s by more than {margin:g}" if goal == "min" else None
    result, verdict, reason = t_verdict(differences, margin, why_not)
    lo, hi = result.interval
    return ScalingVerdict(verdict=verdict, mean_difference=result.mean, interval=(lo, hi), p_value=result.p_value,
                          reason=reason, **base)


class ScalingKind(ClaimKind):
    name = SCALING
    order = 10
    summary = ("`scaling`: A's metric grows with a smaller power of the dataset size than B's (needs `size`): per "
               "seed, the slope of log(metric) against log(size) over the claim's datasets, at least 5 sizes spanning "
               "16x, paired by seed; or, naming `methods` with `at_most` (`at_least`) instead of `better` and `than`, "
               "each method's own exponent is at most (at least) that number, a t-test over seeds per method.")
    properties = {**PAIR_PROPERTIES, "size": {"type": "string", "description": (
        "kind: scaling: the dataset parameter that is the size (e.g. n); every dataset of the claim sets it to a "
        "positive number.")}, "fit": {"enum": [ALL_SIZES, TOP_OCTAVE], "description": (
        "kind: scaling: what each exponent is fitted over: `all` the sizes (the default), or the `top-octave` (the "
        "sizes in [max/2, max]), where lower-order terms bend a log-log slope least: what a super-linear claim "
        "(\"quadratic\") reads.")}, **BOUND_PROPERTIES}
    rules = [{"required": ["size"]},
             {"if": {"required": ["methods"]}, "then": ONE_BOUND, "else": {"required": ["better", "than"]}}]
    method_keys = ("better", "than", "methods")
    heading = "Scaling claims"
    about = ("Each method's exponent is the least-squares slope of log(metric) against log(size), fitted per seed "
             "over the claim's datasets (at least 5 sizes spanning 16x), then averaged over seeds ± the half-width of "
             "its 95% t-interval. A claim comparing two methods is a paired t-test over seeds of the difference of "
             "their exponents; a claim bounding methods' own exponents is a t-test over seeds of each method's "
             "exponent against the bound. Beside each exponent stands its slope over the top octave (the sizes in "
             "[max/2, max], where lower-order terms bend it least), and beside the sizes the decades they span; a "
             "claim with fit: top-octave fits its exponents there.")
    legend = ("(reproduced: the 95% interval of the paired difference over independent seeds lies above the "
              "claim's margin; not reproduced: at or below it; inconclusive: it straddles it, or too few pairs)")

    def margin_gaps(self, verdict, claim: dict) -> list[MarginGap]:
        """A bound on methods' exponents: each method's interval against the bound; a pair: as every kind."""
        if isinstance(verdict, ExponentBoundVerdict):
            return [MarginGap(c.method, float(c.interval[0]), float(c.interval[1]), verdict.bound)
                    for c in verdict.checks if c.interval is not None]
        return super().margin_gaps(verdict, claim)

    def stray_keys(self, claim: dict) -> list[str]:
        # two forms: a pair (better, than) or methods held to a bound (methods, at_most / at_least)
        bounded = "methods" in claim
        wrong = ("better", "than") if bounded else ("methods", "at_most", "at_least")
        return [key for key in claim if key in wrong] + super().stray_keys(claim)

    def stray_key_message(self, key: str, claim: dict) -> str:
        return (f"`{key}` has no meaning in a claim of kind {self.name!r} here; a scaling claim names either better "
                "and than, or methods with at_most / at_least")

    def problems(self, claim: dict, path: tuple, spec: SpecContext, report) -> None:
        if "methods" in claim and "at_most" in claim and "at_least" in claim:
            report(path + ("at_least",), f"a {self.name} claim on methods sets one of at_most and at_least, not both")
        if "methods" not in claim and claim.get("better") is not None and claim.get("better") == claim.get("than"):
            report(path + ("than",), "a claim compares two different methods")
        named = spec.named_datasets(claim.get("datasets", list(spec.datasets)))
        size_problems(claim, path, [spec.datasets[d] for d in named if d in spec.datasets], report)
        if claim.get("replicate") == "dataset-seed":
            report(path + ("replicate",), "a scaling claim fits one exponent per seed across its datasets, so its unit "
                                          "of replication is the seed; remove `replicate`")

    def check(self, claim: dict, rows, goal: str, order: Sequence[str] = ()):
        return check_scaling(claim, rows, goal)

    def page_blocks(self, verdicts: list, board) -> list:
        from harness.report.blocks import Table, verdict_cell

        return [("h2", self.heading), ("p", self.about),
                ("table", Table(["claim", "verdict", "says", "source", "sizes", "exponents", "evidence"],
                                [[f"`{v.claim}`", verdict_cell(v), v.says, v.provenance(), v.sizes_text(),
                                  v.spread_text() or "—", v.evidence()] for v in verdicts]))]


def size_problems(claim: dict, path: tuple, datasets: list[dict], report) -> None:
    """The sizes of a scaling claim: a positive number on every dataset, enough of them over a wide enough range."""
    size = claim.get("size")
    sizes = set()
    for dataset in datasets:
        value = dataset.get("params", {}).get(size)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            report(path + ("size",), f"dataset {dataset.get('id', dataset['name'])!r} has no positive number "
                                     f"in params.{size} (found {value!r}); every dataset of a scaling claim sets its size")
            return
        sizes.add(float(value))
    if len(sizes) < MIN_SIZES or max(sizes) < MIN_SIZE_SPAN * min(sizes):
        found = ", ".join(f"{s:g}" for s in sorted(sizes))
        report(path + ("datasets",), f"a scaling claim fits an exponent over at least {MIN_SIZES} sizes spanning "
                                     f"{MIN_SIZE_SPAN:g}x; its datasets have {size} = {found or 'nothing'}")


KIND = ScalingKind()
