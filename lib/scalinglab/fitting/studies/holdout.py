"""Held-out checks: fit L(N, D) on some runs, predict the others, report the relative errors.

A fitted law is only as good as its extrapolation, so the test of one is runs it never saw: over-trained
runs (large D/N) or larger models. ``holdout`` splits a table by a mask or by small conditions
(``"tokens>1e11"``), fits the training part with ``fit.fit_arrays`` and returns per-row predictions,
relative errors and a summary. When a bootstrap was run, each converged replicate predicts every held-out
row, and the percentiles of those predictions give an interval.

That interval is parameter uncertainty only (the mean law's). Each row also gets ``fitting.prediction.forecast``'s new-
run interval, which adds the run-to-run noise σ of the training rows' residuals: a held-out run is a new run,
so this is the interval it should fall in at about the stated rate if the law's form holds, and the one
``summary`` marks "outside". Many runs outside both say the form (or the training range) does not extrapolate,
not that the interval is too narrow by a constant. It is also only as wide as the resampling unit allows: when
several rows come from one model (checkpoints, cooldowns, eval sets), they are not independent, and
``groups=`` resamples whole models (a cluster bootstrap). ``leave_one_group_out`` is the matching control: how
far off is a model of the kind the law *was* fitted on, when it is left out?

Rows are chosen by ``fitting.conditions`` (``"tokens>1e11"``; ``where``, ``any_of`` and ``parse_condition`` are
re-exported here). Each row can carry its distance from the fitted runs (``fitting.prediction.domain``;
``forecast.with_domain`` adds it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from scalinglab.errors import UserError
from scalinglab.fitting.chinchilla import approach3 as F
from scalinglab.fitting.conditions import (  # noqa: F401  (re-exported: holdout.where etc. are the public names)
    OPS,
    Condition,
    _conditions,
    _n_rows,
    _number,
    any_of,
    chosen,
    is_mask,
    no_rows,
    parse_condition,
    rows_mask,
    split_rows,
    where,
)
from scalinglab.fitting.options import FitOptions
from scalinglab.fitting.prediction.forecast import residual_sd
from scalinglab.fitting.prediction.held_out import Predictions, predict
from scalinglab.fitting.results import LawFit
from scalinglab.fitting.rows import group_counts, group_labels, keep_below_highest  # noqa: F401  group_counts re-exported: holdout(..., groups=) draws its cluster bootstrap's weights with it
from scalinglab.serialization import to_jsonable


@dataclass(frozen=True)
class HoldoutResult:
    """The fit on the training rows and its predictions for the held-out rows (row numbers are the table's)."""

    fit: LawFit
    train_rows: np.ndarray
    heldout: Predictions
    conditions: tuple[str, ...] = ()
    # What the bootstrap resampled: None for rows, else what names the groups (a column) and how many
    # of them the training rows hold.
    groups: str | None = None
    n_groups: int | None = None

    def stats(self) -> dict[str, Any]:
        """The held-out predictions' error statistics (``Predictions.stats``)."""
        return self.heldout.stats()

    def to_dict(self) -> dict[str, Any]:
        out = {"conditions": list(self.conditions), "n_train": len(self.train_rows)}
        if self.groups is not None:
            out.update(bootstrap_groups=self.groups, n_groups=self.n_groups)
        return to_jsonable({**out, **self.heldout.to_dict()})

    def summary(self) -> str:
        """The held-out runs' table, as `scalinglab fit --holdout` prints it (without the fit's own table:
        ``self.fit.summary()``)."""
        what = f"held out ({' or '.join(self.conditions)})" if self.conditions else "held out"
        return self.heldout.summary(what, self.fit.n_rows)


def runs_at(table, rows, n_col: str = "N", d_col: str | None = "D", loss_col: str | None = "loss", *,
            c_col: str | None = None):
    """(N, D, L, names) of the given rows (``approach3.chinchilla_arrays``, the one reader); D = C/(6N) when
    ``c_col`` is given. Errors name table rows."""
    return F.chinchilla_arrays(table, rows, n_col, d_col, loss_col, c_col=c_col)


def holdout(table, held_out, n_col: str = "N", d_col: str | None = "D", loss_col: str = "loss", *,
            c_col: str | None = None, select=None, options: FitOptions | None = None, drop_highest: int = 0,
            n_boot: int = 0, seed: int = 0, level: float = 0.95, groups=None,
            progress: bool = False) -> HoldoutResult:
    """Fit the rows not held out and predict the held-out ones.

    ``held_out``: a boolean mask over the table's rows, or conditions (a
    string or a list; a row matching any is held out). ``select``: a mask or
    conditions every row considered must match (rows outside it are neither
    fitted nor predicted). ``drop_highest`` drops the K highest losses of the
    training rows only: held-out runs are never edited.

    ``groups``: a column name, or one label per table row, saying which rows
    belong together (one model's checkpoints or cooldowns). The bootstrap
    then resamples whole groups of training rows (``fit.bootstrap`` with
    ``groups``, a cluster bootstrap) instead of rows, so its intervals count models, not rows.
    """
    texts = tuple(str(c) for c in _conditions(held_out)) if not is_mask(held_out) else ()
    train_rows, test_rows = split_rows(table, select, held_out)
    from scalinglab.fitting.columns import Columns
    from scalinglab.fitting.laws.table import fit_rows

    cols = Columns(n=n_col, d=None if c_col else d_col, loss=loss_col, c=c_col)
    opts = (options or FitOptions()).with_resampling(n_boot, seed=seed, level=level)
    res = fit_rows(F.CHINCHILLA, table, train_rows, cols, opts, groups=groups,
                    unit=groups if isinstance(groups, str) else "groups", drop_highest=drop_highest,
                    progress=progress)
    train_rows, labels = res.data.rows, res.data.groups
    N, D, L = res.data.inputs["n"], res.data.inputs["d"], res.data.y
    tN, tD, tL, _ = runs_at(table, test_rows, n_col, d_col, loss_col, c_col=c_col)
    unit = {} if labels is None else dict(groups=groups if isinstance(groups, str) else "given labels",
                                          n_groups=len(np.unique(labels)))
    heldout = predict(res, {"n": tN, "d": tD}, tL, rows=test_rows, level=level, sigma=residual_sd(res, N, D, L))
    return HoldoutResult(fit=res, train_rows=train_rows, heldout=heldout, conditions=texts, **unit)


# --- resampling models, not rows ------------------------------------------


at_natural_floor = F.natural_floor_shares  # the share of resamples with each parameter at its natural floor


def leave_one_group_out(table, groups, n_col: str = "N", d_col: str | None = "D", loss_col: str = "loss", *,
                        c_col: str | None = None, select=None, options: FitOptions | None = None,
                        n_boot: int = 0, seed: int = 0, level: float = 0.95) -> dict[str, HoldoutResult]:
    """For each group among the selected rows: fit all the other selected rows, predict that group's.

    The control for a held-out check: a law fitted on models of one kind misses a model *of the same
    kind* that it did not see by this much, so a held-out model of another kind is off for its kind
    only if it is off by more. Keys are the group labels, in order of first appearance. With
    ``n_boot`` each fit's bootstrap resamples the remaining groups, so the intervals can be checked
    on models the law should predict.
    """
    labels = group_labels(table, groups)
    keep = rows_mask(table, select)
    order = list(dict.fromkeys(labels[keep]))
    if len(order) < 2:
        raise UserError(f"leave-one-group-out needs at least 2 groups among the selected rows; got {len(order)}")
    unit = groups if isinstance(groups, str) else labels
    return {g: holdout(table, labels == g, n_col, d_col, loss_col, c_col=c_col, select=keep, options=options,
                       n_boot=n_boot, seed=seed, level=level, groups=unit if n_boot else None)
            for g in order}


def errors_by_group(predictions: Predictions, labels) -> dict[str, dict[str, float]]:
    """Per group of predicted rows (``labels``: one per table row): rows, mean, min and max relative error."""
    labels = np.asarray(labels)[predictions.rows]
    err = predictions.rel_error
    return {g: {"n": int((labels == g).sum()), "mean": float(err[labels == g].mean()),
                "min": float(err[labels == g].min()), "max": float(err[labels == g].max())}
            for g in dict.fromkeys(labels)}


def restrict(res: HoldoutResult, target) -> HoldoutResult:
    """``res`` with its predictions cut to the rows of ``target`` (a mask over the table's rows)."""
    return replace(res, heldout=res.heldout.subset(np.asarray(target, bool)[res.heldout.rows]))


def training_sets(table, training, target, n_col: str = "N", d_col: str | None = "D", loss_col: str = "loss", *,
                  select=None, options: FitOptions | None = None, n_boot: int = 0, seed: int = 0,
                  level: float = 0.95) -> dict[str, HoldoutResult]:
    """Fit each named training set and predict one common target.

    ``training``: name → a mask or conditions (ANDed) for the rows to fit;
    rows in ``target`` (mask, or conditions ORed) are never fitted, and rows
    outside ``select`` are never used. Each result's predictions are the
    target rows only, so the errors compare across training sets. With
    ``n_boot``, every fit is bootstrapped with the same seed, and
    ``heldout.error_intervals()`` gives intervals for the error statistics.
    """
    keep, tgt = rows_mask(table, select), rows_mask(table, target, match="any")
    if not (keep & tgt).any():
        raise UserError(f"the target holds none of the {keep.sum()} selected rows")
    out = {}
    for name, rows in training.items():
        fitted = rows_mask(table, rows)
        res = holdout(table, tgt | ~fitted, n_col, d_col, loss_col, select=keep, options=options, n_boot=n_boot,
                      seed=seed, level=level)
        out[name] = replace(restrict(res, tgt), conditions=(str(name),))
    return out


def sweep_training_range(table, column: str, limits: Sequence[float], target, n_col: str = "N",
                         d_col: str | None = "D", loss_col: str = "loss", *, select=None,
                         options: FitOptions | None = None, n_boot: int = 0, seed: int = 0,
                         level: float = 0.95) -> list[HoldoutResult]:
    """For each limit m, fit the rows with ``column <= m`` (and not in ``target``) and predict ``target``.

    The target rows stay the same across limits, so the errors compare: how
    much of the extrapolated range must the training runs cover?
    """
    sets = {f"{column}<={m:g}": Condition(column, "<=", repr(float(m)), f"{column}<={m:g}") for m in limits}
    return list(training_sets(table, sets, target, n_col, d_col, loss_col, select=select, options=options,
                              n_boot=n_boot, seed=seed, level=level).values())
