"""The ``harness`` command's arguments: the parser of every subcommand and the types that check its values (a bad
value is a usage error, exit 2, before anything runs). Imports nothing heavy: ``harness --help`` builds it."""
from __future__ import annotations

import argparse
import math
from pathlib import Path

from harness.audit import command as audit_command  # imports nothing heavy: its parser is part of --help

PROFILES = ("quick", "default", "paper")
LIST_KINDS = ("tasks", "datasets", "methods", "metrics", "specs")


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


CLUSTER_FLAGS = {"slurm_partition": "partition", "slurm_account": "account", "slurm_constraint": "constraint",
                  "slurm_qos": "qos", "slurm_gpus": "gpus", "slurm_mem_gb": "memory_gb", "slurm_time_min": "time_min",
                  "cells_per_job": "cells_per_job"}


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
