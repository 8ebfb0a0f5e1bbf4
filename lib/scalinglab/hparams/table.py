"""A table of grid runs read as ``HparamRuns``: a CSV (columns by flag, else the usual names) or a registered
dataset (its roles), every value checked, a bad one named by file, column and line."""

from __future__ import annotations

import numpy as np

from scalinglab.errors import OptionError, UserError
from scalinglab.hparams.optima import HparamRuns

# The usual names of a plain CSV's columns (a dataset's roles name its own).
DEFAULTS = {"n": "N", "d": "D", "loss": "loss", "lr": "lr", "batch": "batch"}


def hparam_runs(path: str | None = None, *, dataset: str | None = None, n_col=None, d_col=None, loss_col=None,
                lr_col=None, batch_col=None, seq_len: int | None = None) -> HparamRuns:
    """The runs of ``path`` or ``dataset``; ``seq_len``: the batch column counts sequences of that many tokens."""
    from scalinglab.runs import load_runs

    if seq_len is not None and seq_len < 1:
        raise OptionError(f"{{seq_len}} must be a whole number of at least 1, got {seq_len}", "seq_len")
    runs = load_runs(path, dataset=dataset)
    given = {"n": n_col, "d": d_col, "loss": loss_col, "lr": lr_col, "batch": batch_col}
    cols = {r: given[r] or runs.roles.get(r) or DEFAULTS[r] for r in DEFAULTS}
    table = runs.table
    names = list(table.columns) if hasattr(table, "columns") else list(table)
    lines = getattr(table, "lines", None)
    values = {}
    for role, col in cols.items():
        if col not in names:
            flag = "--" + ("batch" if role == "batch" else role) + "-col"
            raise UserError(f"{runs.label}: no column {col!r} for {role} (columns: {', '.join(map(str, names))}; "
                            f"name it with {flag})")
        values[role] = _numbers(table[col], col, runs.label, lines)
    if values["n"].size < 1:
        raise UserError(f"{runs.label}: no runs")
    batch = values["batch"] * (seq_len or 1)
    return HparamRuns.from_arrays(values["n"], values["d"], values["lr"], batch, values["loss"], runs.label)


def _numbers(cells, col: str, label: str, lines) -> np.ndarray:
    out = np.empty(len(cells))
    for i, c in enumerate(list(cells)):
        try:
            v = float(c)
        except (TypeError, ValueError):
            v = float("nan")
        if not (np.isfinite(v) and v > 0):
            where = f"line {lines[i]}" if lines else f"row {i + 1}"
            raise UserError(f"{label}: column {col!r}, {where}: {c!r} is not a positive number")
        out[i] = v
    return out
