"""What `scalinglab fit` does with a table of runs, as one library call and one result.

``fit_table_runs`` selects rows (``where``), holds some out (``holdout``) or drops the highest losses, fits the
law (Chinchilla's batched solver, or the registry's engine for the other laws), predicts what was held out,
and, for a law with a closed form, allocates compute. It returns a ``FitReport``: the fit, the runs it saw,
the held-out or predicted runs, the allocation (or why there is none), with ``summary()`` (the text `fit`
prints) and ``to_dict()`` (its JSON). The CLI parses flags, calls this, and prints.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from scalinglab.errors import UserError
from scalinglab.fitting.conditions import no_rows, selected
from scalinglab.fitting.results import LawFit
from scalinglab.serialization import to_jsonable

# The exit status when an allocation was asked for and the fit cannot support one (none is printed).
UNUSABLE = 3


@dataclass(frozen=True)
class FitRequest:
    """How to fit: the law, its columns (``Columns``), the rows, the resampling. ``options``: Chinchilla's
    solver settings (``FitOptions``: constraints, δ, starts); ``fixed``: another law's held parameters."""

    law: Any
    columns: Any
    where: tuple[str, ...] = ()
    holdout: tuple[str, ...] = ()
    drop_highest: int = 0
    options: Any = None
    fixed: dict[str, float] = field(default_factory=dict)
    delta: float | None = None
    bootstrap: int = 0
    seed: int = 0
    level: float = 0.95
    bootstrap_by: str | None = None
    compute: tuple[float, ...] = ()
    progress: bool = False


@dataclass(frozen=True)
class FitReport:
    """A fit of a table's runs and what was asked of it. ``runs``: the fitted (N, D, L) for Chinchilla's form;
    ``check``: the hold-out check (``holdout.HoldoutCheck``) when rows were held out; ``predictions``: held-out
    or predicted runs; ``allocation`` or ``unusable`` (why a requested allocation is not given)."""

    fit: LawFit
    label: str
    request: FitRequest
    runs: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    check: Any = None
    predictions: Any = None
    predicted_from: str | None = None
    allocation: list[dict[str, Any]] | None = None
    unusable: str | None = None
    outputs: dict[str, str] = field(default_factory=dict)   # what was written: {"plot": path, "saved": path}
    table: Any = field(default=None, repr=False, compare=False)   # the runs' table (a law's fitted rows, for plots)
    fitted_rows: np.ndarray | None = field(default=None, repr=False, compare=False)

    @property
    def exit_status(self) -> int:
        return UNUSABLE if self.unusable else 0

    @property
    def what(self) -> str:
        """How the predicted runs are named: held out (the conditions) or predicted from a file."""
        if self.request.holdout:
            return f"held out ({' or '.join(self.request.holdout)})"
        return f"predicted from {self.predicted_from}" if self.predicted_from else ""

    def to_dict(self) -> dict[str, Any]:
        out = {"source": self.label, "n_dropped": self.request.drop_highest, **self.fit.to_dict()}
        if "plot" in self.outputs:
            out["plot"] = self.outputs["plot"]
        if "saved" in self.outputs:
            out["saved"] = self.outputs["saved"]
        if self.request.where:
            out["where"] = list(self.request.where)
        if self.check is not None:
            out["holdout"] = self.check.to_dict()
        elif self.predictions is not None:
            key = "holdout" if self.request.holdout else "predict"
            out[key] = ({"source": self.predicted_from, **self.predictions.to_dict()}
                        if self.predicted_from and self.runs is not None else self.predictions.to_dict())
        if self.allocation:
            out["compute_optimal"] = self.allocation
        elif self.unusable:
            out["compute_optimal"] = None
            out["compute_optimal_unusable"] = self.unusable
        return to_jsonable(out)

    def summary(self) -> str:
        from scalinglab.fitting import forecast

        parts = [self.fit.summary(self.label, self.request.drop_highest)]
        if self.allocation:
            parts.append(forecast.allocation_text(self.allocation))
        elif self.unusable:
            parts.append(f"compute-optimal allocation: none, the fit cannot support one ({self.unusable}); exit "
                         f"status {UNUSABLE}")
        if self.predictions is not None:
            parts.append(self.predictions.summary(self.what, self.fit.n_rows))
        if "plot" in self.outputs:
            parts.append(f"plot written to {self.outputs['plot']}")
        if "saved" in self.outputs:
            parts.append(f"fit saved to {self.outputs['saved']}")
        return "\n\n".join(parts)


