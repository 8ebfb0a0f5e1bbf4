"""Is a task's scaling positive, inverse, U-shaped, inverted-U or flat? A stated test, never by eye.

Each model contributes an accuracy measured on n examples, so its sampling
error is binomial and known. Against z = log10(x) (x = compute or parameters,
centred), we fit three binomial GLMs (logit link, the proportion weighted by n)
with statsmodels: constant, linear and quadratic in z, and compare nested fits
by likelihood-ratio tests (deviance differences, chi-squared with 1 df).

1. Any trend at all: the quadratic fit against the constant (2 df). If
   p_trend >= alpha the trend is ``flat``: no change beyond binomial noise. This
   one gate keeps the chance of calling flat data non-flat at alpha.
2. Shape: the trend is ``u-shaped`` (accuracy falls then rises: positive
   curvature; Wei et al. 2022's U-shaped scaling) or ``inverted-u`` when the
   quadratic term is significant (p_quadratic < alpha, quadratic vs linear), the
   fitted vertex lies strictly inside the observed range of z, *and* the curve
   really turns: separate logit lines fitted to the points on either side of
   the vertex have significant slopes of opposite signs (Simonsohn's 2018
   two-lines test; each side needs two distinct x). A quadratic alone would
   call every saturating curve an inverted U.
3. Otherwise it is ``positive`` or ``inverse`` by the sign of the linear fit's
   slope (p_linear, linear vs constant, is reported alongside).

The binomial variance is the floor of the real error: different models of one
family differ by more than sampling noise. ``TrendOptions(overdispersion=True)``
estimates a quasi-binomial scale (Pearson chi-squared / residual df of the
quadratic fit, at least 1) and uses F tests instead; it needs at least 4 points.
"""

from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass

import numpy as np

from scalinglab.errors import UserError

TRENDS = ("positive", "inverse", "u-shaped", "inverted-u", "flat")
BLANK_GROUP = "(blank)"  # the group of rows whose group column is empty


@dataclass(frozen=True)
class TrendOptions:
    alpha: float = 0.05
    overdispersion: bool = False


@dataclass(frozen=True)
class TrendResult:
    group: str
    trend: str               # one of TRENDS, or "insufficient" (fewer than 3 distinct x)
    n_points: int
    p_trend: float           # quadratic vs constant (2 df): is there any trend?
    slope: float             # logit accuracy per decade of x (linear fit)
    p_linear: float          # linear vs constant
    curvature: float         # quadratic coefficient, logit per decade^2
    p_quadratic: float       # quadratic vs linear
    vertex_x: float          # x at the quadratic fit's turning point
    vertex_inside: bool
    slope_below: float       # two-lines test (Simonsohn 2018): slope left of the vertex ...
    p_below: float
    slope_above: float       # ... and right of it; a U needs both significant, of opposite signs
    p_above: float
    scale: float             # dispersion used (1 = binomial)
    x_min: float
    x_max: float
    test: str

    def as_dict(self) -> dict:
        return asdict(self)


def _fit(y, n, design):
    import statsmodels.api as sm

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # perfect-prediction and convergence chatter; checked via the result
        return sm.GLM(y, design, family=sm.families.Binomial(), var_weights=n).fit()


def _lr_p(dev_small, dev_big, scale, df_resid, df=1):
    from scipy import stats

    diff = max(dev_small - dev_big, 0.0)
    if df_resid is None:
        return float(stats.chi2.sf(diff / scale, df))
    return float(stats.f.sf(diff / scale / df, df, df_resid))


def _from_log10(v: float) -> float:
    with np.errstate(over="ignore"):  # a near-zero curvature puts the vertex astronomically far away
        return float(np.power(10.0, v)) if np.isfinite(v) else float("nan")


