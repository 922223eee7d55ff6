"""Interpreters of Brainfuck and Befunge-93 with fixed, documented conventions and step limits.

Standard library only and self-contained: the reasoning family ships this module's source into the sandbox
(:mod:`harness.sandbox`), where generated programs run, so it imports nothing else of the harness.

**Brainfuck** (Urban Müller's, with the conventions the task prompts state): 30,000 cells initialised to 0, the
pointer at cell 0; 8-bit cells that wrap (255 + 1 = 0, 0 − 1 = 255); ``,`` reads one byte, end of input reads 0;
``<`` below cell 0 or ``>`` past the last cell is a run-time error; an unmatched bracket is an error before the run;
every other character is a comment. Each executed command is a step.

**Befunge-93** (catseye's ``Befunge-93.markdown``; what it leaves open as the reference ``bef.c`` 2.25 does, except
where noted): an 80 × 25 torus, the program's lines placed from the top left (longer lines and further lines cut);
the instruction pointer at (0, 0) moving right; stack cells are signed 64-bit integers (wrapping; the 93 document
says C ``long``: 64 bits on today's 64-bit Unix), popping an empty stack gives 0; ``"`` toggles string mode, which
pushes every cell's value, spaces included; ``.`` prints an integer **followed by a space**, ``,`` the character of
its value modulo 256; ``&`` reads a decimal integer (leading whitespace skipped, an optional sign) and ``~`` one
character, each −1 at the end of input (bef.c ≥ 2.24); ``/`` and ``%`` truncate toward zero as C does, and divide
by zero to 0 (bef.c asks the user: not possible here; Funge-98's rule); ``g`` outside the torus pushes 0 and ``p``
outside it does nothing; ``p`` stores its value modulo 256; ``?`` draws a direction from a generator seeded by the
caller; any other character is a no-op (bef.c warns). Each executed cell is a step (a space included).

Both return an :class:`Run`: the output as bytes, whether it ended normally, and why not.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

TAPE_CELLS = 30000
WIDTH, HEIGHT = 80, 25
INT64 = 2 ** 64


@dataclass
class Run:
    """What a program did: its ``output`` (bytes), ``status`` ("ok", "step-limit" or "error"), the ``error``'s
    text and the ``steps`` it took."""

    output: bytes
    status: str
    error: str
    steps: int


def brainfuck(program: str, stdin: bytes = b"", max_steps: int = 100000) -> Run:
    """Run a Brainfuck ``program`` on ``stdin``; see the module for the conventions."""
    code = [c for c in program if c in "<>+-.,[]"]
    jumps: dict[int, int] = {}
    open_brackets = []
    for i, c in enumerate(code):
        if c == "[":
            open_brackets.append(i)
        elif c == "]":
            if not open_brackets:
                return Run(b"", "error", "unmatched ']'", 0)
            j = open_brackets.pop()
            jumps[i], jumps[j] = j, i
    if open_brackets:
        return Run(b"", "error", "unmatched '['", 0)
    tape = bytearray(TAPE_CELLS)
    pointer = pc = steps = read = 0
    out = bytearray()
    while pc < len(code):
        if steps >= max_steps:
            return Run(bytes(out), "step-limit", f"more than {max_steps} steps", steps)
        steps += 1
        c = code[pc]
        if c == ">":
            pointer += 1
            if pointer >= TAPE_CELLS:
                return Run(bytes(out), "error", f"'>' past cell {TAPE_CELLS - 1}", steps)
        elif c == "<":
            pointer -= 1
            if pointer < 0:
                return Run(bytes(out), "error", "'<' below cell 0", steps)
        elif c == "+":
            tape[pointer] = (tape[pointer] + 1) & 255
        elif c == "-":
            tape[pointer] = (tape[pointer] - 1) & 255
        elif c == ".":
            out.append(tape[pointer])
        elif c == ",":
            tape[pointer] = stdin[read] if read < len(stdin) else 0
            read += 1
        elif c == "[":
            if tape[pointer] == 0:
                pc = jumps[pc]
        elif c == "]":
            if tape[pointer] != 0:
                pc = jumps[pc]
        pc += 1
    return Run(bytes(out), "ok", "", steps)


def _wrap64(value: int) -> int:
    value %= INT64
    return value - INT64 if value >= INT64 // 2 else value


def _c_division(a: int, b: int) -> tuple[int, int]:
    """C's truncating quotient and remainder; 0 and 0 for a zero divisor."""
    if b == 0:
        return 0, 0
    quotient = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
    return quotient, a - quotient * b


