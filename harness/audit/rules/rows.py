"""Rules on the rows behind the claims: the trivial answer, the sanity row, budgets and failed fits."""
from __future__ import annotations

from harness.audit.base import Folder, Rule, claim_methods, compared_arms

BUDGET_RATIO = 1.2  # two arms of a claim spend the same within this, unless the claim is about the budget
FAILURE_SHARE = 0.05  # above this share of failed or degenerate fits a cell's mean hides them


def _beats(value: float, level: float, goal: str) -> bool:
    return value > level if goal == "max" else value < level


class BelowTrivial(Rule):
    name = "below-trivial"
    about = ("A method whose mean does not beat the trivial answer on a dataset (the chance level the task declares "
             "for the metric, or the best trivial row the spec runs, `kind: trivial`) learned nothing there; a "
             "comparison it is an arm of compares noise.")

    def findings(self, folder: Folder):
        primary = folder.spec["metrics"]["primary"]
        goal = folder.metrics[primary].goal
        chance = folder.board.chance
        below: dict[str, list[str]] = {}
        datasets: dict[str, set[str]] = {}
        if any(primary in levels for levels in chance.values()):
            for (dataset, method), mean in folder.ok_means(primary).items():
                level = chance.get(dataset, {}).get(primary)
                if level is None:
                    continue
                datasets.setdefault(method, set()).add(dataset)
                if not _beats(mean, level, goal):
                    below.setdefault(method, []).append(f"{dataset} {mean:.4g} (chance {level:.4g})")
        for dataset, groups in folder.board.below_trivial.items():
            for best, rows in groups:
                level = best.metrics[primary].mean
                for row in folder.board.tables[dataset]:
                    if row.kind != "trivial" and primary in row.metrics:
                        datasets.setdefault(row.method, set()).add(dataset)
                for row in rows:
                    below.setdefault(row.method, []).append(
                        f"{dataset} {row.metrics[primary].mean:.4g} ({best.method} {level:.4g})")
        yield from self._claim_metrics(folder, primary, chance)
        for method, where in below.items():
            against = "chance" if all("(chance " in w for w in where) else "the trivial answer"
            yield self.finding(folder, f"its mean {primary} does not beat {against} on {len(where)} of "
                                       f"{len(datasets[method])} datasets: {'; '.join(where[:5])}"
                                       f"{'; …' if len(where) > 5 else ''}", method=method)


    def _claim_metrics(self, folder: Folder, primary: str, chance: dict):
        """A claim on another metric than the primary one, with a chance level: each of its arms whose mean does not
        beat it on the claim's datasets (the claim compares two answers no better than the trivial one there)."""
        for claim in folder.claims.values():
            metric = claim.get("metric")
            if metric == primary or metric not in folder.metrics or not any(metric in c for c in chance.values()):
                continue
            goal = folder.metrics[metric].goal
            wanted = set(claim.get("datasets") or ()) or None
            means = folder.ok_means(metric)
            arms = []
            for method in claim_methods(claim):
                where, count = [], 0
                for (dataset, row_method), mean in means.items():
                    level = chance.get(dataset, {}).get(metric)
                    if row_method != method or level is None or (wanted and dataset not in wanted):
                        continue
                    count += 1
                    if not _beats(mean, level, goal):
                        where.append(f"{dataset} {mean:.4g} against {level:.4g}")
                if where:
                    arms.append(f"{method} on {len(where)} of {count} datasets ({'; '.join(where[:3])}"
                                f"{'; …' if len(where) > 3 else ''})")
            if arms:
                yield self.finding(folder, f"the mean {metric} does not beat chance for {'; '.join(arms)}",
                                   claim=claim["id"])


class MissingTrivialRow(Rule):
    name = "missing-trivial-row"
    about = ("The task declares a trivial answer (a method its catalogue marks trivial) and the spec runs none as a "
             "row (`kind: trivial`): the page cannot show whether a method beats a constant.")

    def findings(self, folder: Folder):
        from harness.registry import default_registry

        if any(m.get("kind") == "trivial" for m in folder.spec.get("methods", [])):
            return
        declared = folder.board.trivial_methods  # as the run recorded them; an older folder: the registry's
        if declared is None:
            declared = default_registry().trivial_methods(folder.spec["task"])
        if declared:
            yield self.finding(folder, f"task {folder.spec['task']} declares the trivial answer(s) "
                                       f"{', '.join(declared)}; the spec runs none of them (kind: trivial)")


