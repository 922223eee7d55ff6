"""The ``harness`` command. A thin layer over :mod:`harness.runner`; heavy packages load lazily.

Exit codes, for every command: 0 success; 1 the run finished but some cells failed or
timed out, ``check`` found a claim not reproduced, ``regress`` found a regression, or
``bench`` found a slower or failing kernel; 2 invalid spec or usage (nothing ran), or ``merge`` refused its
folders (nothing written).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from harness.audit import command as audit_command
from harness.cli_arguments import CLUSTER_FLAGS, LIST_KINDS, build_parser

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    pass


def _cluster_options(args) -> dict:
    """The --slurm-* and --cells-per-job flags given, as :func:`harness.cluster.resources_from` overrides."""
    from harness.backends import CLUSTER_EXECUTORS

    given = {field: getattr(args, flag) for flag, field in CLUSTER_FLAGS.items() if getattr(args, flag) is not None}
    if args.slurm_option:
        given["options"] = dict(args.slurm_option)
    if args.executor in CLUSTER_EXECUTORS:
        import importlib.util

        if importlib.util.find_spec("submitit") is None:
            raise UsageError(f"--executor {args.executor} needs the 'cluster' extra (submitit not installed): "
                             "pip install -e '.[cluster]'")
    if given and args.executor not in CLUSTER_EXECUTORS:
        flags = ", ".join("--" + flag.replace("_", "-") for flag in CLUSTER_FLAGS if getattr(args, flag) is not None)
        raise UsageError(f"{flags or '--slurm-option'} only apply to cluster jobs; add --executor slurm "
                         "(or local-submitit)")
    return given


class Terminated(KeyboardInterrupt):
    """SIGTERM (``kill``, a job scheduler's stop), handled as Ctrl-C is: the workers are stopped, the finished
    cells stay saved. Unhandled, SIGTERM ended the run at once and left its worker processes computing."""


def _on_sigterm(signum, frame):
    raise Terminated()


def main(argv: list[str] | None = None) -> int:
    import signal
    import threading

    args = build_parser().parse_args(argv)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        return COMMANDS[args.command](args)
    except UsageError as exc:
        print(f"harness {args.command}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt as exc:
        print(f"{'terminated' if isinstance(exc, Terminated) else 'interrupted'}; finished cells are saved and a "
              "new `harness run` resumes", file=sys.stderr)
        return 143 if isinstance(exc, Terminated) else 130
    except BrokenPipeError:
        # the reader went away (`harness list | head`): stop quietly, as other Unix tools do,
        # and keep Python from reporting the same broken pipe again when it flushes at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


def _load(paths: list[Path], profile: str):
    from harness.spec.load import MissingExtra, MissingProfile, SpecError, load_spec

    specs, problems, invalid = [], [], False
    for path in paths:
        try:
            specs.append(load_spec(path, profile))
        except SpecError as exc:
            problems.append(str(exc))
            # a missing extra is one line, the pip command; a missing profile one line, the profiles there are
            invalid = invalid or not isinstance(exc, (MissingExtra, MissingProfile))
    if problems:
        raise UsageError(("invalid spec, nothing ran:\n" if invalid else "") + "\n".join(problems))
    return specs


def cmd_run(args) -> int:
    from harness.plan import PlanError, RunOptions
    from harness.runner import run
    from harness.store import StoreLocked, WriteFailed

    specs = _load(args.specs, args.profile)
    options = RunOptions(
        methods=args.methods, datasets=args.datasets, seeds=args.seeds, trials=args.trials, device=args.device,
        timeout_s=args.timeout, jobs=args.jobs, data_dir=args.data_dir, storage=args.storage, fresh=args.fresh,
        executor=args.executor, cluster=_cluster_options(args), retry=not args.no_retry,
    )
    try:
        summaries = run(specs, out=args.out, options=options, progress=not args.no_progress)
    except (PlanError, StoreLocked, WriteFailed) as exc:  # WriteFailed: a full disk, one line
        raise UsageError(str(exc)) from None
    except Exception as exc:
        # a StorageError is raised only by harness.tuning, which a run with nothing to tune never imports
        tuning = sys.modules.get("harness.tuning")
        if tuning is not None and isinstance(exc, tuning.StorageError):
            raise UsageError(str(exc)) from None
        raise
    status = EXIT_OK
    for s in summaries:
        counts = ", ".join(f"{n} {k}" for k, n in sorted(s.statuses.items())) or "nothing new to run"
        print(f"{s.spec}: {counts}" + (f" ({s.already_done} already done)" if s.already_done else "")
              + f" in {s.wall_s:.1f} s → {s.folder}/leaderboard.md (and leaderboard.html)")
        for note in s.notes:
            print(f"  {note}")
        for reason, count in s.skip_reasons.items():
            print(f"  {count} cell(s) skipped: {reason}")
        for verdict in s.verdicts:  # a check is named as one, never as a claim
            print(f"  {verdict.noun} {verdict.claim}: {verdict.verdict}")
        for legend in s.legends:  # what each kind's verdicts mean
            print(f"  {legend}")
        if not s.ok:
            status = EXIT_FAILED
            print(f"  {s.not_ok} planned cell(s) failed or timed out: see {s.folder}/leaderboard.md and runs.jsonl; "
                  "a rerun retries them (--no-retry keeps them)")
    return status


def cmd_validate(args) -> int:
    from harness.audit.base import acknowledgement_problems
    from harness.spec.load import SpecError, validate_spec

    status = EXIT_OK
    for path in args.specs:
        try:
            validate_spec(path, extra=acknowledgement_problems)  # the spec layer knows no audit rules
            print(f"ok {path}")
        except SpecError as exc:
            print(exc, file=sys.stderr)
            status = EXIT_USAGE
    return status


def cmd_list(args) -> int:
    kinds = [args.kind] if args.kind else list(LIST_KINDS)
    for kind in kinds:
        if len(kinds) > 1:
            print(f"# {kind}")
        if kind == "metrics":
            from harness.registry import metrics as metric_table

            rows = [(m.name, f"{m.goal} {m.arrow}", m.unit or "-", m.about) for m in metric_table().values()]
        elif kind == "specs":
            rows = _spec_rows()
        else:
            from harness.registry import default_registry

            registry = default_registry()
            rows = [(e.name, e.task or "-", e.origin + _needs(registry, e.origin), e.about)
                    for e in (registry.entry(kind, n) for n in registry.names(kind))]
        widths = [max((len(r[i]) for r in rows), default=0) for i in range(3)]
        for row in rows:
            print("  ".join(c.ljust(w) for c, w in zip(row[:3], widths)) + "  " + row[3])
        if len(kinds) > 1:
            print()
    return EXIT_OK


def _needs(registry, origin: str) -> str:
    """`` (needs pip install -e '.[causal]')`` after the origin of a family whose libraries are not installed here."""
    need = registry.requirements.get(origin)
    return f" (needs {registry.install_command(origin)})" if need and need.missing() else ""


def spec_folders() -> list[Path]:
    """Where ``harness list specs`` looks: ``./specs`` (a project of one's own) and the specs
    that come with the harness checkout, whatever the current directory."""
    shipped = Path(__file__).resolve().parent.parent / "specs"
    folders = []
    for folder in (Path("specs"), shipped):
        if folder.is_dir() and all(folder.resolve() != f.resolve() for f in folders):
            folders.append(folder)
    return folders


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path.resolve())


def _spec_rows() -> list[tuple[str, str, str, str]]:
    import yaml

    from harness.store import load_yaml

    rows = []
    for path in (p for folder in spec_folders() for p in sorted(folder.glob("*.yaml"))):
        try:  # libyaml's loader: no positions are needed here (85% of `harness list` was PyYAML's pure-Python one)
            data = load_yaml(path.read_text(encoding="utf-8")) or {}
        except (yaml.YAMLError, OSError, UnicodeDecodeError):
            data = {}
        data = data if isinstance(data, dict) else {}
        rows.append((path.stem, str(data.get("task", "?")), _shown(path), str(data.get("title", "(does not parse)"))))
    return rows


def cmd_show(args) -> int:
    import yaml

    (spec,) = _load([args.spec], args.profile)
    print(f"# {spec.path}, profile {spec.profile!r}, spec_hash {spec.spec_hash}")
    print(yaml.safe_dump(spec.resolved, sort_keys=False, allow_unicode=True), end="")
    tuned = [m for m in spec.methods if m.search and spec.tuning.trials > 0]
    pairs = [(d, m) for d in spec.datasets for m in spec.methods if d.runs(m.id)]
    tuned_pairs = sum(m in tuned for _, m in pairs)
    test_cells = len(pairs) * len(spec.seeds)
    tuning_cells = tuned_pairs * spec.tuning.trials * len(spec.tuning.seeds)
    every = len(pairs) == len(spec.datasets) * len(spec.methods)
    shape = (f"{len(spec.datasets)} datasets × {len(spec.methods)} methods" if every
             else f"{len(pairs)} dataset × method pairs (some datasets run only some methods)")
    tuned_shape = (f"{len(tuned)} methods × {len(spec.datasets)} datasets" if every else f"{tuned_pairs} tuned pairs")
    print(f"\n# plan: {shape} × {len(spec.seeds)} seeds "
          f"= {test_cells} test cells; tuning: {tuned_shape} × "
          f"{spec.tuning.trials} trials × {len(spec.tuning.seeds)} validation seeds = {tuning_cells} cells; "
          f"timeout {spec.hardware.timeout_s:g} s per cell")
    for dataset in spec.datasets:
        for method in (m for m in spec.methods if dataset.runs(m.id)):
            search = f", tunes {', '.join(method.search)}" if method in tuned else ""
            print(f"#   {dataset.id} × {method.id} ({method.kind}{search}) × seeds {spec.seeds}")
    return EXIT_OK


def cmd_leaderboard(args) -> int:
    from harness.report.board import NoResults
    from harness.report.folder import write_leaderboard

    try:
        write_leaderboard(args.folder)
    except NoResults as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:  # a read-only results folder
        raise UsageError(f"{args.folder}: cannot write the leaderboard there ({exc.strerror or exc})") from None
    name = {"md": "leaderboard.md", "csv": "leaderboard.csv", "html": "leaderboard.html"}[args.format]
    if args.format == "html":
        print(args.folder / name)
    else:
        print((args.folder / name).read_text(), end="")
    return EXIT_OK


def cmd_merge(args) -> int:
    from harness.report.board import NoResults
    from harness.merge import MergeError, merge_inputs

    try:
        summaries = merge_inputs(args.out, args.folders)
    except (MergeError, NoResults) as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"{args.out}: cannot write the merged folder there ({exc.strerror or exc})") from None
    for summary in summaries:
        for folder, added in summary.added.items():
            once = summary.kept_once[folder]
            print(f"{folder}: {added} row(s) taken" + (f", {once} already there (same key and result) kept once" if once else ""))
        classes = f"; device classes: {'; '.join(summary.device_classes)}" if summary.device_classes else ""
        print(f"{summary.out}/{'runs.jsonl'}: {summary.rows} row(s){classes} → {summary.out}/leaderboard.md "
              "(and leaderboard.html)")
        for note in summary.notes:
            print(f"  note: {note}")
    return EXIT_OK


def cmd_repair(args) -> int:
    from harness.store import DAMAGED_FILE, RUNS_FILE, RunStore, StoreLocked

    if not (args.folder / RUNS_FILE).is_file():
        raise UsageError(f"{args.folder}: no {RUNS_FILE} here (expected a spec's results folder from `harness run`)")
    try:
        with RunStore(args.folder) as store:
            numbers = store.repair()
    except StoreLocked as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"{args.folder}: cannot rewrite {RUNS_FILE} ({exc.strerror or exc})") from None
    if numbers:
        lines = ", ".join(map(str, numbers))
        print(f"{args.folder / RUNS_FILE}: moved {len(numbers)} damaged line(s) (line {lines}) to "
              f"{args.folder / DAMAGED_FILE}")
    else:
        print(f"{args.folder / RUNS_FILE}: no damaged line, nothing moved")
    return EXIT_OK


def cmd_check(args) -> int:
    from harness.claims import check_claim, kind_of
    from harness.report.board import NoResults
    from harness.report.folder import folder_metrics, read_folder
    from harness.runner import default_out
    from harness.spec.model import claim_entries

    out = args.out if args.out is not None else default_out(args.profile)
    (spec,) = _load([args.spec], args.profile)  # a profile the spec lacks is refused before any folder is read
    stem = args.spec.stem
    folder = out / stem
    try:
        meta, rows = read_folder(folder)
    except NoResults as exc:
        raise UsageError(f"{exc}; run `harness run {args.spec} --out {out}` first") from None
    if meta["profile"] != spec.profile:
        (spec,) = _load([args.spec], meta["profile"])
    if not spec.claims:
        print(f"{spec.name}: the spec states no claims")
        return EXIT_OK
    try:
        metrics = folder_metrics(folder, spec.resolved)  # goals as the run recorded them, not as registered now
    except NoResults as exc:
        raise UsageError(str(exc)) from None
    status = EXIT_OK
    print(f"# {spec.name}, {meta['profile']} profile, from {folder}/runs.jsonl")
    order = [d.id for d in spec.datasets]
    goals = {name: metric.goal for name, metric in metrics.items()}
    for claim in claim_entries(spec.resolved):
        verdict = check_claim(claim, rows, metrics[claim["metric"]].goal, order, goals)
        print(verdict.line())
        for detail in verdict.details():
            print(f"  {detail}")
        if verdict.verdict == kind_of(claim).refuting:
            status = EXIT_FAILED
    return status


def cmd_new(args) -> int:
    from harness.scaffold import ScaffoldError, command

    try:
        lines = command(args.name, args.family, args.from_spec, args.dir)
    except ScaffoldError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:  # a folder that cannot be written
        raise UsageError(f"{exc.filename or args.dir}: cannot write there ({exc.strerror or exc})") from None
    print("\n".join(lines))
    return EXIT_OK


def cmd_audit(args) -> int:
    try:
        return audit_command.main(args)
    except audit_command.AuditUsage as exc:
        raise UsageError(str(exc)) from None


def cmd_regress(args) -> int:
    from harness.regress import RegressUsage, compare_roots, parse_tolerances, render, render_markdown

    try:
        tolerances = parse_tolerances(args.tolerance)
        report = compare_roots(args.baseline, args.current, tolerances)
    except RegressUsage as exc:
        raise UsageError(str(exc)) from None
    print(render(report, tolerances))
    if args.markdown is not None:
        try:  # appended: a CI job's summary file collects every step's Markdown
            with open(args.markdown, "a", encoding="utf-8") as f:
                f.write(render_markdown(report, tolerances, args.baseline, args.current) + "\n")
        except OSError as exc:
            raise UsageError(f"--markdown {args.markdown}: {exc.strerror}") from None
    return EXIT_FAILED if report.regressed else EXIT_OK


def cmd_bench(args) -> int:
    from harness import bench

    try:
        if args.bench_command == "compare" and not args.stored:
            from harness.bench_session import compare_command

            return compare_command(args.base, args.head, args.factor, args.rounds, args.bench, args.json,
                                   args.per_round)
        if args.bench_command == "compare":
            rows, text = bench.compare_commits(args.base, args.head, args.factor, args.machine)
            print(text)
            bad = [r for r in rows if r.status in ("slower", "failed")]
            for r in bad:
                what = f"{r.ratio:.2f}× slower" if r.status == "slower" else "failed"
                print(f"REGRESSION {r.name}: {what}", file=sys.stderr)
            print(f"{len(bad)} regression(s) among {len(rows)} benchmarks" if bad else f"no kernel slower by more than "
                  f"{args.factor:g}× among {len(rows)} benchmarks")
            return EXIT_FAILED if bad else EXIT_OK
        outcome = bench.run_suite(quick=args.quick, bench=args.bench, machine=args.machine)
    except bench.BenchUsage as exc:
        raise UsageError(str(exc)) from None
    if outcome.nothing_selected:
        raise UsageError(f"no benchmark matches --bench {args.bench!r}")
    where = f"stored in {outcome.stored_in}/{outcome.machine}/" if outcome.stored_in else "quick: nothing stored"
    skipped = f", {len(outcome.skipped)} skipped" if outcome.skipped else ""
    print(f"{len(outcome.measured)} measured, {len(outcome.failed)} failed{skipped} for {outcome.commit[:8]} "
          f"on machine {outcome.machine!r}; {where}")
    for name in outcome.failed:
        print(f"FAILED {name}", file=sys.stderr)
    if outcome.failed or not outcome.measured:
        if not outcome.measured:
            print(f"asv measured nothing (asv exit code {outcome.asv_exit}); see its output above", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


COMMANDS = {"run": cmd_run, "validate": cmd_validate, "list": cmd_list, "show": cmd_show,
            "leaderboard": cmd_leaderboard, "merge": cmd_merge, "repair": cmd_repair, "check": cmd_check, "new": cmd_new, "audit": cmd_audit, "regress": cmd_regress, "bench": cmd_bench}


if __name__ == "__main__":
    sys.exit(main())
