"""Each scoreboard entry's intervals on a split's held-out units, three of them side by side:

- **calibrated** (``fitting.prediction.calibration``, scheme "forward"): the entry refitted on the training units below
  each training unit by scale (budget by compute, model size by N) predicts that unit; those one-step-out
  residuals, with a random effect per unit, give the interval for a point of a new unit one step beyond. That
  is what the scoreboard asks of a law: to extrapolate to the next unit up, which it has never seen.
- **parameter-only**: the percentile interval of the held-out fit's row-bootstrap replicates (Approach 3's and
  the law engine's; variable projection and the baselines have none): how well the parameters are pinned, not
  where a new run lands.
- **noise-only**: L̂·exp(±z σ̂), σ̂ the training residual sd in log loss: a new run's noise around a law taken
  as exact.

The t quantile's degrees of freedom: ``fitting.prediction.calibration`` takes K − 1 for K units, right when the
spread is all between units, and very wide when most of it is the runs' own noise within a budget (an isoFLOP set has
3–9 calibration budgets of 10–15 runs each: t on 2 df is 4.3 where the variance is in fact pinned by ~30 runs).
Here the predictive variance σ_u² + σ_e² + Var μ̂ is a combination of the between-unit and within-unit mean
squares, and its degrees of freedom are Satterthwaite's (``satterthwaite_df``): K − 1 when units hold one point
or the spread is all between units, up to N − K when it is all within.

Coverage is counted per independent unit (``calibration.coverage``: a unit's share of points inside), so a
held-out budget of 14 runs counts once. On isoFLOP sets the same forward fits also calibrate the entry's N_opt
and L_min at a budget, scored against each training budget's reference optimum (``entries.budget_reference``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats

from scalinglab.benchmark.entries import Fitted, budget_reference, fit_entry
from scalinglab.benchmark.protocol import Split
from scalinglab.errors import UserError
from scalinglab.fitting.prediction.calibration import UnitCalibration, UnitResiduals, coverage, out_of_unit_residuals
from scalinglab.serialization import to_jsonable

MIN_TRAIN_UNITS = 2


class _Fits:
    """The entry's fits on the training units below each one, each fitted once (the loss and the optima
    calibrations share them)."""

    def __init__(self, split: Split, law: str, estimator: str):
        self.split, self.law, self.estimator = split, law, estimator
        self.train = split.train.reset_index(drop=True)
        self.n_range = (float(split.table["n"].min()), float(split.table["n"].max()))
        self.cache: dict[tuple, Fitted | Exception] = {}

    def on(self, labels) -> Fitted:
        k = tuple(sorted(map(str, set(labels))))
        if k not in self.cache:
            rows = self.train[self.train["unit"].isin(k)]
            try:   # a fit on the two smallest units can be degenerate: it fails or predicts badly, and is counted
                with np.errstate(all="ignore"):
                    self.cache[k] = fit_entry(self.law, self.estimator, rows, iso=self.split.kind == "isoflop",
                                              n_range=self.n_range)
            except (UserError, ValueError, ArithmeticError, np.linalg.LinAlgError) as exc:
                self.cache[k] = exc
        got = self.cache[k]
        if isinstance(got, Exception):
            raise UserError(f"refit failed: {got}")
        return got


def satterthwaite_df(res: UnitResiduals, cal: UnitCalibration) -> float:
    """Degrees of freedom of the calibration's predictive variance by Satterthwaite's approximation (see the
    module docstring); K − 1 where that is all it can be."""
    per = res.per_unit()
    k = len(per)
    if k < 2:
        return float("nan")
    n_k = np.array([len(v) for v in per.values()], float)
    n = n_k.sum()
    s_e2 = cal.sigma_point ** 2
    h, n_bar = float(np.mean(1 / n_k)), n / k
    if cal.sigma_unit > 0:
        s_b = float(np.var([v.mean() for v in per.values()], ddof=1))
        a, b = 1 + 1 / k, 1 - h * (1 + 1 / k) + 1 / (n_bar * k)
        v = a * s_b + b * s_e2
        den = (a * s_b) ** 2 / (k - 1) + ((b * s_e2) ** 2 / (n - k) if n > k else 0.0)
    else:
        v = s_e2 * (1 + 1 / (n_bar * k))
        den = v ** 2 / (n - k) if n > k else 0.0
    return float(v ** 2 / den) if den > 0 else float(k - 1)


class Calibrated:
    """``UnitCalibration`` with the t quantile on Satterthwaite's degrees of freedom."""

    def __init__(self, res: UnitResiduals, level: float):
        self.cal = UnitCalibration.from_residuals(res, level)
        self.df = satterthwaite_df(res, self.cal) if self.cal.ok else float("nan")
        self.level = level

    @property
    def ok(self) -> bool:
        return self.cal.ok

    @property
    def half_width(self) -> float:
        return float(stats.t.ppf(0.5 + self.level / 2, self.df) * self.cal.scale) if self.ok else float("nan")

    def interval(self, pred) -> tuple[np.ndarray, np.ndarray]:
        pred = np.asarray(pred, float)
        if not self.ok:
            return np.full(pred.shape, np.nan), np.full(pred.shape, np.nan)
        z = np.log(pred) + self.cal.mu
        return np.exp(z - self.half_width), np.exp(z + self.half_width)

    def to_dict(self) -> dict[str, Any]:
        return to_jsonable(self.cal.to_dict() | {"df_k_minus_1": self.cal.df, "df": self.df,
                                                 "df_method": "Satterthwaite", "half_width": self.half_width})


