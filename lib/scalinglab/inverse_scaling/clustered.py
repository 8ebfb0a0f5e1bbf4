"""Trend tests on per-example answers when every model answers the same items: clustered by item.

``trend.classify_trend`` tests per-model accuracies as independent binomial counts. When each model of a
family answers the *same* questions (GPT-3 on NeQA's 300, our ladder on every task), the answers are
not independent: an item that is hard for one model tends to be hard for the next, and an item whose
answer flips with scale flips for every model past that scale. What generalises to other items of the
task is the slope averaged over items, and its uncertainty comes from sampling items, not answers.

``clustered_trend`` fits the same logit lines, on the (model, item) answers themselves:

    logit P(correct) = b0 + b1·z (+ b2·z²),   z = log10 x, centred,

by a GEE with an independence working correlation and cluster-robust (sandwich) standard errors by item
(numerically the binomial GLM with ``cov_type="cluster"``), as ``model_ladder.frequency_interaction``
does for the corpus probes. The gate (b1 = b2 = 0, a 2-df Wald test), the slope's test and the
curvature's test are then the clustered versions of ``trend.classify_trend``'s; the call is ``flat``,
``positive``/``inverse`` (significant slope), ``curved`` (curvature only) or ``unresolved``. No U-shape
call: that needs ``trend``'s two-lines test, which has no clustered version here.
The interval of b1 resamples items (its sandwich is the jackknife-like sum over items).

For comparison the result also carries the naive binomial test (the same GLM, model-based variance: the
answers treated as independent) and a GEE with an exchangeable working correlation (a common correlation
between one item's answers; more efficient when it holds, and its estimated correlation is reported).

With few items the sandwich is biased low; a few hundred items (NeQA 300, Memo Trap 936) is plenty.
Between-model scatter (a model's own deviation from the line, shared by all its answers) is *not* in
these intervals: with four to six models it cannot be estimated alongside (see ``trend.critical_scale``).
"""

from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass

import numpy as np

from scalinglab.errors import UserError
from scalinglab.serialization import to_jsonable


@dataclass(frozen=True)
class ClusteredTrend:
    group: str
    trend: str                 # flat, positive, inverse, curved, unresolved; "insufficient" below 3 distinct x
    n_models: int
    n_items: int
    rows: int
    intercept: float           # b0 of the linear fit (logit at the mean log10 x)
    centre: float              # that mean: z = log10 x - centre
    slope: float               # b1, logit per decade of x (linear fit)
    se: float                  # clustered by item
    ci: tuple                  # slope's interval, clustered by item
    p_linear: float            # Wald, clustered: b1 = 0 in the linear fit
    p_trend: float             # Wald, clustered, 2 df: b1 = b2 = 0 in the quadratic fit (the gate)
    curvature: float
    p_quadratic: float         # Wald, clustered: b2 = 0
    naive_se: float            # the binomial GLM's model-based SE: answers as independent
    naive_p_linear: float
    naive_p_trend: float
    exchangeable_p_linear: float
    exchangeable_rho: float    # GEE's estimated within-item correlation (working, on the residual scale)
    level: float
    unit: str = "item"
    note: str = ""

    def to_dict(self) -> dict:
        return to_jsonable(asdict(self))


def _design(z, quadratic: bool):
    cols = [np.ones_like(z), z] + ([z**2] if quadratic else [])
    return np.column_stack(cols)


def _wald(params, cov, idx) -> float:
    from scipy import stats

    b = np.asarray(params)[idx]
    v = np.asarray(cov)[np.ix_(idx, idx)]
    try:
        stat = float(b @ np.linalg.solve(v, b))
    except np.linalg.LinAlgError:
        return float("nan")
    return float(stats.chi2.sf(stat, len(idx)))


