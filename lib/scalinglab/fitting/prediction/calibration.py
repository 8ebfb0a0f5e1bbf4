"""Prediction intervals calibrated on units the fit never saw.

A scaling law is used to bet compute on a run nobody has trained, and it is judged by runs it did not see. Those
runs are rarely independent: the runs of one isoFLOP budget share that budget's misfit, the points of one loss
curve share its schedule's, the checkpoints of one ladder run share the run. An interval checked on 18 points
that are 3 units is checked three times, not eighteen. So the interval for a new prediction is calibrated on
whole units left out, in three steps:

1. **Out-of-unit residuals.** Refit without each unit in turn and predict it (``scheme="leave-one-out"``, for
   exchangeable units: schedules, ladder runs, seeds), or, for extrapolation, fit on the units below each one by
   scale and predict it (``scheme="forward"``): the residuals then carry the error of one step outward, which a
   leave-one-out over interior units would understate. Residuals live in the target's residual space (log loss).
2. **A random effect per unit.** Each residual is r = μ + u_unit + e_point with u ~ (0, σ_u²) shared by a unit's
   points and e ~ (0, σ_e²) its own; σ_u² and σ_e² by one-way ANOVA (method of moments, σ_u² clipped at 0).
3. **The interval for a point of a new unit**: the prediction shifted by μ̂ (the mean out-of-unit residual: the
   law's bias one unit out), ± t_{K−1} · sqrt(σ_u² + σ_e² + Var μ̂), with Var μ̂ = (σ_u² + σ_e²/n̄)/K and K − 1
   degrees of freedom for K units. Five units give a wide interval, and fewer than two none at all: that is the
   data's answer, not a defect to be tuned away.
4. **Spreads pooled over strata** (``UnitCalibration.pooled``), where each stratum (a model size) has only two or
   three units: each keeps its own bias μ̂_s, and σ_u², σ_e² are pooled over the strata, on Σ (K_s − 1) degrees
   of freedom. That assumes the spread in the residual space is common to the strata; the pooling can be
   moderated by how far the strata's own spreads disagree (empirical Bayes, as limma moderates gene variances:
   Smyth 2004) where asked (``moderate=True``): where they agree no more than chance allows, the spread is pooled
   outright; where they disagree, each stratum's own spread is shrunk toward the common one by a prior worth d₀
   degrees of freedom estimated from that disagreement, on d₀ + K_s − 1 degrees of freedom.
   tests/test_calibration.py shows the plain pooled interval nominal where the spreads agree and at about 0.76 on
   the widest stratum where they differ fifteenfold, and the moderated one near nominal in the first case and
   near 0.9 in the second; with three units a stratum it cannot tell a spread small by luck from a small one.

The same procedure with every point as its own unit is the naive interval: tests/test_calibration.py shows it
falls below nominal when the points of a unit share misfit, while the unit-level one reaches nominal.
The bootstrap's interval over the fitted runs (``Predictions.lower``/``upper``) stays beside it, named
parameter-only: it says how well the law's parameters are pinned, not where a new run will land.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scalinglab.errors import UserError
from scalinglab.fitting.form import transform as _to_space  # the law's residual space: log, logit or as is
from scalinglab.fitting.frontier.wls import t_quantile
from scalinglab.serialization import to_jsonable

SCHEMES = ("leave-one-out", "forward")
SPACES = ("log", "logit", "linear")


def _from_space(z, space: str) -> np.ndarray:
    z = np.asarray(z, float)
    with np.errstate(all="ignore"):
        if space == "log":
            return np.exp(z)
        if space == "logit":
            return 1.0 / (1.0 + np.exp(-z))
    return z


def _labels(units, n: int) -> np.ndarray:
    u = np.asarray(units, dtype=object)
    if u.shape != (n,):
        raise UserError(f"calibration: {len(u)} unit labels for {n} values; give one label per value")
    return u


def _unique(u: np.ndarray) -> list:
    seen: dict = {}
    for x in u:
        seen.setdefault(x, None)
    return list(seen)


@dataclass(frozen=True)
class UnitResiduals:
    """Each left-out point's residual (transform(actual) − transform(predicted)) under a fit that never saw its
    unit. ``unit[i]`` names residual i's unit; ``failed`` the units whose refit raised or predicted non-finite
    values (left out of the calibration, and counted so a reader sees it)."""

    resid: np.ndarray
    unit: np.ndarray
    scheme: str
    space: str
    unit_name: str = "unit"
    failed: tuple = ()

    @property
    def n_units(self) -> int:
        return len(_unique(self.unit))

    def per_unit(self) -> dict[Any, np.ndarray]:
        return {k: self.resid[self.unit == k] for k in _unique(self.unit)}


def out_of_unit_residuals(y, units, fit_predict: Callable[[np.ndarray, np.ndarray], np.ndarray], *,
                          space: str = "log", scheme: str = "leave-one-out", order=None,
                          min_train_units: int = 2, unit_name: str = "unit") -> UnitResiduals:
    """Residuals of every unit under a fit that did not see it.

    ``fit_predict(train_mask, test_mask)`` fits on the rows of ``train_mask`` and returns predictions for the rows
    of ``test_mask``, in order. ``scheme="forward"`` needs ``order``, a per-row scale (compute, N): a unit's scale
    is its largest row's, and each unit is predicted from the units strictly below it, once at least
    ``min_train_units`` are there.
    """
    if scheme not in SCHEMES:
        raise UserError(f"calibration scheme {scheme!r}: use one of {', '.join(SCHEMES)}")
    if space not in SPACES:
        raise UserError(f"calibration space {space!r}: use one of {', '.join(SPACES)}")
    y = np.asarray(y, float)
    u = _labels(units, len(y))
    labels = _unique(u)
    if scheme == "forward":
        if order is None:
            raise UserError("calibration scheme 'forward' needs a scale per row (order=...) to know what lies below")
        order = np.asarray(order, float)
        scale = {k: float(np.max(order[u == k])) for k in labels}
        labels = sorted(labels, key=lambda k: scale[k])
    ty = _to_space(y, space)
    resid, unit, failed = [], [], []
    for i, k in enumerate(labels):
        test = u == k
        if scheme == "forward":
            below = labels[:i]
            if len(below) < min_train_units:
                continue
            train = np.isin(u, below)
        else:
            train = ~test
        if not train.any():
            continue
        try:
            pred = np.asarray(fit_predict(train, test), float)
        except UserError:
            failed.append(k)
            continue
        r = ty[test] - _to_space(pred, space)
        if pred.shape != (int(test.sum()),) or not np.all(np.isfinite(r)):
            failed.append(k)
            continue
        resid.append(r)
        unit.extend([k] * len(r))
    r = np.concatenate(resid) if resid else np.zeros(0)
    return UnitResiduals(r, np.asarray(unit, dtype=object), scheme, space, unit_name, tuple(failed))


def variance_components(resid, units) -> tuple[float, float, float, int]:
    """(μ̂, σ_u², σ_e², K) by one-way ANOVA: σ_e² from the spread within units, σ_u² from the spread of the unit
    means beyond what σ_e² explains (clipped at 0). Units of one point each leave σ_e² unidentified: it is then
    0 and σ_u² carries all the spread, which is what a unit-level interval needs."""
    r = np.asarray(resid, float)
    u = np.asarray(units, dtype=object)
    groups = [r[u == lab] for lab in _unique(u)]
    (mu,), s_u2, s_e2, _ = _anova([groups])
    return mu, s_u2, s_e2, len(groups)


def pooled_components(sets: Sequence[UnitResiduals]) -> tuple[list[float], float, float, int]:
    """(μ̂ per set, σ_u², σ_e², df) with the spreads pooled over ``sets`` (strata such as model sizes, each with
    its own bias): σ_e² from the spread within units of every set, σ_u² from the spread of each set's unit means
    about that set's own mean, beyond what σ_e² explains (clipped at 0), on Σ (K_s − 1) degrees of freedom. With
    two or three units per stratum one stratum's spread rests on one or two degrees of freedom, and three units
    that agree by chance give an interval that misses every new one; pooling trades that for the assumption
    that the spread in the residual space is common to the strata."""
    return _anova([list(res.per_unit().values()) for res in sets])


def moderated_spreads(strata: Sequence[Sequence[np.ndarray]]):
    """The strata's between-unit variances of unit means (each stratum a list of its units' residual arrays),
    moderated by Smyth 2004's empirical Bayes on log variances: (variances, degrees of freedom, prior df d₀), or
    None where the strata's variances disagree no more than chance would (d₀ = ∞: pool them outright) or fewer
    than two strata have a spread of their own. A stratum of one unit takes the prior's variance and df."""
    from scipy.special import digamma, polygamma

    own = [i for i, g in enumerate(strata) if len(g) >= 2]
    if len(own) < 2:
        return None
    v = np.array([np.var([x.mean() for x in strata[i]], ddof=1) for i in own])
    d = np.array([len(strata[i]) - 1 for i in own], float)
    if not np.all(v > 0):
        return None
    e = np.log(v) - digamma(d / 2) + np.log(d / 2)
    excess = float(np.var(e, ddof=1) - np.mean(polygamma(1, d / 2)))
    if excess <= 0:
        return None
    d0 = 2 * _trigamma_inverse(excess)
    s02 = float(np.exp(e.mean() + digamma(d0 / 2) - np.log(d0 / 2)))
    var = np.full(len(strata), s02)
    df = np.full(len(strata), d0)
    var[own] = (d0 * s02 + d * v) / (d0 + d)
    df[own] = d0 + d
    return var, np.minimum(df, d.sum()), d0   # at most the strata's own degrees of freedom, all together (limma)


