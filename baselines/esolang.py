"""Solvers of ``reasoning.esolang`` that need no model.

* :class:`ReferencePrograms`: constructive, hand-written programs for every task and its Python twin (the scorer's
  check: they must pass every case);
* :class:`EnumerativeSearch` and :class:`RandomSearch`: blind program search under a fixed budget of candidates,
  each checked on the worked examples (the floor);
* :class:`EmptyProgram`: the empty program in both languages (the trivial answer).
"""
from __future__ import annotations

import itertools
import zlib

from harness.tasks.reasoning.esolang import Answer

BF_SORT = (">>,[>>,]<<[[<<]>>>>[<<[>+<<+>-]>>[>+<<<<[->]>[<]>>-]<<<[[-]>>[>+<-]>>[<<<+>>>-]]>>[[<+>-]>>]<]<<[>>+<<-]<<]"
           ">>>>[.>>]")  # bubble sort of the input bytes up to EOF (Daniel Cristofani's, as published on his page)


def befunge_loop(start: str, body: str, end: str) -> str:
    """A counted loop in Befunge-93: read the count into cell (0, 3), run ``start``, then while the count is not 0
    run ``body`` (written left to right; it runs right to left on the second line), then ``end``."""
    if len(start) > 6 or len(body) > 19:
        raise ValueError("befunge_loop: start fits 6 cells and the body 19")
    first = f"&03p{start}".ljust(10) + ">".ljust(16) + ">03gv"  # the check: the count at column 26..30
    second = " " * 10 + "^" + body[::-1].rjust(19) + "_" + end  # '_' under the 'v': 0 goes right, to the end
    return first + "\n" + second

PYTHON = {
    "copy": "import sys\nsys.stdout.write(sys.stdin.read())\n",
    "sort": "import sys\nsys.stdout.write(''.join(sorted(sys.stdin.read())))\n",
    "fibonacci": ("n = int(input())\na, b = 1, 1\nout = []\nfor _ in range(n):\n    out.append(a)\n    a, b = b, a + b\n"
                  "print(''.join(f'{v} ' for v in out), end='')\n"),
    "factorial": "import math\nprint(f'{math.factorial(int(input()))} ', end='')\n",
}


def brainfuck_print(text: str) -> str:
    """A Brainfuck program writing ``text``: one cell, moved to each byte by the shorter way round, then '.'."""
    out, current = [], 0
    for byte in text.encode("latin-1"):
        up = (byte - current) % 256
        out.append("+" * up if up <= 128 else "-" * (256 - up))
        out.append(".")
        current = byte
    return "".join(out)


def befunge_print(text: str) -> str:
    """A Befunge-93 program writing ``text`` (no '"' in it): the string pushed reversed, then printed until the
    empty stack's 0."""
    if '"' in text:
        raise ValueError("befunge_print: the text may not hold '\"'")
    return f'"{text[::-1]}">:#,_@'


class ReferencePrograms:
    """The hand-written program for the problem's task (and the Python twin's): the scorer's check."""

    def solve(self, session):
        problem = session.problem
        task = problem.task
        if task == "print":
            text = problem.parameters["text"]
            program = brainfuck_print(text) if problem.language == "brainfuck" else befunge_print(text)
            return Answer(program, f"print({text!r}, end='')\n")
        programs = {
            ("brainfuck", "copy"): ",[.,]",
            ("brainfuck", "sort"): BF_SORT,
            # a = b = 1 on the stack; each turn prints a, then (a, b) -> (b, a + b), via the cell (1, 3)
            ("befunge93", "fibonacci"): befunge_loop("11", "03g1-03p\\:.13p:13g+", "@"),
            # the product on the stack, times the count, the count down to 0; then printed
            ("befunge93", "factorial"): befunge_loop("1", "03g*03g1-03p", ".@"),
        }
        return Answer(programs[problem.language, task], PYTHON[task])


ALPHABETS = {"brainfuck": "<>+-.,[]", "befunge93": "0123456789+-*/%!`><^v?_|\":\\$.,#gp&~@ "}


def _balanced(program: str) -> bool:
    depth = 0
    for c in program:
        depth += {"[": 1, "]": -1}.get(c, 0)
        if depth < 0:
            return False
    return depth == 0


class EnumerativeSearch:
    """Every program of the language's commands in length order (Brainfuck: balanced brackets only; Befunge: one
    line), checked on the worked examples, up to ``budget`` candidates; the first to pass them all is the answer,
    else the best seen. No Python answer (blind search has no algorithm to carry over)."""

    def __init__(self, budget: int = 2000):
        self.budget = budget

    def _candidates(self, language: str):
        alphabet = ALPHABETS[language]
        for length in itertools.count(1):
            for letters in itertools.product(alphabet, repeat=length):
                program = "".join(letters)
                if language != "brainfuck" or _balanced(program):
                    yield program

    def solve(self, session):
        if self.budget < 1:
            raise ValueError(f"{type(self).__name__}: budget = {self.budget}; expected at least 1")
        candidates = list(itertools.islice(self._candidates(session.language), self.budget))
        return Answer(_best(session, candidates), None)


class RandomSearch(EnumerativeSearch):
    """``budget`` programs of 1 to ``max_length`` commands drawn uniformly (Brainfuck: redrawn until the brackets
    balance), checked on the worked examples; the first to pass them all, else the best seen."""

    def __init__(self, budget: int = 2000, max_length: int = 30):
        super().__init__(budget)
        self.max_length = max_length

    def _candidates(self, language: str):
        alphabet = ALPHABETS[language]
        rng = self._rng
        while True:
            program = "".join(rng.choice(list(alphabet), int(rng.integers(1, self.max_length + 1))))
            if language != "brainfuck" or _balanced(program):
                yield program

    def solve(self, session):
        if self.max_length < 1:
            raise ValueError(f"RandomSearch: max_length = {self.max_length}; expected at least 1")
        self._rng = session.context.rng("random-search", str(zlib.crc32(session.problem.prompt.encode())))
        return super().solve(session)


def _best(session, candidates: list[str]) -> str:
    scores = session.check(candidates)
    best = max(range(len(candidates)), key=lambda i: (scores[i], -i))
    return candidates[best]


class EmptyProgram:
    """The empty program, in both languages: the trivial answer (right only where nothing is the output)."""

    def solve(self, session):
        return Answer("", "")
