"""Registry laws on tables: fits on chosen rows, predictions of other rows.

The columns and their one reader live in ``fitting.columns`` (``Columns``, ``inputs_at``, re-exported here);
``fit_table`` fits; ``predict_rows`` gives a fitted law's predictions for rows it never saw,
with bootstrap intervals and the log errors that ``compare`` scores (RMSLE): ``predictions.Predictions``.
"""

from __future__ import annotations

import numpy as np

from scalinglab.errors import UserError
from scalinglab.fitting.columns import Columns, inputs_at  # noqa: F401  (re-exported)
from scalinglab.fitting.conditions import rows_mask
from scalinglab.fitting.form import Law
from scalinglab.fitting.laws.base import fit_law
from scalinglab.fitting.options import FitOptions
from scalinglab.fitting.predictions import Predictions, predict
from scalinglab.fitting.results import LawFit
from scalinglab.fitting.rows import group_labels


def fit_table(law: Law, table, cols: Columns, rows=None, options: FitOptions | None = None, *, fixed=None,
              objective: str | None = None, delta: float | None = None, n_boot: int | None = None,
              seed: int | None = None, level: float | None = None, groups: str | None = None, drop_highest: int = 0,
              progress: bool = False) -> LawFit:
    """Fit ``law`` to the table's ``rows`` (a mask, conditions ANDed, or None for all) as ``options`` say
    (``fit_law``; keywords override their fields); ``groups`` (else ``options.resampling.by``): a column whose
    values the bootstrap resamples whole; ``drop_highest``: leave out the K highest targets first."""
    groups = groups or (options.resampling.by if options is not None else None)
    mask = rows_mask(table, rows)
    picked = np.flatnonzero(mask)
    if not picked.size:
        raise UserError("no rows to fit")
    inputs, y = inputs_at(law, table, picked, cols)
    if drop_highest:
        from scalinglab.fitting.rows import keep_below_highest

        keep = keep_below_highest(y, drop_highest)
        inputs, y, picked = {k: v[keep] for k, v in inputs.items()}, y[keep], picked[keep]
    labels = None if groups is None else group_labels(table, groups)[picked]
    return fit_law(law, inputs, y, options, fixed=fixed, objective=objective, delta=delta, n_boot=n_boot, seed=seed,
                   level=level, groups=labels, unit=groups, progress=progress, names=cols.names(law))


def predict_rows(fit: LawFit, table, rows, cols: Columns, level: float | None = None,
                 sigma: float | None = None) -> Predictions:
    """``fit``'s predictions for the table's ``rows`` (indices), with intervals from its bootstrap and, with
    ``sigma`` (``predictions.residual_sd`` of the fitted runs), new-run intervals."""
    rows = np.asarray(rows, int)
    inputs, y = inputs_at(fit.law, table, rows, cols)
    return predict(fit, inputs, y, rows=rows, level=level, sigma=sigma)


def predict_arrays(fit: LawFit, inputs, y, rows=None, level: float | None = None) -> Predictions:
    """``fit``'s predictions at ``inputs`` (role -> values) against the actual ``y``."""
    return predict(fit, inputs, y, rows=rows, level=level)
