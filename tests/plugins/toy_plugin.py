"""A toy task registered through HARNESS_PLUGINS, for the engine's own tests.

Its methods misbehave on purpose (sleep past the timeout, raise, return NaN, kill their
process), and its tunable method has a known optimum, so the engine's handling of each
case can be checked exactly and fast.
"""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Protocol

import numpy as np

import harness

CATALOGUE = {
    "metrics": {
        "toy_score": {"goal": "max", "unit": "", "about": "1 - |prediction - target| (toy)"},
        "toy_loss": {"goal": "min", "unit": "", "about": "|prediction - target| (toy)"},
        "runtime_s": {"goal": "min", "unit": "s", "about": "seconds the method itself took in the cell"},
    },
    "tasks": {"toy.guess": {"target": "toy_plugin:TASK", "about": "guess a number (engine tests)"}},
    "datasets": {
        "toy-target": {"task": "toy.guess", "target": "toy_plugin:toy_target", "about": "a noisy target"},
        "toy-local": {"task": "toy.guess", "target": "toy_plugin:toy_local", "about": "a target read from --data-dir"},
    },
    "methods": {
        name: {"task": "toy.guess", "target": f"toy_plugin:{cls}", "about": name}
        for name, cls in [("toy-constant", "Constant"), ("toy-tunable", "Tunable"), ("toy-sleep", "Sleep"),
                          ("toy-raise", "Raise"), ("toy-nan", "NaN"), ("toy-crash", "Crash"), ("toy-peek", "Peek"),
                          ("toy-stop", "Stop")]
    } | {  # methods whose module sleeps HARNESS_TOY_IMPORT_S (3) seconds when imported
        name: {"task": "toy.guess", "target": f"toy_slow_import:{cls}", "about": name}
        for name, cls in [("toy-slow-import", "Constant"), ("toy-slow-import-sleep", "Sleep")]
    } | {"toy-prior": {"task": "toy.guess", "target": "toy_plugin:Constant", "trivial": True,
                       "about": "the prior's guess, 0.5 whatever the hint (the task's trivial answer)"}},
}


class Guesser(Protocol):
    def guess(self, hint: float, rng: np.random.Generator) -> float: ...


class Data:
    def __init__(self, target: float, hint: float, curve: bool = False):
        self.target, self.hint, self.curve = target, hint, curve


def toy_target(context, *, target=0.5, noise=0.1, curve=False):
    rng = context.rng("data")
    return Data(target + noise * rng.standard_normal(), hint=target, curve=curve)


def toy_local(context, *, file="target.txt"):
    from harness.tasks.base import DataUnavailable

    if context.data_dir is None or not (context.data_dir / file).exists():
        raise DataUnavailable(f"toy-local: {file} not found in the data folder")
    target = float((context.data_dir / file).read_text())
    return Data(target, hint=target)


class Task(harness.Task):
    name = "toy.guess"
    version = "1"
    metrics = ("toy_score", "toy_loss", "runtime_s")
    protocol = Guesser

    def tiny(self, workdir):
        return {"toy-target": {}}

    def evaluate(self, method, data, context):
        start = time.perf_counter()
        guess = method.guess(data.hint, context.rng("method"))
        loss = abs(guess - data.target)
        metrics = {"toy_score": 1.0 - loss, "toy_loss": loss, "runtime_s": time.perf_counter() - start}
        if not data.curve:
            return metrics
        steps = [1.0, 2.0, 4.0, 8.0]  # a loss that halves per doubling, and the theory's 1/step
        return harness.Evaluation(metrics, {"loss_by_step": harness.Curve(
            steps, [loss / s for s in steps], x_label="step", theory=[loss / s for s in steps] if data.curve == "theory"
            else None)})


TASK = Task()


class Constant:
    def __init__(self, value=0.5):
        self.value = value

    def guess(self, hint, rng):
        return self.value


class Tunable:
    """Score peaks at x = 0.3 on every split; tuning should find it."""

    def __init__(self, x=0.0, offset=0.0):
        self.x, self.offset = x, offset

    def guess(self, hint, rng):
        return hint + abs(self.x - 0.3) + self.offset


class Sleep:
    """Sleeps ``seconds``, or ``HARNESS_TOY_SLEEP_S`` where set: a test makes the same cell (the same key) sleep
    far past its timeout in one run and return at once in the next."""

    def __init__(self, seconds=30.0):
        self.seconds = seconds

    def guess(self, hint, rng):
        time.sleep(float(os.environ.get("HARNESS_TOY_SLEEP_S", self.seconds)))
        return hint


class Raise:
    def __init__(self, message="the method broke"):
        self.message = message

    def guess(self, hint, rng):
        raise RuntimeError(self.message)


class NaN:
    def guess(self, hint, rng):
        return float("nan")


class Crash:
    def guess(self, hint, rng):
        os._exit(3)


class Peek:
    """Slow enough to be killed mid-run by the resume test."""

    def __init__(self, seconds=0.3):
        self.seconds = seconds

    def guess(self, hint, rng):
        time.sleep(self.seconds)
        return hint + 0.01 * rng.standard_normal()


def _count_call(counter: Path) -> int:
    """Add one to the number in ``counter`` and return it; workers running at once each get their own.

    The new count replaces the file atomically: a worker the kernel kills mid-count (its run was SIGKILLed, see
    PR_SET_PDEATHSIG in harness.execute) leaves the old count, never an empty file that restarts the count."""
    import fcntl

    with open(counter.with_name(counter.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        call = (int(counter.read_text() or 0) if counter.exists() else 0) + 1
        scratch = counter.with_name(f"{counter.name}.{os.getpid()}")
        scratch.write_text(str(call))
        os.replace(scratch, counter)
    return call


class Stop(Tunable):
    """Tunable, and stops the `harness run` that runs it while its k-th call is in flight.

    ``HARNESS_TOY_STOP=COUNTER:K1,K2,...:SIGNAL``: the calls are counted in the file COUNTER, over
    every run, and at call K1, K2, ... the worker sends SIGNAL (SIGINT: a Ctrl-C, SIGKILL) to its run.
    """

    def __init__(self, x=0.0, offset=0.0, seconds=0.0):
        super().__init__(x, offset)
        self.seconds = seconds  # slow enough for a test to kill its run mid-way

    def guess(self, hint, rng):
        time.sleep(self.seconds)
        stop = os.environ.get("HARNESS_TOY_STOP")
        if stop:
            counter, calls, name = stop.rsplit(":", 2)
            call = _count_call(Path(counter))
            if str(call) in calls.split(","):
                os.kill(os.getppid(), getattr(signal, name))
        return super().guess(hint, rng)
