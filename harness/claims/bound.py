"""``kind: bound``: "the metric is at most (at least) a value on every cell of these methods", a theorem's
guarantee. One cell beyond it (beyond float rounding) refutes it (``not reproduced``, naming the worst cell); no
violation is ``reproduced`` only when every cell of the named methods finished (a failed cell is unchecked:
``inconclusive``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Sequence

from harness.claims._rows import claim_columns
from harness.claims.base import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, ClaimKind, VerdictMixin
from harness.claims.scaling import BOUND_PROPERTIES, ONE_BOUND

BOUND = "bound"
TEST_BOUND = "every cell of the named methods against the bound; one cell beyond it refutes the claim"


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
class BoundVerdict(VerdictMixin):
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

    def bound_text(self) -> str:
        return f"{self.metric} {'≤' if self.side == 'at_most' else '≥'} {self.bound:g}"

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


def check_bound(claim: dict, rows, order: Sequence[str] = ()) -> BoundVerdict:
    """A bound claim's verdict: every finished cell of ``methods`` against ``at_most`` / ``at_least``."""
    side = "at_most" if claim.get("at_most") is not None else "at_least"
    bound = float(claim[side])
    sign = 1.0 if side == "at_most" else -1.0  # sign · (value − bound) > 0 is a violation
    from harness.stats import FLOAT_NOISE

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


class BoundKind(ClaimKind):
    name = BOUND
    order = 20
    summary = ("`bound`: the metric stays at or below `at_most` (or at or above `at_least`) on every cell of "
               "`methods`; one cell beyond it refutes the claim.")
    properties = BOUND_PROPERTIES
    rules = [ONE_BOUND]
    method_keys = ("methods",)
    heading = "Bound claims"
    about = "A bound holds on every cell of the named methods; one cell beyond it refutes the claim."
    legend = ("(a bound claim: reproduced when no cell of its methods is beyond the bound; one cell beyond "
              "it refutes it)")

    def problems(self, claim: dict, path: tuple, spec, report) -> None:
        if "at_most" in claim and "at_least" in claim:
            report(path + ("at_least",), f"a {self.name} claim on methods sets one of at_most and at_least, not both")

    def check(self, claim: dict, rows, goal: str, order: Sequence[str] = ()) -> BoundVerdict:
        return check_bound(claim, rows, order)


KIND = BoundKind()