def df_text(df: float) -> str:
    return f"{int(df)}" if float(df).is_integer() else f"{df:.1f}"


def _trigamma_inverse(x: float) -> float:
    """y with ψ'(y) = x, by Smyth's Newton iteration (limma's trigammaInverse)."""
    from scipy.special import polygamma

    if x > 1e7:
        return 1 / np.sqrt(x)
    if x < 1e-6:
        return 1 / x
    y = 0.5 + 1 / x
    for _ in range(50):
        tri = float(polygamma(1, y))
        step = tri * (1 - tri / x) / float(polygamma(2, y))
        y += step
        if -step / y < 1e-8:
            break
    return y


def t_interval_quantile(p: float, df: float) -> float:
    """Student's t quantile for any ``df`` ≥ 1: ``t_quantile`` at an integer (numpy only, the usual case), scipy's
    ``stdtrit`` at a fractional one (a moderated pooling's d₀ + K − 1)."""
    if float(df).is_integer():
        return t_quantile(p, int(df))
    from scipy.special import stdtrit

    return float(stdtrit(df, p))


def _anova(strata: Sequence[Sequence[np.ndarray]]) -> tuple[list[float], float, float, int]:
    """The one-way ANOVA behind both: per stratum (a list of units' residual arrays) its mean of unit means, and
    σ_u², σ_e² and the between-unit df pooled over the strata (one stratum: the plain ANOVA, df = K − 1)."""
    mus, ssb, df_b, ssw, df_w, inv_n = [], 0.0, 0, 0.0, 0, []
    for groups in strata:
        if not groups:
            mus.append(float("nan"))
            continue
        means = np.array([g.mean() for g in groups])
        mus.append(float(means.mean()))
        ssb += float(((means - means.mean()) ** 2).sum())
        df_b += len(groups) - 1
        ssw += float(sum(((g - g.mean()) ** 2).sum() for g in groups))
        df_w += sum(len(g) - 1 for g in groups)
        inv_n.extend(1.0 / len(g) for g in groups)
    s_e2 = ssw / df_w if df_w > 0 else 0.0
    if df_b < 1:
        return mus, float("nan"), s_e2, 0
    s_u2 = max(0.0, ssb / df_b - s_e2 * float(np.mean(inv_n)))
    return mus, s_u2, s_e2, df_b


