"""Row conditions, ``COL OP VALUE`` with OP one of ``== != < <= > >= ~`` (``~``: the cell contains VALUE):
parsed here, never evaluated, numpy only (``scalinglab fit`` keeps its fast start). ``--holdout``, ``--where``
and the notebooks' selections all go through ``chosen`` (every command's ``--where``, one message), ``where``
and ``any_of``."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scalinglab.errors import RowError, UserError

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
            raise RowError(f"{cond.text!r}: column {cond.column!r} holds a non-number at {{row}}: {c!r}", i)
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


def no_rows(conditions, n_rows: int | None = None) -> str:
    """What to say when a table has no rows to use: the conditions match none (of ``n_rows``), or it has none."""
    of = "the rows" if n_rows is None else f"the {n_rows} rows"
    return (f"{' and '.join(map(repr, conditions))} matches none of {of}" if conditions
            else "the table has no rows (a header only)")


def selected(table, conditions) -> np.ndarray:
    """The indices of the rows matching every condition, or a UserError (``chosen``'s) when there are none."""
    return np.flatnonzero(chosen(table, conditions))


def chosen(table, conditions) -> np.ndarray:
    """Rows matching every condition (AND), as a mask: the one selection behind ``--where`` in every command.

    The conditions are applied one at a time, so that an empty result names the condition that emptied it, how
    many rows it saw, and what its column holds there. A table with no rows is refused the same way."""
    n = _n_rows(table)
    if not n:
        raise UserError(no_rows([]))
    mask = np.ones(n, bool)
    before: list[str] = []
    for cond in _conditions(conditions):
        narrowed = mask & cond.mask(table)
        if not narrowed.any():
            left = f"the {n} rows" if not before else f"the {int(mask.sum())} rows left by {' and '.join(before)}"
            holds = holding(table, cond.column, mask)
            raise UserError(f"{cond.text!r} matches none of {left} ({cond.column} holds {holds})")
        mask = narrowed
        before.append(repr(cond.text))
    return mask


def holding(table, column: str, mask: np.ndarray) -> str:
    """What ``column`` holds on the masked rows, for a message: a range of numbers, or up to 12 distinct values."""
    cells = [c for c, keep in zip(list(table[column]), mask) if keep]
    numbers = [_number(str(c)) for c in cells]
    if numbers and all(x is not None for x in numbers):
        lo, hi = min(numbers), max(numbers)
        return f"{lo:g}" if lo == hi else f"{lo:g} to {hi:g}"
    seen = sorted({str(c).strip() for c in cells})
    return ", ".join(seen[:12]) + (", ..." if len(seen) > 12 else "")


def any_of(table, conditions) -> np.ndarray:
    """Rows matching at least one condition (OR): several --holdout flags hold out their union."""
    mask = np.zeros(_n_rows(table), bool)
    for cond in _conditions(conditions):
        mask |= cond.mask(table)
    return mask


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


def split_rows(table, select, held_out=None) -> tuple[np.ndarray, np.ndarray]:
    """(rows to fit, rows held out) as table indices: ``select`` (a mask or conditions, all met) chooses the rows,
    and of those the ones ``held_out`` matches (a mask or conditions, any of them) are held out. A selection that
    matches nothing, or a hold-out that takes none of the chosen rows or all of them, is a one-line UserError."""
    keep = rows_mask(table, select) if is_mask(select) or select is None else chosen(table, select)
    if not keep.any():
        raise UserError(f"the selection mask matches none of the {keep.size} rows" if is_mask(select)
                        else no_rows([], keep.size))
    if held_out is None or (not is_mask(held_out) and not _conditions(held_out)):
        return np.flatnonzero(keep), np.array([], int)
    out = rows_mask(table, held_out, match="any") & keep
    what = "the hold-out mask" if is_mask(held_out) else " or ".join(repr(str(c)) for c in _conditions(held_out))
    if not out.any():
        raise UserError(f"{what} holds out none of the {keep.sum()} selected rows")
    if out.sum() == keep.sum():
        raise UserError(f"{what} holds out all {keep.sum()} selected rows, leaving none to fit")
    return np.flatnonzero(keep & ~out), np.flatnonzero(out)