def clustered_trend(per_example, x: str = "compute", correct: str = "correct", item: str = "id",
                    group: str = "", alpha: float = 0.05, level: float = 0.95,
                    exchangeable: bool = True) -> ClusteredTrend:
    """The trend of per-example correctness (0/1) against log10 ``x``, tested clustered by ``item``.

    One row per (model, item); ``x`` (e.g. compute or parameters) is constant within a model. See the module
    docstring for the model and the call. When no item's answer differs between models, the slope is exactly
    0 with nothing to test against: the call is ``flat`` with p = 1 and a note saying so.
    """
    import statsmodels.api as sm
    from scipy import stats

    for col in (x, correct, item):
        if col not in per_example:
            raise UserError(f"per-example table has no column {col!r} (columns: {', '.join(per_example.columns)})")
    xv = per_example[x].to_numpy(float)
    y = per_example[correct].to_numpy(float)
    if np.any(~np.isfinite(xv)) or np.any(xv <= 0):
        raise UserError(f"group {group!r}: {x} must be positive and finite (it is used on a log scale)")
    if not np.isin(y, (0.0, 1.0)).all():
        raise UserError(f"group {group!r}: {correct} must be 0 or 1 per example")
    items = np.unique(per_example[item].astype(str).to_numpy(), return_inverse=True)[1]
    nan = float("nan")
    z = np.log10(xv) - np.log10(xv).mean()
    n_models = int(len(np.unique(xv)))
    base = dict(group=str(group), n_models=n_models, n_items=int(items.max() + 1), rows=int(len(y)), level=level)
    blank = dict(intercept=nan, centre=float(np.log10(xv).mean()), slope=nan, se=nan, ci=(nan, nan), p_linear=nan,
                 p_trend=nan, curvature=nan, p_quadratic=nan,
                 naive_se=nan, naive_p_linear=nan, naive_p_trend=nan, exchangeable_p_linear=nan,
                 exchangeable_rho=nan)
    if n_models < 3:
        return ClusteredTrend(trend="insufficient", note="needs at least 3 distinct x", **blank, **base)
    # Within-item variation is all a slope can be estimated from once items are clusters.
    spread = np.bincount(items, weights=y) / np.bincount(items)
    if np.all((spread == 0) | (spread == 1)) or y.min() == y.max():
        return ClusteredTrend(trend="flat", **(blank | dict(slope=0.0, p_linear=1.0, p_trend=1.0, p_quadratic=1.0)),
                              note="no item's answer differs between models: the slope is exactly 0", **base)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence chatter on near-separated data; checked via the numbers
        glm = sm.GLM(y, _design(z, False), family=sm.families.Binomial())
        naive1 = glm.fit()
        clus1 = glm.fit(cov_type="cluster", cov_kwds=dict(groups=items))
        glm2 = sm.GLM(y, _design(z, True), family=sm.families.Binomial())
        naive2 = glm2.fit()
        clus2 = glm2.fit(cov_type="cluster", cov_kwds=dict(groups=items))
        p_ex, rho = nan, nan
        if exchangeable:
            gee = sm.GEE(y, _design(z, False), groups=items, family=sm.families.Binomial(),
                         cov_struct=sm.cov_struct.Exchangeable()).fit()
            p_ex = float(gee.pvalues[1])
            rho = float(np.ravel(gee.cov_struct.dep_params)[0])
    slope, se = float(clus1.params[1]), float(clus1.bse[1])
    half = stats.norm.isf((1 - level) / 2) * se
    p_lin, p_trend = float(clus1.pvalues[1]), _wald(clus2.params, clus2.cov_params(), [1, 2])
    p_quad = float(clus2.pvalues[2])
    if p_trend >= alpha:
        call = "flat"
    elif p_lin < alpha:
        call = "positive" if slope > 0 else "inverse"
    elif p_quad < alpha:
        call = "curved"
    else:
        call = "unresolved"
    return ClusteredTrend(
        trend=call, intercept=float(clus1.params[0]), centre=float(np.log10(xv).mean()), slope=slope, se=se,
        ci=(slope - half, slope + half), p_linear=p_lin, p_trend=p_trend,
        curvature=float(clus2.params[2]), p_quadratic=p_quad, naive_se=float(naive1.bse[1]),
        naive_p_linear=float(naive1.pvalues[1]), naive_p_trend=_wald(naive2.params, naive2.cov_params(), [1, 2]),
        exchangeable_p_linear=p_ex, exchangeable_rho=rho,
        note="GEE (independence working correlation), cluster-robust SEs by item; Wald tests", **base)


def clustered_trends(per_example, by: list[str], x: str = "compute", correct: str = "correct",
                     item: str = "id", **kw):
    """One ``clustered_trend`` per group of ``by`` (e.g. task), as a frame: the group's label, then every field."""
    import pandas as pd

    rows = []
    for key, g in per_example.groupby(by, sort=True):
        label = " / ".join(map(str, key if isinstance(key, tuple) else (key,)))
        r = clustered_trend(g, x=x, correct=correct, item=item, group=label, **kw)
        rows.append(asdict(r))
    return pd.DataFrame(rows)
