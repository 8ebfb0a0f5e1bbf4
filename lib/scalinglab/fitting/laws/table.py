"""Registry laws on tables: fits on chosen rows, predictions of other rows.

The columns and their one reader live in ``fitting.columns`` (``Columns``, ``inputs_at``, re-exported here);
``fit_rows`` is the one step from a table's rows to a fit (``fit_table`` takes a mask or conditions);
``predict_rows`` gives a fitted law's predictions for rows it never saw,
with bootstrap intervals and the log errors that ``compare`` scores (RMSLE): ``predictions.Predictions``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from scalinglab.errors import UserError
from scalinglab.fitting.columns import Columns, inputs_at  # noqa: F401  (re-exported)
from scalinglab.fitting.conditions import rows_mask
from scalinglab.fitting.form import Law
from scalinglab.fitting.laws.base import fit_law
from scalinglab.fitting.options import FitOptions
from scalinglab.fitting.prediction.held_out import Predictions, predict
from scalinglab.fitting.results import FitData, LawFit
from scalinglab.fitting.rows import group_labels, keep_below_highest


def fit_rows(law: Law, table, rows, cols: Columns, options: FitOptions | None = None, *, fixed=None,
             groups=None, unit: str | None = None, drop_highest: int = 0, progress: bool = False,
             check_inputs: Callable[[dict], None] | None = None,
             check_labels: Callable[[np.ndarray], None] | None = None) -> LawFit:
    """The one step from a table to a fit: read ``law``'s columns at ``rows`` (indices) through the one reader,
    drop the K highest targets, label each row's resampling group (``groups``: a column or one label per table
    row, else ``options.resampling.by``; ``unit`` names them), and fit (``fit_law``, as ``options`` say). The fit
    keeps what it was fitted to (``LawFit.data``: inputs and target at the table's rows, after any highest targets
    were dropped, and each row's resampling group).
    ``check_inputs`` and ``check_labels`` see what was read before the fit (the CLI's checks of a compute column
    and of the groups)."""
    if groups is None and options is not None:
        groups = options.resampling.by
    picked = np.asarray(rows, int)
    if not picked.size:
        raise UserError("no rows to fit")
    inputs, y = inputs_at(law, table, picked, cols)
    if check_inputs is not None:
        check_inputs(inputs)
    if drop_highest:
        keep = keep_below_highest(y, drop_highest)
        inputs, y, picked = {k: v[keep] for k, v in inputs.items()}, y[keep], picked[keep]
    labels = None if groups is None else group_labels(table, groups)[picked]
    if labels is not None and check_labels is not None:
        check_labels(labels)
    unit = unit or (groups if isinstance(groups, str) else None)
    fit = fit_law(law, inputs, y, options, fixed=fixed, groups=labels, unit=unit, progress=progress,
                  names=cols.names(law))
    return replace(fit, data=FitData(inputs, y, picked, labels))   # the result keeps the runs it saw


def fit_table(law: Law, table, cols: Columns, rows=None, options: FitOptions | None = None, *, fixed=None,
              groups: str | None = None, drop_highest: int = 0, progress: bool = False) -> LawFit:
    """Fit ``law`` to the table's ``rows`` (a mask, conditions ANDed, or None for all) as ``options`` say
    (``fit_rows``); ``groups`` (else ``options.resampling.by``): a column whose values the bootstrap resamples
    whole; ``drop_highest``: leave out the K highest targets first."""
    return fit_rows(law, table, np.flatnonzero(rows_mask(table, rows)), cols, options, fixed=fixed, groups=groups,
                    drop_highest=drop_highest, progress=progress)


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
