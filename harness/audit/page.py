"""The audit on a leaderboard page: its own section, and each claim's findings beside its verdict."""
from __future__ import annotations

from harness.audit.base import Finding


def audit_blocks(findings: list[Finding]) -> list:
    """The page's "Audit" section: what the audit is, then one row per finding (the spec's reason where it
    acknowledges one), or that it found nothing."""
    from harness.report.blocks import Table

    intro = ("`harness audit`'s methodology lint (`harness audit --rules` lists what each rule checks): the faults a "
             "reviewer of the paper's field would raise against this page's claims and rows.")
    if not findings:
        return [("h2", "Audit"), ("p", intro + " It finds none.")]
    acknowledged = sum(f.acknowledged is not None for f in findings)
    still = sum(f.open for f in findings)
    counts = (f" {len(findings)} finding{'' if len(findings) == 1 else 's'}: {acknowledged} acknowledged by the spec "
              f"(its reason beside), {still} open.")
    rows = [[f"`{f.rule}`", f"`{f.claim}`" if f.claim else (f"`{f.method}`" if f.method else "the spec"),
             f.evidence, f.acknowledged if f.acknowledged is not None else ("**open**" if f.open else "a warning")]
            for f in findings]
    return [("h2", "Audit"), ("p", intro + counts),
            ("table", Table(["rule", "about", "evidence", "acknowledged"], rows))]


def mark_verdicts(verdicts: list, findings: list[Finding]) -> None:
    """Give each verdict the rules that found something in its claim (``verdict.audit``), which its line shows."""
    for verdict in verdicts:
        verdict.audit = [f.rule for f in findings if f.claim == verdict.claim]
