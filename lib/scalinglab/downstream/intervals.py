"""Prediction intervals for a chained accuracy: calibrated on ladder runs left out, and by resampling runs.

Two intervals, each with the target's checkpoint noise added. The **calibrated** one
(``fitting.prediction.calibration``; unit: the ladder run) leaves each ladder run out in turn, refits both steps on the
others, and predicts the left-out run's final accuracy; the spread of those out-of-run misses, plus the target's
noise, sets the interval (``chain_calibration``, ``calibrated_bounds``). The **parameter-only** one is the
bootstrap below: it says how well the two steps' parameters are pinned, not how far a new run lands.

One replicate draws the ladder's runs with replacement (the unit whose draws are independent: a run's
checkpoints share its initialisation, data order and schedule, so resampling checkpoints would treat 70
correlated points as 70 independent ones), refits step 1 on the drawn runs' points and step 2 on the drawn
runs' checkpoints, and predicts the target. The target's own checkpoint-to-checkpoint noise (its accuracy SD
between neighbouring checkpoints) is added as a normal draw: the actual is one such checkpoint, or a short
average of them. The interval is the replicates' central quantiles.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from scalinglab.downstream.chain import ChainFit
from scalinglab.errors import UserError
from scalinglab.fitting.laws import Law, LawFit, fit_law
from scalinglab.fitting.prediction.calibration import UnitCalibration, out_of_unit_residuals
from scalinglab.fitting.rows import unit_picks
from scalinglab.serialization import to_jsonable


def run_draws(runs: Sequence[str], n_boot: int, seed: int):
    """Yield the run labels of each resample: as many runs as there are, drawn with replacement."""
    labels = list(dict.fromkeys(runs))
    for pick in unit_picks(len(labels), n_boot, seed):
        yield [labels[i] for i in pick]


def rows_of(df: pd.DataFrame, picked: Sequence[str], col: str = "run") -> pd.DataFrame:
    """The rows of each picked run, a run drawn twice appearing twice."""
    index = _members(df, col)
    return df.iloc[np.concatenate([index[k] for k in picked])].reset_index(drop=True)


def _members(df: pd.DataFrame, col: str) -> dict[str, np.ndarray]:
    labels = df[col].astype(str).to_numpy()
    return {k: np.flatnonzero(labels == k) for k in dict.fromkeys(labels.tolist())}


def bootstrap_by_run(tables: Sequence[pd.DataFrame], fit_predict: Callable[..., np.ndarray], n_boot: int,
                     seed: int, col: str = "run") -> np.ndarray:
    """``fit_predict(*resampled_tables)`` on ``n_boot`` resamples of whole runs (the same runs drawn in every
    table): an array (n_boot, …) of what it returns, NaN where a refit failed."""
    members = [_members(t, col) for t in tables]
    out = []
    for picked in run_draws(tables[0][col].astype(str).tolist(), n_boot, seed):
        subs = [t.iloc[np.concatenate([m[k] for k in picked])] for t, m in zip(tables, members)]
        try:
            out.append(np.asarray(fit_predict(*subs), float))
        except (ValueError, UserError, np.linalg.LinAlgError, FloatingPointError):
            out.append(None)
    shape = next((np.shape(o) for o in out if o is not None), ())
    return np.array([o if o is not None else np.full(shape, np.nan) for o in out], float)


def _warm(law: Law, fit: LawFit) -> Law:
    """The law with the full-data estimate as its one start and the registry's generic solver: a bootstrap
    replicate moves the optimum a little, so the 4,500-start grid is not needed to find it again."""
    params = tuple(replace(p, starts=(float(np.clip(fit.params[p.name], p.lower, p.upper)),)) for p in law.params)
    return replace(law, params=params, solver="least-squares")


CALIBRATED_UNIT = "ladder run (each left out in turn, both steps refitted), plus the target's checkpoint noise"
PARAMETER_ONLY_UNIT = "parameter-only: ladder runs resampled, both steps refitted, plus the target's checkpoint noise"


def _refit_predict(law1: Law, law2: Law, anchor: bool, loss: str, acc: str, s1: pd.DataFrame, s2: pd.DataFrame,
                   n, d) -> np.ndarray:
    """Both steps refitted on ``s1``/``s2`` and the chained accuracy at (n, d)."""
    f1 = fit_law(law1, {"n": s1["n"].to_numpy(float), "d": s1["d"].to_numpy(float)}, s1[loss].to_numpy(float))
    x, y = s2[loss].to_numpy(float), s2[acc].to_numpy(float)
    if anchor:
        x, y = np.r_[x, 0.0], np.r_[y, 1.0]
    if law2.name == "logit":
        y = np.clip(y, 1e-6, 1 - 1e-6)
    f2 = fit_law(law2, {"loss": x, "x": x}, y)
    if f1.status == "failed" or f2.status == "failed":
        raise ValueError("refit failed")
    L = f1.predict({"n": np.asarray(n, float), "d": np.asarray(d, float)})
    return f2.predict({"loss": L, "x": L})


def chain_calibration(fit: ChainFit, step1: pd.DataFrame, step2: pd.DataFrame, loss: str, acc: str, *,
                      level: float = 0.95, col: str = "run") -> UnitCalibration:
    """The chain's error one ladder run out: each run of ``step1`` left out in turn, both steps refitted on the
    other runs (step 1 on their points, step 2 on their checkpoints), and the left-out run's final accuracy
    (its step-1 point) predicted. Residuals in accuracy (linear), one per run: a run's checkpoints share its
    seed and data order, so the run is the unit. The runs are interior to the ladder, so this measures the
    chain's error among the ladder's runs, not at a target far beyond them."""
    law1, law2 = _warm(fit.step1.law, fit.step1), _warm(fit.step2.law, fit.step2)
    runs1 = step1[col].astype(str).to_numpy()
    runs2 = step2[col].astype(str).to_numpy()

    def fit_predict(train: np.ndarray, test: np.ndarray) -> np.ndarray:
        keep = set(runs1[train])
        s1, s2 = step1[train], step2[np.isin(runs2, list(keep))]
        left = step1[test]
        try:
            return _refit_predict(law1, law2, fit.anchor, loss, acc, s1, s2, left["n"], left["d"])
        except (ValueError, np.linalg.LinAlgError, FloatingPointError) as e:
            raise UserError(f"refit without {', '.join(runs1[test])} failed: {e}") from None

    res = out_of_unit_residuals(step1[acc].to_numpy(float), runs1, fit_predict, space="linear",
                                scheme="leave-one-out", unit_name="ladder run")
    return UnitCalibration.from_residuals(res, level)


def calibrated_bounds(cal: UnitCalibration, point, noise_sd=0.0, level: float | None = None):
    """(lower, upper) for chained accuracies ``point`` from the out-of-run calibration, the target's own
    checkpoint noise ``noise_sd`` (one per point, or one for all) added in quadrature to the predictive sd:
    pred + bias ± t_{K−1}·sqrt(sd² + noise²). NaN when the calibration has fewer than 2 runs."""
    from scalinglab.fitting.frontier.wls import t_quantile

    point = np.atleast_1d(np.asarray(point, float))
    if not cal.ok:
        return np.full(point.shape, np.nan), np.full(point.shape, np.nan)
    lv = cal.level if level is None else level
    sd = np.sqrt(cal.scale ** 2 + np.broadcast_to(np.asarray(noise_sd, float), point.shape) ** 2)
    h = t_quantile(0.5 + lv / 2, cal.df) * sd
    return point + cal.mu - h, point + cal.mu + h


@dataclass(frozen=True)
class ChainInterval:
    """A target's chained accuracy with its intervals (accuracies as fractions): ``lower``/``upper`` the
    parameter-only bootstrap over ladder runs, ``cal_lower``/``cal_upper`` the calibrated one (out-of-run
    errors); both with the target's checkpoint noise added."""

    task: str
    target: str
    point: float
    lower: float
    upper: float
    level: float
    actual: float | None
    noise_sd: float
    n_boot: int
    n_failed: int
    unit: str = PARAMETER_ONLY_UNIT
    cal_lower: float = float("nan")
    cal_upper: float = float("nan")
    cal_unit: str = CALIBRATED_UNIT
    cal_n_units: int = 0

    @property
    def inside(self) -> bool | None:
        """The actual inside the parameter-only interval."""
        return None if self.actual is None else bool(self.lower <= self.actual <= self.upper)

    @property
    def cal_inside(self) -> bool | None:
        """The actual inside the calibrated interval (False where it could not be calibrated)."""
        return None if self.actual is None else bool(self.cal_lower <= self.actual <= self.cal_upper)

    def to_dict(self) -> dict[str, Any]:
        return to_jsonable({**self.__dict__, "inside": self.inside, "cal_inside": self.cal_inside})

    def summary(self) -> str:
        act = "" if self.actual is None else f"; actual {100 * self.actual:.2f}"
        cal = (f"calibrated {100 * self.cal_lower:.2f} to {100 * self.cal_upper:.2f}"
               f"{'' if self.actual is None else ' (' + ('inside' if self.cal_inside else 'outside') + ')'}"
               if np.isfinite(self.cal_lower) else "not calibrated")
        par = (f"parameter-only {100 * self.lower:.2f} to {100 * self.upper:.2f}"
               f"{'' if self.actual is None else ' (' + ('inside' if self.inside else 'outside') + ')'}"
               if self.n_boot else "")
        return (f"{self.task} at {self.target}: {100 * self.point:.2f}; {self.level:.0%} {cal}"
                + (f", {par}" if par else "") + act)


