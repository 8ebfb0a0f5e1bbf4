"""Is a task's scaling positive, inverse, U-shaped, inverted-U, curved, unresolved or flat? A stated test, never by eye.

Each model contributes an accuracy measured on n examples, so its sampling
error is binomial and known. Against z = log10(x) (x = compute or parameters,
centred), we fit three binomial GLMs (logit link, the proportion weighted by n)
with statsmodels: constant, linear and quadratic in z, and compare nested fits
by likelihood-ratio tests (deviance differences, chi-squared with 1 df).

1. Any trend at all: the quadratic fit against the constant (2 df). If
   p_trend >= alpha the trend is ``flat``: no change beyond the noise. This
   one gate keeps the chance of calling flat data non-flat at alpha.
2. Shape: the trend is ``u-shaped`` (accuracy falls then rises: positive
   curvature; Wei et al. 2022's U-shaped scaling) or ``inverted-u`` when the
   quadratic term is significant (p_quadratic < alpha, quadratic vs linear), the
   fitted vertex lies strictly inside the observed range of z, *and* the curve
   really turns: separate logit lines fitted to the points on either side of
   the vertex have significant slopes of opposite signs (a two-lines test
   split at the quadratic's vertex, after Simonsohn 2018, whose procedure
   picks the breakpoint differently; each side needs two distinct x). A quadratic alone would
   call every saturating curve an inverted U.
3. Otherwise it is ``positive`` or ``inverse`` by the sign of the linear fit's
   slope, when that slope is itself significant (p_linear < alpha, linear vs
   constant).
4. Otherwise, when the curvature is significant (p_quadratic < alpha), the
   trend lives in the curvature alone (e.g. a dip near chance whose turn the
   two-lines test cannot confirm), and the call is ``curved``: naming it by the
   sign of a slope indistinguishable from zero would report a direction the
   data do not show.
5. Otherwise the call is ``unresolved``: the joint 2-df gate finds a trend, but
   neither its slope nor its curvature is significant on its own (each 1-df
   test has less power than the joint one), so the data show that accuracy
   changes with scale but not in what shape.

Dispersion. The binomial variance is only the floor of the real error: models
of one family differ by more than sampling noise (data, recipe, checkpoint
choice), and a test that ignores it finds "trends" in scatter. The
quasi-binomial remedy multiplies the variance by a scale phi, estimated as the
Pearson chi-squared of the quadratic fit over its residual df, and replaces the
chi-squared tests by F tests with that df in the denominator. Where phi comes
from is the ``dispersion`` argument:

* ``"binomial"``: phi = 1, chi-squared tests (the default).
* ``"group"``: each series estimates its own phi. A family of n models leaves
  n - 3 residual df, so a 4-model family tests F(2, 1), whose 5% critical value
  is about 200: it almost never rejects, whatever phi is (unless the estimate
  falls below 1, see the floor). Kept for comparison; do not read its "flat"
  calls as evidence of no trend.
* ``"pooled"``: one phi for all groups of a table (``pooled_dispersion``): the
  summed Pearson chi-squared of every group's quadratic fit over the summed
  residual df, sum(n_i - 3); each group is then tested with F(2, sum(n_i - 3)).
  This assumes the groups share a scale (e.g. families on one benchmark, whose
  n is the same), which tiny groups cannot check for themselves but can
  jointly estimate. Lack of quadratic fit also inflates phi, so the pooled
  test errs on the conservative side. A pooled phi belongs to the table it
  came from: phi ~ 1 + n * (between-model variance) / (p(1 - p)), so it does
  not carry over to a benchmark with a different n or to other models.
* a ``Dispersion`` object: a scale and df given from outside, stated by the caller.

Bounded scores. The floor is for counts only. A score in [0, 1] averaged over
items (TruthfulQA's MC2, a per-item probability mass) has no known variance:
its per-item variance can be anything up to p(1 - p), so phi is estimated
whatever its value, below 1 included, and the tests are F tests (a fractional
logit, Papke & Wooldridge 1996, with the quasi-binomial scale). Pass
``floor=False`` for such a score; with phi estimated, the weight n cancels from
the tests, so any constant n will do.

The floor. An estimated phi below 1 (less scatter than binomial sampling
allows) is floored at 1, and a floored scale is the binomial variance: known,
not estimated. Its tests are then the binomial chi-squared tests, exactly as
with ``"binomial"``, and the result says so (``Dispersion.floored``; method
``"pooled (floored: binomial tests)"`` or ``"group (floored: ...)"``). F tests
at scale 1 would charge a variance that is not being estimated with the
uncertainty of one that is: five points exactly on a line (accuracy 0.5 to
0.7, n = 500) have p_trend = 4e-12, and F(2, 2) at scale 1 made it 0.037.
The rule is a pretest: with a true phi above 1 and few df, an estimate below
1 is not rare, and those groups are then tested as binomial. On a pooled
table's tens of df that hardly happens; on a 4-model family's own single df
it does (at phi ~ 11, about a quarter of the estimates fall below 1, and the
``"group"`` scheme then calls about 20% of flat families non-flat), one more
reason the ``"group"`` scheme is for comparison only.

Many groups mean many tests: ``adjust_pvalues`` (Benjamini-Hochberg or Holm)
and ``adjust_trends`` turn a table's p_trend into adjusted p-values and calls.

The report over many groups that `scalinglab trend` prints (``TrendReport``) is ``inverse_scaling.trend_report``.
"""

