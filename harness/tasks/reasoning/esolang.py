"""Task ``reasoning.esolang``: write a program for a small algorithmic task in an esoteric language (Brainfuck or
Befunge-93) and, as its twin, the same task in Python; both are scored by running them, confined, on held-out test
cases.

A dataset is one task of one language (:data:`TASKS`): the seed draws ``instances`` problems, each with a prompt
(the language's rules as :mod:`~harness.tasks.reasoning.interpreters` fixes them, the task, the I/O convention and
``examples`` worked cases) and ``cases`` held-out cases; the Python twin has the same prompt's task, I/O and cases.
A method sees one problem at a time through an :class:`EsolangSession` (the prompts, the worked examples and
:meth:`EsolangSession.check`, which runs candidate programs on the examples only, counting each) and answers an
:class:`Answer`. The task runs the answer on the held-out cases in :mod:`harness.sandbox` (esolang programs through
the interpreters, with a step limit, many in one confined process; Python programs one confined process per case)
and scores exact output: ``pass_rate`` (the share of held-out cases over every problem), ``twin_pass_rate`` (the
same for the Python answers), ``twin_gap`` (their difference: the paper's point is a solver that can do the task in
Python and not in the unfamiliar syntax), ``solved`` (problems with every case right), ``programs_tried`` and
``seconds``.
"""
from __future__ import annotations

import base64
import json
import string
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, Sequence

from harness.tasks.base import Context, DataError, Task
from harness.tasks.parameters import count

LANGUAGES = {"brainfuck": "Brainfuck", "befunge93": "Befunge-93"}
TASKS = {("brainfuck", "copy"), ("brainfuck", "print"), ("brainfuck", "sort"), ("befunge93", "print"),
         ("befunge93", "fibonacci"), ("befunge93", "factorial")}
# an answer's step limit on a held-out case: the reference Brainfuck sort needs about 140,000 steps on 8 bytes, the
# reference Befunge programs under 2,000; an empty Befunge program runs (spaces around the torus) until the limit
SCORING_STEPS = {"brainfuck": 400_000, "befunge93": 100_000}

RULES = {
    "brainfuck": (
        "Brainfuck: a tape of 30,000 cells, each an 8-bit value that wraps (255 + 1 = 0, 0 - 1 = 255), all 0 at the "
        "start, the pointer at cell 0. Commands: > and < move the pointer (moving below cell 0 or past the last cell "
        "is an error), + and - add and subtract 1, . writes the current cell as a byte, , reads one byte of input "
        "into the current cell (at the end of input it reads 0), [ jumps past the matching ] if the cell is 0, "
        "] jumps back to the matching [ if it is not. Every other character is a comment. Brackets must match."),
    "befunge93": (
        "Befunge-93: the program is laid out on an 80 x 25 grid that wraps around (a torus); execution starts at the "
        "top left moving right. The stack holds signed 64-bit integers; popping an empty stack gives 0. Commands: "
        "0-9 push the digit; + - * / % pop b then a and push a+b, a-b, a*b, a/b, a%b (truncating as C does; a zero "
        "divisor gives 0); ! pushes 1 if the popped value is 0, else 0; ` pops b then a and pushes 1 if a > b; "
        "> < ^ v set the direction; ? picks a random direction; _ pops and goes right if 0, else left; | pops and "
        "goes down if 0, else up; \" toggles string mode (every character until the next \" is pushed as its code); "
        ": duplicates the top; \\ swaps the top two; $ pops and discards; . pops and prints the integer followed by "
        "a space; , pops and prints the character; # skips the next cell; g pops y then x and pushes the code at "
        "(x, y); p pops y, x, then v and stores v at (x, y); & reads an integer from input (-1 at the end of "
        "input); ~ reads one character (-1 at the end); @ ends the program. Spaces do nothing."),
}


@dataclass(frozen=True)
class Case:
    """A test case: the program's input and the exact output expected (bytes)."""

    stdin: bytes
    expected: bytes


@dataclass(frozen=True)
class Problem:
    """One instance: its ``prompt`` (esolang) and ``twin_prompt`` (Python), the worked ``examples`` both show, and
    the held-out ``cases`` (the task's only: a method never sees them)."""

    language: str
    task: str
    statement: str
    prompt: str
    twin_prompt: str
    examples: tuple[Case, ...]
    cases: tuple[Case, ...]
    parameters: dict = field(default_factory=dict)  # what the instance is (the string to print, ...)


@dataclass(frozen=True)
class EsolangData:
    language: str
    task: str
    problems: tuple[Problem, ...]
    search_steps: int


@dataclass
class Answer:
    """A method's answer to one problem: its esolang program and its Python twin (None: no answer)."""

    program: str | None
    python: str | None = None


class EsolangMethod(Protocol):
    def solve(self, session: "EsolangSession") -> Answer:
        """The answer to ``session.problem`` (``session.check`` runs candidates on the worked examples)."""
        ...


# --------------------------------------------------------------------------- problems


