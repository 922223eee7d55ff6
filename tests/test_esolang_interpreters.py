"""The Brainfuck and Befunge-93 interpreters against hand-worked programs and the conventions their module states
(Müller's README and Cristofani's notes for Brainfuck; catseye's Befunge-93 document and bef.c for Befunge)."""
from __future__ import annotations

import pytest

from harness.tasks.reasoning.interpreters import INT64, _c_division, _wrap64, befunge93, brainfuck

HELLO_BF = ("++++++++[>++++[>++>+++>+++>+<<<<-]>+>+>->>+[<]<-]>>.>---.+++++++..+++.>>.<-.<.+++.------.--------."
            ">>+.>++.")


def test_brainfuck_hello_world():
    run = brainfuck(HELLO_BF)
    assert run.status == "ok" and run.output == b"Hello World!\n"


def test_brainfuck_copy_stops_at_end_of_input_because_eof_reads_0():
    assert brainfuck(",[.,]", b"abc").output == b"abc"
    assert brainfuck(",.", b"").output == b"\x00"


def test_brainfuck_cells_wrap_at_8_bits_and_comments_are_ignored():
    assert brainfuck("-.").output == b"\xff"
    assert brainfuck("+" * 256 + ".").output == b"\x00"
    assert brainfuck("this + is + comment .").output == b"\x02"


def test_brainfuck_errors_and_the_step_limit():
    assert brainfuck("<").status == "error" and "below cell 0" in brainfuck("<").error
    assert brainfuck(">" * 30000).status == "error"
    assert brainfuck(">" * 29999 + "+.").output == b"\x01"  # the last of the 30,000 cells
    assert brainfuck("[").status == "error" and brainfuck("]").error == "unmatched ']'"
    looping = brainfuck("+[]", max_steps=1000)
    assert looping.status == "step-limit" and looping.steps == 1000


def test_befunge_hello_idiom_and_the_space_after_a_number():
    assert befunge93('"!olleH">:#,_@').output == b"Hello!"
    assert befunge93("12+.@").output == b"3 "
    assert befunge93("12\\..@").output == b"1 2 "  # swap


def test_befunge_string_mode_pushes_spaces():
    assert befunge93('"a b",,,@').output == b"b a"


def test_befunge_arithmetic_as_c_with_division_by_zero_giving_0():
    assert befunge93("73/.73%.@").output == b"2 1 "
    assert befunge93("07-2/.07-2%.@").output == b"-3 -1 "  # truncation toward zero
    assert befunge93("70/.70%.@").output == b"0 0 "
    assert _c_division(7, -2) == (-3, 1)
    assert befunge93("0!.5!.32`.23`.@").output == b"1 0 1 0 "


def test_befunge_cells_are_signed_64_bit():
    assert befunge93("2:*:*:*:*:*.@").output == b"4294967296 "  # 2^32: past 32 bits
    assert befunge93("2:*:*:*:*:*:*.@").output == b"0 "  # 2^64 wraps
    assert _wrap64(2 ** 63) == -(2 ** 63) and _wrap64(-1) == -1 and _wrap64(INT64 + 5) == 5


def test_befunge_empty_stack_pops_0_and_bridge_get_put():
    assert befunge93(".@").output == b"0 "
    assert befunge93("1#2.@").output == b"1 "
    assert befunge93('"A"00p00g,@').output == b"A"  # p then g on (0, 0)
    assert befunge93("99g.@").output == b"32 "  # an empty cell is a space
    assert befunge93("999*9p.@").output == b"0 "  # p outside the torus does nothing; the stack is then empty


def test_befunge_directions_wrap_around_the_torus():
    assert befunge93("<@.1").output == b"1 "  # left from (0, 0) wraps to column 79, then onwards left
    program = "v\n1\n.\n@"
    assert befunge93(program).output == b"1 "
    assert befunge93("1v\n @\n", max_steps=50).status == "ok"
    assert befunge93("0|\n @\n 1\n").output == b""  # | pops 0: down, onto @


def test_befunge_input_and_end_of_input():
    assert befunge93("&.&.@", b" 42\n-7").output == b"42 -7 "
    assert befunge93("&.@", b"").output == b"-1 "
    assert befunge93("~,~,~.@", b"ab").output == b"ab-1 "


def test_befunge_random_direction_is_seeded_and_the_step_limit_holds():
    program = "v>1.@\n>?2.@\n >3.@\n  4\n  .\n  @"
    outputs = {befunge93(program, seed=s).output for s in range(20)}
    assert befunge93(program, seed=3).output == befunge93(program, seed=3).output
    assert len(outputs) > 1
    empty = befunge93("", max_steps=500)
    assert empty.status == "step-limit" and empty.steps == 500
