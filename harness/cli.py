"""The ``harness`` command. A thin layer over :mod:`harness.runner`; heavy packages load lazily.

Exit codes, for every command: 0 success; 1 the run finished but some cells failed or
timed out, ``check`` found a claim not reproduced, ``regress`` found a regression, or
``bench`` found a slower or failing kernel; 2 invalid spec or usage (nothing ran), or ``merge`` refused its
folders (nothing written).
"""
from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

from harness.audit import command as audit_command  # imports nothing heavy: its parser is part of --help

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
PROFILES = ("quick", "default", "paper")
LIST_KINDS = ("tasks", "datasets", "methods", "metrics", "specs")


class UsageError(Exception):
    pass


MAX_SEED = 2**32 - 1  # NumPy's legacy seeding takes 0 .. 2**32 - 1


def _csv(kind):
    def parse(text: str):
        items = [t.strip() for t in text.split(",") if t.strip()]
        if not items:
            raise argparse.ArgumentTypeError(f"expected a comma-separated list of {kind}")
        duplicated = sorted({t for t in items if items.count(t) > 1})
        if duplicated:
            raise argparse.ArgumentTypeError(f"{', '.join(duplicated)} given twice; list each of the {kind} once")
        if kind == "seeds":
            try:
                seeds = tuple(int(t) for t in items)
            except ValueError:
                raise argparse.ArgumentTypeError(f"expected seeds as integers, e.g. 0,1,2; found {text!r}") from None
            wrong = [seed for seed in seeds if not 0 <= seed <= MAX_SEED]
            if wrong:
                raise argparse.ArgumentTypeError(f"seed {wrong[0]} is out of range: seeds are integers from 0 to {MAX_SEED}")
            return seeds
        return tuple(items)
    return parse


