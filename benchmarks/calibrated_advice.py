"""Kernels of the calibrated-advice specs: fitting a calibrator on a validation split, Algorithm 1's and Sun et al.'s
Algorithm 2's buying days for a test split, and one draw of the scheduling task (Algorithm 3's plan run against
revealed priorities, with the L/M/N counts). scikit-learn is imported in ``setup`` only."""
from __future__ import annotations

from benchmarks._common import CpuKernel


class CalibratorFit(CpuKernel):
    """Fit a calibrator on n validation scores (the paper's 1,600 and ten times that)."""

    params = (["histogram", "platt", "isotonic"], [1600, 16000])
    param_names = ["calibrator", "n"]
    version = "1"

    def setup(self, calibrator, n):
        import numpy as np

        from components.calibration import make_calibrator

        rng = np.random.default_rng(0)
        self.scores = rng.random(n)
        self.y = (rng.random(n) < self.scores**2).astype(float)
        self.make = lambda: make_calibrator(calibrator, 100)
        self.make().fit(self.scores, self.y)  # imports

    def time_fit(self, calibrator, n):
        self.make().fit(self.scores, self.y)


class SkiRentalDays(CpuKernel):
    """Buying days for n test instances: Algorithm 1 on calibrated probabilities, Algorithm 2 on intervals."""

    params = (["algorithm-1", "algorithm-2"], [2000, 200000])
    param_names = ["rule", "n"]
    version = "1"

    def setup(self, rule, n):
        import numpy as np

        from baselines.ski_rental import conformal_buy_day
        from implementations.calibrated_advice import calibrated_buy_day

        rng = np.random.default_rng(0)
        v = rng.random(n)
        lower = np.exp(rng.normal(-0.5, 1, n))
        upper = lower * np.exp(rng.random(n) * 3)
        if rule == "algorithm-1":
            self.run = lambda: calibrated_buy_day(v, 0.05, 1.0)
        else:
            self.run = lambda: conformal_buy_day(lower, upper, 0.1, 1.0)

    def time_days(self, rule, n):
        self.run()


class SchedulingDraw(CpuKernel):
    """Plan and run one draw of n jobs: Algorithm 3's order, the simulated schedule, ALG, OPT, L, M, N."""

    params = ([100, 1000],)
    param_names = ["jobs"]
    version = "1"

    def setup(self, jobs):
        import numpy as np

        from components.scheduling_rule import threshold_plan
        from harness.tasks.online.scheduling import schedule_cost

        rng = np.random.default_rng(0)
        p = rng.random(jobs)
        y = (rng.random(jobs) < p).astype(int)
        plan_rng = np.random.default_rng(1)

        def draw():
            order, probed = threshold_plan(p, 0.1, 1.0, 2.0, plan_rng)
            return schedule_cost(order, probed, y, 0.1, 1.0, 2.0)

        self.draw = draw

    def time_draw(self, jobs):
        self.draw()
