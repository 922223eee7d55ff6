"""Task ``codegen.execution_feedback``: write a program, see it run on the public tests, try again; graded on private
tests. Solve rates are n@k (AlphaCode's): n submissions chosen from k replies, every reply counted.

Two datasets, one environment contract:

* ``hidden-constants``, the toy a small policy learns on CPU (the paper note's (d), widened as its open points ask).
  A problem is a program printing two numbers, ``(x + c) mod 256`` or ``(x - c) mod 256`` for each of two hidden
  constants ``c`` in 0..255, the operation of each field stated; the statement gives a hint of each constant, off by a
  uniform draw from -w..w, and w itself (w drawn per problem from ``widths``: the mix of easy and hard problems a
  contest set has). A reply is the two constants. One public test, whose input the statement shows and whose
  output is held back, decides the feedback (the expected and the produced output at that input); eight private
  tests decide the reward. The feedback determines the correction (expected - produced is c - c' for a field that
  adds, c' - c for one that subtracts): one repair turn suffices once a policy reads it, which the paper note
  flags; the toy tests whether RL teaches a policy to use an exact error signal that its initial policy ignores,
  not repair that needs reasoning. At w = 32 a
  problem has 65 x 65 = 4,225 candidates, so 100 blind samples cannot enumerate it. The outputs at one input fix
  both constants, so here a reply passing the public test passes the private ones (unlike CodeContests; stated on
  the page).
* ``python-problems``: the bundled problems of :mod:`~harness.tasks.codegen.problems` for a model served through an
  OpenAI-compatible endpoint; a reply's first code block runs in :mod:`harness.sandbox` on the public tests, the
  feedback message lists each failure ("expected A but got B", the error's last lines, the time or memory limit),
  and the final program runs on the private tests. Programs are taken as deterministic: a program text seen before
  in a problem's pool is graded once.

The task owns the episode: a method is asked for replies (:meth:`FeedbackMethod.act`) and never sees a private test;
its turn limit is the environment's ``turns``, or 1 for a single-turn method (``method.turns == 1``: independent
samples). Per problem the task draws a pool of ``rollouts`` episodes and estimates each n@k by resampling rollouts
from it (with replacement) until k replies are spent, the last rollout cut at the budget (its reply at the cut is its
final program; a rollout that passes the public tests early leaves its unspent replies to further rollouts); n of
the final programs are submitted, those passing the public tests first (ties at random); a
problem counts as solved when a submitted one passes every private test (on the Python problems a program
counts only if it passes the public tests too). ``solve_1at3`` (one rollout of up to three
turns), ``solve_10at100`` and the curve of 1@k for k = 1..10 are reported, with ``replies_per_rollout``.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, Sequence

from harness.tasks.base import Context, DataError, Task
from harness.tasks.evaluation import Curve, Evaluation
from harness.tasks.parameters import count

MODULUS = 256
FIELDS = 2
OPERATIONS = ("add", "sub")  # (x + c) mod 256, (x - c) mod 256
PRIVATE_TESTS = 8
SOLVE_RATES = {"solve_1at1": (1, 1), "solve_1at3": (1, 3), "solve_1at10": (1, 10), "solve_10at100": (10, 100)}
CURVE_K = tuple(range(1, 11))


# --------------------------------------------------------------------------- the toy: hidden constants


@dataclass(frozen=True)
class HiddenConstants:
    """A batch of toy problems as arrays (B problems): ``width`` (B,) the hint's half-width w, ``constants`` and
    ``hints`` (B, 2), ``operations`` (B, 2) indices into :data:`OPERATIONS`, ``public_x`` (B,), ``private_x``
    (B, 8)."""

    width: Any
    constants: Any
    hints: Any
    operations: Any
    public_x: Any
    private_x: Any

    def __len__(self) -> int:
        return len(self.width)

    def take(self, index) -> "HiddenConstants":
        return HiddenConstants(*(getattr(self, f)[index] for f in self.__dataclass_fields__))


def draw_problems(rng, n: int, widths: Sequence[int]) -> HiddenConstants:
    """``n`` problems: w uniform over ``widths``, constants uniform over 0..255, each hint the constant plus a
    uniform draw from -w..w (not wrapped: a hint may lie outside 0..255), each field's operation uniform."""
    import numpy as np

    width = rng.choice(np.asarray(widths, dtype=np.int64), size=n)
    constants = rng.integers(0, MODULUS, size=(n, FIELDS))
    noise = np.floor(rng.random((n, FIELDS)) * (2 * width[:, None] + 1)).astype(np.int64) - width[:, None]
    return HiddenConstants(width, constants, constants + noise, rng.integers(0, len(OPERATIONS), size=(n, FIELDS)),
                           rng.integers(0, MODULUS, size=n), rng.integers(0, MODULUS, size=(n, PRIVATE_TESTS)))


