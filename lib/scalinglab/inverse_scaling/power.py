"""What a trend test that found nothing could have found: the smallest inverse slope it detects with given power.

``trend.classify_trend``'s gate is a likelihood-ratio test of the quadratic logit fit against the constant
(2 df, chi-squared at a known scale, F otherwise). Under a straight logit line of slope b per decade of x,
the test statistic is approximately non-central chi-squared with non-centrality

    λ = b² · I / φ,    I = Σ_i n_i p(1 − p) (z_i − z̄)²,

the Fisher information for the slope at the baseline accuracy p (z = log10 x, z̄ its n-weighted mean,
φ the dispersion scale). The smallest detectable |b| solves P(χ²(df, λ) > χ²₁₋α(df)) = power.
Reported in logit per decade and, at p, in accuracy per decade (b · p(1 − p)) and over the series' range.
This is a normal-theory approximation; ``tests/test_power.py`` checks it against simulated series.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scalinglab.errors import UserError


@dataclass(frozen=True)
class DetectableSlope:
    slope_logit: float        # smallest |slope| (logit per decade) detected with ``power`` at ``alpha``
    slope_accuracy: float     # the same, as accuracy per decade at the baseline accuracy
    over_range: float         # accuracy change over the series' range of log10 x at that slope
    baseline: float           # p: the n-weighted mean accuracy
    decades: float            # the range of log10 x
    alpha: float
    power: float
    df: int


def noncentrality(alpha: float, power: float, df: int = 2) -> float:
    """λ at which a chi-squared(df) test at ``alpha`` rejects with probability ``power``."""
    from scipy import optimize, stats

    crit = stats.chi2.isf(alpha, df)
    return float(optimize.brentq(lambda lam: stats.ncx2.sf(crit, df, lam) - power, 1e-9, 1e4))


def detectable_slope(x, n, baseline: float, alpha: float = 0.05, power: float = 0.8, df: int = 2,
                     scale: float = 1.0) -> DetectableSlope:
    """The smallest logit slope per decade of ``x`` that the trend gate (``df`` = 2) or the slope's own test
    (``df`` = 1) detects with probability ``power`` at level ``alpha``, for points at ``x`` with ``n``
    examples each and accuracy ``baseline`` (see the module docstring)."""
    x, n = (np.asarray(v, dtype=float) for v in np.broadcast_arrays(x, n))
    if len(np.unique(x)) < 2 or np.any(x <= 0) or np.any(n < 1):
        raise UserError("a detectable slope needs at least 2 distinct positive x and n >= 1 per point")
    if not 0 < baseline < 1:
        raise UserError(f"baseline accuracy must lie strictly between 0 and 1, got {baseline}")
    if not (0 < alpha < 1 and 0 < power < 1):
        raise UserError(f"alpha and power must lie in (0, 1), got {alpha}, {power}")
    z = np.log10(x)
    zbar = np.average(z, weights=n)
    info = float(np.sum(n * (z - zbar) ** 2)) * baseline * (1 - baseline)
    b = float(np.sqrt(noncentrality(alpha, power, df) * scale / info))
    acc = b * baseline * (1 - baseline)
    decades = float(z.max() - z.min())
    return DetectableSlope(slope_logit=b, slope_accuracy=acc, over_range=acc * decades, baseline=float(baseline),
                           decades=decades, alpha=float(alpha), power=float(power), df=int(df))


def detectable_slopes(df, x_col: str, y_col: str, n_col: str, group_col: str, alpha: float = 0.05,
                      power: float = 0.8, test_df: int = 2, scale: float = 1.0):
    """``detectable_slope`` for every group of a table of accuracies (baseline: the group's n-weighted mean
    accuracy), one row per group with the group's n (median), points and the slopes."""
    import pandas as pd

    rows = []
    for key, g in df.groupby(group_col, sort=True):
        p = float(np.average(g[y_col], weights=g[n_col]))
        d = detectable_slope(g[x_col], g[n_col], min(max(p, 1e-3), 1 - 1e-3), alpha, power, test_df, scale)
        rows.append(dict(group=key, points=len(g), n=float(g[n_col].median()), **d.__dict__))
    return pd.DataFrame(rows)
