"""Calibrated intervals for loss curves: the unit is the schedule.

A curve law's error on a schedule it never saw is shared by every point of that curve (the law misses the schedule's
shape, not independent points), so the independent unit of a check is the schedule, and an interval for a new
schedule must be calibrated on schedules left out, not on points. Each training schedule is left out in turn, the law
refitted on the others, and the held-out curve's last logged points (the last ``tail`` of its steps, where the losses
a user asks about lie) predicted; the random effect per unit of :mod:`scalinglab.fitting.prediction.calibration`
turns those log residuals into the interval for a point of a new schedule (a t on K − 1 degrees of freedom for K
schedules, in log loss, so never negative). The same residuals with every point its own unit give the naive interval,
kept for the comparison: points of one curve share its misfit, so it is too narrow.

The block bootstrap over steps (:mod:`scalinglab.curves.evaluate`) stays beside it as the parameter-only band:
it says how well the training curves pin the parameters, not where a new schedule's curve lands. With K
training schedules each refit sees K − 1 of them, so the residuals are those of a slightly weaker fit than the
one predicting: the calibrated interval errs wide.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from scalinglab.curves.fit import CurveFit
from scalinglab.curves.laws import Curve
from scalinglab.errors import UserError
from scalinglab.fitting.prediction.calibration import UnitCalibration, UnitResiduals, df_text, out_of_unit_residuals
from scalinglab.serialization import to_jsonable

TAIL = 0.1   # the held-out points: each curve's logged points in the last tenth of its steps (its final loss at least)
SAVED_FIELDS = ("mu", "sigma_unit", "sigma_point", "n_units", "n_points", "level", "scheme", "space", "unit_name")


def tail_curve(c: Curve, tail: float = TAIL) -> Curve:
    """``c`` at its logged points in the last ``tail`` of its steps (at least its last point)."""
    keep = c.at >= (1 - tail) * c.at[-1]
    keep[-1] = True
    return Curve(c.name, c.lrs, c.at[keep], None if c.loss is None else c.loss[keep], c.meta)


@dataclass(frozen=True)
class CurveCalibration:
    """A curve law's interval for a new schedule, calibrated on training schedules left out in turn
    (``calibration``, unit: schedule), beside the naive one from the same residuals (``naive``, unit: point)."""

    law: str
    calibration: UnitCalibration
    naive: UnitCalibration | None = None
    tail: float = TAIL
    schedules: tuple = ()
    residuals: UnitResiduals | None = field(default=None, repr=False, compare=False)   # behind ``calibration``
    capped: tuple = ()   # the schedules whose leave-out refit stopped at the solver's evaluation cap, not converged

    @property
    def ok(self) -> bool:
        return self.calibration.ok

    def interval(self, pred, naive: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """(lower, upper) for predicted losses ``pred`` of a new schedule (NaN when not calibrated)."""
        return (self.naive if naive else self.calibration).interval(pred)

    def summary(self) -> str:
        left = f"{len(self.schedules)} schedules left out in turn ({', '.join(map(str, self.schedules))})"
        if not self.ok:
            return f"calibration over {left}: {self.calibration.reason}"
        c = self.calibration
        pooled = f" (pooled over {','.join(c.pooled_over)})" if c.pooled_df is not None else ""
        return (f"calibrated {c.level:.0%} interval for a new schedule: {left}, the law refitted on the others, "
                f"the last {self.tail:.0%} of each held-out curve's steps predicted; log-loss residuals: bias "
                f"{c.mu:+.4f}, sd between schedules {c.sigma_unit:.4f}, within {c.sigma_point:.4f}{pooled}, "
                f"t on {df_text(c.df)} df, "
                f"half-width {c.half_width:.4f} (a factor {np.exp(c.half_width):.4f} either way)"
                + (f"; the refit without {', '.join(map(str, self.capped))} stopped at its evaluation cap"
                   if self.capped else ""))

    def to_dict(self) -> dict:
        return to_jsonable(dict(law=self.law, unit="schedule (each training run left out in turn)", tail=self.tail,
                                schedules=[str(s) for s in self.schedules], calibration=self.calibration.to_dict(),
                                naive=None if self.naive is None else self.naive.to_dict(),
                                capped=[str(s) for s in self.capped]))

    def saved(self) -> dict:
        """What a saved curve fit stores to rebuild the interval (:func:`from_saved`)."""
        return to_jsonable(dict(law=self.law, tail=self.tail, schedules=[str(s) for s in self.schedules],
                                calibration={k: getattr(self.calibration, k) for k in SAVED_FIELDS}
                                | _pooling(self.calibration), failed=[str(f) for f in self.calibration.failed]))


def _pooling(c: UnitCalibration) -> dict:
    if c.pooled_df is None:
        return {}
    prior = {} if c.prior_df is None else {"prior_df": c.prior_df}
    return {"pooled_df": c.pooled_df, "pooled_over": list(c.pooled_over), **prior}


def from_saved(d: dict) -> CurveCalibration:
    """The inverse of :meth:`CurveCalibration.saved` (KeyError/TypeError/ValueError on a malformed dict)."""
    c = d["calibration"]
    kw = {k: c[k] for k in SAVED_FIELDS}
    for k in ("mu", "sigma_unit", "sigma_point", "level"):
        kw[k] = float("nan") if kw[k] is None else float(kw[k])
    kw["n_units"], kw["n_points"] = int(kw["n_units"]), int(kw["n_points"])
    if kw["space"] != "log" or not 0 < kw["level"] < 1:
        raise ValueError("calibration space or level")
    pooled_df = None if c.get("pooled_df") is None else float(c["pooled_df"])
    if pooled_df is not None and not (np.isfinite(pooled_df) and pooled_df >= 1):
        raise ValueError("pooled_df")
    prior = c.get("prior_df")
    prior = None if prior is None else float(prior)
    cal = UnitCalibration(**kw, failed=tuple(d.get("failed", ())), pooled_df=pooled_df,
                          pooled_over=tuple(map(str, c.get("pooled_over", ()))), prior_df=prior)
    return CurveCalibration(str(d["law"]), cal, None, float(d["tail"]), tuple(d["schedules"]))


def schedule_residuals(curves: list[Curve], fitter: Callable[[list[Curve]], CurveFit], *,
                       tail: float = TAIL, capped: list | None = None) -> UnitResiduals:
    """Each training curve left out in turn: ``fitter`` on the others, the held-out curve's tail predicted; log
    residuals, unit = the curve (its schedule). A refit that raises a UserError or predicts a loss <= 0 drops
    that schedule (``failed``); one that stopped at its solver's evaluation cap is kept, and the left-out
    schedule's name appended to ``capped`` (when given)."""
    names = [c.name for c in curves]
    if len(set(names)) != len(names):
        raise UserError("calibration: two curves share a name; each schedule must be its own unit")
    tails = [tail_curve(c, tail) for c in curves]
    owner = np.concatenate([np.full(len(t.at), i) for i, t in enumerate(tails)])
    y = np.concatenate([t.loss for t in tails])
    units = np.array([names[i] for i in owner], dtype=object)

    def fit_predict(train, test):
        fit = fitter([c for i, c in enumerate(curves) if train[owner == i].all()])
        if capped is not None and fit.status == "failed":
            capped.extend(names[i] for i in np.unique(owner[test]))
        with np.errstate(all="ignore"):
            return np.concatenate([fit.predict(tails[i]) for i in np.unique(owner[test])])

    return out_of_unit_residuals(y, units, fit_predict, space="log", scheme="leave-one-out", unit_name="schedule")