def outputs(problems: HiddenConstants, constants, x):
    """What the program with ``constants`` (B, 2) prints on inputs ``x`` (B,) or (B, m): (B, 2) or (B, m, 2)."""
    import numpy as np

    c = np.asarray(constants)
    sign = np.where(problems.operations == 0, 1, -1)
    if np.ndim(x) == 1:
        return np.mod(np.asarray(x)[:, None] + sign * c, MODULUS)
    return np.mod(np.asarray(x)[:, :, None] + (sign * c)[:, None, :], MODULUS)


@dataclass(frozen=True)
class Observation:
    """What a policy sees before a reply, batched (B rollouts): the statement (``width``, ``hints``,
    ``operations`` and the public test's input ``public_x``), ``turn`` (0-based), and after a failed reply the
    feedback: its ``previous`` constants (B, 2), their output at the public input, ``previous_output``, and the
    output expected there, ``public_expected`` (B, 2). All three are -1 at the first turn: the public test's output
    is held back for the feedback (as the paper note's toy has it), since with it the statement alone would give
    both constants, (expected - x) or (x - expected) mod 256."""

    width: Any
    hints: Any
    operations: Any
    public_x: Any
    public_expected: Any
    turn: int
    previous: Any
    previous_output: Any


class HiddenConstantsEnvironment:
    """The toy's episodes: :meth:`first` is the statement, :meth:`step` runs a reply on the public test (the feedback
    of the next observation) and the private tests (the reward), ``turns`` the turn limit."""

    def __init__(self, turns: int, widths: Sequence[int], training_episodes: int = 204_800,
                 initial_max_steps: int = 4000):
        self.turns, self.widths = turns, tuple(widths)
        # the protocol's budgets, the same for every arm: RL episodes, and the cap on the initial policy's
        # supervised steps (it is fitted to its plateau)
        self.training_episodes, self.initial_max_steps = training_episodes, initial_max_steps

    def draw_training(self, n: int, rng) -> HiddenConstants:
        """``n`` fresh training problems from ``rng`` (a method's stream of the seed: never the evaluation
        problems')."""
        return draw_problems(rng, n, self.widths)

    def first(self, problems: HiddenConstants) -> Observation:
        import numpy as np

        none = -np.ones((len(problems), FIELDS), dtype=np.int64)
        return Observation(problems.width, problems.hints, problems.operations, problems.public_x, none, 0, none,
                           none)

    def step(self, problems: HiddenConstants, observation: Observation, replies):
        """The next observation, and whether ``replies`` (B, 2) pass the public test and every private test."""
        import numpy as np

        replies = np.asarray(replies, dtype=np.int64)
        if replies.shape != (len(problems), FIELDS):
            raise ValueError(f"replies of shape {replies.shape}; expected ({len(problems)}, {FIELDS})")
        produced = outputs(problems, replies, problems.public_x)
        expected = outputs(problems, problems.constants, problems.public_x)
        public = (produced == expected).all(axis=1)
        private = (outputs(problems, replies, problems.private_x)
                   == outputs(problems, problems.constants, problems.private_x)).all(axis=(1, 2))
        following = Observation(observation.width, observation.hints, observation.operations, observation.public_x,
                                expected, observation.turn + 1, replies, produced)
        return following, public, private


@dataclass(frozen=True)
class HiddenConstantsData:
    problems: HiddenConstants
    environment: HiddenConstantsEnvironment
    rollouts: int
    resamples: int