def fit_table_runs(table, label: str, request: FitRequest) -> FitReport:
    """Fit ``request.law`` to the table's rows as asked (errors name the table's rows: ``RowError``)."""
    if request.law.name == "chinchilla" and request.law.closed_form is not None and request.options is not None:
        report = _fit_chinchilla(table, label, request)
    else:
        report = _fit_law(table, label, request)
    return with_allocation(report) if request.compute else report


def _fit_chinchilla(table, label: str, req: FitRequest) -> FitReport:
    from scalinglab.fitting import approach3 as F
    from scalinglab.fitting import holdout as H

    cols = _chinchilla_columns(req.columns)
    boot = dict(n_boot=req.bootstrap, seed=req.seed, level=req.level, progress=req.progress)
    labels = None
    if req.bootstrap_by:
        labels = H.group_labels(table, req.bootstrap_by)
        _check_groups(labels, req.bootstrap_by)
        boot.update(unit=req.bootstrap_by)
    check = None
    if not (req.where or req.holdout or req.bootstrap_by):
        N, D, L, names = F.runs_from_table(table, drop_highest=req.drop_highest, **cols)
        res = F.fit_arrays(N, D, L, req.options, names=names, **boot)
    elif req.holdout:
        boot.pop("unit", None)
        check = H.holdout(table, list(req.holdout), **cols, select=list(req.where) or None,
                          drop_highest=req.drop_highest, options=req.options, groups=req.bootstrap_by, **boot)
        res = check.fit
        N, D, L = H.runs_at(table, check.train_rows, **cols)[:3]
    else:
        rows = selected(table, list(req.where) or None)
        N, D, L, names = H.runs_at(table, rows, **cols)
        keep = F.keep_below_highest(L, req.drop_highest)
        N, D, L = N[keep], D[keep], L[keep]
        groups = None if labels is None else labels[rows][keep]
        res = F.fit_arrays(N, D, L, req.options, names=names, groups=groups, **boot)
    if cols["c_col"] and np.nanmin(D) < 1:  # fewer than one token per run: C is not training compute in FLOP
        raise UserError(f"--c-col {cols['c_col']}: D = C/(6N) is below one token in {int((D < 1).sum())} of "
                        f"{len(D)} runs (smallest C {np.nanmin(np.asarray(D) * 6 * np.asarray(N)):.3g}); the "
                        "column must hold each run's training compute in FLOP")
    report = FitReport(res, label, req, runs=(N, D, L), check=check)
    if check is not None:   # each held-out run's distance from the fitted runs
        report = _with_domain(replace(report, predictions=check.heldout))
    return report


def _fit_law(table, label: str, req: FitRequest) -> FitReport:
    from scalinglab.fitting import holdout as H
    from scalinglab.fitting import laws as Lw
    from scalinglab.fitting.laws.table import predict_rows

    keep = H.where(table, list(req.where) or None)
    if not keep.any():
        raise UserError(no_rows(req.where))
    held = H.any_of(table, list(req.holdout)) & keep if req.holdout else np.zeros_like(keep)
    if req.holdout and not held.any():
        raise UserError(f"{' or '.join(map(repr, req.holdout))} holds out none of the selected rows")
    from scalinglab.fitting.huber import HUBER_DELTA

    res = Lw.fit_table(req.law, table, req.columns, keep & ~held, fixed=req.fixed, drop_highest=req.drop_highest,
                       delta=HUBER_DELTA if req.delta is None else req.delta, progress=req.progress,
                       n_boot=req.bootstrap, seed=req.seed, level=req.level, groups=req.bootstrap_by)
    predictions = predict_rows(res, table, np.flatnonzero(held), req.columns) if req.holdout else None
    return FitReport(res, label, req, predictions=predictions, table=table, fitted_rows=np.flatnonzero(keep & ~held))


def predict_other(report: FitReport, table, rows, source: str) -> FitReport:
    """The report with the fit's predictions for another table's ``rows`` (``fit --predict``)."""
    from scalinglab.fitting import holdout as H

    if report.runs is None:
        from scalinglab.fitting.laws.table import predict_rows

        preds = predict_rows(report.fit, table, rows, report.request.columns)
        return replace(report, predictions=preds, predicted_from=source)
    from scalinglab.fitting.forecast import residual_sd

    sigma = residual_sd(report.fit, *report.runs)
    cols = _chinchilla_columns(report.request.columns)
    preds = H.predict(report.fit, *H.runs_at(table, rows, **cols)[:3], rows=rows, sigma=sigma)
    return _with_domain(replace(report, predictions=preds, predicted_from=source))


def with_allocation(report: FitReport) -> FitReport:
    """The report with the compute-optimal allocation at each requested budget, or why the fit gives none."""
    allocation, unusable = allocations_or_problem(report.fit, report.request.compute, *report.runs)
    return replace(report, allocation=allocation, unusable=unusable)


