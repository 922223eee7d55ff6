from __future__ import annotations

from components.projected_sgd import sample_order, sgd_path


class MultiPassSGD:
    """K = ``epochs`` passes, T = Kn steps; ``order``: 'single-shuffle' or 'with-replacement'."""

    def __init__(self, epochs: int = 2, order: str = "single-shuffle", step_exponent: float = 0.5):
        self.epochs, self.order, self.step_exponent = epochs, order, step_exponent

    def plan(self, n: int) -> tuple[float, int]:
        if int(self.epochs) < 1:
            raise ValueError(f"epochs = {self.epochs!r}; expected a positive integer")
        return float(n) ** -float(self.step_exponent), int(self.epochs) * int(n)

    def run(self, problem, rng):
        return sgd_path(problem, sample_order(problem.n, problem.steps, self.order, rng))