def befunge93(program: str, stdin: bytes = b"", max_steps: int = 100000, seed: int = 0) -> Run:
    """Run a Befunge-93 ``program`` on ``stdin``; see the module for the conventions."""
    grid = [[32] * WIDTH for _ in range(HEIGHT)]
    for y, line in enumerate(program.split("\n")[:HEIGHT]):
        for x, ch in enumerate(line.rstrip("\r")[:WIDTH]):
            grid[y][x] = ord(ch) % 256
    stack: list[int] = []
    out = bytearray()
    x = y = 0
    dx, dy = 1, 0
    string_mode = False
    read = 0
    steps = 0
    rng = random.Random(seed)

    def pop() -> int:
        return stack.pop() if stack else 0

    def push(value: int) -> None:
        stack.append(_wrap64(value))

    def read_integer() -> int:
        nonlocal read
        while read < len(stdin) and chr(stdin[read]).isspace():
            read += 1
        start = read
        if read < len(stdin) and stdin[read] in b"+-":
            read += 1
        digits = read
        while read < len(stdin) and 48 <= stdin[read] <= 57:
            read += 1
        if read == digits:
            read = start
            return -1
        return int(stdin[start:read])

    while True:
        if steps >= max_steps:
            return Run(bytes(out), "step-limit", f"more than {max_steps} steps", steps)
        steps += 1
        cell = grid[y][x]
        c = chr(cell)
        if string_mode:
            if c == '"':
                string_mode = False
            else:
                push(cell)
        elif 48 <= cell <= 57:
            push(cell - 48)
        elif c in "+-*/%`":
            b, a = pop(), pop()
            if c == "+":
                push(a + b)
            elif c == "-":
                push(a - b)
            elif c == "*":
                push(a * b)
            elif c == "/":
                push(_c_division(a, b)[0])
            elif c == "%":
                push(_c_division(a, b)[1])
            else:
                push(1 if a > b else 0)
        elif c == "!":
            push(0 if pop() else 1)
        elif c in "><^v":
            dx, dy = {">": (1, 0), "<": (-1, 0), "^": (0, -1), "v": (0, 1)}[c]
        elif c == "?":
            dx, dy = rng.choice([(1, 0), (-1, 0), (0, -1), (0, 1)])
        elif c == "_":
            dx, dy = (1, 0) if pop() == 0 else (-1, 0)
        elif c == "|":
            dx, dy = (0, 1) if pop() == 0 else (0, -1)
        elif c == '"':
            string_mode = True
        elif c == ":":
            value = pop()
            push(value)
            push(value)
        elif c == "\\":
            b, a = pop(), pop()
            push(b)
            push(a)
        elif c == "$":
            pop()
        elif c == ".":
            out.extend(f"{pop()} ".encode("ascii"))
        elif c == ",":
            out.append(pop() % 256)
        elif c == "#":
            x, y = (x + dx) % WIDTH, (y + dy) % HEIGHT
        elif c == "g":
            gy, gx = pop(), pop()
            push(grid[gy][gx] if 0 <= gx < WIDTH and 0 <= gy < HEIGHT else 0)
        elif c == "p":
            py, px, value = pop(), pop(), pop()
            if 0 <= px < WIDTH and 0 <= py < HEIGHT:
                grid[py][px] = value % 256
        elif c == "&":
            push(read_integer())
        elif c == "~":
            if read < len(stdin):
                push(stdin[read])
                read += 1
            else:
                push(-1)
        elif c == "@":
            return Run(bytes(out), "ok", "", steps)
        x, y = (x + dx) % WIDTH, (y + dy) % HEIGHT


INTERPRETERS = {"brainfuck": brainfuck, "befunge93": befunge93}
