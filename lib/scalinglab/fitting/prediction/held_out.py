"""A fitted law's predictions for runs it did not see: the one result every law gives for held-out or new runs.

``predict(fit, inputs, actual)`` predicts each run (its ``inputs``, role -> values, as the law takes them) and
compares with what the run reached. When the fit was bootstrapped, each replicate predicts every run, and the
percentiles of those predictions are the mean law's interval (parameter uncertainty only). With ``sigma``, the
run-to-run noise of the fitted runs' residuals in the law's residual space (``residual_sd``), each run also gets
a new-run interval: a held-out run is a new run, so this is the interval it should fall in at about the stated
rate if the law's form holds, and the one ``summary`` marks "outside". ``forecast.with_domain`` adds each run's
distance from the fitted runs (``fitting.prediction.domain``) for laws of N and D. ``with_calibration`` adds the
interval calibrated on units the fit never saw (``fitting.prediction.run_calibration``): ``cal_lower``/``cal_upper``,
with its unit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from statistics import NormalDist
from typing import Any

import numpy as np

from scalinglab.fitting.form import transform
from scalinglab.fitting.prediction.domain import legend, short
from scalinglab.fitting.results import LawFit
from scalinglab.serialization import to_jsonable

# A loss the law predicts exactly (equal losses, no noise) gets an interval of zero width; a last-bit difference
# between the prediction and the value read from the CSV must not mark it "outside" at +0.00% error.
ROUNDING = 1e-9

# How an input is headed in tables and named in JSON rows.
INPUT_LABELS = {"n": "N", "d": "D", "u": "U", "x": "x", "loss": "L"}
SPACE_UNITS = {"log": "in log loss", "logit": "in logit", "linear": "in the metric"}


def _within(x, lo, hi) -> np.ndarray:
    return (x >= lo - ROUNDING * np.abs(lo)) & (x <= hi + ROUNDING * np.abs(hi))


@dataclass(frozen=True)
class Predictions:
    """A law's predictions for some runs, with their table rows, actual values and errors.

    ``inputs``: the law's inputs at these runs (role -> values; ``N`` and ``D`` read two of them).
    ``rel_error`` is (predicted − actual)/actual: negative means the law promised a lower loss than the run
    reached; ``log_error`` = log(predicted/actual), what RMSLE squares. ``lower``/``upper`` are the bootstrap
    interval at ``level`` (NaN without a bootstrap); ``new_lower``/``new_upper`` the new-run interval (the mean
    law's plus run noise ``sigma``; None when no σ was given).
    """

    rows: np.ndarray
    actual: np.ndarray
    predicted: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    level: float
    inputs: Mapping[str, np.ndarray] = field(default_factory=dict)
    draws: np.ndarray | None = None  # (replicates, rows): each bootstrap replicate's predictions
    extrapolation: tuple[dict[str, Any], ...] | None = None
    new_lower: np.ndarray | None = None
    new_upper: np.ndarray | None = None
    sigma: float | None = None       # run noise in the law's residual space (the fitted rows' residual sd)
    space: str = "log"               # that space: log (a loss), logit or linear (a metric)
    cal_lower: np.ndarray | None = None      # the calibrated interval (prediction.run_calibration); None without one
    cal_upper: np.ndarray | None = None
    calibration: dict[str, Any] | None = None   # UnitCalibration.to_dict() (+ order_column) of that interval
    cal_units: np.ndarray | None = None      # each predicted run's unit label, for coverage by unit

    def with_calibration(self, cal, units=None, note: dict[str, Any] | None = None) -> Predictions:
        """These predictions with ``cal``'s interval (a ``fitting.prediction.calibration.UnitCalibration``) and, if
        given, each run's unit label (``units``: coverage counts units, not runs)."""
        lo, hi = cal.interval(self.predicted)
        return replace(self, cal_lower=lo, cal_upper=hi, calibration=note or cal.to_dict(),
                       cal_units=None if units is None else np.asarray(units, dtype=object))

    @property
    def has_calibrated_interval(self) -> bool:
        return self.cal_lower is not None

    @property
    def inside_calibrated(self) -> np.ndarray:
        """Whether each actual value lies in its calibrated interval (False without one, or where NaN)."""
        if not self.has_calibrated_interval:
            return np.zeros(len(self.rows), bool)
        return _within(self.actual, self.cal_lower, self.cal_upper)

    def _calibration_line(self) -> str:
        c = self.calibration or {}
        if not c.get("ok"):
            return f"calibrated interval: none ({c.get('reason') or 'not calibrated'})"
        cov = self.calibrated_coverage()
        units = ("" if self.cal_units is None else
                 f"; each held-out unit counted once, {cov['units_inside']:g} of {cov['n_units']} inside")
        return (f"{int(self.inside_calibrated.sum())} of {len(self.rows)} inside their calibrated interval "
                f"({_calibration_text(c)}: bias {c['bias']:+.3g}, sd {c['sigma_unit']:.3g} between {c['unit']}s, "
                f"t on {c['df']} df){units}")

    def calibrated_coverage(self) -> dict[str, Any] | None:
        """The calibrated interval's coverage of these runs, each unit counting once (``calibration.coverage``)."""
        if not self.has_calibrated_interval:
            return None
        from scalinglab.fitting.prediction.calibration import coverage

        units = self.cal_units if self.cal_units is not None else [f"row {r}" for r in self.rows]
        inside = self.inside_calibrated
        return coverage(inside.astype(float), np.full(len(inside), 0.5), np.full(len(inside), 1.5),
                        list(units)).to_dict()

    @property
    def N(self) -> np.ndarray | None:
        return self.inputs.get("n")

    @property
    def D(self) -> np.ndarray | None:
        return self.inputs.get("d")

    @property
    def rel_error(self) -> np.ndarray:
        return (self.predicted - self.actual) / self.actual

    @property
    def log_error(self) -> np.ndarray:
        with np.errstate(all="ignore"):
            return np.log(self.predicted) - np.log(self.actual)

    def rmsle(self) -> float:
        return float(np.sqrt(np.mean(self.log_error ** 2)))

    def subset(self, keep) -> Predictions:
        """The same predictions for the rows where ``keep`` (a mask over these rows) is True."""
        keep = np.asarray(keep, bool)
        cut = {k: getattr(self, k)[keep] for k in ("rows", "actual", "predicted", "lower", "upper")}
        if self.has_new_run_interval:
            cut.update(new_lower=self.new_lower[keep], new_upper=self.new_upper[keep])
        if self.has_calibrated_interval:
            cut.update(cal_lower=self.cal_lower[keep], cal_upper=self.cal_upper[keep])
        if self.cal_units is not None:
            cut.update(cal_units=self.cal_units[keep])
        ext = self.extrapolation and tuple(e for e, k in zip(self.extrapolation, keep) if k)
        return replace(self, **cut, inputs={k: v[keep] for k, v in self.inputs.items()},
                       draws=None if self.draws is None else self.draws[:, keep], extrapolation=ext)

    def error_intervals(self, level: float | None = None) -> dict[str, tuple[float, float]]:
        """Percentile intervals over the bootstrap replicates for the summary's error statistics
        (``mean_rel_error``, ``mean_abs_rel_error``, ``median_abs_rel_error``, ``max_abs_rel_error``).

        Each replicate's law predicts every row, and the statistic is taken over those predictions
        against the same actual values: parameter uncertainty only, as for the per-row intervals.
        NaN without a bootstrap."""
        names = ("mean_rel_error", "mean_abs_rel_error", "median_abs_rel_error", "max_abs_rel_error")
        if self.draws is None or not len(self.draws):
            return {k: (float("nan"), float("nan")) for k in names}
        level = self.level if level is None else level
        err = self.draws / self.actual - 1.0
        stats = {"mean_rel_error": err.mean(axis=1), "mean_abs_rel_error": np.abs(err).mean(axis=1),
                 "median_abs_rel_error": np.median(np.abs(err), axis=1),
                 "max_abs_rel_error": np.abs(err).max(axis=1)}
        q = [(1 - level) / 2 * 100, (1 + level) / 2 * 100]
        return {k: tuple(float(x) for x in np.percentile(v, q)) for k, v in stats.items()}

    def rel_error_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """The interval as relative errors, (lower/actual − 1, upper/actual − 1): the range of
        ``rel_error`` the bootstrap allows for each row (NaN without a bootstrap)."""
        return self.lower / self.actual - 1.0, self.upper / self.actual - 1.0

    def median_relative_width(self) -> float:
        """The median over rows of (upper − lower)/predicted: how wide the intervals are, as a share of the
        prediction (NaN without a bootstrap)."""
        if not self.has_interval:
            return float("nan")
        return float(np.median((self.upper - self.lower) / self.predicted))

    @property
    def has_interval(self) -> bool:
        return bool(np.isfinite(self.lower).any())

    @property
    def inside(self) -> np.ndarray:
        """Whether each actual value lies in its interval (False without one), to rounding (``ROUNDING``)."""
        return _within(self.actual, self.lower, self.upper)

    @property
    def has_new_run_interval(self) -> bool:
        return self.new_lower is not None

    @property
    def inside_new_run(self) -> np.ndarray:
        """Whether each actual value lies in its new-run interval (False without one)."""
        if not self.has_new_run_interval:
            return np.zeros(len(self.rows), bool)
        return _within(self.actual, self.new_lower, self.new_upper)

    def stats(self) -> dict[str, Any]:
        """n, RMSLE, mean/median/max absolute relative error (and the worst row), mean relative error; with
        intervals, their level and how many actual values lie inside."""
        err = np.abs(self.rel_error)
        worst = int(np.argmax(err))
        out: dict[str, Any] = {"n": len(err), "rmsle": self.rmsle(), "mean_abs_rel_error": float(err.mean()),
                               "median_abs_rel_error": float(np.median(err)), "max_abs_rel_error": float(err[worst]),
                               "worst_row": int(self.rows[worst]), "mean_rel_error": float(self.rel_error.mean())}
        if self.has_interval:
            out["level"] = self.level
            out["n_inside_interval"] = int(self.inside.sum())
        if self.has_new_run_interval:
            out["level"] = self.level
            out["n_inside_new_run_interval"] = int(self.inside_new_run.sum())
            out["sigma"] = self.sigma
        if self.has_calibrated_interval:
            out["n_inside_calibrated_interval"] = int(self.inside_calibrated.sum())
            out["calibration"] = self.calibration
            out["calibrated_coverage"] = self.calibrated_coverage()
        return out

    def to_dict(self) -> dict[str, Any]:
        rows = []
        for i in range(len(self.rows)):
            row = {"row": int(self.rows[i]), **{INPUT_LABELS[k]: float(v[i]) for k, v in self.inputs.items()},
                   "actual": float(self.actual[i]), "predicted": float(self.predicted[i]),
                   "rel_error": float(self.rel_error[i])}
            if self.has_interval:
                row["interval"] = [float(self.lower[i]), float(self.upper[i])]
            if self.has_new_run_interval:
                row["new_run_interval"] = [float(self.new_lower[i]), float(self.new_upper[i])]
            if self.has_calibrated_interval:
                row["calibrated_interval"] = [float(self.cal_lower[i]), float(self.cal_upper[i])]
                if self.cal_units is not None:
                    row["unit"] = str(self.cal_units[i])
            if self.extrapolation is not None:
                row["extrapolation"] = self.extrapolation[i]
            rows.append(row)
        return to_jsonable({"summary": self.stats(), "rows": rows})

    def summary(self, what: str = "predicted", n_fit: int | None = None) -> str:
        """The table `scalinglab fit --holdout/--predict` prints: one line per run, then the errors.
        ``what`` says where the runs come from ("held out (...)"); ``n_fit``: the runs the law was fitted on."""
        interval, new, cal = self.has_interval, self.has_new_run_interval, self.has_calibrated_interval
        pct = f"{round(self.level * 100):d}%"
        ext, fitted = self.extrapolation, "" if n_fit is None else f"; the law was fitted on {n_fit}"
        lines = [f"{len(self.rows)} runs {what}{fitted}",
                 (f"{'row':>5}" + "".join(f"{INPUT_LABELS[k]:>12}" for k in self.inputs)
                  + f"{'actual':>10}{'predicted':>11}{'rel err':>10}"
                  + (f"{'beyond':>11}" if ext is not None else "")
                  + (f"   {pct + ' calibrated':<19}" if cal else "")
                  + (f"   {pct + ' new run':<19}" if new else "")
                  + (f"   {pct} mean law" if interval else "")).rstrip()]
        for i in range(len(self.rows)):
            row = (f"{self.rows[i]:>5d}" + "".join(f"{v[i]:>12.4g}" for v in self.inputs.values())
                   + f"{self.actual[i]:>10.4f}{self.predicted[i]:>11.4f}{self.rel_error[i]:>+10.2%}")
            if ext is not None:
                row += f"{short(ext[i]):>11}"
            if cal:
                row += (f"   [{self.cal_lower[i]:.4f}, {self.cal_upper[i]:.4f}]" if np.isfinite(self.cal_lower[i])
                        else f"   {'-':<18}")
            if new:
                row += f"   [{self.new_lower[i]:.4f}, {self.new_upper[i]:.4f}]"
            if interval:
                row += f"   [{self.lower[i]:.4f}, {self.upper[i]:.4f}]"
            if (new and not self.inside_new_run[i]) or (not new and interval and not self.inside[i]):
                row += "  outside"
            lines.append(row)
        s = self.stats()
        tail = (f"RMSLE {s['rmsle']:.4f}; |rel err|: mean {s['mean_abs_rel_error']:.2%}, median "
                f"{s['median_abs_rel_error']:.2%}, max {s['max_abs_rel_error']:.2%} (row {s['worst_row']})")
        inside = []
        if new:
            inside.append(f"{s['n_inside_new_run_interval']} of {s['n']} inside their new-run interval (parameters "
                          f"and run noise, σ = {self.sigma:.3g} {SPACE_UNITS[self.space]})" if interval else
                          f"{s['n_inside_new_run_interval']} of {s['n']} inside their new-run interval (run noise "
                          f"σ = {self.sigma:.3g} {SPACE_UNITS[self.space]}; no bootstrap, so no parameter uncertainty)")
        if interval:
            inside.append(f"{s['n_inside_interval']} of {s['n']} inside the mean law's (parameters only)")
        lines += ["", tail] + (["; ".join(inside)] if inside else [])
        if cal:
            lines.append(self._calibration_line())
        lines += ["rel err = (predicted - actual)/actual; row = the run's row in the table, from 0"]
        lines += [legend(ext)] if ext is not None else []
        return "\n".join(lines)


def _calibration_text(c: Mapping[str, Any]) -> str:
    how = (f"each predicted from the {c['unit']}s below it by {c.get('order_column') or 'scale'}"
           if c["scheme"] == "forward" else "each left out in turn")
    return f"calibrated on {c['n_units']} {c['unit']}s of the fitted runs, {how}"


def residual_sd(fit: LawFit, inputs: Mapping[str, Any], y) -> float:
    """σ of the fitted runs' residuals in the law's residual space (log loss for a loss law),
    sqrt(Σ r² / (n − free parameters)), r = t(y) − t(ŷ)."""
    space = fit.law.space
    r = transform(y, space) - transform(fit.predict(inputs), space)
    dof = max(len(r) - fit.n_free, 1)
    return float(np.sqrt(np.sum(r * r) / dof))


def _q(level: float) -> list[float]:
    return [(1 - level) / 2 * 100, (1 + level) / 2 * 100]


def _with_noise(pred, noise, space: str):
    """Predictions moved by residual-space noise: multiplied by e^noise in log space, the logit shifted in
    logit space, added in linear space."""
    if space == "log":
        return pred * np.exp(noise)
    if space == "logit":
        with np.errstate(all="ignore"):
            return 1.0 / (1.0 + np.exp(-(np.log(pred) - np.log1p(-pred) + noise)))
    return pred + noise


def intervals(fit: LawFit, inputs: Mapping[str, Any], sigma: float | None, level: float | None = None,
              seed: int | None = None) -> dict[str, Any]:
    """The prediction at each point, its mean interval (``mean_lo``, ``mean_hi``; NaN without a bootstrap), its
    new-run interval (``new_lo``, ``new_hi``: each replicate's prediction with a draw of run noise σ, or the
    normal quantiles of σ without a bootstrap; None when ``sigma`` is None) and each bootstrap replicate's
    prediction (``draws``, (replicates, points); None without a bootstrap)."""
    bs = fit.bootstrap
    level = level if level is not None else (bs.level if bs is not None else 0.95)
    inputs = dict(zip(inputs, np.broadcast_arrays(*(np.asarray(v, float).ravel() for v in inputs.values()))))
    n = len(next(iter(inputs.values())))
    pred = np.asarray(fit.predict(inputs), float)
    draws = fit.draws(inputs)
    if draws is not None:
        with np.errstate(all="ignore"):   # a replicate may give no prediction (NaN) at a far point
            mean_lo, mean_hi = np.nanpercentile(draws, _q(level), axis=0)
    else:
        mean_lo = mean_hi = np.full(n, np.nan)
    space = fit.law.space
    if sigma is None:
        new_lo = new_hi = None
    elif draws is not None:
        z = np.random.default_rng(bs.seed if seed is None else seed).standard_normal(draws.shape)
        with np.errstate(all="ignore"):
            new_lo, new_hi = np.nanpercentile(_with_noise(draws, sigma * z, space), _q(level), axis=0)
    else:
        zq = NormalDist().inv_cdf((1 + level) / 2)
        new_lo, new_hi = _with_noise(pred, -zq * sigma, space), _with_noise(pred, zq * sigma, space)
    return {"predicted": pred, "mean_lo": mean_lo, "mean_hi": mean_hi, "new_lo": new_lo, "new_hi": new_hi,
            "level": level, "draws": draws}


def predict(fit: LawFit, inputs: Mapping[str, Any], actual, *, rows=None, level: float | None = None,
            sigma: float | None = None) -> Predictions:
    """Predict runs (``inputs``: role -> values) with ``fit`` and compare with ``actual``; intervals from its
    bootstrap, if any, and with ``sigma`` (``residual_sd`` of the fitted runs) new-run intervals."""
    inputs = {k: np.asarray(inputs[k], float).ravel() for k in fit.law.inputs}
    actual = np.asarray(actual, float).ravel()
    iv = intervals(fit, inputs, sigma, level)
    new = {} if sigma is None else dict(new_lower=iv["new_lo"], new_upper=iv["new_hi"], sigma=float(sigma))
    rows = np.arange(len(actual)) if rows is None else np.asarray(rows, int)
    return Predictions(rows=rows, actual=actual, predicted=iv["predicted"], lower=iv["mean_lo"], upper=iv["mean_hi"],
                       level=iv["level"], inputs=inputs, draws=iv["draws"], space=fit.law.space, **new)
