"""A spec's claims, checked on its runs.

Each kind of claim is a module of this package (:mod:`~harness.claims.paired`, the default;
:mod:`~harness.claims.scaling`; :mod:`~harness.claims.bound`; :mod:`~harness.claims.equivalence`; and
:mod:`~harness.claims.check`, whose verdicts are checks, listed apart from the claims) on the base
class :class:`~harness.claims.base.ClaimKind`, found by :func:`~harness.claims.registry.kinds`. What every kind
shares (the verdict rule of an interval against a margin, the precondition, provenance) is in
:mod:`~harness.claims.base` and :mod:`~harness.claims.checking`.
"""
from harness.claims.base import (
    DATASET_SEED, HARNESS, INCONCLUSIVE, NOT_REPRODUCED, PAPER, REPLICATES, REPRODUCED, SEED, VERDICTS, ClaimKind,
    interval_verdict,
)
from harness.claims.checking import apply_precondition, check_claim, legends, margin_gaps, page_blocks
from harness.claims.registry import ClaimKindError, claim_schema, kind_of, kind_of_verdict, kinds

# the kinds' own names, for callers that used them from here
from harness.claims.paired import DatasetEvidence, Verdict, paired_cells, paired_differences, replicates  # noqa: E402
from harness.claims.scaling import MIN_SIZE_SPAN, MIN_SIZES, exponents, log_log_slope  # noqa: E402
from harness.claims.bound import check_bound  # noqa: E402

__all__ = [
    "REPRODUCED", "NOT_REPRODUCED", "INCONCLUSIVE", "VERDICTS", "PAPER", "HARNESS", "SEED", "DATASET_SEED",
    "REPLICATES", "ClaimKind", "ClaimKindError", "interval_verdict", "check_claim", "apply_precondition", "legends",
    "margin_gaps",
    "page_blocks", "claim_schema", "kind_of", "kind_of_verdict", "kinds", "DatasetEvidence", "Verdict", "paired_cells",
    "paired_differences", "replicates", "MIN_SIZES", "MIN_SIZE_SPAN", "exponents", "log_log_slope", "check_bound",
]
