"""A claim's arms trained to their plateau: the training curves the rows keep (:class:`harness.tasks.training.
TrainingLog`) against the tolerance the task declares for its objective."""
from __future__ import annotations

from harness.audit.base import Folder, Rule, claim_methods
from harness.results_table import texts
from harness.tasks.training import LAST_FIFTH  # the rule a task's train_to_plateau stops by: one number for both


def still_improving(x: list[float], y: list[float], goal: str) -> float | None:
    """How much the objective improved over the last fifth of the budget (+: better, by its goal); None when the
    curve has no point at or before 80% of the budget to measure from."""
    start = [v for f, v in zip(x, y) if f <= LAST_FIFTH * max(x) + 1e-12]
    if not start or len(x) < 2:
        return None
    gain = y[-1] - start[-1]
    return gain if goal == "max" else -gain


class Unconverged(Rule):
    name = "unconverged"
    about = ("Every arm of a claim that trains is trained to its plateau: the last fifth of the budget improves "
             "its objective (a curve the task records, declared role training-objective) by no more than the "
             "task's tolerance, and it ends better than the objective's chance level. A win over an unconverged "
             "arm is not a win.")

    def findings(self, folder: Folder):
        objectives = {n: m for n, m in folder.metrics.items() if m.role == "training-objective"}
        if not objectives:
            return
        rows = folder.board.rows
        at = (rows["status"] == "ok").to_numpy() & rows["curves"].notna().to_numpy()
        import numpy as np

        index = np.flatnonzero(at)
        curves = rows["curves"].to_numpy()[index].tolist()
        cells = list(zip(texts(rows, "dataset", index), texts(rows, "method", index), curves))
        chance = folder.board.chance
        for claim in folder.claims.values():
            wanted = set(claim.get("datasets") or ()) or None
            said = []
            for method in claim_methods(claim):
                for name, metric in objectives.items():
                    improving = trivial = seen = 0
                    worst = 0.0
                    for dataset, m, kept in cells:
                        curve = kept.get(name) if m == method and (wanted is None or dataset in wanted) else None
                        if not curve:
                            continue
                        seen += 1
                        gain = still_improving(curve["x"], curve["y"], metric.goal)
                        if gain is not None and gain > metric.tolerance:
                            improving += 1
                            worst = max(worst, gain)
                        level = chance.get(dataset, {}).get(name)
                        end = curve["y"][-1]
                        if level is not None and not (end > level if metric.goal == "max" else end < level):
                            trivial += 1
                    if improving:
                        said.append(f"{method}'s {name} still improved in the last fifth of its budget on {improving} "
                                    f"of {seen} cells (by up to {worst:.4g}, tolerance {metric.tolerance:g})")
                    if trivial:
                        said.append(f"{method}'s {name} ends no better than its chance level on {trivial} of "
                                    f"{seen} cells")
            if said:
                yield self.finding(folder, "; ".join(said), claim=claim["id"])


RULES = [Unconverged()]