def calibrate_schedules(curves: list[Curve], fitter: Callable[[list[Curve]], CurveFit], law: str, *,
                        tail: float = TAIL, level: float = 0.95) -> CurveCalibration:
    """The schedule-unit calibration of ``fitter`` on ``curves`` (see the module's docstring), and the naive one
    from the same residuals with each point its own unit."""
    capped: list = []
    res = schedule_residuals(curves, fitter, tail=tail, capped=capped)
    cal = UnitCalibration.from_residuals(res, level)
    per_point = UnitResiduals(res.resid, np.arange(len(res.resid)).astype(object), res.scheme, res.space, "point",
                              res.failed)
    naive = UnitCalibration.from_residuals(per_point, level)
    return CurveCalibration(law, cal, naive, tail, tuple(c.name for c in curves), res, tuple(capped))


def pool_over(cals: Mapping[Any, CurveCalibration], moderate: bool = False) -> dict[Any, CurveCalibration]:
    """The calibrations of one law at several model sizes with the schedule and point spreads pooled over the sizes
    (``UnitCalibration.pooled``): each size keeps its own bias, and three schedules per size give 6 degrees of
    freedom instead of 2. Assumes the law's misfit between schedules, in log loss, is alike at every size;
    ``moderate``: shrink each size's own spread toward the pooled one only as far as they agree
    (``UnitCalibration.pooled``)."""
    if any(c.residuals is None for c in cals.values()):
        raise UserError("pooling needs each calibration's residuals: calibrate with calibrate_schedules")
    level = {c.calibration.level for c in cals.values()}
    if len(level) != 1:
        raise UserError(f"pooling calibrations of different levels ({', '.join(map(str, sorted(level)))})")
    pooled = UnitCalibration.pooled({k: c.residuals for k, c in cals.items()}, level.pop(), moderate=moderate)
    return {k: replace(c, calibration=pooled[k]) for k, c in cals.items()}
