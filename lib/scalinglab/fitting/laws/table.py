"""Registry laws on tables: which column plays which role, fits on chosen rows, predictions of other rows.

``Columns`` names the columns (``n``, ``d`` or ``c`` with D = C/(6N), ``u``,
``x``, ``loss``, ``y``); ``inputs_at`` reads a law's inputs and target at some
rows, naming the column and the table's row of a bad value; ``fit_table``
fits; ``predict_rows`` gives a fitted law's predictions for rows it never saw,
with bootstrap intervals and the log errors that ``compare`` scores (RMSLE).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from scalinglab.errors import RowError, UserError
from scalinglab.fitting import holdout as H
from scalinglab.fitting.form import Law
from scalinglab.fitting.huber import HUBER_DELTA
from scalinglab.fitting.laws.base import fit_law
from scalinglab.fitting.results import LawFit
from scalinglab.serialization import to_jsonable


@dataclass(frozen=True)
class Columns:
    """Column names by role; ``c`` (compute, D = C/(6N)) replaces ``d``; ``y``: a downstream metric."""

    n: str = "N"
    d: str | None = "D"
    loss: str = "loss"
    c: str | None = None
    u: str | None = None
    x: str | None = None
    y: str | None = None

    @classmethod
    def from_roles(cls, roles, given=None, *, tokens: bool = True) -> Columns:
        """Columns from what was asked for (``given``: role -> column, None for not asked), else a dataset's
        ``roles``, else the usual names. D per run, or training compute C (D = C/(6N)): the one asked for, else
        the dataset's D, else its C, else a column D; ``tokens=False`` (a law without D) leaves both unset
        unless asked for."""
        given = {k: v for k, v in (given or {}).items() if v}
        d, c = given.get("d"), given.get("c")
        if tokens and not (c or d):
            if "d" in roles or "c" not in roles:
                d = roles.get("d", "D")
            else:
                c = roles["c"]
        pick = lambda role, default=None: given.get(role) or roles.get(role, default)  # noqa: E731
        return cls(n=pick("n", "N"), d=d, loss=pick("loss", "loss"), c=c, u=pick("u"), x=pick("x"), y=pick("y"))

    def for_role(self, role: str) -> str | None:
        return {"n": self.n, "d": self.d, "u": self.u, "x": self.x, "loss": self.loss}[role]

    def target(self, law: Law) -> str | None:
        return self.loss if law.target == "loss" else self.y


def _values(table, col: str | None, rows: np.ndarray, what: str, positive: bool) -> np.ndarray:
    if col is None:
        raise UserError(f"no column given for {what}")
    if col not in table:
        raise UserError(f"no column {col!r} ({what}); the table has {', '.join(map(str, table))}")
    cells = list(table[col])
    out = np.empty(len(rows))
    for k, i in enumerate(rows):
        try:
            v = float(cells[i])
        except (TypeError, ValueError):
            raise RowError(f"column {col!r} holds a non-number at {{row}}: {cells[i]!r}", i) from None
        if not np.isfinite(v):
            raise RowError(f"column {col!r} has a missing or non-finite value at {{row}}", i)
        if positive and v <= 0:
            raise RowError(f"column {col!r} must be positive; {{row}} is {v:g}", i)
        out[k] = v
    return out


def inputs_at(law: Law, table, rows, cols: Columns) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """(inputs by role, target) of ``law`` at the table's ``rows``; D = C/(6N) when ``cols.c`` is set."""
    rows = np.asarray(rows, int)
    inputs: dict[str, np.ndarray] = {}
    for role in law.inputs:
        if role == "d" and cols.c:
            c = _values(table, cols.c, rows, "training compute C", True)
            inputs["d"] = c / (6.0 * inputs.get("n", _values(table, cols.n, rows, "parameters N", True)))
            continue
        positive = role != "x" or law.name != "logit"
        inputs[role] = _values(table, cols.for_role(role), rows, {"n": "parameters N", "d": "training tokens D",
                               "u": "unique tokens U", "x": "x", "loss": "the loss"}[role], positive)
    target = cols.target(law)
    y = _values(table, target, rows, "the target", law.target == "loss")
    bad = np.flatnonzero(((y <= 0) | (y >= 1)) if law.space == "logit" else np.zeros(len(y), bool))
    if bad.size:
        raise RowError(f"column {target!r} must lie strictly between 0 and 1 for law {law.name} (its logit is "
                       f"fitted); {{row}} is {y[bad[0]]:g}", int(rows[bad[0]]))
    return inputs, y