def _positive(cast):
    def parse(text: str):
        try:
            value = cast(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, found {text!r}") from None
        if not math.isfinite(value) or value <= 0:  # nan would compare false everywhere and disable a timeout
            raise argparse.ArgumentTypeError(f"expected a positive finite number, found {text!r}")
        return value
    return parse


def _jobs(text: str):
    if text == "auto":
        return text
    try:
        return _positive(int)(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"expected a positive integer or 'auto', found {text!r}") from None


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, found {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected 0 or more, found {text!r}")
    return value


class _Version(argparse.Action):
    """``--version``: the installed package's version, looked up only when asked, so ``--help`` reads no metadata."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        from importlib.metadata import PackageNotFoundError, version

        try:
            installed = version("harness")
        except PackageNotFoundError:  # run from a source tree that pip never installed
            from harness import __version__ as installed
        print(f"harness {installed}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="harness",
        description="Run declarative YAML benchmark specs: tune every method alike, store every cell, "
                    "write leaderboards and check the papers' claims.",
        epilog="Exit codes: 0 ok; 1 some cells failed, a claim was not reproduced, or a result or kernel "
               "regressed; 2 invalid spec or usage.",
    )
    parser.add_argument("--version", action=_Version, help="print the harness's version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser("run", help="run specs and write their results folders and leaderboards")
    p.add_argument("specs", nargs="+", type=Path, metavar="SPEC")
    p.add_argument("--profile", choices=PROFILES, default="default", help="scale to run at (default: default)")
    p.add_argument("--out", type=Path, help="results root; each spec writes DIR/<name>/ (default: results/<profile>)")
    p.add_argument("--methods", type=_csv("methods"), help="only these method ids, comma-separated")
    p.add_argument("--datasets", type=_csv("datasets"),
                   help="only these dataset ids (a grid's id: each of its datasets), comma-separated")
    p.add_argument("--seeds", type=_csv("seeds"), help="these seeds instead of the spec's, e.g. 0,1,2")
    p.add_argument("--trials", type=_non_negative_int, help="Optuna trials per dataset × method (overrides the spec)")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), help="overrides the spec's hardware.device")
    p.add_argument("--jobs", type=_jobs, default="auto",
                   help="worker processes, or 'auto': one per usable core, one per GPU for GPU cells (default auto); "
                        "the results are the same for every value")
    p.add_argument("--timeout", type=_positive(float), help="seconds per cell before it is killed (overrides the spec)")
    p.add_argument("--fresh", action="store_true", help="move earlier results aside (to DIR/.archive/) and start over")
    p.add_argument("--no-retry", action="store_true",
                   help="keep cells that failed or timed out in an earlier run (by default they run again)")
    p.add_argument("--data-dir", type=Path, help="local folder with real datasets (or set HARNESS_DATA_DIR)")
    p.add_argument("--storage", help="Optuna storage: an RDB URL (sqlite:///..., postgresql://...) or a journal "
                                     "file path (default: a SQLite file in the results folder)")
    p.add_argument("--executor", choices=_executor_names(), default="local",
                   help="where cells run: local (worker processes, --jobs of them; the default), slurm (submitit "
                        "job arrays, at most --jobs jobs at once), local-submitit (submitit's local processes)")
    g = p.add_argument_group("cluster jobs (--executor slurm or local-submitit; each overrides the spec's hardware.slurm)")
    g.add_argument("--slurm-partition", metavar="NAME", help="sbatch --partition")
    g.add_argument("--slurm-account", metavar="NAME", help="sbatch --account")
    g.add_argument("--slurm-constraint", metavar="EXPR", help="sbatch --constraint")
    g.add_argument("--slurm-qos", metavar="NAME", help="sbatch --qos")
    g.add_argument("--slurm-gpus", type=_non_negative_int, metavar="N", help="GPUs per job (sbatch --gpus-per-node)")
    g.add_argument("--slurm-mem-gb", type=_positive(float), metavar="GB", help="memory per job (sbatch --mem)")
    g.add_argument("--slurm-time-min", type=_positive(int), metavar="MIN", help="cap on every job's time limit (sbatch --time)")
    g.add_argument("--slurm-option", action="append", type=_sbatch_option, metavar="KEY=VALUE",
                   help="any other sbatch option without its dashes, e.g. reservation=ml (repeatable)")
    g.add_argument("--cells-per-job", type=_positive(int), metavar="N",
                   help="cells packed into one job (a seed × method's cells always share one; default: about four "
                        "jobs per --jobs slot)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")

    p = sub.add_parser("validate", help="check specs (schema and every name) without running anything")
    p.add_argument("specs", nargs="+", type=Path, metavar="SPEC")

    p = sub.add_parser("list", help="registered names: tasks, datasets, methods, metrics, specs")
    p.add_argument("kind", nargs="?", choices=LIST_KINDS, help="one kind (default: all)")

    p = sub.add_parser("show", help="print a spec resolved for a profile, and the cells it would run")
    p.add_argument("spec", type=Path, metavar="SPEC")
    p.add_argument("--profile", choices=PROFILES, default="default")

    p = sub.add_parser("leaderboard", help="rebuild a results folder's leaderboard from its runs.jsonl")
    p.add_argument("folder", type=Path, metavar="DIR", help="a spec's results folder, e.g. results/default/cdfsl")
    p.add_argument("--format", choices=("md", "csv", "html"), default="md", help="what to print (all three are written)")

    p = sub.add_parser("merge", help="combine one spec's results folders (or results roots, spec by spec) from "
                                     "several machines into OUT, by cell key",
                       description="Combine results folders of ONE spec (same spec_hash and code), e.g. written on "
                                   "several machines with different --seeds, into OUT and write its leaderboard. A "
                                   "cell key found in two folders is kept once; two different results for one key on "
                                   "one device class are a conflict (exit 2, both files and lines named, nothing "
                                   "written). Each row taken from a DIR records it in `merged_from`. OUT may be new "
                                   "or a results folder of the same spec (its rows are kept). Where the rows span "
                                   "several device classes, the leaderboard has a row per method and class. The DIRs "
                                   "may instead all be results roots (e.g. results/quick, a folder per spec, as "
                                   "`harness regress` reads them): each spec's folders are merged by these rules into "
                                   "OUT/<spec>, a spec found in only some roots from those alone; every spec is "
                                   "checked before anything is written.")
    p.add_argument("out", type=Path, metavar="OUT", help="the merged results folder (new, or one of the same spec); "
                                                         "with results roots, the merged root")
    p.add_argument("folders", nargs="+", type=Path, metavar="DIR",
                   help="a spec's results folder, e.g. results/default/cdfsl, or (every DIR) a results root, e.g. "
                        "results/default")

    p = sub.add_parser("repair", help="move the damaged lines of a results folder's runs.jsonl to damaged.jsonl",
                       description="A run reports each damaged line of runs.jsonl (not JSON, not a cell record, "
                                   "bytes a power loss left) and ignores it, without rewriting the file. This moves "
                                   "them, byte for byte, to damaged.jsonl beside it; every other line is kept.")
    p.add_argument("folder", type=Path, metavar="DIR", help="a spec's results folder, e.g. results/default/cdfsl")

    p = sub.add_parser("check", help="print each claim's verdict with the numbers behind it")
    p.add_argument("spec", type=Path, metavar="SPEC")
    p.add_argument("--out", type=Path, help="results root the spec was run into (default: results/<profile>)")
    p.add_argument("--profile", choices=PROFILES, default="default", help="used only to find the default --out")

    p = sub.add_parser(
        "new", help="write the skeleton of a new comparison (family, method, baseline, spec, test), runnable as written",
        description="Write a skeleton that `harness validate`, the conformance test and `harness run --profile quick` "
                    "accept as written; each line its author must fill in is marked `# TODO(author):`. Without "
                    "--family: a new task family (harness/tasks/<NAME>/: catalogue, task, dataset, metric), its "
                    "method (implementations/<NAME>/), a baseline and the trivial answer (baselines/<NAME>.py), "
                    "specs/NAME.yaml (quick, default and paper profiles, one claim) and tests/test_<NAME>.py. With "
                    "--family or --from-spec: a method of that family's task that starts as one the family has (its "
                    "trivial answer, else its first baseline, else its first method), each call of the task's "
                    "protocol written out to call that method's, its row in the family's catalogue, a spec comparing "
                    "the two and a test. The files go into the checkout harness runs from, where the repository keeps "
                    "every paper: a clone's new comparison "
                    "is a change to the repository, and the registry's scan of harness/tasks/*/catalogue.py and the "
                    "editable install find it with no reinstall and no HARNESS_PLUGINS (a method for an outside "
                    "plugin's family goes beside that plugin's catalogue). An existing file is never overwritten (the "
                    "family's catalogue only gains the new method's row).")
    p.add_argument("name", metavar="NAME", help="the spec's and method's name, e.g. robust-mean (lower case, words "
                                                "joined by - or _; the packages are named with _)")
    p.add_argument("--family", metavar="F", help="an existing family (or one of its tasks, e.g. sco.multipass) to add "
                                                 "a method to, instead of writing a new family")
    p.add_argument("--from-spec", type=Path, metavar="S", help="start the spec from this spec file: its task, "
                                                              "datasets, metrics, methods and profiles, NAME added")
    p.add_argument("--dir", type=Path, metavar="DIR", help="the checkout to write into (default: the one harness runs "
                                                           "from; for a plugin's family: the plugin's project folder)")

    p = sub.add_parser("audit", help="the methodology lint: each claim's and row's faults a reviewer would raise; exit "
                       "1 on one the spec does not acknowledge", description=audit_command.__doc__)
    audit_command.add_arguments(p)

    p = sub.add_parser("regress", help="compare two results roots spec by spec; exit 1 when a result regressed",
                       description="Compare each spec's leaderboard and claims in CURRENT against BASELINE. Exit 1 "
                                   "when a primary metric moved the wrong way beyond its tolerance, a row lost seeds "
                                   "or vanished, or a claim stopped being reproduced. Folders of another spec or "
                                   "profile are refused (exit 2).")
    p.add_argument("baseline", type=Path, metavar="BASELINE_DIR", help="results root (or one spec's folder), e.g. results/quick")
    p.add_argument("current", type=Path, metavar="CURRENT_DIR", help="the results root to check, e.g. a fresh --out folder")
    p.add_argument("--tolerance", action="append", metavar="[METRIC=]T",
                   help="how far a metric may move the wrong way: a share of the baseline value (0.05), or "
                        "'interval' (the baseline's 95%% interval); METRIC=T for one metric, e.g. runtime_s=1.0 "
                        "(metrics in seconds are compared only when named). Default: exact. Repeatable.")
    p.add_argument("--markdown", type=Path, metavar="FILE",
                   help="also append what moved to FILE as Markdown tables (rows, claims; a line when nothing moved), "
                        "e.g. \"$GITHUB_STEP_SUMMARY\" for a GitHub Actions job summary; the output and exit code "
                        "are unchanged")

    p = sub.add_parser("bench", help="kernel speed over commits with asv: run the suite, compare two commits")
    bench = p.add_subparsers(dest="bench_command", metavar="ACTION", required=True)
    q = bench.add_parser("run", help="run the asv suite for the checked-out commit and store the results")
    q.add_argument("--quick", action="store_true", help="each benchmark once, nothing stored: checks that the suite runs")
    q.add_argument("--bench", metavar="REGEX", help="only benchmarks whose name matches")
    q.add_argument("--machine", metavar="NAME", help="pinned asv machine name (default: $HARNESS_BENCH_MACHINE or 'local')")
    q = bench.add_parser("compare", help="time two commits interleaved (with an A/A arm for the noise band); exit 1 "
                                         "when a kernel got slower")
    q.add_argument("base", metavar="BASE", help="commit (hash, branch, tag) of the baseline")
    q.add_argument("head", metavar="HEAD", help="commit that is checked")
    q.add_argument("--factor", type=_factor, default=1.2,
                   help="a kernel is slower when its ratio exceeds this factor and the A/A noise band, its interval "
                        "above 1 (with --stored: when asv's test finds the change significant) (default 1.2)")
    q.add_argument("--rounds", type=_rounds, default=6,
                   help="interleaved rounds of base, head and base again (default 6; more narrow the intervals)")
    q.add_argument("--bench", metavar="REGEX", help="only benchmarks whose name matches")
    q.add_argument("--json", type=Path, metavar="FILE", help="write the session (every sample, trees, verdicts) here")
    q.add_argument("--per-round", choices=("min", "median"), default="min",
                   help="what a round keeps of each commit's samples (default min: load only adds time)")
    q.add_argument("--stored", action="store_true",
                   help="compare the results `harness bench run` stored for each commit instead of timing them now")
    q.add_argument("--machine", metavar="NAME",
                   help="with --stored: machine name the results were stored under (default as for run)")
    return parser


def _sbatch_option(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    key = key.strip().lstrip("-")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE (an sbatch option without its dashes), found {text!r}")
    return key, value


_CLUSTER_FLAGS = {"slurm_partition": "partition", "slurm_account": "account", "slurm_constraint": "constraint",
                  "slurm_qos": "qos", "slurm_gpus": "gpus", "slurm_mem_gb": "memory_gb", "slurm_time_min": "time_min",
                  "cells_per_job": "cells_per_job"}


def _cluster_options(args) -> dict:
    """The --slurm-* and --cells-per-job flags given, as :func:`harness.cluster.resources_from` overrides."""
    from harness.backends import CLUSTER_EXECUTORS

    given = {field: getattr(args, flag) for flag, field in _CLUSTER_FLAGS.items() if getattr(args, flag) is not None}
    if args.slurm_option:
        given["options"] = dict(args.slurm_option)
    if args.executor in CLUSTER_EXECUTORS:
        import importlib.util

        if importlib.util.find_spec("submitit") is None:
            raise UsageError(f"--executor {args.executor} needs the 'cluster' extra (submitit not installed): "
                             "pip install -e '.[cluster]'")
    if given and args.executor not in CLUSTER_EXECUTORS:
        flags = ", ".join("--" + flag.replace("_", "-") for flag in _CLUSTER_FLAGS if getattr(args, flag) is not None)
        raise UsageError(f"{flags or '--slurm-option'} only apply to cluster jobs; add --executor slurm "
                         "(or local-submitit)")
    return given


def _executor_names() -> tuple[str, ...]:
    from harness.backends import EXECUTORS

    return tuple(EXECUTORS)


def _factor(text: str) -> float:
    value = _positive(float)(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a factor ≥ 1, found {text!r}")
    return value


def _rounds(text: str) -> int:
    value = _positive(int)(text)
    if value < 2:
        raise argparse.ArgumentTypeError(f"expected at least 2 rounds (an interval needs two), found {text!r}")
    return value


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
