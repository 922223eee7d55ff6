"""Rules on how a claim is tested: what it is (a check counted as a claim), its pairs (too few, not independent,
not varying), its margin and its quote."""
from __future__ import annotations

import math
import re

from harness.audit.base import Folder, Rule, compared_arms

MIN_INDEPENDENT_PAIRS = 5  # below this a t-interval rests on ≤ 3 degrees of freedom and no spread can be checked
DEPENDENCE_LEVEL = 0.05  # the one-way ANOVA's level for "the cells of a seed move together"
# a quote that cites this project's paper notes, or their predictions (the notes' "Expected:" lines), is not the
# paper's words; a paper's own "expected" (an expected ratio) is
NOTE_QUOTE = re.compile(r"(?i:paper note|\bnote \()|\bExpected:")


def _is_check(claim: dict) -> bool:
    from harness.claims import kind_of

    return kind_of(claim).is_check


class CheckCountedAsClaim(Rule):
    name = "check-counted-as-claim"
    about = ("A claim on a metric the task declares a certificate (it holds by construction: a violation fails the "
             "cell, or it is an identity of the task's own simulator) cannot fail without a bug: it is a check "
             "(kind: check), not a claim to count as reproduced.")

    def findings(self, folder: Folder):
        for claim in folder.claims.values():
            metric = folder.metrics.get(claim["metric"])
            if metric is not None and metric.role == "certificate" and not _is_check(claim):
                yield self.finding(folder, f"{claim['metric']} is a certificate ({metric.about}); a claim on it "
                                           "holds by construction: make it kind: check", claim=claim["id"])


class ZeroVarianceTest(Rule):
    name = "zero-variance-test"
    about = ("A paired test over differences that do not vary across its independent pairs says the seed draws "
             "nothing the claim depends on: the interval has no width and the verdict reads a deterministic "
             "computation as evidence.")

    def findings(self, folder: Folder):
        for claim_id, verdict in folder.verdicts.items():
            interval = getattr(verdict, "interval", None)
            pairs = getattr(verdict, "pairs", 0)
            if interval is None or pairs < 2:
                continue
            lo, hi = interval
            mean = getattr(verdict, "mean_difference", None) or 0.0
            if hi - lo <= 1e-12 * max(1.0, abs(mean)):
                yield self.finding(folder, f"its {pairs} paired differences do not vary (mean {mean:+.6g}, 95% "
                                           "interval of width 0): make the seed draw the instance, or state the "
                                           "result as a deterministic computation", claim=claim_id)


class TooFewIndependentPairs(Rule):
    name = "too-few-independent-pairs"
    about = (f"A paired test on fewer than {MIN_INDEPENDENT_PAIRS} independent pairs rests its t-interval on at "
             "most 3 degrees of freedom, and nothing can show whether the differences are roughly normal.")

    def findings(self, folder: Folder):
        from harness.claims import kind_of_verdict

        for claim_id, verdict in folder.verdicts.items():
            pairs = getattr(verdict, "pairs", None)
            if pairs is None or pairs >= MIN_INDEPENDENT_PAIRS or kind_of_verdict(verdict).is_check:
                continue
            unit = getattr(verdict, "unit", "seeds")
            yield self.finding(folder, f"{pairs} independent pair{'' if pairs == 1 else 's'} ({unit}); at least "
                                       f"{MIN_INDEPENDENT_PAIRS} are needed", claim=claim_id)


