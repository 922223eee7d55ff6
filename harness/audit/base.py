"""What every audit rule shares: a finding, the rule's base class, the folder a rule reads, the registry of rules
and the acknowledgements a spec states."""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import asdict, dataclass
from functools import cached_property, lru_cache
from typing import Any, ClassVar, Iterable

ERROR, WARNING = "error", "warning"


@dataclass
class Finding:
    """One fault: which spec, about what (a claim or check id, a method, or the spec), by which rule, the evidence."""

    spec: str
    subject: str  # a claim's id, "method <id>", or "spec"
    rule: str
    severity: str
    evidence: str
    claim: str | None = None
    method: str | None = None
    acknowledged: str | None = None  # the spec's reason, when it acknowledges this finding

    @property
    def open(self) -> bool:
        """Whether the finding fails the audit: an error the spec does not acknowledge."""
        return self.severity == ERROR and self.acknowledged is None

    def line(self) -> str:
        said = f" (acknowledged: {self.acknowledged})" if self.acknowledged is not None else ""
        return f"{self.spec} {self.subject} {self.rule}: {self.evidence}{said}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Folder:
    """What a rule reads of one results folder: what its leaderboard is built from.

    ``board`` is the folder's :class:`harness.report.board.Board` (its spec, current cells as a table, verdicts,
    metric table, chance levels); the rest is derived from it once and shared by the rules."""

    board: Any
    name: str = ""

    @property
    def spec(self) -> dict[str, Any]:
        return self.board.spec

    @property
    def metrics(self):
        return self.board.metrics

    @cached_property
    def claims(self) -> dict[str, dict]:
        """The spec's claims (and checks) by id, a grid's id written out as its datasets."""
        return {c["id"]: c for c in self.spec.get("claims", [])}

    @cached_property
    def verdicts(self) -> dict[str, Any]:
        return {v.claim: v for v in self.board.verdicts}

    @cached_property
    def cells(self):
        """The current cells as a pandas frame: dataset, method, status (categoricals), seed and one float column per
        metric, the results table's own columns (nothing decoded: a million rows cost a few milliseconds)."""
        import pandas as pd

        from harness.results_table import METRIC, metric_names

        table = self.board.rows
        columns = {name: table[name] for name in ("dataset", "method", "seed", "status")}
        columns.update({name: table[METRIC + name] for name in metric_names(table)})
        return pd.DataFrame(columns, copy=False)

    def ok_means(self, metric: str):
        """The mean over seeds of ``metric`` per (dataset, method), over the cells that finished: a Series indexed by
        (dataset, method), only the pairs that have the metric."""
        cells = self.cells
        if metric not in cells:
            return cells.iloc[0:0].groupby(["dataset", "method"], observed=True)["seed"].mean()
        ok = cells[(cells["status"] == "ok") & cells[metric].notna()]
        return ok.groupby(["dataset", "method"], sort=False, observed=True)[metric].mean()


def claim_methods(claim: dict) -> list[str]:
    """Every method a claim names (its kind says which keys name methods), each once, in order."""
    from harness.claims import kind_of

    return list(dict.fromkeys(method for _, method in kind_of(claim).named_methods(claim)))


def compared_arms(claim: dict) -> tuple[str, str] | None:
    """The two methods a claim compares, first the one it favours (better/than, or the two it names); None for a
    claim on one side or on several methods."""
    from harness.claims import kind_of

    if claim.get("better") and claim.get("than"):
        return claim["better"], claim["than"]
    kind = kind_of(claim)
    named = [method for _, method in kind.named_methods(claim)]
    paired = "replicate" in kind.properties  # a kind whose claims are paired tests of the methods they name
    return (named[0], named[1]) if paired and len(named) == 2 else None


class Rule:
    """One audit rule. A subclass sets ``name``, ``severity`` and ``about`` and implements :meth:`findings`."""

    name: ClassVar[str]
    severity: ClassVar[str] = ERROR
    about: ClassVar[str] = ""

    def findings(self, folder: Folder) -> Iterable[Finding]:
        raise NotImplementedError

    def finding(self, folder: Folder, evidence: str, claim: str | None = None, method: str | None = None) -> Finding:
        subject = claim if claim is not None else (f"method {method}" if method is not None else "spec")
        return Finding(folder.name, subject, self.name, self.severity, evidence, claim, method)


class RuleError(LookupError):
    pass


@lru_cache(maxsize=1)
def rules() -> dict[str, Rule]:
    """Every rule by name, in the order they are listed: each module of :mod:`harness.audit.rules` lists its own in
    ``RULES``."""
    import harness.audit.rules as package

    found: dict[str, Rule] = {}
    for module in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        for rule in getattr(importlib.import_module(f"{package.__name__}.{module.name}"), "RULES", ()):
            if rule.name in found:
                raise RuleError(f"audit rule {rule.name!r} is defined twice")
            found[rule.name] = rule
    return found


def acknowledge(findings: list[Finding], spec: dict[str, Any]) -> list[Finding]:
    """Mark each finding the spec acknowledges (``audit.acknowledge``: the rule, and the claim or method when the
    entry names one) with the entry's reason."""
    entries = (spec.get("audit") or {}).get("acknowledge", [])
    for finding in findings:
        entry = next((e for e in entries if _matches(e, finding)), None)
        if entry is not None:
            finding.acknowledged = entry["why"]
    return findings


def acknowledgement_problems(spec: dict[str, Any]) -> list[tuple[tuple, str]]:
    """(path, message) for each acknowledgement naming a rule the audit does not have (a typo: bad input).

    One naming a claim or method this profile lacks is not an error (a base spec's acknowledgement is inherited by
    profiles that replace the claims): :func:`unmatched_acknowledgements` reports it as acknowledging nothing."""
    known = rules()
    out = []
    for i, entry in enumerate((spec.get("audit") or {}).get("acknowledge", [])):
        if entry.get("rule") not in known:
            out.append((("audit", "acknowledge", i, "rule"),
                        f"no audit rule {entry.get('rule')!r}; rules: {', '.join(known)}"))
    return out


def unmatched_acknowledgements(findings: list[Finding], spec: dict[str, Any]) -> list[str]:
    """Each acknowledgement that matches no finding, in words: a fault fixed since, or a claim this profile lacks."""
    out = []
    for i, entry in enumerate((spec.get("audit") or {}).get("acknowledge", [])):
        if not any(_matches(entry, f) for f in findings):
            what = ", ".join(f"{key} {entry[key]}" for key in ("rule", "claim", "method") if key in entry)
            out.append(f"audit.acknowledge[{i}] ({what}) acknowledges no finding here")
    return out


def _matches(entry: dict, finding: Finding) -> bool:
    return (entry["rule"] == finding.rule and entry.get("claim", finding.claim) == finding.claim
            and entry.get("method", finding.method) == finding.method)


def audit_board(board, name: str | None = None) -> list[Finding]:
    """Every rule's findings on one folder's board, acknowledged as its spec says."""
    folder = Folder(board, name or board.spec["name"])
    found: list[Finding] = []
    for rule in rules().values():
        found.extend(rule.findings(folder))
    return acknowledge(found, board.spec)
