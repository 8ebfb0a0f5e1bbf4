"""Which column plays which role, and the one reader from a table's rows to a law's arrays.

``Columns`` names the columns (``n``, ``d`` or ``c`` with D = C/(6N), ``u``, ``x``, ``loss``, ``y``);
``inputs_at`` reads a law's inputs and target at some rows, every cell checked (a number, finite, positive where
the role needs it), naming the column and the table's row of a bad value. Every table-to-fit path reads through
it: ``sl.fit`` and `scalinglab fit` (``workflow``), held-out checks (``holdout.runs_at``), law comparisons, and
Chinchilla's ``approach3.runs_from_table``. numpy only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from scalinglab.errors import RowError, UserError
from scalinglab.fitting.conditions import _number
from scalinglab.fitting.form import Law


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

    def names(self, law: Law) -> dict[str, str]:
        """The column each of ``law``'s inputs and its target is read from (D as C/(6N) from compute)."""
        out = {r: (f"{self.c}/(6*{self.n})" if r == "d" and self.c else self.for_role(r)) for r in law.inputs}
        return {**out, "y": self.target(law)}

    def for_role(self, role: str) -> str | None:
        return {"n": self.n, "d": self.d, "u": self.u, "x": self.x, "loss": self.loss}[role]

    def target(self, law: Law) -> str | None:
        return self.loss if law.target == "loss" else self.y


def _values(table, col: str | None, rows: np.ndarray, what: str, positive: bool) -> np.ndarray:
    if col is None:
        raise UserError(f"no column given for {what}")
    if col not in table:
        raise UserError(f"no column {col!r} ({what}); the table has {', '.join(map(str, table))}")
    column = table[col]
    try:   # the usual case, a column of numbers, at numpy's speed; anything odd is read cell by cell below
        fast = np.asarray(column, dtype=float)[rows]
        if np.all(np.isfinite(fast)) and (not positive or np.all(fast > 0)):
            return fast
    except (TypeError, ValueError):
        pass
    cells = list(column)
    out = np.empty(len(rows))
    for k, i in enumerate(rows):
        try:
            v = float(cells[i])
        except (TypeError, ValueError):
            raise RowError(f"column {col!r} holds a non-number at {{row}}: {cells[i]!r}", i) from None
        if not np.isfinite(v):
            # a non-number (None here) is reported as such, not counted among the missing values
            n_bad = sum(x is not None and not np.isfinite(x) for x in (_number(cells[j]) for j in rows))
            raise RowError(f"column {col!r} has {n_bad} missing or non-finite value(s) (first at {{row}})", i)
        if positive and v <= 0:
            raise RowError(f"column {col!r} must be positive; {{row}} is {v:g}", i)
        out[k] = v
    return out


def inputs_at(law: Law, table, rows, cols: Columns, *, target: bool = True) -> tuple[dict[str, np.ndarray], Any]:
    """(inputs by role, target) of ``law`` at the table's ``rows``; D = C/(6N) when ``cols.c`` is set.
    ``target=False``: runs not trained yet (a proposal, runs to predict), their target None."""
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
    if not target:
        return inputs, None
    target = cols.target(law)
    y = _values(table, target, rows, "the target", law.target == "loss")
    bad = np.flatnonzero(((y <= 0) | (y >= 1)) if law.space == "logit" else np.zeros(len(y), bool))
    if bad.size:
        raise RowError(f"column {target!r} must lie strictly between 0 and 1 for law {law.name} (its logit is "
                       f"fitted); {{row}} is {y[bad[0]]:g}", int(rows[bad[0]]))
    return inputs, y