from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass

import numpy as np

from scalinglab.errors import UserError, row_name
from scalinglab.serialization import to_jsonable

TRENDS = ("positive", "inverse", "u-shaped", "inverted-u", "curved", "unresolved", "flat")
BLANK_GROUP = "(blank)"  # the group of rows whose group column is empty
DISPERSIONS = ("binomial", "group", "pooled")
ADJUSTMENTS = ("fdr_bh", "holm")


@dataclass(frozen=True)
class TrendOptions:
    alpha: float = 0.05


@dataclass(frozen=True)
class Dispersion:
    """A quasi-binomial scale and the residual df it was estimated on (None: known, as for the binomial).

    ``floored``: the estimate (``raw``) fell below 1 and the scale sits at its floor, 1: the binomial
    variance, known, so the tests are the binomial chi-squared tests (``test_df`` is None), not F tests.
    """

    scale: float
    df: float | None
    method: str
    raw: float = float("nan")            # Pearson chi2 / df before the floor at 1
    pearson_chi2: float = float("nan")
    n_groups: int = 0                    # groups that contributed residual df
    contributions: tuple = ()            # (group, Pearson chi2, residual df) per contributing group
    floored: bool = False

    @property
    def test_df(self) -> float | None:
        """The F tests' denominator df; None (chi-squared tests) for a known scale, floored ones included."""
        return None if self.floored else self.df

    def largest(self) -> tuple:
        """The contributing group with the largest Pearson chi2, and its share of the total: a pooled scale
        that one group dominates describes that group more than the others."""
        group, chi2, _ = max(self.contributions, key=lambda c: c[1])
        return group, chi2 / self.pearson_chi2 if self.pearson_chi2 > 0 else float("nan")


BINOMIAL = Dispersion(scale=1.0, df=None, method="binomial", raw=1.0)


def _estimated(raw: float, df: float, method: str, floor: bool = True, **kw) -> Dispersion:
    """A scale estimated as ``raw`` on ``df`` residual df, floored at 1 (a floored one tests as the binomial);
    ``floor=False`` (a bounded score, not a count): the estimate as it is, F tests, labelled "(score)"."""
    if not floor:
        return Dispersion(scale=raw, df=df, method=f"{method} (score: estimated, not floored)", raw=raw, **kw)
    floored = bool(raw < 1)
    return Dispersion(scale=1.0 if floored else raw, df=df, method=f"{method} (floored: binomial tests)" if floored
                      else method, raw=raw, floored=floored, **kw)


