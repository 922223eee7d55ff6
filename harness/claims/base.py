"""What every claim kind shares: the verdict rule, the margin, the precondition, provenance, the schema keys
every claim has, and the base class a kind implements.

A claim kind is one module of :mod:`harness.claims` (or of an outside package, through the
``harness.claim_kinds`` entry-point group) that sets ``KIND`` to an instance of a :class:`ClaimKind` subclass.
The kind says which keys it adds to a claim (a JSON Schema fragment, merged into the spec schema), what it
checks of a spec beyond the schema, how it reads the results and decides its verdict, and the blocks it adds
to the leaderboard page. Nothing else in the engine names a kind.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Sequence

REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE = "reproduced", "not reproduced", "inconclusive"
VERDICTS = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE)
PAPER, HARNESS = "paper", "harness"
SEED, DATASET_SEED = "seed", "dataset-seed"
REPLICATES = (SEED, DATASET_SEED)
MARGIN_SOURCES = ("paper", "prior", "after-run")
DEFAULT_KIND = "paired"
DEFAULT_MIN_PAIRS = 3

# the method ids a claim may name, and the pair every comparing kind names
METHOD_KEYS = ("better", "than", "methods")

# the keys every claim has, whatever its kind (the kind's own come from ClaimKind.properties)
REPLICATE_SCHEMA = {"enum": list(REPLICATES), "description": (
    "The unit of replication of the paired test. `seed` (the default): the differences of one seed across the "
    "claim's datasets are averaged first, one pair per seed, since the cells of a seed can share what the seed drew "
    "(a source model trained once per seed and evaluated on every target). `dataset-seed`: every (dataset, seed) "
    "cell is a pair; honest only when the datasets are independent draws at one seed, i.e. the cells of one seed "
    "share nothing (no shared training, no shared source data, no shared instance); say why in a comment. A scaling "
    "claim's unit is always the seed.")}
COMMON_PROPERTIES: dict[str, dict] = {
    "id": {"$ref": "#/$defs/identifier"},
    "says": {"type": "string", "description": "The paper's claim, in words."},
    "metric": {"type": "string"},
    "datasets": {"type": "array", "minItems": 1, "uniqueItems": True, "items": {"type": "string"},
                 "description": "Dataset ids the claim is about (a grid's id: each of its datasets); all by default."},
    "margin": {"type": "number", "minimum": 0,
               "description": "How much better, in the metric's units (scaling: in the exponent); 0 by default."},
    "min_pairs": {"type": "integer", "minimum": 2, "description": (
        "Fewer independent pairs than this (seeds; (dataset, seed) cells with `replicate: dataset-seed`) gives "
        "`inconclusive`; 3 by default.")},
    "precondition": {
        "type": "object", "additionalProperties": False, "required": ["better", "than", "metric"],
        "description": (
            "A paired comparison that must hold for the claim to be testable at all (e.g. the backbone beats raw "
            "pixels), checked from the runs like a paired claim (`better`, `than`, `metric`, optional `datasets`, "
            "`margin`, `min_pairs`, `replicate`). Unless it is reproduced, the claim's verdict is `inconclusive`, "
            "with the reason `precondition not met: ...`."),
        "properties": {
            "better": {"type": "string"}, "than": {"type": "string"}, "metric": {"type": "string"},
            "datasets": {"type": "array", "minItems": 1, "uniqueItems": True, "items": {"type": "string"}},
            "margin": {"type": "number", "minimum": 0}, "min_pairs": {"type": "integer", "minimum": 2},
            "replicate": {"enum": list(REPLICATES)}}},
    "source": {"enum": [PAPER, HARNESS], "description": (
        "Where the claim comes from. `paper`: the paper reports it (quote it in `quote`). `harness`: a hypothesis "
        "this harness tests, e.g. where the paper proves a theorem but runs no experiment.")},
    "margin_from": {"enum": list(MARGIN_SOURCES), "description": (
        "Where the margin comes from: `paper` (the paper states it), `prior` (written down before any run, e.g. the "
        "size of difference the field cares about), `after-run` (set after a run was seen: the page says so and "
        "`harness audit` reports it).")},
    "quote": {"type": "string", "minLength": 1, "description": (
        "The paper's sentence, table or figure the claim reproduces (required with `source: paper`); with "
        "`source: harness`, what the paper states instead (e.g. the theorem the hypothesis is drawn from).")},
}
COMMON_RULES: list[dict] = [
    {"if": {"required": ["source"], "properties": {"source": {"const": PAPER}}}, "then": {"required": ["quote"]}},
]


MARGIN_WORDS = {"paper": "the margin is the paper's", "prior": "the margin was set before any run",
                "after-run": "the margin was set after a run was seen"}


def provenance(source: str | None, quote: str | None, margin_from: str | None = None) -> str:
    """Where a claim (and its margin, when the claim says) comes from, in words, for the page and ``harness check``."""
    if source == PAPER:
        text = f"from the paper: {quote}"
    elif source == HARNESS:
        text = "a hypothesis this harness tests" + (f"; {quote}" if quote else "")
    else:
        text = "source not stated"
    return f"{text} ({MARGIN_WORDS[margin_from]})" if margin_from else text


def drop_absent_precondition(record: dict[str, Any]) -> dict[str, Any]:
    """A verdict's record without ``precondition`` when the claim states none (records of older claims unchanged)."""
    if record.get("precondition") is None:
        record.pop("precondition", None)
    return record


