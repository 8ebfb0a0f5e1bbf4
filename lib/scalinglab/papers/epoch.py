"""Besiroglu et al. 2024 (Epoch AI), "Chinchilla Scaling: A replication attempt": the comparisons notebook 01 prints.

- :func:`law_row`: one law's parameters, a = β/(α+β) and its compute-optimal allocation at a budget;
- :func:`consistency`: how well each of several laws explains the same runs, against a fit with a bootstrap
  (Wald χ² with the bootstrap covariance, median log residual, Huber objective);
- :func:`p_text` and :data:`P_FLOOR`: how a p-value of that test is printed (below the floor only as a bound);
- :func:`detectable_shift`: the smallest shift of one parameter that the test detects with a given power;
- :func:`envelope_line`: one printed line per Approach-1 envelope fit, at most about 120 characters.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from scalinglab.fitting.chinchilla.law import ScalingLaw
from scalinglab.fitting.chinchilla.newton import objective
from scalinglab.fitting.results import LawFit


def law_row(law: ScalingLaw, C: float, suffix: str = "") -> dict[str, float]:
    """E, A, B, alpha, beta, a, and ``n_opt``/``tokens_per_param`` (each + ``suffix``) at compute ``C`` (C = 6ND)."""
    return {**law.params, "a": law.a, f"n_opt{suffix}": law.n_opt(C),
            f"tokens_per_param{suffix}": law.tokens_per_param(C)}


# The Wald p-values come from a normal approximation to the bootstrap covariance, which says nothing reliable
# far in its tail: below this floor a p-value is printed only as the bound "< 1e-10" (cells and findings alike).
P_FLOOR = 1e-10


def p_text(p: float, digits: int = 2) -> str:
    """'p = 0.99', or 'p < 1e-10' below :data:`P_FLOOR` (a bound, never the approximation's tail value)."""
    return "p < 1e-10" if p < P_FLOOR else f"p = {p:.{digits}g}"


def detectable_shift(se: float, df: int = 5, level: float = 0.05, power: float = 0.8) -> float:
    """The shift of one parameter that the Wald test (``df`` degrees of freedom, size ``level``) detects with
    probability ``power``, for a parameter whose bootstrap SE is ``se``.

    The noncentrality λ at which a noncentral χ²(df, λ) exceeds the test's critical value with probability
    ``power``, as a shift of √λ standard errors. That is the least detectable direction: a shift of one
    parameter with the others moving along with it as the bootstrap's covariance allows (the marginal SE); a
    shift of that parameter alone, the others held fixed, is detected sooner."""
    from scipy import optimize, stats

    crit = stats.chi2.ppf(1 - level, df)
    lam = optimize.brentq(lambda x: stats.ncx2.sf(crit, df, x) - power, 1e-9, 1e4)
    return float(np.sqrt(lam) * se)


def consistency(laws: Mapping[str, ScalingLaw], fit: LawFit, N, D, L) -> pd.DataFrame:
    """One row per law: is it consistent with the runs (N, D, L) that ``fit`` was fitted to?

    Columns: ``chi2`` and ``p``, the Wald test of the law against ``fit`` with ``fit.bootstrap``'s covariance
    in log space (5 df; the fit's own law scores 0 and 1); ``median_log_residual``, the median of
    log(L̂/L) (a law that predicts too high a loss leaves a positive one); ``huber_objective``, the
    objective the fit minimised, evaluated at the law (the fit's own law scores the lowest).
    """
    if fit.bootstrap is None:
        raise ValueError("consistency needs a fit with a bootstrap (n_boot > 0)")
    N, D, L = (np.asarray(x, dtype=float) for x in (N, D, L))
    logs = np.log(N), np.log(D), np.log(L)
    rows = {}
    for name, law in laws.items():
        chi2, p = fit.bootstrap.wald_test(fit.scaling_law, law)
        rows[name] = {"chi2": chi2, "p": p, "median_log_residual": float(np.median(np.log(law.loss(N, D) / L))),
                      "huber_objective": float(objective(law.theta, *logs, delta=fit.options.delta))}
    return pd.DataFrame(rows).T


def envelope_line(name: str, fit, name_width: int = 32) -> str:
    """``name``, a with its interval, b, the number of sizes and the status of an ``envelope.EnvelopeFit``
    (shown where it is not ``converged``: the line stays within 120 characters).

    Resamples left with fewer than two sizes among their optima are dropped, so the interval is conditional
    on the rest; the line says what share that was when there were any."""
    dropped = f", {fit.n_boot_failed / fit.n_boot:.0%} of resamples dropped" if fit.n_boot_failed else ""
    level = f"{fit.level:.0%}"
    status = "" if fit.status == "converged" else f", status {fit.status}"
    return (f"{name:<{name_width}} a = {fit.exponent:.3f} ({level} {fit.ci[0]:.3f}, {fit.ci[1]:.3f})  "
            f"b = {fit.d_exponent:.3f}  {fit.n_sizes} sizes{status}{dropped}")