@dataclass(frozen=True)
class TrendResult:
    group: str
    trend: str               # one of TRENDS, or "insufficient" (fewer than 3 distinct x)
    n_points: int
    p_trend: float           # quadratic vs constant (2 df): is there any trend?
    deviance_trend: float    # binomial deviance, constant fit minus quadratic: the gate's statistic at scale 1
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
    scale: float             # dispersion used in the tests (1 = binomial)
    df_scale: float          # residual df behind that scale (the F tests' denominator df); NaN for chi2 tests
    dispersion: str          # where the scale came from: binomial, group, pooled or given; "... (floored:
                             # binomial tests)" when an estimate below 1 was floored and chi2 tests used
    scale_group: float       # this group's own Pearson chi2 / residual df, unfloored; NaN with no residual df
    x_min: float
    x_max: float
    test: str

    def to_dict(self) -> dict:
        """Every field, JSON-ready (NaN, e.g. ``df_scale`` under chi-squared tests, becomes None)."""
        return to_jsonable(asdict(self))

    def summary(self) -> str:
        """One line: the call, its points and the three p-values."""
        return (f"{self.group or 'all rows'}: {self.trend} ({self.n_points} points, scale {self.scale:.3g}); "
                f"p_trend {self.p_trend:.3g}, p_linear {self.p_linear:.3g}, p_quad {self.p_quadratic:.3g}")


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


def _series(x, accuracy, n, group):
    x, y, n = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (x, accuracy, n)))
    ok = np.isfinite(x) & np.isfinite(y) & np.isfinite(n)
    x, y, n = x[ok], y[ok], n[ok]
    if np.any(x <= 0):
        raise UserError(f"group {group!r}: x must be positive (it is used on a log scale), got {x[x <= 0][0]}")
    if np.any((y < 0) | (y > 1)):
        raise UserError(f"group {group!r}: accuracy must lie in [0, 1], got {y[(y < 0) | (y > 1)][0]}")
    if np.any(n < 1):
        raise UserError(f"group {group!r}: number of examples must be at least 1, got {n[n < 1][0]}")
    return x, y, n


def _quadratic(x, y, n):
    z = np.log10(x) - np.log10(x).mean()
    return _fit(y, n, np.column_stack([np.ones_like(z), z, z**2]))


def _check_dispersion(dispersion, allowed):
    if isinstance(dispersion, Dispersion):
        if not (np.isfinite(dispersion.scale) and dispersion.scale > 0):
            raise UserError(f"dispersion scale must be a positive number, got {dispersion.scale}")
        return
    if dispersion not in allowed:
        hint = "" if "pooled" in allowed else " (a pooled scale needs a table of groups: classify_groups)"
        raise UserError(f"unknown dispersion {dispersion!r}; choose from {', '.join(allowed)}{hint}")


