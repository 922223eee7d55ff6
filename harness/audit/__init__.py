"""``harness audit``: a methodology lint of a results folder and its spec.

Each rule (a :class:`~harness.audit.base.Rule` in a module of :mod:`harness.audit.rules`, found by scanning that
package, as claim kinds are) reads what a leaderboard is built from (the spec, the current cells, the claims'
verdicts, the metric table with its declared roles, the chance levels) and reports the faults a reviewer of the
paper's field would raise: a check counted as a claim, a t-test over differences that do not vary, too few
independent pairs, pairs that are not independent, a margin set after a run, a quote that is not the paper's, a
scaling range too short, a method below the trivial answer, arms at unequal budgets, a timing that includes the
warm-up, too many failed fits. A spec acknowledges a finding under ``audit: {acknowledge: [{rule, claim, method,
why}]}``; an acknowledged finding is still shown, with its reason, and no longer fails the audit.
"""
