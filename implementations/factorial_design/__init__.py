"""Probabilistic factorial design: Shyamal, Zhang & Uhler, "Probabilistic Factorial Experimental Design for
Combinatorial Interventions" (ICML 2025).

* :class:`HalfDosage`: the passive design, every treatment at dosage ½ (Thm 4.2: optimal up to 1 + O(ln n/n));
* :class:`SupplyUniform`: under a supply limit Σd ≤ L < p/2, every treatment at L/p (§5.1);
* :class:`ActiveTrace`: the active rule of Eq. (7), d_t = argmin_d tr[(Σ(d) + G_past/n)⁻¹], by SLSQP;
* :class:`ActiveLambdaMin`: the paper's faster proxy, argmin_d 1/λ_min(Σ(d) + G_past/n);
* :func:`trace_objective`, :func:`lambda_min_objective`: the objectives with their analytic gradients (timed by
  ``benchmarks/factorial_design.py``).

Numpy and scipy only.
"""
from implementations.factorial_design._method import (ActiveLambdaMin, ActiveTrace, HalfDosage, SupplyUniform,
                                                      lambda_min_objective, optimise_dosage, trace_objective)

__all__ = ["ActiveLambdaMin", "ActiveTrace", "HalfDosage", "SupplyUniform", "lambda_min_objective",
           "optimise_dosage", "trace_objective"]
