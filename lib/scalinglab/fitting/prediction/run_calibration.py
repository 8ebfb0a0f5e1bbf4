"""Calibrated intervals for `fit --holdout`, `fit --predict` and `predict`: the fit's error on units it never saw.

A held-out or predicted run is judged against a law fitted on other runs; the runs it is most like (the same
budget, the same model size, the same group) share misfit with it, so the interval that should hold it is one
calibrated on whole units left out of the fitted runs (``fitting.prediction.calibration``). The unit is, in order:
``--bootstrap-by``'s groups; else a scale hold-out's column where its values repeat (``budget>=1e12``: the
budgets); else the budgets, where a compute column repeats; else the model sizes, where N repeats; else the run.
The scheme is ``forward`` (each unit predicted from the units below it by scale) when the hold-out is a scale
hold-out (``COL > v`` or ``COL >= v`` on one numeric column: the held-out runs lie beyond the fitted ones), else
``leave-one-out``. The refits are the law's own fit without its bootstrap, the same held parameters.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from scalinglab.errors import UserError
from scalinglab.fitting.prediction.calibration import UnitCalibration, out_of_unit_residuals
from scalinglab.fitting.solvers import get as get_solver

SCALE_OPS = (">", ">=")


def unit_labels(table, rows, cols, by: str | None, scale_col: str | None = None) -> tuple[np.ndarray, str]:
    """(one unit label per row of ``rows``, the unit's name): ``by``'s groups; else the scale hold-out's column
    where its values repeat (a budget column held out above a value: its budgets); else budgets (a compute
    column whose values repeat, or a law's x); else sizes (N repeating); else each run its own unit."""
    from scalinglab.fitting.rows import group_labels

    rows = np.asarray(rows, int)
    if by:
        return group_labels(table, by)[rows], f"{by} group"
    x = getattr(cols, "x", None)
    for col, name in ((scale_col, f"{scale_col} value"), (cols.c, "budget"), (x, f"{x} value"),
                      (cols.n, "model size")):
        if col and col in table:
            vals = np.array([str(v).strip() for v in list(table[col])], dtype=object)
            if len(set(vals.tolist())) < len(vals):
                return vals[rows], name
    return np.array([f"row {r}" for r in rows], dtype=object), "run"


# More units than this are merged into this many bands of neighbouring units (by scale): each refit costs a fit,
# and neighbours share misfit, so a band is a unit too, a coarser and more cautious one.
MAX_UNITS = 30


def coarsen(units, key, name: str, max_units: int = MAX_UNITS) -> tuple[np.ndarray, str]:
    """``units`` merged into at most ``max_units`` bands of units adjacent in ``key`` (one number per row: a
    unit's key is its rows' mean); unchanged when there are no more than that."""
    u = np.asarray(units, dtype=object)
    labels = list(dict.fromkeys(u.tolist()))
    if len(labels) <= max_units:
        return u, name
    key = np.asarray(key, float)
    mean = {lab: float(np.mean(key[u == lab])) for lab in labels}
    ranked = sorted(labels, key=lambda lab: mean[lab])
    band = {lab: f"band {i * max_units // len(ranked) + 1}" for i, lab in enumerate(ranked)}
    return np.array([band[x] for x in u.tolist()], dtype=object), f"{name} band"


def scale_order(table, rows, holdout: Sequence[str]) -> tuple[np.ndarray | None, str | None]:
    """For a scale hold-out (its conditions all ``COL > v`` or ``COL >= v`` on one numeric column: the runs
    above a budget, a size, a token count), the per-row scale the forward scheme orders units by (that column's
    values at ``rows``) and the column; else (None, None)."""
    from scalinglab.fitting.conditions import _number, parse_condition

    if not holdout:
        return None, None
    conds = [parse_condition(h) for h in holdout]
    if not all(c.op in SCALE_OPS for c in conds) or len({c.column for c in conds}) != 1:
        return None, None
    col = conds[0].column
    vals = np.array([_number(str(v)) for v in list(table[col])], dtype=object)
    if any(v is None for v in vals):
        return None, None
    return vals.astype(float)[np.asarray(rows, int)], col


def calibrate_fit(fit, inputs: dict[str, np.ndarray], y, units, unit_name: str, *, order=None,
                  level: float = 0.95, fixed: dict | None = None, options=None) -> UnitCalibration:
    """The law's out-of-unit residuals on the fitted runs (``inputs``, ``y``; one ``units`` label per run) and
    their calibration: each unit left out (or, with ``order``, predicted from the units below it), the law
    refitted without a bootstrap, the residuals in the law's residual space."""
    from scalinglab.fitting.laws import FitOptions, fit_law

    # A law with its own solver (Chinchilla's batched grid, numpy only) keeps it: the generic engine a warm start
    # needs would bring scipy onto `fit`'s path. Other laws already use the generic engine, so start it warm.
    law = warm_law(fit) if get_solver(fit.law.solver).generic else fit.law
    n_params = len(law.params) - len(fixed or {})
    refit_options = (options or FitOptions()).with_resampling(0)   # each refit without a bootstrap

    def fit_predict(train: np.ndarray, test: np.ndarray) -> np.ndarray:
        if int(train.sum()) < n_params + 1:
            raise UserError(f"{int(train.sum())} runs to fit {n_params} parameters")
        f = fit_law(law, {k: v[train] for k, v in inputs.items()}, np.asarray(y)[train], refit_options,
                    fixed=fixed or None)
        if f.status == "failed":
            raise UserError("refit failed")
        return f.predict({k: v[test] for k, v in inputs.items()})

    res = out_of_unit_residuals(np.asarray(y, float), units, fit_predict, space=law.space,
                                scheme="forward" if order is not None else "leave-one-out", order=order,
                                unit_name=unit_name)
    return UnitCalibration.from_residuals(res, level)


def warm_law(fit):
    """The fitted law with its estimate as the one start and the registry's generic solver: a refit without one
    unit moves the optimum a little, so the full grid of starts is not needed to find it again (as
    ``downstream.intervals`` refits its ladder's resamples)."""
    from dataclasses import replace

    params = tuple(replace(p, starts=(float(np.clip(fit.params[p.name], p.lower, p.upper)),))
                   for p in fit.law.params)
    return replace(fit.law, params=params, solver="least-squares")


def calibration_note(cal: UnitCalibration, order_col: str | None = None) -> dict[str, Any]:
    """What a saved fit keeps and a summary prints of a calibration."""
    return {**cal.to_dict(), "order_column": order_col}


def check_saved(d: Any) -> dict[str, Any] | None:
    """A saved fit's calibration record, checked (a ValueError names the field an edited file got wrong)."""
    if d is None:
        return None
    if not isinstance(d, dict):
        raise ValueError("calibration must be an object")
    # A calibration with fewer than 2 units has no bias to store (null): it gives no interval, and says why.
    few = isinstance(d.get("n_units"), int) and not isinstance(d.get("n_units"), bool) and d["n_units"] < 2
    for k in ("bias", "sigma_point", "level"):
        if few and k == "bias" and d.get(k) is None:
            continue
        if isinstance(d.get(k), bool) or not isinstance(d.get(k), (int, float)) or not np.isfinite(d[k]):
            raise ValueError(f"calibration {k} must be a finite number")
    su = d.get("sigma_unit")
    if su is not None and (isinstance(su, bool) or not isinstance(su, (int, float)) or su < 0):
        raise ValueError("calibration sigma_unit must be a number >= 0 or null")
    for k in ("n_units", "n_points"):
        if isinstance(d.get(k), bool) or not isinstance(d.get(k), int) or d[k] < 0:
            raise ValueError(f"calibration {k} must be a whole number >= 0")
    if not 0 < d["level"] < 1 or d["sigma_point"] < 0:
        raise ValueError("calibration level must lie in (0, 1) and sigma_point be >= 0")
    if d.get("scheme") not in ("leave-one-out", "forward") or d.get("space") not in ("log", "logit", "linear"):
        raise ValueError("calibration scheme or space unknown")
    if not isinstance(d.get("unit"), str):
        raise ValueError("calibration unit must be a string")
    return d


def from_saved(d: dict[str, Any] | None) -> UnitCalibration | None:
    """A calibration saved with a fit (``calibration_note``), back as a ``UnitCalibration``; None if absent."""
    if not d:
        return None
    mu = float("nan") if d["bias"] is None else float(d["bias"])
    return UnitCalibration(mu=mu, sigma_unit=float(d["sigma_unit"]) if d["sigma_unit"] is not None
                           else float("nan"), sigma_point=float(d["sigma_point"]), n_units=int(d["n_units"]),
                           n_points=int(d["n_points"]), level=float(d["level"]), scheme=str(d["scheme"]),
                           space=str(d["space"]), unit_name=str(d["unit"]),
                           failed=tuple(d.get("failed_units") or ()))
