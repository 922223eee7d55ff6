"""A claim's verdict: its kind's check, then the precondition every kind may state (a paired comparison that must
hold for the claim to be testable at all)."""
from __future__ import annotations

from typing import Sequence

from harness.claims.base import INCONCLUSIVE, REPRODUCED
from harness.claims.registry import kind_of, kinds


def check_claim(claim: dict, rows, goal: str, order: Sequence[str] = (), goals: dict[str, str] | None = None):
    """The claim's verdict on ``rows``; ``order`` lists dataset ids in the order the page shows them.

    The verdict is the dataclass of the claim's kind. With a ``precondition``, ``goals`` maps metric names to
    ``max`` / ``min`` for the precondition's metric; see :func:`apply_precondition`.
    """
    verdict = kind_of(claim).check(claim, rows, goal, order)
    if claim.get("margin_from"):  # a feature of every kind: the base's provenance and record show it
        verdict.margin_from = claim["margin_from"]
    if claim.get("precondition"):
        pre = claim["precondition"]
        if not goals or pre["metric"] not in goals:
            raise ValueError(f"claim {claim['id']!r}: the goal of its precondition's metric {pre['metric']!r} is unknown")
        verdict = apply_precondition(verdict, claim, rows, goals[pre["metric"]], order)
    return verdict


def apply_precondition(verdict, claim: dict, rows, goal: str, order: Sequence[str] = ()):
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
    result = kinds()["paired"].check(pre_claim, rows, goal, order)
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


def legends(verdicts: list) -> list[str]:
    """What the verdicts of these claims mean, one line per kind present (kinds that say the same, once)."""
    present = {getattr(v, "kind", "paired") for v in verdicts}
    return list(dict.fromkeys(k.legend for name, k in kinds().items() if name in present and k.legend))


def page_blocks(verdicts: list, board) -> list:
    """Each kind's section of the page for its verdicts, in the kinds' order."""
    blocks: list = []
    for name, kind in kinds().items():
        mine = [v for v in verdicts if getattr(v, "kind", "paired") == name]
        if mine:
            blocks += kind.page_blocks(mine, board)
    return blocks


def margin_gaps(verdict, claim: dict) -> list:
    """How far each interval that decided ``verdict`` sits from its margin (:class:`harness.claims.base.MarginGap`),
    as the verdict's kind reads them."""
    return kinds()[getattr(verdict, "kind", "paired")].margin_gaps(verdict, claim)
