"""How often ``harness bench compare`` catches a planted 1.3× slowdown, and how often it cries wolf, on this machine.

A clone of the repository gets a branch on which ``fsm_step`` (implementations/fsm_mcmc/_runtime.py) runs a busy
loop after each step, of a fixed number of iterations calibrated in this process before the sessions to add 30% to
a step's CPU time (deterministic work: the CPU time it adds does not depend on the load; the script prints the
slowdown it measures in-process). Then, ``--sessions`` times, with a CPU-bound job (``while True: pass``) running beside it the whole
time: ``harness bench compare BASE PLANTED`` on the kernels ``--bench`` selects (default: one FSM step and one
synchronised DR-MH iteration on N(0,1) at 16 chains, and the signed-Laplacian sweep rounding at n = 400; the fsm
form should be flagged, no other kernel) and ``harness bench compare BASE BASE`` (nothing should be).
The figures in docs/tracking.md:

    python benchmarks/compare_noise.py --sessions 10 --out /tmp/compare-noise

It prints one line per session (the verdicts as the session gave them) and a summary, judged again from the
recorded samples by per-round minima and by per-round medians: catch rate (planted kernels flagged slower /
planted kernels compared), false alarms (other kernels flagged slower or faster, in both kinds of session), and
the A/A bands. ``--analyse DIR`` prints the summary of records kept with ``--out DIR``.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = "implementations/fsm_mcmc/_runtime.py"
PLANT = '''

def _planted_slowdown(step, iterations={iterations}):
    """Issue 27's experiment: a busy loop after every step, {iterations} iterations, 30% of the step's CPU time."""
    import functools

    @functools.wraps(step)
    def slower(*args, **kwargs):
        out = step(*args, **kwargs)
        total = 0
        for i in range(iterations):
            total += i
        return out

    return slower


fsm_step = _planted_slowdown(fsm_step)
'''


def calibrate(repo: Path, chains: list[int]) -> tuple[int, dict[int, float]]:
    """The busy loop's length that adds 30% to one FSM step's CPU time (on N(0,1), averaged over ``chains``), and the
    slowdown it makes in this process at each number of chains (least of 11 measurements each)."""
    import statistics
    import time

    sys.path.insert(0, str(repo))
    from benchmarks.mcmc import DelayedRejectionStep

    def per_call(function, calls: int = 200) -> float:
        function()
        began = time.process_time()
        for _ in range(calls):
            function()
        return (time.process_time() - began) / calls

    kernels = {}
    for m in chains:
        kernel = DelayedRejectionStep()
        kernel.setup("fsm", "normal", m)
        kernels[m] = kernel
    # the least of 11 measurements, as bench compare keeps each round's least sample: under load a median step
    # is a disturbed one, and 30% of it made a loop that added 45% to an undisturbed step
    steps = {m: min(per_call(lambda k=k: k.step(k.sampler, k.problem, k.state, k.everyone))
                    for _ in range(11)) for m, k in kernels.items()}
    plant: dict = {"fsm_step": None}
    exec(PLANT.format(iterations=0), plant)
    loop = plant["_planted_slowdown"](lambda: None, 10000)  # the very loop planted, on its own
    per_iteration = min(per_call(loop, 20) / 10000 for _ in range(11))
    iterations = round(0.3 * statistics.fmean(steps.values()) / per_iteration)
    ratios = {}
    for m, k in kernels.items():
        slower = plant["_planted_slowdown"](k.step, iterations)
        ratios[m] = (min(per_call(lambda: slower(k.sampler, k.problem, k.state, k.everyone)) for _ in range(11))
                     / min(per_call(lambda: k.step(k.sampler, k.problem, k.state, k.everyone)) for _ in range(11)))
    return iterations, ratios


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=experiment", "-c", "user.email=experiment@localhost", *args],
                          cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


def session(repo: Path, base: str, head: str, bench: str, rounds: int, record: Path) -> dict:
    # -P: the harness of this environment, not a package of the clone's working directory
    done = subprocess.run([sys.executable, "-P", "-m", "harness.cli", "bench", "compare", base, head, "--bench", bench,
                           "--rounds", str(rounds), "--json", str(record)], cwd=repo, capture_output=True, text=True)
    if done.returncode == 2 or not record.exists():
        raise SystemExit(f"bench compare failed: {done.stderr.strip()}")
    return json.loads(record.read_text())


def analyse(records: list[Path], statistic: str) -> str:
    """Catch rate and false alarms of the recorded sessions, judged again from their samples by each round's
    ``statistic`` (the records keep every sample, so both statistics are judged on the same measurements)."""
    from harness.bench_session import verdict

    caught = compared = false_alarms = others = 0
    ratios, bands = [], []
    for path in records:
        data = json.loads(path.read_text())
        planted_session = path.stem.endswith("-p")
        for row in data["rows"]:
            samples = data["samples"].get(row["name"])
            if samples is None:
                continue
            judged = verdict(row["name"], row["clock"].split("+")[0], samples, {}, data["factor"], statistic)
            if planted_session and ".DelayedRejectionStep." in row["name"] and "form='fsm'" in row["name"]:
                compared += 1
                caught += judged.status == "slower"
                ratios.append(judged.ratio)
            else:
                others += 1
                false_alarms += judged.status in ("slower", "faster")
            if judged.band:
                bands.append(max(judged.band[1] - 1, 1 - judged.band[0]))
    bands.sort()
    ratios.sort()
    return (f"per-round {statistic}: caught {caught} of {compared} planted kernel comparisons; false alarms "
            f"{false_alarms} of {others} other kernel comparisons (untouched kernels, and every kernel of the A/A "
            f"sessions); planted ratio {ratios[0]:.2f}-{ratios[-1]:.2f}; A/A band half-width median "
            f"{bands[len(bands) // 2] * 100:.1f}%, widest {bands[-1] * 100:.1f}%")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--bench", default=r"DelayedRejectionStep.*normal.*16\)|SweepRounding.*400")
    parser.add_argument("--no-load", action="store_true", help="without the CPU-bound job beside the sessions")
    parser.add_argument("--out", type=Path, help="keep every session's record (--json) here")
    parser.add_argument("--analyse", type=Path, metavar="DIR", help="only judge the records kept in DIR again")
    args = parser.parse_args(argv)
    if args.analyse:
        for statistic in ("min", "median"):
            print(analyse(sorted(args.analyse.glob("*.json")), statistic))
        return 0
    with tempfile.TemporaryDirectory(prefix="compare-noise-") as folder:
        repo = Path(folder) / "repo"
        subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(ROOT), str(repo)], check=True)
        base = git(repo, "rev-parse", "HEAD")
        iterations, ratios = calibrate(repo, [16])
        print(f"planted: fsm_step + a loop of {iterations} iterations; in this process "
              + ", ".join(f"{r:.2f}x at {m} chains" for m, r in ratios.items()), flush=True)
        with (repo / TARGET).open("a") as handle:
            handle.write(PLANT.format(iterations=iterations))
        git(repo, "commit", "-q", "-am", "plant: fsm_step costs 1.3x its CPU time")
        planted = git(repo, "rev-parse", "HEAD")
        git(repo, "checkout", "-q", base)
        out = args.out or Path(folder) / "records"
        out.mkdir(parents=True, exist_ok=True)
        burner = None if args.no_load else subprocess.Popen([sys.executable, "-c", "while True: pass"])
        caught = compared = false_alarms = others = 0
        bands = []
        try:
            for i in range(args.sessions):
                for kind, head in (("planted", planted), ("A/A", base)):
                    data = session(repo, base, head, args.bench, args.rounds, out / f"{i:02d}-{kind[0]}.json")
                    flagged = []
                    for row in data["rows"]:
                        is_planted = kind == "planted" and ".DelayedRejectionStep." in row["name"] \
                            and "form='fsm'" in row["name"]
                        if is_planted:
                            compared += 1
                            caught += row["status"] == "slower"
                        else:
                            others += 1
                            false_alarms += row["status"] in ("slower", "faster")
                        if row["status"] in ("slower", "faster"):
                            flagged.append(f"{row['status']} {row['ratio']:.2f} {row['name']}")
                        if row["band"]:
                            bands.append(max(row["band"][1] - 1, 1 - row["band"][0]))
                    print(f"session {i + 1} {kind}: load {data['load_1min'][0]:.1f}-{data['load_1min'][1]:.1f}, "
                          f"{data['seconds']:.0f} s; flagged: {'; '.join(flagged) or 'nothing'}", flush=True)
        finally:
            if burner is not None:
                burner.kill()
                burner.wait()
        for statistic in ("min", "median"):
            print(analyse(sorted(out.glob("*.json")), statistic))
    return 0


if __name__ == "__main__":
    sys.exit(main())