def hidden_constants(context: Context, *, problems: int = 100, rollouts: int = 200, turns: int = 3,
                     widths: Sequence[int] = (1, 2, 4, 8, 16, 32), resamples: int = 200,
                     training_episodes: int = 204_800, initial_max_steps: int = 4000) -> HiddenConstantsData:
    """``problems`` evaluation problems drawn by the seed (training problems come from the methods' own streams), a
    pool of ``rollouts`` episodes of up to ``turns`` replies per problem, n@k from ``resamples`` draws of the pool;
    the hint half-width of a problem is drawn from ``widths``. Every trained arm runs ``training_episodes`` RL
    episodes from the seed's initial policy, fitted to its plateau in at most ``initial_max_steps`` supervised
    steps."""
    widths = tuple(int(w) for w in widths)
    if not widths or any(w < 0 or w > 32 for w in widths):
        raise DataError(f"widths = {list(widths)}; expected a non-empty list of integers from 0 to 32")
    environment = HiddenConstantsEnvironment(count("turns", turns), widths, count("training_episodes",
                                                                                  training_episodes),
                                             count("initial_max_steps", initial_max_steps))
    return HiddenConstantsData(draw_problems(context.rng("problems"), count("problems", problems), widths),
                               environment, count("rollouts", rollouts), count("resamples", resamples))


# --------------------------------------------------------------------------- bundled Python problems


