"""``harness audit SPEC_OR_DIR...``: the findings of every rule on results folders, as lines and a summary, or JSON.

A DIR is a results folder (it holds ``spec.yaml``) or a results root (every folder below it that does); a SPEC (a
``.yaml`` file) is audited on its results folder under ``--out`` (``results/<profile>`` by default), with the
spec file's own claims and acknowledgements, so that an edit of either shows without a run. Exit 0: no open
finding; 1: a finding of severity error that the spec does not acknowledge; 2: bad input (a path that is neither,
a folder without results, an acknowledgement naming an unknown rule). An acknowledgement that matches no finding
(a fault fixed since, or a claim this profile does not have) is printed as a note.
"""
from __future__ import annotations

import json
from pathlib import Path

PROFILES = ("quick", "default", "paper")


class AuditUsage(Exception):
    """Bad input: exit 2, the message names the file and the place."""


def add_arguments(parser) -> None:
    parser.add_argument("paths", type=Path, nargs="*", metavar="SPEC_OR_DIR",
                        help="spec files (audited on their results folder under --out), results folders, or results "
                             "roots such as results/default")
    parser.add_argument("--out", type=Path, help="results root a SPEC was run into (default: results/<profile>)")
    parser.add_argument("--profile", choices=PROFILES, default="default", help="a SPEC's profile (default: default)")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="text (default), or JSON for tools")
    parser.add_argument("--rules", action="store_true", help="list the rules and what each checks, and stop")


def folders_of(path: Path) -> list[Path]:
    """The results folders a DIR argument stands for."""
    if (path / "spec.yaml").exists():
        return [path]
    found = sorted(p.parent for p in path.glob("*/spec.yaml")) + sorted(p.parent for p in path.glob("*/*/spec.yaml"))
    found = [f for f in found if not any(part.startswith(".") for part in f.relative_to(path).parts)]
    if not found:
        raise AuditUsage(f"{path}: no results here (expected a results folder with spec.yaml, or a root holding such "
                         "folders, e.g. results/default)")
    return found


def board_of(folder: Path, spec=None):
    """The folder's board; with a spec (a :class:`harness.spec.model.Spec`), its claims and acknowledgements stand
    in for the ones the folder was written with (neither is part of the spec hash, so the rows still match)."""
    from harness.claims import check_claim
    from harness.report.board import NoResults
    from harness.report.folder import compute
    from harness.spec.model import claim_entries

    try:
        board = compute(folder)
    except NoResults as exc:
        raise AuditUsage(str(exc)) from None
    if spec is not None:
        fresh = {**spec.resolved, "datasets": board.spec["datasets"]}
        board.meta["spec"]["claims"] = claim_entries(fresh) if spec.resolved.get("claims") else []
        board.meta["spec"]["audit"] = spec.resolved.get("audit", {})
        order = list(board.dataset_entries)
        goals = {name: metric.goal for name, metric in board.metrics.items()}
        unknown = sorted({m for c in board.spec["claims"] for m in (c["metric"], (c.get("precondition") or {}).get(
            "metric")) if m} - set(goals))
        if unknown:  # the spec's claims are newer than the folder's runs
            raise AuditUsage(f"{spec.path}: its claims read {', '.join(unknown)}, which {folder} has never recorded; "
                             f"run `harness run {spec.path} --profile {spec.profile}` first")
        board.verdicts[:] = [check_claim(c, board.rows, goals[c["metric"]], order, goals)
                             for c in board.spec["claims"]]
    return board


def audit_paths(paths: list[Path], out: Path | None, profile: str) -> list[tuple[str, list, list[str]]]:
    """(the folder's name, its findings, its acknowledgements that match none) for every folder the arguments stand
    for."""
    from harness.audit.base import acknowledgement_problems, audit_board, unmatched_acknowledgements

    audited = []
    for path in paths:
        spec = None
        if path.suffix in (".yaml", ".yml") and path.is_file():
            from harness.spec.load import SpecError, load_spec

            try:
                spec = load_spec(path, profile)
            except SpecError as exc:
                raise AuditUsage(str(exc)) from None
            folder = (out if out is not None else Path("results") / profile) / path.stem
            if not (folder / "spec.yaml").exists():
                raise AuditUsage(f"{path}: no results folder at {folder}; run `harness run {path} --profile "
                                 f"{profile}` first, or give --out")
            folders, source = [folder], path
        elif path.is_dir():
            folders, source = folders_of(path), None
        else:
            raise AuditUsage(f"{path}: neither a spec file (.yaml) nor a results folder")
        for folder in folders:
            board = board_of(folder, spec)
            problems = acknowledgement_problems(board.spec)
            if problems:
                where = source or folder / "spec.yaml"
                raise AuditUsage("\n".join(f"{where}: $.{'.'.join(str(p) for p in place)}: {message}"
                                           for place, message in problems))
            # the board's own findings (compute audits it) unless the spec file's claims stand in
            findings = audit_board(board, folder.name) if spec is not None else board.findings
            audited.append((board.spec["name"] if len(folders) == 1 and spec else folder.name, findings,
                            unmatched_acknowledgements(findings, board.spec)))
    return audited


def render_text(audited: list[tuple[str, list, list[str]]]) -> str:
    lines = []
    for name, findings, unmatched in audited:
        lines += [f.line() for f in findings] + [f"{name} note: {text}" for text in unmatched]
    if lines:
        lines.append("")
    width = max([len(name) for name, _, _ in audited] + [4])
    lines.append(f"{'spec':<{width}}  findings  acknowledged  open")
    for name, findings, _ in audited:
        acknowledged = sum(f.acknowledged is not None for f in findings)
        lines.append(f"{name:<{width}}  {len(findings):>8}  {acknowledged:>12}  {sum(f.open for f in findings):>4}")
    total = sum(len(f) for _, f, _ in audited)
    still = sum(sum(x.open for x in f) for _, f, _ in audited)
    lines.append(f"{len(audited)} folder(s), {total} finding(s), {still} open (an error not acknowledged in the spec)")
    return "\n".join(lines)


def render_rules() -> str:
    from harness.audit.base import rules

    return "\n".join(f"{rule.name} ({rule.severity}): {rule.about}" for rule in rules().values())


def main(args) -> int:
    """The command; raises :class:`AuditUsage` on bad input."""
    if args.rules:
        print(render_rules())
        return 0
    if not args.paths:
        raise AuditUsage("give spec files or results folders to audit, e.g. `harness audit results/default`")
    audited = audit_paths(args.paths, args.out, args.profile)
    if args.format == "json":
        print(json.dumps({"folders": [{"spec": name, "findings": [f.to_dict() for f in findings],
                                       "unmatched_acknowledgements": unmatched}
                                      for name, findings, unmatched in audited]}, indent=1))
    else:
        print(render_text(audited))
    return 1 if any(f.open for _, findings, _ in audited for f in findings) else 0