def _letters(rng, low: int, high: int) -> bytes:
    return bytes(int(c) for c in rng.choice(list(string.ascii_lowercase.encode()), int(rng.integers(low, high + 1))))


def _describe(language: str, task: str, parameters: dict) -> str:
    if task == "copy":
        return "Read the whole input (lowercase letters, no newline) and write it out unchanged."
    if task == "print":
        return f"Write exactly the text {parameters['text']!r} (no newline); there is no input."
    if task == "sort":
        return "Read the whole input (lowercase letters, no newline) and write its bytes sorted in ascending order."
    if task == "fibonacci":
        return ("Read an integer N (0 to 15) and write the first N Fibonacci numbers (1, 1, 2, 3, 5, ...), each "
                "followed by one space, e.g. N = 4 gives '1 1 2 3 '.")
    return "Read an integer n (0 to 15) and write n! followed by one space, e.g. n = 5 gives '120 '."


def _cases(task: str, rng, n: int, parameters: dict) -> list[Case]:
    out = []
    for _ in range(n):
        if task == "copy":
            text = _letters(rng, 1, 10)
            out.append(Case(text, text))
        elif task == "print":
            out.append(Case(b"", parameters["text"].encode()))
        elif task == "sort":
            text = _letters(rng, 2, 8)
            out.append(Case(text, bytes(sorted(text))))
        elif task == "fibonacci":
            k = int(rng.integers(0, 16))
            fib = [1, 1]
            while len(fib) < k:
                fib.append(fib[-1] + fib[-2])
            out.append(Case(str(k).encode(), "".join(f"{v} " for v in fib[:k]).encode()))
        else:
            k = int(rng.integers(0, 16))
            value = 1
            for i in range(2, k + 1):
                value *= i
            out.append(Case(str(k).encode(), f"{value} ".encode()))
    return out


def _show(cases: Sequence[Case]) -> str:
    return "\n".join(f"  input {c.stdin.decode('latin-1')!r} -> output {c.expected.decode('latin-1')!r}"
                     for c in cases)


def problems(context: Context, language: str, task: str, instances: int, examples: int, cases: int,
             length: tuple[int, int]) -> tuple[Problem, ...]:
    """``instances`` problems of a task, drawn by the seed (the split draws other held-out cases)."""
    if (language, task) not in TASKS:
        raise DataError(f"{language}/{task} is not a task of reasoning.esolang; expected one of {sorted(TASKS)}")
    rng = context.rng("problems")
    out = []
    for _ in range(instances):
        parameters = {"text": _letters(rng, *length).decode()} if task == "print" else {}
        shown = _cases(task, rng, examples, parameters)
        held_out = _cases(task, context.rng("cases", str(len(out))), cases, parameters)
        statement = _describe(language, task, parameters)
        prompt = (f"{RULES[language]}\n\nTask: {statement}\nExamples:\n{_show(shown)}\n\nAnswer with the "
                  f"{LANGUAGES[language]} program only, in one code block.")
        twin = (f"Task: {statement}\nThe program reads standard input and writes standard output exactly; nothing "
                f"else is printed.\nExamples:\n{_show(shown)}\n\nAnswer with the Python 3 program only, in one code "
                "block.")
        out.append(Problem(language, task, statement, prompt, twin, tuple(shown), tuple(held_out), parameters))
    return tuple(out)


def _loader(language: str, task: str, default_length: tuple[int, int]):
    def load(context: Context, *, instances: int = 20, examples: int = 2, cases: int = 5, min_length: int | None = None,
             max_length: int | None = None, search_steps: int = 1000) -> EsolangData:
        low = default_length[0] if min_length is None else count("min_length", min_length)
        high = default_length[1] if max_length is None else count("max_length", max_length)
        if low > high:
            raise DataError(f"min_length = {low} is above max_length = {high}")
        return EsolangData(language, task, problems(context, language, task, count("instances", instances),
                                                    count("examples", examples), count("cases", cases),
                                                    (low, high)), count("search_steps", search_steps))
    load.__name__ = f"{language}_{task}"
    load.__doc__ = (f"{LANGUAGES[language]}, task {task}: ``instances`` problems of ``examples`` worked and "
                    f"``cases`` held-out cases each (print: strings of ``min_length`` to ``max_length`` letters); "
                    "``search_steps`` is a candidate's step limit when a method checks it on the examples.")
    return load


bf_copy = _loader("brainfuck", "copy", (1, 10))
bf_print = _loader("brainfuck", "print", (2, 2))
bf_sort = _loader("brainfuck", "sort", (2, 8))
befunge_print = _loader("befunge93", "print", (2, 8))
befunge_fibonacci = _loader("befunge93", "fibonacci", (1, 1))
befunge_factorial = _loader("befunge93", "factorial", (1, 1))


# --------------------------------------------------------------------------- running programs, confined

_DRIVER = '''
import base64, json, sys
request = json.loads(sys.stdin.read())
run = INTERPRETERS[request["language"]]
cases = [(base64.b64decode(i), base64.b64decode(o)) for i, o in request["cases"]]
results = []
for program in request["programs"]:
    results.append([run(program, stdin, max_steps=request["max_steps"]).output == expected
                    for stdin, expected in cases])
print(json.dumps(results))
'''