def interval_verdict(low: float, high: float, margin: float = 0.0) -> str:
    """The one rule of every interval test, its interval oriented so that above favours the claim: wholly above the
    margin is reproduced, wholly at or below it not reproduced, straddling it inconclusive."""
    if low > margin:
        return REPRODUCED
    if high <= margin:
        return NOT_REPRODUCED
    return INCONCLUSIVE


def decided_by_precondition(verdict) -> bool:
    """Whether an unmet precondition, not the claim's own interval, decided ``verdict``
    (:func:`harness.claims.checking.apply_precondition` starts the reason so)."""
    return str(verdict.reason).startswith("precondition not met")


def margin_text(margin: float) -> str:
    return f"the margin {margin:g}" if margin else "0"


def t_verdict(pairs: Sequence[float], margin: float, why_not: str | None = None, more: str = "more seeds"):
    """The paired t-test of independent ``pairs`` (oriented: + favours the claim) against ``margin``: the test's
    result, the verdict by :func:`interval_verdict`, and the reason in words (``why_not`` says what a refutation
    means for this kind; ``more``, what could decide an inconclusive one)."""
    from harness.stats import one_sided_t

    result = one_sided_t(pairs, margin)
    verdict = interval_verdict(*result.interval, margin)
    side = margin_text(margin)
    if verdict == REPRODUCED:
        reason = f"the whole interval is above {side}"
    elif verdict == NOT_REPRODUCED:
        reason = f"the whole interval is at or below {side}" + (f": {why_not}" if why_not else "")
    else:
        reason = f"the interval contains {side}; {more} could decide it"
    return result, verdict, reason


def pairs_text(pairs: int, unit: str) -> str:
    return f"{pairs} independent pair{'' if pairs == 1 else 's'} ({unit})"


class VerdictMixin:
    """What every verdict shows beside its own numbers: where the claim comes from, its record."""

    source: str | None
    quote: str | None
    kind: ClassVar[str]
    noun: ClassVar[str] = "claim"  # what a run's summary calls it ("check" for a check)

    def provenance(self) -> str:
        return provenance(self.source, self.quote, getattr(self, "margin_from", None))

    def pairs_text(self) -> str:
        """How many independent pairs the test had, and what one is (a kind with ``pairs`` and ``unit``)."""
        return pairs_text(self.pairs, self.unit)

    def spread_text(self) -> str:
        """Each dataset's share of the verdict (a kind with ``per_dataset``; a kind without one overrides this)."""
        return "; ".join(e.text() for e in self.per_dataset)

    def to_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        record = asdict(self)
        if self.kind != DEFAULT_KIND:  # a paired verdict's record predates kinds and has no `kind`
            record = {"kind": self.kind, **record}
        if getattr(self, "margin_from", None):  # set by check_claim where the claim says; records before it have none
            record["margin_from"] = self.margin_from
        return drop_absent_precondition(record)


@dataclass
class SpecContext:
    """What a kind's spec checks may read of the spec around a claim: its task's metrics, its datasets (grids written
    out, by id; ``members``: a grid's id → its datasets' ids) and its method ids."""

    task: str
    metrics: tuple[str, ...]
    datasets: dict[str, dict]
    members: dict[str, list[str]]
    method_ids: list[str]

    def named_datasets(self, names: Sequence[str]) -> list[str]:
        """The dataset ids ``names`` stands for, a grid's id written out."""
        out: list[str] = []
        for name in names:
            out.extend(self.members.get(name, [name]))
        return out


Report = Callable[[tuple, str], None]

NEAR_SHARE = 0.1  # an interval whose nearer end is within this share of its width from the margin is "near" it


@dataclass(frozen=True)
class MarginGap:
    """How far one 95% interval that decides a verdict sits from its threshold (the margin, or a bound): the nearer
    end's distance, and that distance as a share of the interval's width. A small share says the verdict could
    flip with another draw of seeds or another CPU's rounding (which moves an interval by a small part of it)."""

    what: str  # the method the interval is of, or "" for the claim's one interval
    low: float
    high: float
    threshold: float

    @property
    def distance(self) -> float:
        return min(abs(self.low - self.threshold), abs(self.high - self.threshold))

    @property
    def share(self) -> float:
        width = self.high - self.low
        return self.distance / width if width > 0 else float("inf")

    @property
    def near(self) -> bool:
        return self.share < NEAR_SHARE

    def text(self) -> str:
        share = "its interval has no width" if self.share == float("inf") else f"{100 * self.share:{'.2g' if self.share < 0.1 else '.0f'}}% of the interval's width"
        return (f"{self.what + ': ' if self.what else ''}{self.distance:.3g} from {self.threshold:g} ({share})"
                + ("; **near**" if self.near else ""))