def allocations_or_problem(res, compute, N, D, L) -> tuple[list | None, str | None]:
    """(``forecast.allocations`` at each budget, None) when the fit supports an allocation, else (None, why).
    The fit's status is checked before the allocation is computed: a law at a bound (all losses equal, say)
    can overflow on the way to an N_opt."""
    from scalinglab.fitting import forecast

    problem = _allocation_problem(res, ())
    if problem:
        return None, problem
    try:
        rows = forecast.allocations(res, compute, N, D, L)
    except (OverflowError, ZeroDivisionError) as exc:   # Python floats overflow where numpy gives inf
        return None, f"the law gives no finite allocation ({exc})"
    problem = _allocation_problem(res, rows)
    return (None, problem) if problem else (rows, None)


def _allocation_problem(res, allocation) -> str | None:
    """Why the fit cannot give a compute-optimal allocation, or None when it can: a fit that did not converge
    (a parameter at a bound, a term that vanished, the iteration limit), a bootstrap whose every resample
    failed, or an allocation that is not a finite positive N and D."""
    if res.status != "converged":
        bound = f" ({', '.join(res.at_bound)} at a bound)" if res.at_bound else ""
        return f"fit status {res.status}{bound}"
    bs = res.bootstrap
    if bs is not None and bs.n_boot and not len(bs.samples):
        return f"all {bs.n_boot} bootstrap resamples failed"
    for row in allocation:
        if not all(math.isfinite(row[k]) and row[k] > 0 for k in ("n_opt", "d_opt")):
            return f"N_opt {row['n_opt']:.3g}, D_opt {row['d_opt']:.3g} at C = {row['C']:.3g}"
    return None


def write_plot(report: FitReport, path: str) -> FitReport:
    """Draw the fitted runs against the law, held-out or predicted runs marked, to ``path`` (``fitting.plot``)."""
    from scalinglab.fitting import plot

    preds = report.predictions
    if report.runs is not None:
        others = None if preds is None else (preds.N, preds.D, preds.actual)
        what = "held out" if report.request.holdout else f"from {report.predicted_from}"
        plot.save_fit_figure(path, report.fit, *report.runs, others=others, others_label=what, title=report.label)
    else:
        from scalinglab.fitting.approach3 import keep_below_highest
        from scalinglab.fitting.laws.table import predict_rows

        cols, table = report.request.columns, report.table
        fitted = predict_rows(report.fit, table, report.fitted_rows, cols)
        if report.request.drop_highest:   # the rows the fit dropped are not "fitted runs"
            kept = keep_below_highest(fitted.actual, report.request.drop_highest)
            fitted = predict_rows(report.fit, table, fitted.rows[kept], cols)
        plot.save_figure(path, plot.law_figure(fitted, preds, others_label=report.what, target=report.fit.law.target,
                                               title=f"{report.label}: law {report.fit.law.name}"))
    return replace(report, outputs={**report.outputs, "plot": path})


def write_saved(report: FitReport, path: str) -> FitReport:
    """Save the fit with the runs it was fitted on (``fitting.saved``, a .slfit file)."""
    from scalinglab.fitting import saved

    if report.runs is None:
        raise UserError(f"--save: a saved fit holds Chinchilla's form; law {report.fit.law.name} cannot be saved")
    N, D, L = (np.asarray(x, float) for x in report.runs)
    saved.save(path, saved.SavedFit(report.fit, N, D, L, columns=_chinchilla_columns(report.request.columns),
                                    source=report.label, n_dropped=report.request.drop_highest))
    return replace(report, outputs={**report.outputs, "saved": path})


def _check_groups(labels, flag_value: str) -> None:
    """A bootstrap over groups needs enough of them for an interval: k groups give only C(2k-1, k) distinct
    resamples (10 for 3), whose "95% interval" is a few refits repeated."""
    from scalinglab.fitting.options import MIN_GROUPS

    k = len(np.unique(np.asarray(labels)))
    if k < MIN_GROUPS:
        raise UserError(f"--bootstrap-by {flag_value}: the runs fall in {k} groups; a cluster bootstrap needs at "
                        f"least {MIN_GROUPS} to give an interval")


def _with_domain(report: FitReport) -> FitReport:
    from scalinglab.fitting import forecast

    preds = forecast.with_domain(report.predictions, *report.runs[:2])
    check = replace(report.check, heldout=preds) if report.check is not None else None
    return replace(report, predictions=preds, check=check)


def _chinchilla_columns(cols) -> dict[str, str | None]:
    return dict(n_col=cols.n, d_col=None if cols.c else cols.d, loss_col=cols.loss, c_col=cols.c)