def fit_table(law: Law, table, cols: Columns, rows=None, *, fixed=None, objective: str | None = None,
              delta: float = HUBER_DELTA, n_boot: int = 0, seed: int = 0, level: float = 0.95,
              groups: str | None = None, drop_highest: int = 0, progress: bool = False) -> LawFit:
    """Fit ``law`` to the table's ``rows`` (a mask, conditions ANDed, or None for all); ``groups``: a column
    whose values the bootstrap resamples whole; ``drop_highest``: leave out the K highest targets first."""
    mask = H.rows_mask(table, rows)
    picked = np.flatnonzero(mask)
    if not picked.size:
        raise UserError("no rows to fit")
    inputs, y = inputs_at(law, table, picked, cols)
    if drop_highest:
        from scalinglab.fitting.approach3 import keep_below_highest

        keep = keep_below_highest(y, drop_highest)
        inputs, y, picked = {k: v[keep] for k, v in inputs.items()}, y[keep], picked[keep]
    labels = None if groups is None else H.group_labels(table, groups)[picked]
    return fit_law(law, inputs, y, fixed=fixed, objective=objective, delta=delta, n_boot=n_boot, seed=seed, level=level,
                   groups=labels, unit=groups or "groups", progress=progress)


@dataclass(frozen=True)
class LawPredictions:
    """A fitted law's predictions for some rows, with their actual values and bootstrap intervals (NaN without).
    ``log_error`` = log(predicted/actual), what RMSLE squares."""

    rows: np.ndarray
    actual: np.ndarray
    predicted: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    level: float
    draws: np.ndarray | None = None

    @property
    def rel_error(self) -> np.ndarray:
        return (self.predicted - self.actual) / self.actual

    @property
    def log_error(self) -> np.ndarray:
        with np.errstate(all="ignore"):
            return np.log(self.predicted) - np.log(self.actual)

    def rmsle(self) -> float:
        return float(np.sqrt(np.mean(self.log_error ** 2)))

    @property
    def has_interval(self) -> bool:
        return bool(np.isfinite(self.lower).any())

    def stats(self) -> dict[str, Any]:
        err = np.abs(self.rel_error)
        out = {"n": len(err), "rmsle": self.rmsle(), "mean_abs_rel_error": float(np.mean(err)),
               "max_abs_rel_error": float(np.max(err)), "mean_rel_error": float(np.mean(self.rel_error))}
        if self.has_interval:
            out.update(level=self.level, n_inside_interval=int(((self.actual >= self.lower)
                                                                 & (self.actual <= self.upper)).sum()))
        return out

    def to_dict(self) -> dict[str, Any]:
        rows = [{"row": int(r), "actual": float(a), "predicted": float(p)}
                | ({"interval": [float(lo), float(hi)]} if self.has_interval else {})
                for r, a, p, lo, hi in zip(self.rows, self.actual, self.predicted, self.lower, self.upper)]
        return to_jsonable({"summary": self.stats(), "rows": rows})

    def summary(self, what: str = "predicted", n_fit: int | None = None) -> str:
        fitted = "" if n_fit is None else f"; the law was fitted on {n_fit}"
        head = f"{'row':>5}{'actual':>11}{'predicted':>11}{'rel err':>10}"
        if self.has_interval:
            head += f"   {round(self.level * 100):d}% interval"
        lines = [f"{len(self.rows)} runs {what}{fitted}", head]
        for i in range(len(self.rows)):
            row = (f"{self.rows[i]:>5d}{self.actual[i]:>11.4f}{self.predicted[i]:>11.4f}"
                   f"{self.rel_error[i]:>+10.2%}")
            if self.has_interval:
                inside = self.lower[i] <= self.actual[i] <= self.upper[i]
                row += f"   [{self.lower[i]:.4f}, {self.upper[i]:.4f}]" + ("" if inside else "  outside")
            lines.append(row)
        s = self.stats()
        lines += ["", f"RMSLE {s['rmsle']:.4f}; |rel err| mean {s['mean_abs_rel_error']:.2%}, max "
                      f"{s['max_abs_rel_error']:.2%}"
                  + (f"; {s['n_inside_interval']} of {s['n']} inside their interval (parameter uncertainty only)"
                     if self.has_interval else "")]
        return "\n".join(lines)


def predict_rows(fit: LawFit, table, rows, cols: Columns, level: float | None = None) -> LawPredictions:
    """``fit``'s predictions for the table's ``rows`` (indices), with intervals from its bootstrap."""
    rows = np.asarray(rows, int)
    inputs, y = inputs_at(fit.law, table, rows, cols)
    return predict_arrays(fit, inputs, y, rows, level)


def predict_arrays(fit: LawFit, inputs, y, rows=None, level: float | None = None) -> LawPredictions:
    bs = fit.bootstrap
    level = level if level is not None else (bs.level if bs is not None else 0.95)
    y = np.asarray(y, float)
    draws = fit.draws(inputs)
    lower = upper = np.full(len(y), np.nan)
    if draws is not None:
        with np.errstate(all="ignore"):
            lower, upper = np.nanpercentile(draws, [(1 - level) / 2 * 100, (1 + level) / 2 * 100], axis=0)
    rows = np.arange(len(y)) if rows is None else np.asarray(rows, int)
    return LawPredictions(rows, y, fit.predict(inputs), lower, upper, level, draws)