class ClaimKind:
    """One kind of claim. A subclass sets the class attributes and implements :meth:`check`; the rest has defaults.

    - ``name``: what a claim writes as ``kind:``; ``order``: where its block stands on the page (lower first);
    - ``summary``: one sentence for the schema's description of ``kind``;
    - ``properties``: the JSON Schema of the keys this kind adds to a claim (beyond :data:`COMMON_PROPERTIES`);
      ``rules``: JSON Schema that a claim of this kind must also satisfy (e.g. ``{"required": [...]}``);
    - ``method_keys``: which of its keys name method ids (checked against the spec's methods);
    - ``heading``, ``about``: the page's section for this kind; ``legend``: what its verdicts mean, printed after a
      run's verdicts;
    - ``verdicts``: the words its verdicts take; ``refuting``: the one that makes ``harness check`` exit 1;
      ``is_check``: its verdicts are checks (``kind: check``), listed apart from the claims on the page and in
      ``claims.json`` and never counted as reproduced.
    """

    name: ClassVar[str]
    order: ClassVar[int] = 100
    summary: ClassVar[str] = ""
    properties: ClassVar[dict[str, dict]] = {}
    rules: ClassVar[list[dict]] = []
    method_keys: ClassVar[tuple[str, ...]] = ()
    heading: ClassVar[str] = ""
    about: ClassVar[str] = ""
    legend: ClassVar[str] = ""
    verdicts: ClassVar[tuple[str, ...]] = VERDICTS
    refuting: ClassVar[str] = NOT_REPRODUCED
    is_check: ClassVar[bool] = False

    # --- the spec ---------------------------------------------------------------------------------------------

    def stray_key_message(self, key: str, claim: dict) -> str:
        """What to say of a key another kind defines, which this claim has no use for."""
        return f"`{key}` has no meaning in a claim of kind {self.name!r}; a {self.name} claim names " + \
            ", ".join(self.method_keys)

    def stray_keys(self, claim: dict) -> list[str]:
        """Keys another kind defines that mean nothing in this claim."""
        return [key for key in claim if key not in COMMON_PROPERTIES and key != "kind" and key not in self.properties]

    def problems(self, claim: dict, path: tuple, spec: SpecContext, report: Report) -> None:
        """This kind's checks of a claim beyond the schema and the common ones (method ids, metric, datasets)."""

    def named_methods(self, claim: dict) -> list[tuple[tuple, str]]:
        """(path within the claim, method id) of every method the claim names."""
        out: list[tuple[tuple, str]] = []
        for key in self.method_keys:
            value = claim.get(key)
            if isinstance(value, str):
                out.append(((key,), value))
            elif isinstance(value, list):
                out.extend(((key, j), method) for j, method in enumerate(value))
        return out

    # --- the verdict ------------------------------------------------------------------------------------------

    def check(self, claim: dict, rows, goal: str, order: Sequence[str] = ()):
        """The claim's verdict on ``rows`` (without its precondition, which the base applies): a dataclass with
        ``claim``, ``says``, ``verdict``, ``reason``, ``source``, ``quote``, ``precondition``, and the methods
        ``line()``, ``details()``, ``evidence()``, ``spread_text()``, ``provenance()`` and ``to_dict()``."""
        raise NotImplementedError

    def margin_gaps(self, verdict, claim: dict) -> list[MarginGap]:
        """The intervals that decided ``verdict``, each against its threshold: by default the verdict's ``interval``
        (oriented: above favours the claim) against the claim's ``margin``; none for a verdict without an interval
        or one a precondition decided. A kind whose intervals are read otherwise overrides this."""
        interval = getattr(verdict, "interval", None)
        if interval is None or decided_by_precondition(verdict):
            return []
        return [MarginGap("", float(interval[0]), float(interval[1]), float(claim.get("margin", 0.0)))]

    # --- the page ---------------------------------------------------------------------------------------------

    def page_blocks(self, verdicts: list, board) -> list:
        """The page's section for this kind's verdicts: a heading, what the test is, one row per claim."""
        from harness.report.blocks import Table, verdict_cell

        return [("h2", self.heading), ("p", self.about),
                ("table", Table(["claim", "verdict", "says", "source", "evidence", "per dataset"],
                                [[f"`{v.claim}`", verdict_cell(v), v.says, v.provenance(), v.evidence(),
                                  v.spread_text() or "—"] for v in verdicts]))]