class MissingSanityRow(Rule):
    name = "missing-sanity-row"
    about = ("A spec with claims runs its task's trivial answer as a row (`kind: trivial`), or shows a reference "
             "method as a row and says what it should do (a claim whose statement begins 'Sanity row:'), or its "
             "task declares the chance level of the primary metric; "
             "otherwise nothing on the page shows the comparison is not between two failures.")

    def findings(self, folder: Folder):
        claims = folder.spec.get("claims", [])
        if not claims:
            return
        if any(c.get("says", "").lower().startswith("sanity") for c in claims):
            return
        if any(m.get("kind") == "trivial" for m in folder.spec.get("methods", [])):
            return
        primary = folder.spec["metrics"]["primary"]
        if any(primary in levels for levels in folder.board.chance.values()):
            return
        yield self.finding(folder, f"no claim states a sanity row ('Sanity row: …') and the task declares no chance "
                                   f"level for {primary}")


class UnequalBudget(Rule):
    name = "unequal-budget"
    about = (f"Two arms of a claim spend the same budget (the metric the task declares its unit of work) within "
             f"{BUDGET_RATIO}x, unless the claim is about cost: on the budget itself (or its log, log_<budget>) or "
             "on a time.")

    def findings(self, folder: Folder):
        from harness.metrics import WALL_CLOCK_UNITS

        budgets = [name for name, metric in folder.metrics.items() if metric.role == "budget"]
        if not budgets:
            return
        about_cost = {*budgets, *(f"log_{name}" for name in budgets)}
        cells = folder.cells
        finished = {b: cells[(cells["status"] == "ok") & cells[b].notna()] for b in budgets if b in cells}
        for claim in folder.claims.values():
            arms = compared_arms(claim)
            metric = folder.metrics.get(claim["metric"])
            if arms is None or claim["metric"] in about_cost or (metric and metric.unit in WALL_CLOCK_UNITS):
                continue
            wanted = set(claim.get("datasets") or ()) or None
            for budget, ok in finished.items():  # each budget's finished cells, selected once for every claim
                if wanted is not None:
                    ok = ok[ok["dataset"].isin(wanted)]
                spent = {arm: ok.loc[ok["method"] == arm, budget].mean() for arm in arms}
                if any(v != v or v <= 0 for v in spent.values()):  # NaN: an arm without the metric
                    continue
                ratio = max(spent.values()) / min(spent.values())
                if ratio > BUDGET_RATIO:
                    yield self.finding(folder, f"{arms[0]} spends {spent[arms[0]]:.4g} and {arms[1]} "
                                               f"{spent[arms[1]]:.4g} {budget} on average ({ratio:.2f}x, above "
                                               f"{BUDGET_RATIO}x)", claim=claim["id"])


class SingularFits(Rule):
    name = "singular-fits"
    about = (f"Where a task reports the share of failed or degenerate fits in a cell, more than "
             f"{FAILURE_SHARE:.0%} of them makes the cell's mean a mean over what did not fail.")

    def findings(self, folder: Folder):
        for name, metric in folder.metrics.items():
            if metric.role != "failure-share":
                continue
            worst: dict[str, list[str]] = {}
            for (dataset, method), mean in folder.ok_means(name).items():
                if mean > FAILURE_SHARE:
                    worst.setdefault(method, []).append(f"{dataset} {mean:.1%}")
            for method, where in worst.items():
                yield self.finding(folder, f"{name} above {FAILURE_SHARE:.0%} on {len(where)} dataset(s): "
                                           f"{'; '.join(where[:5])}{'; …' if len(where) > 5 else ''}", method=method)


RULES = [BelowTrivial(), MissingTrivialRow(), MissingSanityRow(), UnequalBudget(), SingularFits()]