def classify_trend(x, accuracy, n, group: str = "", opts: TrendOptions = TrendOptions()) -> TrendResult:
    """Classify one series: x > 0 (compute or parameters), accuracy in [0, 1], n examples per point."""
    x, y, n = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (x, accuracy, n)))
    ok = np.isfinite(x) & np.isfinite(y) & np.isfinite(n)
    x, y, n = x[ok], y[ok], n[ok]
    if np.any(x <= 0):
        raise UserError(f"group {group!r}: x must be positive (it is used on a log scale), got {x[x <= 0][0]}")
    if np.any((y < 0) | (y > 1)):
        raise UserError(f"group {group!r}: accuracy must lie in [0, 1], got {y[(y < 0) | (y > 1)][0]}")
    if np.any(n < 1):
        raise UserError(f"group {group!r}: number of examples must be at least 1, got {n[n < 1][0]}")
    nan = float("nan")
    base = dict(group=str(group), n_points=int(len(x)), x_min=float(x.min()) if len(x) else nan,
                x_max=float(x.max()) if len(x) else nan)
    if len(np.unique(x)) < 3 or (opts.overdispersion and len(x) < 4):
        return TrendResult(trend="insufficient", p_trend=nan, slope=nan, p_linear=nan, curvature=nan, p_quadratic=nan,
                           vertex_x=nan, vertex_inside=False, slope_below=nan, p_below=nan, slope_above=nan,
                           p_above=nan, scale=nan,
                           test="needs at least 3 distinct x (4 points with overdispersion)", **base)
    centre = np.log10(x).mean()
    z = np.log10(x) - centre
    ones = np.ones_like(z)
    f0 = _fit(y, n, ones[:, None])
    f1 = _fit(y, n, np.column_stack([ones, z]))
    f2 = _fit(y, n, np.column_stack([ones, z, z**2]))
    if opts.overdispersion and f2.df_resid > 0:
        scale, df_resid = max(1.0, float(f2.pearson_chi2 / f2.df_resid)), float(f2.df_resid)
        test = "quasi-binomial GLM (logit), F tests: quadratic vs constant (gate), quadratic vs linear"
    else:
        scale, df_resid = 1.0, None
        test = "binomial GLM (logit), likelihood-ratio chi2 tests: quadratic vs constant (gate), quadratic vs linear"
    p_trend = _lr_p(f0.deviance, f2.deviance, scale, df_resid, df=2)
    p_lin = _lr_p(f0.deviance, f1.deviance, scale, df_resid)
    p_quad = _lr_p(f1.deviance, f2.deviance, scale, df_resid)
    b1, (c1, c2) = float(f1.params[1]), (float(f2.params[1]), float(f2.params[2]))
    vertex = -c1 / (2 * c2) if c2 != 0 else nan
    inside = bool(np.isfinite(vertex) and z.min() < vertex < z.max())
    (s_low, p_low), (s_high, p_high) = _two_lines(y, n, z, vertex, scale, df_resid) if inside else ((nan, nan),) * 2
    # Opposite, significant slopes on the two sides of the vertex: the curve really turns (not mere saturation).
    turns = inside and p_low < opts.alpha and p_high < opts.alpha and np.sign(s_low) == -np.sign(s_high) == -np.sign(c2)
    if p_trend >= opts.alpha:
        trend = "flat"
    elif p_quad < opts.alpha and turns:
        trend = "u-shaped" if c2 > 0 else "inverted-u"
    else:
        trend = "positive" if b1 > 0 else "inverse"
    return TrendResult(trend=trend, p_trend=p_trend, slope=b1, p_linear=p_lin, curvature=c2, p_quadratic=p_quad,
                       vertex_x=_from_log10(vertex + centre), vertex_inside=inside, slope_below=s_low,
                       p_below=p_low, slope_above=s_high, p_above=p_high, scale=scale,
                       test=f"{test}; two-lines test at the vertex; alpha={opts.alpha}", **base)


def _two_lines(y, n, z, vertex, scale, df_resid):
    """Slope and Wald p-value of a separate logit line on each side of the vertex (interrupted
    regression, Simonsohn 2018); NaN for a side with fewer than two distinct x."""
    from scipy import stats

    out = []
    for side in (z < vertex, z > vertex):
        if len(np.unique(z[side])) < 2:
            out.append((float("nan"), float("nan")))
            continue
        fit = _fit(y[side], n[side], np.column_stack([np.ones(side.sum()), z[side]]))
        t = fit.params[1] / (fit.bse[1] * np.sqrt(scale))
        p = 2 * (stats.norm.sf(abs(t)) if df_resid is None else stats.t.sf(abs(t), max(df_resid - 1, 1)))
        out.append((float(fit.params[1]), float(p)))
    return out


def classify_groups(df, x_col: str, y_col: str, n_col: str, group_col: str | None = None,
                    opts: TrendOptions = TrendOptions(), source: str = "table") -> list[TrendResult]:
    """One TrendResult per group of a DataFrame (one for the whole table without ``group_col``).

    Rows whose group is empty or blank form one more group, ``BLANK_GROUP``.
    """
    for col in (x_col, y_col, n_col, group_col):
        if col is not None and col not in df.columns:
            raise UserError(f"{source}: no column {col!r} (columns: {', '.join(map(str, df.columns))})")
    import pandas as pd

    for col in (x_col, y_col, n_col):
        values = pd.to_numeric(df[col], errors="coerce")
        bad = df[col][values.isna() & df[col].notna()]
        if len(bad):
            raise UserError(f"{source}: column {col!r} is not numeric (row {bad.index[0]}: {bad.iloc[0]!r})")
        df = df.assign(**{col: values})
    if group_col:
        # Rows with no group value are a group of their own, listed last, never dropped: pandas'
        # groupby would silently leave them out, and a reader would not know rows were missing.
        labels = df[group_col]
        blank = labels.isna() | labels.map(lambda v: isinstance(v, str) and not v.strip())
        df = df.assign(**{group_col: labels.mask(blank)})
        groups = [(BLANK_GROUP if pd.isna(k) else k, g) for k, g in df.groupby(group_col, sort=True, dropna=False)]
    else:
        groups = [("all", df)]
    return [classify_trend(g[x_col], g[y_col], g[n_col], group=k, opts=opts) for k, g in groups]