def classify_trend(x, accuracy, n, group: str = "", opts: TrendOptions = TrendOptions(),
                   dispersion: str | Dispersion = "binomial", floor: bool = True) -> TrendResult:
    """Classify one series: x > 0 (compute or parameters), accuracy in [0, 1], n examples per point.

    ``dispersion``: "binomial", "group" (the series' own quasi-binomial scale; needs 4 points and has
    no power with few of them, see the module docstring) or a ``Dispersion`` (e.g. ``pooled_dispersion``).
    ``floor=False``: the y are bounded scores, not counts, so a "group" scale is not floored at 1.
    """
    _check_dispersion(dispersion, ("binomial", "group"))
    x, y, n = _series(x, accuracy, n, group)
    nan = float("nan")
    base = dict(group=str(group), n_points=int(len(x)), x_min=float(x.min()) if len(x) else nan,
                x_max=float(x.max()) if len(x) else nan)
    if len(np.unique(x)) < 3 or (dispersion == "group" and len(x) < 4):
        return TrendResult(trend="insufficient", p_trend=nan, deviance_trend=nan, slope=nan, p_linear=nan,
                           curvature=nan, p_quadratic=nan, vertex_x=nan, vertex_inside=False, slope_below=nan,
                           p_below=nan, slope_above=nan, p_above=nan, scale=nan, df_scale=nan, scale_group=nan,
                           dispersion=dispersion if isinstance(dispersion, str) else dispersion.method,
                           test="needs at least 3 distinct x (4 points for a group's own dispersion)", **base)
    centre = np.log10(x).mean()
    z = np.log10(x) - centre
    ones = np.ones_like(z)
    f0 = _fit(y, n, ones[:, None])
    f1 = _fit(y, n, np.column_stack([ones, z]))
    f2 = _fit(y, n, np.column_stack([ones, z, z**2]))
    own = float(f2.pearson_chi2 / f2.df_resid) if f2.df_resid > 0 else nan
    if dispersion == "group":
        disp = _estimated(own, float(f2.df_resid), "group", floor, pearson_chi2=float(f2.pearson_chi2), n_groups=1)
    elif dispersion == "binomial":
        disp = BINOMIAL
    else:
        disp = dispersion
    scale, df_resid = disp.scale, disp.test_df
    if df_resid is None:
        test = "binomial GLM (logit), likelihood-ratio chi2 tests: quadratic vs constant (gate), quadratic vs linear"
        if disp.floored:
            test += (f" ({disp.method.split(' (')[0]} scale floored at 1: Pearson chi2 / df {disp.raw:.3g} "
                     f"on {disp.df:g} df, below binomial)")
    else:
        test = (f"quasi-binomial GLM (logit), {disp.method} scale {scale:.3g} on {df_resid:g} df, F tests: "
                "quadratic vs constant (gate), quadratic vs linear")
    p_trend = _lr_p(f0.deviance, f2.deviance, scale, df_resid, df=2)
    p_lin = _lr_p(f0.deviance, f1.deviance, scale, df_resid)
    p_quad = _lr_p(f1.deviance, f2.deviance, scale, df_resid)
    b1, (c1, c2) = float(f1.params[1]), (float(f2.params[1]), float(f2.params[2]))
    vertex = -c1 / (2 * c2) if c2 != 0 else nan
    inside = bool(np.isfinite(vertex) and z.min() < vertex < z.max())
    # With an estimated scale, the side slopes' t statistics have the df that scale was estimated on.
    (s_low, p_low), (s_high, p_high) = _two_lines(y, n, z, vertex, scale, df_resid) if inside else ((nan, nan),) * 2
    # Opposite, significant slopes on the two sides of the vertex: the curve really turns (not mere saturation).
    turns = inside and p_low < opts.alpha and p_high < opts.alpha and np.sign(s_low) == -np.sign(s_high) == -np.sign(c2)
    if p_trend >= opts.alpha:
        trend = "flat"
    elif p_quad < opts.alpha and turns:
        trend = "u-shaped" if c2 > 0 else "inverted-u"
    elif p_lin < opts.alpha:
        trend = "positive" if b1 > 0 else "inverse"
    elif p_quad < opts.alpha:
        trend = "curved"
    else:  # the joint gate passes, neither component does: a trend of undetermined shape
        trend = "unresolved"
    return TrendResult(trend=trend, p_trend=p_trend, deviance_trend=max(float(f0.deviance - f2.deviance), 0.0),
                       slope=b1, p_linear=p_lin, curvature=c2, p_quadratic=p_quad,
                       vertex_x=_from_log10(vertex + centre), vertex_inside=inside, slope_below=s_low,
                       p_below=p_low, slope_above=s_high, p_above=p_high, scale=scale,
                       df_scale=nan if df_resid is None else float(df_resid), dispersion=disp.method,
                       scale_group=own, test=f"{test}; two-lines test at the vertex; alpha={opts.alpha}", **base)


def _two_lines(y, n, z, vertex, scale, t_df):
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
        p = 2 * (stats.norm.sf(abs(t)) if t_df is None else stats.t.sf(abs(t), t_df))
        out.append((float(fit.params[1]), float(p)))
    return out


