"""Kernels of the esolang spec (pure Python, one thread): the interpreters' speed on programs that run long (the
reference Brainfuck bubble sort on 8 bytes, a Befunge-93 counted loop), and one confined run of the sandbox
(process start-up, namespaces, limits and the audit hook around a trivial program)."""
from __future__ import annotations

from benchmarks._common import CpuKernel


class Interpreters(CpuKernel):
    """The Brainfuck sort on 'hgfedcba' (about 140,000 steps) or the Befunge Fibonacci loop for N = 15."""

    params = (["brainfuck-sort", "befunge-fibonacci"],)
    param_names = ["program"]
    version = "1"

    def setup(self, program):
        from baselines.esolang import BF_SORT, befunge_loop

        self.fibonacci = befunge_loop("11", "03g1-03p\\:.13p:13g+", "@")
        self.sort = BF_SORT

    def time_run(self, program):
        from harness.tasks.reasoning.interpreters import befunge93, brainfuck

        if program == "brainfuck-sort":
            brainfuck(self.sort, b"hgfedcba", max_steps=10**6)
        else:
            for _ in range(50):
                befunge93(self.fibonacci, b"15")


class SandboxRun:
    """One confined run of a program that prints a line: the sandbox's fixed cost (wall clock: it starts
    processes)."""

    repeat = (3, 10, 10.0)
    version = "1"

    def time_run(self):
        from harness.sandbox import run_python

        run_python("print('ok')")