def chain_interval(fit: ChainFit, step1: pd.DataFrame, step2: pd.DataFrame, loss: str, acc: str,
                   targets: pd.DataFrame, *, noise_sd: Sequence[float] | float = 0.0, n_boot: int = 200,
                   seed: int = 0, level: float = 0.95, actual: str | None = None,
                   calibration: UnitCalibration | None = None) -> list[ChainInterval]:
    """Intervals for the chained accuracy at each row of ``targets`` (columns n, d; ``actual``: its accuracy
    column if known); ``noise_sd`` (one per target, or one for all) is the target's checkpoint-to-checkpoint
    accuracy SD, added to both. The calibrated interval from ``calibration`` (``chain_calibration`` of the same
    fit and tables; computed here when None); the parameter-only one from ``n_boot`` resamples of whole runs
    (both steps together; 0: none, its bounds NaN)."""
    law1, law2 = _warm(fit.step1.law, fit.step1), _warm(fit.step2.law, fit.step2)
    n, d = targets["n"].to_numpy(float), targets["d"].to_numpy(float)
    sd = np.broadcast_to(np.asarray(noise_sd, float), n.shape)
    point = fit.predict(n, d)
    cal = calibration if calibration is not None else chain_calibration(fit, step1, step2, loss, acc, level=level)
    cal_lo, cal_hi = calibrated_bounds(cal, point, sd, level)
    n_failed = 0
    lo = hi = np.full(n.shape, np.nan)
    if n_boot:
        def fit_predict(s1: pd.DataFrame, s2: pd.DataFrame) -> np.ndarray:
            return _refit_predict(law1, law2, fit.anchor, loss, acc, s1, s2, n, d)

        reps = bootstrap_by_run([step1, step2], fit_predict, n_boot, seed)
        ok = np.all(np.isfinite(reps), axis=1)
        reps = reps[ok]
        n_failed = int((~ok).sum())
        rng = np.random.default_rng(seed + 1)
        reps = reps + rng.normal(size=reps.shape) * sd
        q = (1 - level) / 2
        lo, hi = np.quantile(reps, [q, 1 - q], axis=0)
    names = targets["run"].astype(str).tolist() if "run" in targets.columns else [f"row {i + 1}" for i in range(len(n))]
    acts = targets[actual].to_numpy(float) if actual else [None] * len(n)
    return [ChainInterval(fit.task, names[i], float(point[i]), float(lo[i]), float(hi[i]), level,
                          None if acts[i] is None else float(acts[i]), float(sd[i]), n_boot, n_failed,
                          cal_lower=float(cal_lo[i]), cal_upper=float(cal_hi[i]), cal_n_units=cal.n_units)
            for i in range(len(n))]
