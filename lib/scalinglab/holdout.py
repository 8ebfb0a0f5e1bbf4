"""Held-out checks: fit L(N, D) on some runs, predict the others, report the relative errors.

A fitted law is only as good as its extrapolation, so the test of one is runs
it never saw: over-trained runs (large D/N) or larger models. ``holdout``
splits a table by a mask or by small conditions (``"tokens>1e11"``), fits the
training part with ``fit.fit_arrays`` and returns per-row predictions,
relative errors and a summary. When a bootstrap was run, each converged
replicate predicts every held-out row, and the percentiles of those
predictions give an interval.

That interval is parameter uncertainty only: it has no term for run-to-run
noise or for the law's form being wrong, so held-out runs falling outside it
say the form (or the training range) does not extrapolate, not that the
interval is too narrow by a constant.

Conditions are ``COL OP VALUE`` with OP one of ``== != < <= > >= ~`` (``~``:
the cell contains VALUE as a substring). They are parsed here, never
evaluated, and numpy is the only dependency, so ``scalinglab fit`` keeps its
fast start.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Sequence

import numpy as np

from scalinglab import fit as F
from scalinglab.errors import UserError

OPS = ("<=", ">=", "==", "!=", "<", ">", "~")  # two-character operators first, so "<=" is not read as "<"
NUMERIC_OPS = ("<", "<=", ">", ">=")


@dataclass(frozen=True)
class Condition:
    """One row filter, ``column op value``; ``text`` is what the user wrote, for messages."""

    column: str
    op: str
    value: str
    text: str

    def __str__(self) -> str:
        return self.text

    def mask(self, table) -> np.ndarray:
        """Boolean mask over the table's rows, or a UserError naming the column or value."""
        if self.column not in table:
            raise UserError(f"{self.text!r}: no column {self.column!r}; the table has {', '.join(map(str, table))}")
        cells = list(table[self.column])
        if self.op == "~":
            return np.array([self.value in str(c) for c in cells], bool)
        number = _number(self.value)
        if self.op in NUMERIC_OPS:
            if number is None:
                raise UserError(f"{self.text!r}: {self.value!r} is not a number ({self.op} compares numbers)")
            x = _numbers(cells, self)
            return {"<": x < number, "<=": x <= number, ">": x > number, ">=": x >= number}[self.op]
        # == and != compare as numbers when both sides are numbers ("1" == "1.0"), else as text.
        numeric = [_number(str(c)) for c in cells]
        if number is not None and all(v is not None for v in numeric):
            eq = np.array(numeric, float) == number
        else:
            eq = np.array([str(c).strip() == self.value for c in cells], bool)
        return eq if self.op == "==" else ~eq


def parse_condition(text: str) -> Condition:
    """``"COL OP VALUE"`` → Condition; spaces around OP are allowed, quotes around VALUE dropped."""
    s = str(text)
    at = min((i for i in (s.find(op) for op in OPS) if i >= 0), default=-1)
    if at <= 0:
        raise UserError(f"{s!r}: expected COL OP VALUE with OP one of {' '.join(OPS)} (e.g. 'tokens>1e11')")
    op = next(o for o in OPS if s.startswith(o, at))
    column, value = s[:at].strip(), s[at + len(op):].strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        value = value[1:-1]
    if not column or not value:
        raise UserError(f"{s!r}: expected COL OP VALUE with OP one of {' '.join(OPS)} (e.g. 'tokens>1e11')")
    return Condition(column, op, value, s)


def _number(text: str) -> float | None:
    try:
        x = float(text)
    except (TypeError, ValueError):
        return None
    return x


def _numbers(cells: list, cond: Condition) -> np.ndarray:
    out = np.empty(len(cells))
    for i, c in enumerate(cells):
        x = _number(c)
        if x is None:
            raise UserError(f"{cond.text!r}: column {cond.column!r} holds a non-number at row {i}: {c!r}")
        out[i] = x
    return out


def _conditions(conds) -> list[Condition]:
    if conds is None:
        return []
    if isinstance(conds, (str, Condition)):
        conds = [conds]
    return [c if isinstance(c, Condition) else parse_condition(c) for c in conds]


def _n_rows(table) -> int:
    return len(next(iter(table.values())) if isinstance(table, dict) else table)


def where(table, conditions) -> np.ndarray:
    """Rows matching every condition (AND); all rows when there are none."""
    mask = np.ones(_n_rows(table), bool)
    for cond in _conditions(conditions):
        mask &= cond.mask(table)
    return mask


