"""A weighted least-squares line in closed form, with the slope's t interval: what statsmodels' WLS gives
for y on (1, x), in numpy alone, so that `scalinglab isoflop` need not import statsmodels (a second of
start-up) or scipy.stats. The t quantile comes from the t distribution's closed-form CDF for integer
degrees of freedom (Abramowitz & Stegun 26.7.3-4), inverted by bisection.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Line:
    """A fitted line y = intercept + slope·x: the slope's standard error and t interval (NaN from two
    points, which fit exactly), and R² (weighted, about the weighted mean)."""

    intercept: float
    slope: float
    se: float
    ci: tuple[float, float]
    r2: float


def wls_line(x, y, weights=None, level: float = 0.95) -> Line:
    """Weighted least squares of y on (1, x): ``statsmodels.WLS(y, add_constant(x), weights).fit()``'s
    ``params``, ``bse``, ``conf_int(1 - level)`` (t on n − 2 df) and ``rsquared`` (tests/test_wls.py checks
    they agree to 1e-10). ``weights`` None is ordinary least squares. Centring x at its weighted mean makes
    the 2×2 normal equations diagonal."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    w = np.ones_like(y) if weights is None else np.broadcast_to(np.asarray(weights, float), y.shape)
    sw = w.sum()
    xm, ym = (w @ x) / sw, (w @ y) / sw
    dx, dy = x - xm, y - ym
    sxx = w @ (dx * dx)
    slope = (w @ (dx * dy)) / sxx
    intercept = ym - slope * xm
    resid = y - intercept - slope * x
    ssr, tss = w @ (resid * resid), w @ (dy * dy)
    df = len(y) - 2
    if df > 0:
        se = float(np.sqrt(ssr / df / sxx))
        q = t_quantile(1 - (1 - level) / 2, df)
        ci = (float(slope - q * se), float(slope + q * se))
    else:  # two points fit exactly: no residual variance, no interval
        se, ci = float("nan"), (float("nan"), float("nan"))
    return Line(float(intercept), float(slope), se, ci, float(1 - ssr / tss))


def t_within(t: float, df: int) -> float:
    """P(|T| < t) for Student's t with ``df`` (a positive integer) degrees of freedom, t ≥ 0: the finite
    series in cos θ, θ = atan(t/√df) (Abramowitz & Stegun 26.7.3 for odd df, 26.7.4 for even)."""
    theta = math.atan(t / math.sqrt(df))
    c2, s = math.cos(theta) ** 2, math.sin(theta)
    if df % 2:  # 2/π (θ + sin θ cos θ (1 + 2/3 cos²θ + 2·4/(3·5) cos⁴θ + …)), df − 3 terms after the 1
        total, term = 1.0, 1.0
        for k in range(1, (df - 1) // 2):
            term *= c2 * (2 * k) / (2 * k + 1)
            total += term
        return 2 / math.pi * (theta + (s * math.cos(theta) * total if df > 1 else 0.0))
    total, term = 1.0, 1.0  # sin θ (1 + 1/2 cos²θ + 1·3/(2·4) cos⁴θ + …)
    for k in range(1, df // 2):
        term *= c2 * (2 * k - 1) / (2 * k)
        total += term
    return s * total


def t_quantile(p: float, df: int) -> float:
    """Student's t quantile at p ∈ (0.5, 1) for integer ``df`` ≥ 1, by bisection on ``t_within`` to machine
    precision (scipy.stats.t.ppf agrees to 1e-10; tests/test_wls.py)."""
    if not 0.5 < p < 1 or df < 1 or int(df) != df:
        raise ValueError(f"t_quantile needs 0.5 < p < 1 and a positive integer df, not p={p}, df={df}")
    target, lo, hi = 2 * p - 1, 0.0, 1.0
    while t_within(hi, int(df)) < target:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if t_within(mid, int(df)) < target else (lo, mid)
    return (lo + hi) / 2