def loss_calibration(split: Split, law: str, estimator: str, level: float = 0.95, *,
                     naive: bool = False) -> Calibrated:
    """The entry's calibrated interval for the loss of a run of a new unit; ``naive``: the same one-step-out
    residuals with every run its own unit, the interval that ignores the misfit a unit's runs share (for
    comparison: it covers less than it says when they do share one)."""
    return _loss_calibration(_Fits(split, law, estimator), level, naive=naive)


def _loss_calibration(fits: _Fits, level: float, naive: bool = False) -> Calibrated:
    tr = fits.train
    units = tr["unit"].to_numpy()

    def fit_predict(train, test):
        f = fits.on(units[train])
        if f.loss is None:
            raise UserError("the entry predicts no loss")
        return np.asarray(f.loss(tr[test]), float)

    res = out_of_unit_residuals(tr["loss"].to_numpy(float), units, fit_predict, space="log", scheme="forward",
                                order=tr[fits.split.scale].to_numpy(float), min_train_units=MIN_TRAIN_UNITS,
                                unit_name=fits.split.unit)
    if naive:
        res = UnitResiduals(res.resid, np.arange(len(res.resid)).astype(str), res.scheme, res.space, "run",
                            res.failed)
    return Calibrated(res, level)


def _optimum_calibration(fits: _Fits, what: str, level: float) -> Calibrated | None:
    """Forward calibration of the entry's ``what`` ("n_opt" or "l_min") against the training budgets'
    reference optima (each budget one unit of one point)."""
    ref = budget_reference(fits.train).dropna(subset=["n_ref"]).sort_values("c").reset_index(drop=True)
    if len(ref) < MIN_TRAIN_UNITS + 2:
        return None
    label = dict(zip(fits.train["c"], fits.train["unit"]))
    col = "n_ref" if what == "n_opt" else "l_ref"

    def fit_predict(train, test):
        c = float(ref.loc[test, "c"].iloc[0])
        f = fits.on([label[x] for x in fits.train["c"].unique() if x < c])
        fn = getattr(f, what)
        if fn is None:
            raise UserError(f"the entry predicts no {what}")
        return np.array([fn(c)], float)

    res = out_of_unit_residuals(ref[col].to_numpy(float), ref["c"].map("{:.6g}".format).to_numpy(), fit_predict,
                                space="log", scheme="forward", order=ref["c"].to_numpy(float),
                                min_train_units=MIN_TRAIN_UNITS, unit_name="budget")
    return Calibrated(res, level)