def any_of(table, conditions) -> np.ndarray:
    """Rows matching at least one condition (OR): several --holdout flags hold out their union."""
    mask = np.zeros(_n_rows(table), bool)
    for cond in _conditions(conditions):
        mask |= cond.mask(table)
    return mask


# --- predictions ---------------------------------------------------------


@dataclass(frozen=True)
class Predictions:
    """A law's predictions for some runs, with their table rows, actual losses and errors.

    ``rel_error`` is (predicted − actual)/actual: negative means the law
    promised a lower loss than the run reached. ``lower``/``upper`` are the
    bootstrap interval at ``level`` (NaN without a bootstrap).
    """

    rows: np.ndarray
    N: np.ndarray
    D: np.ndarray
    actual: np.ndarray
    predicted: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    level: float

    @property
    def rel_error(self) -> np.ndarray:
        return (self.predicted - self.actual) / self.actual

    @property
    def has_interval(self) -> bool:
        return bool(np.isfinite(self.lower).any())

    @property
    def inside(self) -> np.ndarray:
        """Whether each actual loss lies in its interval (False without one)."""
        return (self.actual >= self.lower) & (self.actual <= self.upper)

    def summary(self) -> dict[str, Any]:
        err = np.abs(self.rel_error)
        worst = int(np.argmax(err))
        out: dict[str, Any] = {"n": len(err), "mean_abs_rel_error": float(err.mean()),
                               "median_abs_rel_error": float(np.median(err)), "max_abs_rel_error": float(err[worst]),
                               "worst_row": int(self.rows[worst]), "mean_rel_error": float(self.rel_error.mean())}
        if self.has_interval:
            out["level"] = self.level
            out["n_inside_interval"] = int(self.inside.sum())
        return out

    def to_dict(self) -> dict[str, Any]:
        rows = []
        for i in range(len(self.rows)):
            row = {"row": int(self.rows[i]), "N": float(self.N[i]), "D": float(self.D[i]),
                   "actual": float(self.actual[i]), "predicted": float(self.predicted[i]),
                   "rel_error": float(self.rel_error[i])}
            if self.has_interval:
                row["interval"] = [float(self.lower[i]), float(self.upper[i])]
            rows.append(row)
        return {"summary": self.summary(), "rows": rows}


def predict(result: F.FitResult, N, D, actual, *, rows=None, level: float | None = None) -> Predictions:
    """Predict runs (N, D) with ``result`` and compare with ``actual``; intervals from its bootstrap, if any."""
    N, D, actual = (np.asarray(x, float).ravel() for x in (N, D, actual))
    bs = result.bootstrap
    level = level if level is not None else (bs.level if bs is not None else 0.95)
    lower = upper = np.full(len(N), np.nan)
    if bs is not None and len(bs.samples):
        E, A, B, al, be = (bs.samples[:, i, None] for i in range(5))
        draws = E + A / N**al + B / D**be  # (replicates, runs)
        lower, upper = np.percentile(draws, [(1 - level) / 2 * 100, (1 + level) / 2 * 100], axis=0)
    rows = np.arange(len(N)) if rows is None else np.asarray(rows, int)
    return Predictions(rows=rows, N=N, D=D, actual=actual, predicted=np.asarray(result.loss(N, D), float),
                       lower=lower, upper=upper, level=level)


@dataclass(frozen=True)
class HoldoutResult:
    """The fit on the training rows and its predictions for the held-out rows (row numbers are the table's)."""

    fit: F.FitResult
    train_rows: np.ndarray
    heldout: Predictions
    conditions: tuple[str, ...] = ()

    def summary(self) -> dict[str, Any]:
        return self.heldout.summary()

    def to_dict(self) -> dict[str, Any]:
        return {"conditions": list(self.conditions), "n_train": len(self.train_rows), **self.heldout.to_dict()}


def _checked(table, col: str, rows: np.ndarray) -> np.ndarray:
    """A column's values at ``rows``, finite and positive, or a UserError naming the table's row."""
    if col not in table:
        raise UserError(f"no column {col!r}; the table has {', '.join(map(str, table))}")
    cells = list(table[col])
    out = np.empty(len(rows))
    for k, i in enumerate(rows):
        x = _number(cells[i])
        if x is None:
            raise UserError(f"column {col!r} holds a non-number at row {i}: {cells[i]!r}")
        if not np.isfinite(x):
            raise UserError(f"column {col!r} has a missing or non-finite value at row {i}")
        if x <= 0:
            raise UserError(f"column {col!r} must be positive; row {i} is {x:g}")
        out[k] = x
    return out