def run_esolang(language: str, programs: Sequence[str], cases: Sequence[Case], max_steps: int,
                cpu_s: float = 120.0) -> list[list[bool]]:
    """Each program's result (right or not) on each case, all run by the interpreters in one sandboxed process."""
    from harness.sandbox import Limits, run_python

    if not programs:
        return []
    source = Path(__file__).with_name("interpreters.py").read_text(encoding="utf-8") + _DRIVER
    request = {"language": language, "programs": list(programs), "max_steps": int(max_steps),
               "cases": [[base64.b64encode(c.stdin).decode(), base64.b64encode(c.expected).decode()] for c in cases]}
    outcome = run_python(source, json.dumps(request), Limits(cpu_s=cpu_s, wall_s=4 * cpu_s + 60,
                                                             memory_bytes=1024 * 2**20,
                                                             output_bytes=16 * 2**20))
    if not outcome.ok:
        raise RuntimeError(f"the sandboxed interpreter run ended {outcome.status}: {outcome.stderr[-500:]}")
    return json.loads(outcome.stdout)


def run_twin(program: str, cases: Sequence[Case], cpu_s: float = 5.0) -> list[bool]:
    """A Python program's result on each case, one sandboxed process per case."""
    from harness.sandbox import Limits, run_python

    results = []
    for case in cases:
        outcome = run_python(program, case.stdin.decode("latin-1"), Limits(cpu_s=cpu_s, wall_s=4 * cpu_s + 30))
        results.append(outcome.ok and outcome.stdout.encode("latin-1", "replace") == case.expected)
    return results


class EsolangSession:
    """One problem as a method sees it: ``problem`` (less its held-out cases: read ``prompt``, ``twin_prompt`` and
    ``examples``), ``language`` and :meth:`check`."""

    def __init__(self, problem: Problem, search_steps: int, context: Context):
        self.problem = problem
        self.language = problem.language
        self.prompt, self.twin_prompt, self.examples = problem.prompt, problem.twin_prompt, problem.examples
        self.search_steps = search_steps
        self.context = context
        self.programs_tried = 0

    def check(self, programs: Sequence[str], python: bool = False) -> list[float]:
        """Each candidate's share of the worked examples it gets right (esolang programs at the dataset's
        ``search_steps`` step limit; Python programs confined one case at a time). Counted in programs_tried."""
        self.programs_tried += len(programs)
        if python:
            return [sum(run_twin(p, self.examples)) / len(self.examples) for p in programs]
        results = run_esolang(self.language, programs, self.examples, self.search_steps)
        return [sum(r) / len(r) for r in results]


class EsolangTask(Task):
    """Ask the method each problem; run its answers on the held-out cases, confined; score exact output."""

    name = "reasoning.esolang"
    version = "1"
    metrics = ("pass_rate", "twin_pass_rate", "twin_gap", "solved", "programs_tried", "seconds")
    protocol = EsolangMethod
    framework = None

    def tiny(self, workdir: Path) -> dict[str, dict[str, Any]]:
        small = {"instances": 2, "examples": 1, "cases": 2, "search_steps": 200}
        return {name: dict(small) for name in ("bf-copy", "bf-print", "bf-sort", "befunge-print", "befunge-fibonacci",
                                               "befunge-factorial")}

    def evaluate(self, method: EsolangMethod, data: EsolangData, context: Context) -> dict[str, float]:
        started = time.perf_counter()
        answers, tried = [], 0
        for problem in data.problems:
            session = EsolangSession(problem, data.search_steps, context)
            answer = method.solve(session)
            if not isinstance(answer, Answer):
                raise TypeError(f"{type(method).__name__}.solve returned {type(answer).__name__}; expected an Answer")
            answers.append(answer)
            tried += session.programs_tried
        seconds = time.perf_counter() - started
        esolang = [a.program for a in answers]
        runnable = [i for i, p in enumerate(esolang) if p is not None]
        all_cases = [c for p in data.problems for c in p.cases]
        right: list[list[bool]] = [[False] * len(p.cases) for p in data.problems]
        # one confined run per problem's cases, the answers batched by problem
        for i in runnable:
            right[i] = run_esolang(data.language, [esolang[i]], data.problems[i].cases,
                                   SCORING_STEPS[data.language])[0]
        twin_right = [run_twin(a.python, p.cases) if a.python is not None else [False] * len(p.cases)
                      for a, p in zip(answers, data.problems)]
        pass_rate = sum(map(sum, right)) / len(all_cases)
        twin_rate = sum(map(sum, twin_right)) / len(all_cases)
        return {"pass_rate": pass_rate, "twin_pass_rate": twin_rate, "twin_gap": twin_rate - pass_rate,
                "solved": sum(all(r) for r in right) / len(right), "programs_tried": float(tried),
                "seconds": seconds}


TASK = EsolangTask()