def _percentile_interval(draws: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    q = 100 * (1 - level) / 2
    with np.errstate(all="ignore"):
        lo, hi = np.nanpercentile(draws, [q, 100 - q], axis=0)
    return lo, hi


def _scored(y, lo, hi, units) -> dict[str, Any]:
    """An interval's coverage of the held-out units, with its width beside it: ``half_width_log``, the median
    over held-out points of half the interval's width in log loss (≈ the ± relative error it allows), since a
    coverage alone rewards an interval for being wide."""
    with np.errstate(all="ignore"):
        half = 0.5 * np.log(np.asarray(hi, float) / np.asarray(lo, float))
    half = half[np.isfinite(half)]
    return coverage(y, lo, hi, units).to_dict() | {"half_width_log": float(np.median(half)) if half.size else None}


def entry_intervals(split: Split, law: str, estimator: str, held: Fitted, level: float = 0.95,
                    sigma: float | None = None) -> dict[str, Any]:
    """The three intervals' coverage of the held-out units for one entry (``held``: its fit on all the training
    runs), with the calibration behind the first."""
    te = split.test
    units = te["unit"].to_numpy()
    y = te["loss"].to_numpy(float)
    fits = _Fits(split, law, estimator)
    out: dict[str, Any] = {"n_units": int(len(set(units)))}
    if held.loss is not None:
        pred = np.asarray(held.loss(te), float)
        cal = _loss_calibration(fits, level)
        lo, hi = cal.interval(pred)
        out["calibration"] = cal.to_dict()
        out["calibrated"] = _scored(y, lo, hi, units) if cal.ok else None
        if held.result is not None and getattr(held.result, "bootstrap", None) is not None:
            draws = np.asarray(held.result.draws({r: te[r].to_numpy(float) for r in held.result.law.inputs}), float)
            if draws.ndim == 2 and draws.shape[0] > 0:
                plo, phi = _percentile_interval(draws, level)
                out["parameter_only"] = _scored(y, plo, phi, units)
            else:  # no replicate converged (random losses): no parameter-only interval to count
                out["parameter_only"] = None
        else:
            out["parameter_only"] = None
        if sigma is not None and np.isfinite(sigma):
            from statistics import NormalDist

            h = NormalDist().inv_cdf((1 + level) / 2) * sigma
            out["noise_only"] = _scored(y, pred * np.exp(-h), pred * np.exp(h), units)
    if split.kind == "isoflop":
        ref = budget_reference(te).iloc[-1]
        c_held = float(ref["c"])
        for what, col in (("n_opt", "n_ref"), ("l_min", "l_ref")):
            fn = getattr(held, what)
            if fn is None or not np.isfinite(ref[col]):
                continue
            cal = _optimum_calibration(fits, what, level)
            pred = float(fn(c_held))
            row = {"predicted": pred, "reference": float(ref[col]), "calibration": None, "inside": None}
            if cal is not None:
                lo, hi = cal.interval(np.array([pred]))
                row.update(calibration=cal.to_dict(), lower=float(lo[0]), upper=float(hi[0]),
                           inside=bool(lo[0] <= ref[col] <= hi[0]) if cal.ok else None)
            out[what] = row
    return out


def reference_spread(split: Split) -> dict[str, float]:
    """How far the held-out budget's other optima fall from its reference (log ratios): the reference's own
    uncertainty, which an N_opt error smaller than it cannot resolve."""
    ref = budget_reference(split.test).iloc[-1]
    return {"n_ref": float(ref["n_ref"]), "l_ref": float(ref["l_ref"]),
            "log_parabola_vs_ref": float(np.log(ref["n_parabola"] / ref["n_ref"])),
            "log_best_run_vs_ref": float(np.log(ref["n_best"] / ref["n_ref"]))}