def _groups(df, x_col, y_col, n_col, group_col, source):
    """(label, rows) per group, numeric columns checked; rows with an empty group form ``BLANK_GROUP``."""
    for col in (x_col, y_col, n_col, group_col):
        if col is not None and col not in df.columns:
            raise UserError(f"{source}: no column {col!r} (columns: {', '.join(map(str, df.columns))})")
    import pandas as pd

    for col in (x_col, y_col, n_col):
        values = pd.to_numeric(df[col], errors="coerce")
        bad = df[col][values.isna() & df[col].notna()]
        if len(bad):
            raise UserError(f"{source}: column {col!r} is not numeric ({row_name(bad.index, 0)}: {bad.iloc[0]!r})")
        df = df.assign(**{col: values})
    if not group_col:
        return [("all", df)]
    # Rows with no group value are a group of their own, listed last, never dropped: pandas'
    # groupby would silently leave them out, and a reader would not know rows were missing.
    labels = df[group_col]
    blank = labels.isna() | labels.map(lambda v: isinstance(v, str) and not v.strip())
    df = df.assign(**{group_col: labels.mask(blank)})
    return [(BLANK_GROUP if pd.isna(k) else k, g) for k, g in df.groupby(group_col, sort=True, dropna=False)]


def pooled_dispersion(df, x_col: str, y_col: str, n_col: str, group_col: str | None = None,
                      source: str = "table", floor: bool = True) -> Dispersion:
    """One quasi-binomial scale for all groups of a table: sum of the groups' Pearson chi2 (quadratic
    binomial fits) over sum of their residual df, n_i - 3, floored at 1. A floored scale is the binomial
    variance, known: ``floored`` is set, the method reads "pooled (floored: binomial tests)" and the
    groups are then tested with chi-squared tests, exactly as with ``BINOMIAL``. ``floor=False`` for a
    bounded score (not a count): the estimate is kept below 1 too, and the tests are F tests.

    Groups with fewer than 3 distinct x are left out; a group of 3 fits exactly and adds nothing.
    A UserError if no group leaves a residual df (nothing to estimate a scale from).
    """
    return _pooled(_groups(df, x_col, y_col, n_col, group_col, source), x_col, y_col, n_col, source, floor)


def _pooled(groups, x_col, y_col, n_col, source, floor: bool = True) -> Dispersion:
    """:func:`pooled_dispersion` over groups already split and checked by ``_groups``."""
    parts = []
    for label, g in groups:
        x, y, n = _series(g[x_col], g[y_col], g[n_col], label)
        if len(np.unique(x)) < 3:
            continue
        fit = _quadratic(x, y, n)
        if fit.df_resid > 0:
            parts.append((label, float(fit.pearson_chi2), float(fit.df_resid)))
    if not parts:
        raise UserError(f"{source}: a pooled dispersion needs at least one group with 4 or more points")
    chi2, dfree = sum(p[1] for p in parts), sum(p[2] for p in parts)
    return _estimated(chi2 / dfree, dfree, "pooled", floor, pearson_chi2=chi2, n_groups=len(parts),
                      contributions=tuple(parts))


def classify_groups(df, x_col: str, y_col: str, n_col: str, group_col: str | None = None,
                    opts: TrendOptions = TrendOptions(), source: str = "table",
                    dispersion: str | Dispersion = "binomial", floor: bool = True) -> list[TrendResult]:
    """One TrendResult per group of a DataFrame (one for the whole table without ``group_col``).

    ``dispersion`` is "binomial", "group", "pooled" (``pooled_dispersion`` over this table's groups,
    each group then tested with F(2, pooled df), or with chi-squared tests if the scale was floored)
    or a ``Dispersion``; see the module docstring for
    why small groups should not estimate their own scale. Rows whose group is empty or blank form
    one more group, ``BLANK_GROUP``. ``floor=False``: the y are bounded scores, not counts, so an
    estimated scale ("group" or "pooled") is not floored at 1.
    """
    _check_dispersion(dispersion, DISPERSIONS)
    groups = _groups(df, x_col, y_col, n_col, group_col, source)
    if dispersion == "pooled":
        dispersion = _pooled(groups, x_col, y_col, n_col, source, floor)
    return [classify_trend(g[x_col], g[y_col], g[n_col], group=k, opts=opts, dispersion=dispersion, floor=floor)
            for k, g in groups]