class DependentPairs(Rule):
    name = "dependent-pairs"
    about = ("A claim that counts every (dataset, seed) cell as an independent pair (replicate: dataset-seed) is "
             "honest only when the cells of a seed share nothing; where the differences of one seed move together "
             "across datasets (a one-way ANOVA by seed rejects at 5%), they share what the seed drew.")

    def findings(self, folder: Folder):
        from harness.claims.paired import paired_cells

        for claim in folder.claims.values():
            arms = compared_arms(claim)
            if claim.get("replicate") != "dataset-seed" or arms is None:
                continue
            goal = folder.metrics[claim["metric"]].goal
            cells = paired_cells({**claim, "better": arms[0], "than": arms[1]}, folder.board.rows, goal)
            by_seed: dict[int, list[float]] = {}
            for (_, seed), difference in cells.items():
                by_seed.setdefault(seed, []).append(difference)
            groups = [v for v in by_seed.values() if len(v) >= 2]
            if len(groups) < 2 or all(max(g) - min(g) == 0 for g in groups):
                continue
            from scipy.stats import f_oneway

            result = f_oneway(*groups)
            if math.isfinite(result.pvalue) and result.pvalue < DEPENDENCE_LEVEL:
                yield self.finding(folder, f"the differences of one seed move together across datasets (one-way "
                                           f"ANOVA by seed over {len(groups)} seeds: F = {result.statistic:.3g}, "
                                           f"p = {result.pvalue:.2g}): the cells of a seed share what it drew; pair "
                                           "by seed (replicate: seed)", claim=claim["id"])


class MarginAfterRun(Rule):
    name = "margin-after-run"
    about = ("A margin comes from the paper or from a prior written down before any run (margin_from: paper | "
             "prior); one set after a run was seen, or one whose origin is not stated, can be fitted to the result.")

    def findings(self, folder: Folder):
        for claim in folder.claims.values():
            source = claim.get("margin_from")
            if source == "after-run":
                yield self.finding(folder, f"its margin {claim.get('margin', 0):g} was set after a run was seen",
                                   claim=claim["id"])
            elif not source and claim.get("margin"):
                yield self.finding(folder, f"its margin {claim['margin']:g} does not say where it comes from "
                                           "(margin_from: paper | prior | after-run)", claim=claim["id"])


class QuoteNotFromPaper(Rule):
    name = "quote-not-from-paper"
    about = ("A claim with source: paper quotes the paper (its sentence, table or figure); a quote of this "
             "project's notes on the paper, or of their expectations, is not the paper's claim.")

    def findings(self, folder: Folder):
        for claim in folder.claims.values():
            quote = claim.get("quote") or ""
            found = NOTE_QUOTE.search(quote) if claim.get("source") == "paper" else None
            if found:
                yield self.finding(folder, f"the quote cites {found.group(0)!r} (\"{_excerpt(quote, found.start())}\"): "
                                           "quote the paper's own words, with where they stand", claim=claim["id"])


class ShortScalingRange(Rule):
    name = "short-scaling-range"
    about = ("An exponent fitted over less than two decades of sizes cannot show the curvature that lower-order "
             "terms put into a log-log slope; and a super-linear claim (an exponent at least a number above 1) "
             "reads the top octave (fit: top-octave), not one slope over a range where lower-order terms weigh.")

    def findings(self, folder: Folder):
        for claim_id, verdict in folder.verdicts.items():
            sizes = [s for s in getattr(verdict, "sizes", None) or () if s > 0]
            if len(sizes) < 2:
                continue
            said = []
            decades = math.log10(max(sizes) / min(sizes))
            if decades < 2:
                said.append(f"the sizes span {min(sizes):g}–{max(sizes):g} ({decades:.2f} decades) over which the "
                            "exponent is fitted; at least 2")
            claim = folder.claims.get(claim_id, {})
            if (claim.get("at_least") or 0) > 1 and claim.get("fit", "all") != "top-octave":
                tops = [f"{e.method} {e.top_octave:.3g}" for e in getattr(verdict, "exponents", ())
                        if getattr(e, "top_octave", None) is not None]
                said.append(f"a super-linear bound (at least {claim['at_least']:g}) read off one slope over every "
                            f"size; the top octave's slopes: {', '.join(tops) or 'none fitted'}")
            if said:
                yield self.finding(folder, "; ".join(said), claim=claim_id)


def _excerpt(text: str, at: int, width: int = 60) -> str:
    start = max(0, at - width // 2)
    return ("…" if start else "") + " ".join(text[start:start + width].split()) + ("…" if start + width < len(text) else "")


RULES = [CheckCountedAsClaim(), ZeroVarianceTest(), TooFewIndependentPairs(), DependentPairs(), MarginAfterRun(),
         QuoteNotFromPaper(), ShortScalingRange()]
