"""``kind: check``: an assertion that holds by construction or by theorem and cannot fail without a bug (a certificate
whose violation fails the cell, an identity of the task's own simulator, break-even's ratio ≤ 2, "no method beats the
exact optimum").

A check is not a claim of the paper's that a run could refute: counting it among the reproduced claims would inflate
the count with results that were never in doubt. So a check has its own verdicts, ``holds`` / ``fails`` /
``unchecked``, its own section of the page and its own list in ``claims.json`` (``checks``), and is never counted as
reproduced. It is tested as a ``bound`` is (every finished cell of ``methods`` against ``at_most`` / ``at_least``,
one cell beyond it fails the check), and it says in ``why`` what makes it hold, so that a reader knows what a failure
would mean. A failed check is a bug: ``harness check`` exits 1 on it, as on a refuted claim, and ``harness regress``
reports a check that stopped holding.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar, Sequence

from harness.claims.base import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, ClaimKind
from harness.claims.bound import BoundVerdict, check_bound
from harness.claims.scaling import BOUND_PROPERTIES, ONE_BOUND

CHECK = "check"
HOLDS, FAILS, UNCHECKED = "holds", "fails", "unchecked"
CHECK_VERDICTS = (HOLDS, FAILS, UNCHECKED)
_FROM_BOUND = {REPRODUCED: HOLDS, NOT_REPRODUCED: FAILS, INCONCLUSIVE: UNCHECKED}


@dataclass
class CheckVerdict(BoundVerdict):
    why: str = ""

    kind: ClassVar[str] = CHECK
    noun: ClassVar[str] = "check"

    def details(self) -> list[str]:
        return [*super().details(), f"holds because: {' '.join(self.why.split())}"]


def check_check(claim: dict, rows, order: Sequence[str] = ()) -> CheckVerdict:
    """A check's verdict: the bound's test, its verdict read as holds / fails / unchecked."""
    bound = check_bound(claim, rows, order)
    fields = {f.name: getattr(bound, f.name) for f in dataclasses.fields(bound)}
    fields["verdict"] = _FROM_BOUND[bound.verdict]
    if bound.verdict == NOT_REPRODUCED:  # what a failed check means differs from a refuted bound's
        fields["reason"] = f"{bound.violations} cell(s) violate {bound.bound_text()}, so the check fails: a bug to find"
    return CheckVerdict(**fields, why=claim["why"])


class CheckKind(ClaimKind):
    name = CHECK
    order = 90  # after every claim: checks are not what the page reports as the paper's results
    summary = ("`check`: an assertion that holds by construction or by theorem (`why` says what makes it hold), tested "
               "like a bound on every cell of `methods`; reported apart from the claims, never as reproduced.")
    properties = {**BOUND_PROPERTIES, "why": {"type": "string", "minLength": 1, "description": (
        "kind: check: what makes the check hold whatever the data (the construction, the theorem), so that a "
        "failure can only be a bug.")}}
    rules = [ONE_BOUND, {"required": ["why"]}]
    method_keys = ("methods",)
    verdicts = CHECK_VERDICTS
    refuting = FAILS
    is_check = True
    heading = "Checks"
    about = ("Assertions that hold by construction or by theorem, tested on every cell of the named methods. They "
             "show the implementation is sound; they are not the paper's claims and are not counted with them. A "
             "check that fails is a bug.")
    legend = "(a check: holds when no cell of its methods is beyond its bound; it cannot fail without a bug)"

    def problems(self, claim: dict, path: tuple, spec, report) -> None:
        if "at_most" in claim and "at_least" in claim:
            report(path + ("at_least",), "a check sets one of at_most and at_least, not both")
        if "precondition" in claim:
            report(path + ("precondition",), "a check holds whatever the data, so it has no precondition; a claim "
                                             "that holds only under one is a claim (kind: bound)")

    def check(self, claim: dict, rows, goal: str, order: Sequence[str] = ()) -> CheckVerdict:
        return check_check(claim, rows, order)

    def page_blocks(self, verdicts: list, board) -> list:
        from harness.report.blocks import Table, verdict_cell

        return [("h2", self.heading), ("p", self.about),
                ("table", Table(["check", "verdict", "says", "holds because", "evidence", "per dataset"],
                                [[f"`{v.claim}`", verdict_cell(v), v.says, v.why, v.evidence(),
                                  v.spread_text() or "—"] for v in verdicts]))]


KIND = CheckKind()