def critical_scale(result: TrendResult, alpha: float = 0.05) -> float:
    """The largest dispersion scale, taken as known (chi-squared test), at which ``result``'s trend would
    still pass the gate at ``alpha``: how much extra scatter the trend can stand."""
    from scipy import stats

    return float(result.deviance_trend / stats.chi2.isf(alpha, 2))


def between_model_sd(scale: float, accuracy, n) -> float:
    """The model-to-model standard deviation of accuracy, beyond sampling noise, that a quasi-binomial
    scale stands for at this accuracy and n: Var = p(1 - p)/n + sd^2 = scale * p(1 - p)/n."""
    p = np.asarray(accuracy, dtype=float)
    return float(np.sqrt(max(scale - 1.0, 0.0) * np.mean(p * (1 - p)) / np.mean(np.asarray(n, dtype=float))))


# -- many tests -----------------------------------------------------------------------------------


def adjust_pvalues(p, method: str = "fdr_bh") -> np.ndarray:
    """Multiplicity-adjusted p-values: Benjamini-Hochberg ("fdr_bh", controls the false discovery rate)
    or Holm ("holm", the family-wise error rate). NaN (untested) entries stay NaN and do not count as tests."""
    if method not in ADJUSTMENTS:
        raise UserError(f"unknown p-value adjustment {method!r}; choose from {', '.join(ADJUSTMENTS)}")
    p = np.asarray(p, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = np.isfinite(p)
    if np.any((p[ok] < 0) | (p[ok] > 1)):
        raise UserError(f"p-values must lie in [0, 1], got {p[ok][(p[ok] < 0) | (p[ok] > 1)][0]}")
    q = p[ok]
    m = len(q)
    if m == 0:
        return out
    order = np.argsort(q, kind="mergesort")
    ranked = q[order]
    rank = np.arange(1, m + 1)
    if method == "fdr_bh":
        # step-up: the smallest m/j * p_(j) over j >= i
        adj = np.minimum.accumulate((m / rank * ranked)[::-1])[::-1]
    else:
        # step-down: the largest (m - j + 1) * p_(j) over j <= i
        adj = np.maximum.accumulate((m - rank + 1) * ranked)
    res = np.empty(m)
    res[order] = np.minimum(adj, 1.0)
    out[ok] = res
    return out


def adjust_trends(table, alpha: float = 0.05, method: str = "fdr_bh"):
    """A copy of a table of TrendResult rows (a DataFrame) with ``p_trend_adj`` (adjusted over all its
    tested rows, one family of tests) and ``trend_adj``: the trend where p_trend_adj < alpha, else flat.

    Only the gate is adjusted; a surviving trend keeps the shape its own tests gave it.
    """
    out = table.copy()
    out["p_trend_adj"] = adjust_pvalues(out["p_trend"].to_numpy(dtype=float), method)
    tested = out["trend"] != "insufficient"
    out["trend_adj"] = out["trend"].where(~tested | (out["p_trend_adj"] < alpha), "flat")
    return out


# -- a table of groups ----------------------------------------------------------------------------


def frame(results, **labels):
    """A DataFrame with one row per TrendResult (every field, NaN kept), after ``labels`` as constant
    columns (e.g. ``frame(results, benchmark="lambada")``)."""
    import pandas as pd

    rows = [{**labels, **asdict(r)} for r in results]
    return pd.DataFrame(rows) if rows else pd.DataFrame(columns=[*labels, *TrendResult.__dataclass_fields__])