PYTHON_FENCE = re.compile(r"```(?:python3?|py)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)


def program_of(reply: str) -> str | None:
    """The program a reply submits: its first ```python fenced block (the prompt asks for one), else None (a reply
    without valid code, which fails every test)."""
    match = PYTHON_FENCE.search(reply)
    return match.group(1) if match else None


@dataclass(frozen=True)
class PythonEnvironment:
    """Episodes on the bundled Python problems: a dialogue (OpenAI chat messages) per rollout; replies run confined."""

    turns: int
    cpu_s: float

    def prompt(self, problem) -> str:
        tests = "\n".join(f"Input:\n{t.stdin}\nOutput:\n{t.expected}" for t in problem.public)
        return (f"{problem.statement}\n\nExamples:\n{tests}\n\nProvide a Python 3 solution that reads standard input "
                "and writes standard output, enclosed in ```python ... ```.")

    def run(self, program: str | None, tests) -> list[str | None]:
        """Each test's failure message (None where it passed); no program fails every test."""
        from harness.sandbox import Limits, run_python
        from harness.tasks.codegen.problems import outputs_match

        if program is None:
            return ["no code block was found in the reply"] * len(tests)
        failures = []
        for test in tests:
            outcome = run_python(program, test.stdin, Limits(cpu_s=self.cpu_s, wall_s=4 * self.cpu_s + 30))
            if outcome.ok and outputs_match(outcome.stdout, test.expected):
                failures.append(None)
            elif outcome.ok:
                failures.append(f"wrong answer: expected\n{test.expected.strip()}\nbut got\n"
                                f"{outcome.stdout.strip()[:500]}")
            elif outcome.status in ("cpu-limit", "timeout"):
                failures.append("execution took too long")
            elif outcome.status == "memory":
                failures.append("out of memory")
            elif outcome.status == "output-limit":
                failures.append("the output was too long")
            else:
                failures.append("exception:\n" + "\n".join(outcome.stderr.strip().splitlines()[-6:]))
        return failures

    def feedback(self, problem, failures: list[str | None]) -> str:
        lines = [f"Input:\n{t.stdin.strip()}\n{f}\n" for t, f in zip(problem.public, failures) if f is not None]
        return ("Your code failed the following tests:\n\n" + "\n".join(lines)
                + "\nGive it another try, with the whole program in ```python ... ```.")


@dataclass(frozen=True)
class PythonProblemsData:
    problems: tuple
    environment: PythonEnvironment
    rollouts: int
    resamples: int


def python_problems(context: Context, *, limit: int = 0, rollouts: int = 10, turns: int = 3, cpu_s: float = 5.0,
                    resamples: int = 200) -> PythonProblemsData:
    """The bundled problems (the first ``limit``; 0: all), ``rollouts`` episodes of up to ``turns`` replies each,
    each program given ``cpu_s`` CPU seconds per test."""
    from harness.tasks.codegen.problems import PROBLEMS

    chosen = PROBLEMS[: count("limit", limit, low=0) or len(PROBLEMS)]
    return PythonProblemsData(tuple(chosen), PythonEnvironment(count("turns", turns), float(cpu_s)),
                              count("rollouts", rollouts), count("resamples", resamples))


# --------------------------------------------------------------------------- the method contract


class FeedbackMethod(Protocol):
    turns: int | None  # 1: single-turn (independent samples); None: the environment's turn limit

    def fit(self, environment, context: Context) -> dict[str, Any]:
        """Prepare (train) for ``environment`` (a :class:`HiddenConstantsEnvironment` or :class:`PythonEnvironment`);
        return what it spent and its training curve: ``{"episodes", "replies", "log"}`` (``log`` a TrainingLog or
        None). Raise DataUnavailable where the method cannot act on this environment."""
        ...

    def act(self, observation):
        """Replies to a batch: (B, 2) constants for an :class:`Observation`; for a list of dialogues (lists of
        chat messages) a list of reply texts."""
        ...


# --------------------------------------------------------------------------- n@k


def n_at_k(public, private, lengths, n: int, k: int, resamples: int, rng) -> float:
    """The n@k solve rate from a pool: ``public`` and ``private`` (P, R, T) whether the reply at each turn of each of
    R rollouts of P problems passed, ``lengths`` (P, R) the replies each rollout used. Per problem and resample,
    rollouts are drawn from the pool with replacement until ``k`` replies are spent (the last cut at the budget),
    ``n`` final programs are submitted (public-test passers first, ties at random), and the problem is solved when
    one of them passes the private tests; the mean over resamples and problems."""
    import numpy as np

    problems, pool = lengths.shape
    drawn = rng.integers(0, pool, size=(problems, resamples, k))
    used = np.take_along_axis(np.broadcast_to(lengths[:, None, :], (problems, resamples, pool)), drawn, axis=2)
    before = np.cumsum(used, axis=2) - used
    started = before < k
    final_turn = np.minimum(used, k - before) - 1
    final_turn = np.where(started, final_turn, 0)
    index = (np.arange(problems)[:, None, None], drawn, final_turn)
    passed_public, passed_private = public[index] & started, private[index] & started
    priority = np.where(started, passed_public * 2.0 + rng.random(drawn.shape), -np.inf)
    top = np.argsort(-priority, axis=2)[:, :, :n]
    submitted = np.take_along_axis(passed_private, top, axis=2) & np.isfinite(np.take_along_axis(priority, top, axis=2))
    return float(submitted.any(axis=2).mean())


# --------------------------------------------------------------------------- the task


def _pool_hidden(method: FeedbackMethod, data: HiddenConstantsData, turns: int):
    """Every problem's pool: ``rollouts`` episodes run together, each ending when its reply passes the public test
    or at ``turns`` replies; (P, R, T) public and private results (a finished rollout's later turns repeat its
    last) and (P, R) lengths."""
    import numpy as np

    problems, pool = len(data.problems), data.rollouts
    batch = data.problems.take(np.repeat(np.arange(problems), pool))
    environment = data.environment
    observation = environment.first(batch)
    public = np.zeros((len(batch), turns), dtype=bool)
    private = np.zeros_like(public)
    lengths = np.full(len(batch), turns)
    active = np.ones(len(batch), dtype=bool)
    for t in range(turns):
        replies = np.asarray(method.act(observation), dtype=np.int64)
        observation, passed, solved = environment.step(batch, observation, replies)
        public[:, t] = np.where(active, passed, public[:, t - 1] if t else passed)
        private[:, t] = np.where(active, solved, private[:, t - 1] if t else solved)
        lengths[active & passed] = t + 1
        active &= ~passed
    return (public.reshape(problems, pool, turns), private.reshape(problems, pool, turns),
            lengths.reshape(problems, pool))


def _pool_python(method: FeedbackMethod, data: PythonProblemsData, turns: int):
    import numpy as np

    environment = data.environment
    shape = (len(data.problems), data.rollouts, turns)
    public, private = np.zeros(shape, dtype=bool), np.zeros(shape, dtype=bool)
    lengths = np.full(shape[:2], turns)
    for p, problem in enumerate(data.problems):
        dialogues = [[{"role": "user", "content": environment.prompt(problem)}] for _ in range(data.rollouts)]
        active = list(range(data.rollouts))
        graded: dict[str | None, tuple[list, bool]] = {}
        for t in range(turns):
            replies = method.act([dialogues[r] for r in active])
            still = []
            for r, reply in zip(active, replies):
                program = program_of(reply)
                if program not in graded:  # a program seen before in this pool is not run again
                    failures = environment.run(program, problem.public)
                    passed = all(f is None for f in failures)
                    graded[program] = failures, passed and all(f is None for f in environment.run(program,
                                                                                                  problem.private))
                failures, private[p, r, t] = graded[program]
                public[p, r, t] = all(f is None for f in failures)
                dialogues[r] += [{"role": "assistant", "content": reply}]
                if public[p, r, t]:
                    lengths[p, r] = t + 1
                    public[p, r, t + 1:], private[p, r, t + 1:] = public[p, r, t], private[p, r, t]
                else:
                    dialogues[r] += [{"role": "user", "content": environment.feedback(problem, failures)}]
                    still.append(r)
            active = still
            if not active:
                break
    return public, private, lengths


def run_pool(method: FeedbackMethod, data, turns: int):
    """Every problem's pool of ``data.rollouts`` rollouts of up to ``turns`` replies, answered by ``method``:
    (P, R, T) whether each reply passed the public and the private tests (a finished rollout's later turns repeat
    its last) and (P, R) the replies each used."""
    return (_pool_hidden if isinstance(data, HiddenConstantsData) else _pool_python)(method, data, turns)


class ExecutionFeedbackTask(Task):
    """Fit the method to the environment, run each problem's pool of rollouts, report n@k solve rates."""

    name = "codegen.execution_feedback"
    version = "1"
    metrics = ("solve_1at1", "solve_1at3", "solve_1at10", "solve_10at100", "replies_per_rollout",
               "training_episodes", "training_replies", "train_return", "initial_log_likelihood", "seconds")
    protocol = FeedbackMethod
    framework = None

    def tiny(self, workdir: Path) -> dict[str, dict[str, Any]]:
        return {"hidden-constants": {"problems": 6, "rollouts": 12, "resamples": 20, "training_episodes": 2048,
                                     "initial_max_steps": 20},
                "python-problems": {"limit": 2, "rollouts": 1, "resamples": 10}}

    def evaluate(self, method: FeedbackMethod, data, context: Context) -> Evaluation:
        import numpy as np

        started = time.perf_counter()
        environment = data.environment
        spent = method.fit(environment, context) or {}
        turns = 1 if getattr(method, "turns", None) == 1 else environment.turns
        public, private, lengths = run_pool(method, data, turns)
        rng = context.rng("n at k")
        rates = {name: n_at_k(public, private, lengths, n, k, data.resamples, rng)
                 for name, (n, k) in SOLVE_RATES.items()}
        curve = [n_at_k(public, private, lengths, 1, k, data.resamples, rng) for k in CURVE_K]
        log = spent.get("log")
        metrics = {**rates, "replies_per_rollout": float(lengths.mean()),
                   "training_episodes": float(spent.get("episodes", 0)),
                   "training_replies": float(spent.get("replies", 0)),
                   "train_return": float(log.final) if log is not None else float("nan"),
                   "seconds": time.perf_counter() - started}
        curves = {"solve_1at_k": Curve(list(CURVE_K), curve, x_label="k (replies, one submission)",
                                       y_label="1@k solve rate")}
        if log is not None:
            curves.update(log.curves())
        else:
            del metrics["train_return"]
        initial = spent.get("initial_log")  # the initial policy's fit, where the method starts from one
        if initial is not None:
            metrics["initial_log_likelihood"] = float(initial.final)
            curves.update(initial.curves())
        return Evaluation(metrics, curves)


TASK = ExecutionFeedbackTask()