def runs_at(table, rows, n_col: str = "N", d_col: str | None = "D", loss_col: str = "loss", *,
            c_col: str | None = None):
    """(N, D, L, names) of the given rows; D = C/(6N) when ``c_col`` is given. Errors name table rows."""
    rows = np.asarray(rows, int)
    N, L, X = (_checked(table, c, rows) for c in (n_col, loss_col, c_col or d_col))
    if c_col:
        return N, X / (6.0 * N), L, (n_col, f"{c_col}/(6*{n_col})", loss_col)
    return N, X, L, (n_col, d_col, loss_col)


def holdout(table, held_out, n_col: str = "N", d_col: str | None = "D", loss_col: str = "loss", *,
            c_col: str | None = None, select=None, options: F.FitOptions | None = None, drop_highest: int = 0,
            n_boot: int = 0, seed: int = 0, level: float = 0.95, progress: bool = False) -> HoldoutResult:
    """Fit the rows not held out and predict the held-out ones.

    ``held_out``: a boolean mask over the table's rows, or conditions (a
    string or a list; a row matching any is held out). ``select``: a mask or
    conditions every row considered must match (rows outside it are neither
    fitted nor predicted). ``drop_highest`` drops the K highest losses of the
    training rows only: held-out runs are never edited.
    """
    n = _n_rows(table)
    keep, out = rows_mask(table, select), rows_mask(table, held_out, match="any")
    texts = tuple(str(c) for c in _conditions(held_out)) if not is_mask(held_out) else ()
    what = " or ".join(map(repr, texts)) or "the hold-out mask"
    if not keep.any():
        chosen = "the selection mask" if is_mask(select) else " and ".join(repr(str(c)) for c in _conditions(select))
        raise UserError(f"{chosen} matches none of the {n} rows")
    test_rows, train_rows = np.flatnonzero(keep & out), np.flatnonzero(keep & ~out)
    if not test_rows.size:
        raise UserError(f"{what} holds out none of the {keep.sum()} selected rows")
    if not train_rows.size:
        raise UserError(f"{what} holds out all {keep.sum()} selected rows, leaving none to fit")
    N, D, L, names = runs_at(table, train_rows, n_col, d_col, loss_col, c_col=c_col)
    kept = F.keep_below_highest(L, drop_highest)
    train_rows, N, D, L = train_rows[kept], N[kept], D[kept], L[kept]
    res = F.fit_arrays(N, D, L, options, n_boot=n_boot, seed=seed, level=level, names=names, progress=progress)
    tN, tD, tL, _ = runs_at(table, test_rows, n_col, d_col, loss_col, c_col=c_col)
    return HoldoutResult(fit=res, train_rows=train_rows, heldout=predict(res, tN, tD, tL, rows=test_rows, level=level),
                         conditions=texts)


def is_mask(x) -> bool:
    return x is not None and not isinstance(x, (str, Condition)) and np.asarray(x).dtype == bool


def rows_mask(table, rows, *, match: str = "all") -> np.ndarray:
    """A boolean mask over the table's rows from ``rows``: a boolean mask (checked for length),
    conditions (a row must match all of them, or any with ``match="any"``), or None (every row)."""
    n = _n_rows(table)
    if is_mask(rows):
        mask = np.asarray(rows, bool)
        if mask.shape != (n,):
            raise UserError(f"the mask has {mask.size} entries; the table has {n} rows")
        return mask
    if rows is None:
        return np.ones(n, bool)
    return any_of(table, rows) if match == "any" else where(table, rows)


def sweep_training_range(table, column: str, limits: Sequence[float], target, n_col: str = "N",
                         d_col: str | None = "D", loss_col: str = "loss", *, select=None,
                         options: F.FitOptions | None = None) -> list[HoldoutResult]:
    """For each limit m, fit the rows with ``column <= m`` (and not in ``target``) and predict ``target``.

    The target rows stay the same across limits, so the errors compare: how
    much of the extrapolated range must the training runs cover?
    """
    keep, tgt = rows_mask(table, select), rows_mask(table, target, match="any")
    out = []
    for m in limits:
        beyond = ~where(table, Condition(column, "<=", repr(float(m)), f"{column}<={m:g}"))
        res = holdout(table, tgt | beyond, n_col, d_col, loss_col, select=keep, options=options)
        # Predict only the common target: rows beyond the limit but outside it are dropped from the report.
        on_target = tgt[res.heldout.rows]
        h = res.heldout
        sub = replace(h, **{k: getattr(h, k)[on_target] for k in ("rows", "N", "D", "actual", "predicted",
                                                                 "lower", "upper")})
        out.append(replace(res, heldout=sub, conditions=(f"{column}<={m:g}",)))
    return out