@dataclass(frozen=True)
class UnitCalibration:
    """The calibrated interval for a point of a new unit: the prediction shifted by ``mu`` and widened by the
    unit and point spread of the out-of-unit residuals, with a t on ``df`` = K − 1 degrees of freedom (or, for
    spreads pooled over strata, ``pooled_df`` = Σ (K_s − 1), the strata named in ``pooled_over``)."""

    mu: float
    sigma_unit: float
    sigma_point: float
    n_units: int
    n_points: int
    level: float
    scheme: str
    space: str
    unit_name: str = "unit"
    failed: tuple = ()
    per_unit_mean: dict = field(default_factory=dict)
    pooled_df: float | None = None
    pooled_over: tuple = ()
    prior_df: float | None = None   # moderated pooling: the prior's df d₀ (inf: the spreads pooled outright)

    @classmethod
    def from_residuals(cls, res: UnitResiduals, level: float = 0.95) -> UnitCalibration:
        if not 0 < level < 1:
            raise UserError(f"calibration level {level!r} must lie strictly between 0 and 1")
        mu, s_u2, s_e2, k = variance_components(res.resid, res.unit)
        means = {lab: float(v.mean()) for lab, v in res.per_unit().items()}
        return cls(mu, float(np.sqrt(s_u2)) if np.isfinite(s_u2) else float("nan"), float(np.sqrt(s_e2)),
                   k, len(res.resid), level, res.scheme, res.space, res.unit_name, res.failed, means)

    @classmethod
    def pooled(cls, sets: Mapping[Any, UnitResiduals], level: float = 0.95,
               moderate: bool = False) -> dict[Any, UnitCalibration]:
        """One calibration per stratum of ``sets``, each with its own bias and its own units' count, sharing the
        spreads pooled over all of them (``pooled_components``). ``moderate``: where the strata's own spreads
        disagree beyond chance, shrink each toward the common one instead (``moderated_spreads``); where they do
        not, the pooled spread as it is (``prior_df`` inf). With two or three units a stratum, a spread that is
        small by luck looks like a small spread, and moderation trusts it: notebook 06 shows the cost."""
        if not 0 < level < 1:
            raise UserError(f"calibration level {level!r} must lie strictly between 0 and 1")
        keys = list(sets)
        units = [sets[k].per_unit() for k in keys]   # each stratum's units, read once
        strata = [list(u.values()) for u in units]
        mus, s_u2, s_e2, df = _anova(strata)          # pooled_components, on what is read
        s_u = float(np.sqrt(s_u2)) if np.isfinite(s_u2) else float("nan")
        mod = moderated_spreads(strata) if moderate and df >= 1 else None
        out = {}
        for i, (key, mu) in enumerate(zip(keys, mus)):
            res = sets[key]
            means = {lab: float(v.mean()) for lab, v in units[i].items()}
            su, dfi, prior = s_u, df, (float("inf") if moderate else None)
            if mod is not None:   # this stratum's variance of unit means, moderated, less the points' share
                var, dfs, prior = mod
                inv_n = float(np.mean([1.0 / len(g) for g in strata[i]])) if strata[i] else 0.0
                su, dfi = float(np.sqrt(max(0.0, var[i] - s_e2 * inv_n))), float(dfs[i])
            out[key] = cls(mu, su, float(np.sqrt(s_e2)), res.n_units, len(res.resid), level, res.scheme, res.space,
                           res.unit_name, res.failed, means, dfi, tuple(str(k) for k in keys), prior)
        return out

    @property
    def ok(self) -> bool:
        if self.pooled_df is not None:
            return self.n_units >= 1 and self.pooled_df >= 1 and np.isfinite(self.sigma_unit)
        return self.n_units >= 2 and np.isfinite(self.sigma_unit)

    @property
    def reason(self) -> str:
        if self.ok:
            return ""
        if self.pooled_df is not None:
            return (f"not calibrated: {self.n_units} {self.unit_name}(s) left out here and {self.pooled_df} degrees "
                    f"of freedom pooled over {len(self.pooled_over)} strata; an interval needs a unit and one df")
        return (f"not calibrated: {self.n_units} {self.unit_name}(s) left out, and an interval for a new "
                f"{self.unit_name} needs at least 2")

    @property
    def df(self) -> float:
        if self.pooled_df is not None:
            return self.pooled_df
        return max(self.n_units - 1, 0)

    @property
    def scale(self) -> float:
        """The predictive sd of a new unit's point in the residual space."""
        if not self.ok:
            return float("nan")
        n_bar = self.n_points / self.n_units
        var_mu = (self.sigma_unit ** 2 + self.sigma_point ** 2 / n_bar) / self.n_units
        return float(np.sqrt(self.sigma_unit ** 2 + self.sigma_point ** 2 + var_mu))

    @property
    def half_width(self) -> float:
        """Half the interval's width in the residual space (log loss for a log law)."""
        if not self.ok:
            return float("nan")
        return float(t_interval_quantile(0.5 + self.level / 2, self.df) * self.scale)

    def interval(self, pred, level: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(lower, upper) for predictions ``pred``, in the target's own units; NaN when not calibrated."""
        pred = np.asarray(pred, float)
        if not self.ok:
            nan = np.full(pred.shape, np.nan)
            return nan, nan.copy()
        lv = self.level if level is None else level
        if not 0 < lv < 1:
            raise UserError(f"calibration level {lv!r} must lie strictly between 0 and 1")
        h = float(t_interval_quantile(0.5 + lv / 2, self.df) * self.scale)
        z = _to_space(pred, self.space) + self.mu
        return _from_space(z - h, self.space), _from_space(z + h, self.space)

    def to_dict(self) -> dict[str, Any]:
        return to_jsonable({
            "method": "random effect per unit on out-of-unit residuals", "scheme": self.scheme,
            "unit": self.unit_name, "n_units": self.n_units, "n_points": self.n_points, "level": self.level,
            "space": self.space, "bias": self.mu, "sigma_unit": self.sigma_unit, "sigma_point": self.sigma_point,
            "df": self.df, "half_width": self.half_width, "failed_units": [str(f) for f in self.failed],
            "ok": self.ok, "reason": self.reason,
            **({"spreads_pooled_over": list(self.pooled_over)} if self.pooled_df is not None else {}),
            **({"prior_df": self.prior_df} if self.prior_df is not None else {})})

    def summary(self) -> str:
        if not self.ok:
            return self.reason
        where = "one step beyond the fitted units" if self.scheme == "forward" else "left out in turn"
        pooled = f", spreads pooled over {', '.join(self.pooled_over)}" if self.pooled_df is not None else ""
        if self.prior_df is not None and np.isfinite(self.prior_df):
            pooled += f" (moderated: the strata's spreads differ, prior df {self.prior_df:.2g})"
        return (f"calibrated {self.level:.0%} interval over {self.n_units} {self.unit_name}s {where}: "
                f"bias {self.mu:+.4f}, sd between {self.unit_name}s {self.sigma_unit:.4f}, within "
                f"{self.sigma_point:.4f} (in {self.space} space{pooled}), t on {df_text(self.df)} df, "
                f"half-width {self.half_width:.4f}")


def calibrate(y, units, fit_predict, *, level: float = 0.95, **kw) -> UnitCalibration:
    """``out_of_unit_residuals`` then ``UnitCalibration.from_residuals`` in one call."""
    return UnitCalibration.from_residuals(out_of_unit_residuals(y, units, fit_predict, **kw), level)


@dataclass(frozen=True)
class Coverage:
    """How many held-out units an interval held. Each unit counts once: its share of points inside (1 or 0 for a
    one-point unit), so ``coverage`` = units_inside / n_units is a rate over independent units, not points."""

    per_unit: dict
    points_inside: int
    n_points: int

    @property
    def n_units(self) -> int:
        return len(self.per_unit)

    @property
    def units_inside(self) -> float:
        return float(sum(self.per_unit.values()))

    @property
    def coverage(self) -> float:
        return self.units_inside / self.n_units if self.n_units else float("nan")

    def to_dict(self) -> dict[str, Any]:
        return to_jsonable({"n_units": self.n_units, "units_inside": self.units_inside, "coverage": self.coverage,
                            "points_inside": self.points_inside, "n_points": self.n_points,
                            "per_unit": {str(k): v for k, v in self.per_unit.items()}})


def coverage(actual, lower, upper, units: Sequence) -> Coverage:
    """The share of each unit's points inside [lower, upper] (NaN bounds count as outside)."""
    a = np.asarray(actual, float)
    lo, hi = np.asarray(lower, float), np.asarray(upper, float)
    u = _labels(units, len(a))
    inside = (a >= lo) & (a <= hi)
    per = {k: float(inside[u == k].mean()) for k in _unique(u)}
    return Coverage(per, int(inside.sum()), len(a))
