"""What `scalinglab fit` does with runs, as one library call and one result, for every law.

``fit_runs(runs, request)`` takes ``Runs`` with their selection (``Runs.select``: the rows to fit, the rows held
out) and a ``FitRequest`` (the law, its columns, the ``FitOptions`` with the resampling, held parameters, budgets),
fits the law by the one engine (``laws.fit_law``; Chinchilla's batched solver is that law's own), predicts what
was held out (``predictions.Predictions``, with new-run intervals and, for a law of N and D, each run's distance
from the fitted runs) and, for a law with a closed form, allocates compute. It returns a ``FitReport`` with
``summary()`` (the text `fit` prints) and ``to_dict()`` (its JSON). The CLI parses flags, calls this, and prints.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from scalinglab.errors import OptionError
from scalinglab.fitting.options import FitOptions
from scalinglab.fitting.results import LawFit
from scalinglab.serialization import to_jsonable

# The exit status when an allocation was asked for and the fit cannot support one (none is printed).
UNUSABLE = 3


@dataclass(frozen=True)
class FitRequest:
    """How to fit: the law, its columns (``Columns``), the ``FitOptions`` (δ, resampling, and Chinchilla's solver
    settings), parameters held at a value (``fixed``; empty: the options' own), the K highest targets dropped, and
    budgets to allocate."""

    law: Any
    columns: Any
    options: FitOptions = FitOptions()
    fixed: dict[str, float] = field(default_factory=dict)
    drop_highest: int = 0
    compute: tuple[float, ...] = ()
    progress: bool = False
    calibrate: bool = False    # calibrate on the fitted runs' units even with nothing held out (fit --save)


@dataclass(frozen=True)
class FitReport:
    """A fit of runs and what was asked of it. ``runs``: the runs with their selection; ``inputs``/``y``: what
    the law was fitted to, at the table's ``fitted_rows``; ``predictions``: held-out or predicted runs;
    ``allocation`` or ``unusable`` (why a requested allocation is not given)."""

    fit: LawFit
    runs: Any
    request: FitRequest
    inputs: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    y: np.ndarray | None = field(default=None, repr=False)
    fitted_rows: np.ndarray | None = field(default=None, repr=False)
    n_groups: int | None = None
    predictions: Any = None
    predicted_from: str | None = None
    allocation: list[dict[str, Any]] | None = None
    unusable: str | None = None
    outputs: dict[str, str] = field(default_factory=dict)   # what was written: {"plot": path, "saved": path}
    calibration: Any = None   # (UnitCalibration, its note) on the fitted runs' units, when made

    @property
    def label(self) -> str:
        return self.runs.label

    @property
    def nd(self) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """The fitted (N, D, L) for a law with a closed form in N and D (Chinchilla's): what allocations, saved
        fits and the fit figure take; None for other laws."""
        if self.fit.law.closed_form is None:
            return None
        return self.inputs["n"], self.inputs["d"], self.y

    @property
    def exit_status(self) -> int:
        return UNUSABLE if self.unusable else 0

    @property
    def what(self) -> str:
        """How the predicted runs are named: held out (the conditions) or predicted from a file."""
        if self.runs.holdout:
            return f"held out ({' or '.join(self.runs.holdout)})"
        return f"predicted from {self.predicted_from}" if self.predicted_from else ""

    def to_dict(self) -> dict[str, Any]:
        out = {"source": self.label, "n_dropped": self.request.drop_highest, **self.fit.to_dict()}
        out.update({k: self.outputs[k] for k in ("plot", "saved") if k in self.outputs})
        if self.runs.where:
            out["where"] = list(self.runs.where)
        if self.predictions is not None and self.runs.holdout:
            by = self.request.options.resampling.by
            groups = {} if by is None else {"bootstrap_groups": by, "n_groups": self.n_groups}
            out["holdout"] = {"conditions": list(self.runs.holdout), "n_train": len(self.fitted_rows), **groups,
                              **self.predictions.to_dict()}
        elif self.predictions is not None:
            out["predict"] = {"source": self.predicted_from, **self.predictions.to_dict()}
        if self.allocation:
            out["compute_optimal"] = self.allocation
        elif self.unusable:
            out["compute_optimal"] = None
            out["compute_optimal_unusable"] = self.unusable
        return to_jsonable(out)

    def summary(self) -> str:
        from scalinglab.fitting.prediction import forecast

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


def fit_runs(runs, request: FitRequest) -> FitReport:
    """Fit ``request.law`` to the ``runs``' selected rows and predict the held-out ones (errors name the table's
    rows: ``RowError``)."""
    from scalinglab.fitting.laws import predict_rows
    from scalinglab.fitting.laws.table import fit_rows
    from scalinglab.fitting.prediction.held_out import residual_sd

    law, cols, opts = request.law, request.columns, request.options
    by = opts.resampling.by
    fit = fit_rows(law, runs.table, runs.rows, cols, opts, fixed=request.fixed or None, groups=by,
                    drop_highest=request.drop_highest, progress=request.progress,
                    check_inputs=lambda inputs: _check_compute_column(cols, inputs),
                    check_labels=lambda labels: _check_groups(labels, by))
    inputs, y, rows, labels = fit.data.inputs, fit.data.y, fit.data.rows, fit.data.groups
    report = FitReport(fit, runs, request, inputs=inputs, y=y, fitted_rows=rows,
                       n_groups=None if labels is None else len(np.unique(labels)))
    calibration = None
    if runs.held.size or request.calibrate:
        calibration = _calibrate(fit, runs, rows, inputs, y, request, scale=True)
        report = replace(report, calibration=calibration)
    if runs.held.size:
        preds = predict_rows(fit, runs.table, runs.held, cols, sigma=residual_sd(fit, inputs, y))
        report = replace(report, predictions=_calibrated(_with_domain(preds, inputs), calibration, runs.table,
                                                         runs.held, request))
    return with_allocation(report) if request.compute else report


def _calibrate(fit, runs, rows, inputs, y, request, *, scale: bool):
    """The fit's calibration on units of its own runs (``prediction.run_calibration``): (UnitCalibration, note)."""
    from scalinglab.fitting.prediction import run_calibration as RC

    opts = request.options
    order, col = RC.scale_order(runs.table, rows, runs.holdout) if scale else (None, None)
    units, name = RC.unit_labels(runs.table, rows, request.columns, opts.resampling.by, col)
    key = order if order is not None else np.log(next(iter(inputs.values())))
    units, name = RC.coarsen(units, key, name)
    cal = RC.calibrate_fit(fit, inputs, y, units, name, order=order, level=opts.resampling.level,
                           fixed=request.fixed or dict(opts.fixed) or None, options=opts)
    return cal, RC.calibration_note(cal, col)


def _calibrated(preds, calibration, table, rows, request):
    """The predictions with the calibrated interval and each run's unit (the fitted runs' unit kind)."""
    if calibration is None:
        return preds
    from scalinglab.fitting.prediction import run_calibration as RC

    cal, note = calibration
    units, _ = RC.unit_labels(table, rows, request.columns, request.options.resampling.by, note.get("order_column"))
    return preds.with_calibration(cal, units, note)


def predict_other(report: FitReport, table, rows, source: str) -> FitReport:
    """The report with the fit's predictions for another table's ``rows`` (``fit --predict``), with new-run
    intervals from the fitted runs' residuals."""
    from scalinglab.fitting.laws import predict_rows
    from scalinglab.fitting.prediction.held_out import residual_sd

    sigma = residual_sd(report.fit, report.inputs, report.y)
    preds = predict_rows(report.fit, table, rows, report.request.columns, sigma=sigma)
    calibration = report.calibration or _calibrate(report.fit, report.runs, report.fitted_rows, report.inputs,
                                                   report.y, report.request, scale=False)
    preds = _with_domain(preds, report.inputs)
    if calibration is not None:
        cal, note = calibration
        preds = preds.with_calibration(cal, None, note)
    return replace(report, predictions=preds, predicted_from=source, calibration=calibration)


def _check_compute_column(cols, inputs) -> None:
    """D = C/(6N) below one token is not a run's training: the column does not hold compute in FLOP."""
    if not cols.c or "d" not in inputs:
        return
    D = inputs["d"]
    if np.nanmin(D) < 1:
        raise OptionError(f"{{c_col}} {cols.c}: D = C/(6N) is below one token in {int((D < 1).sum())} of "
                          f"{len(D)} runs (smallest C {np.nanmin(D * 6 * inputs['n']):.3g}); the "
                          "column must hold each run's training compute in FLOP", "c_col")


def with_allocation(report: FitReport) -> FitReport:
    """The report with the compute-optimal allocation at each requested budget, or why the fit gives none."""
    if report.nd is None:
        return replace(report, unusable=f"law {report.fit.law.name} has no closed-form allocation")
    allocation, unusable = allocations_or_problem(report.fit, report.request.compute, *report.nd)
    return replace(report, allocation=allocation, unusable=unusable)


def allocations_or_problem(res, compute, N, D, L) -> tuple[list | None, str | None]:
    """(``forecast.allocations`` at each budget, None) when the fit supports an allocation, else (None, why).
    The fit's status is checked before the allocation is computed: a law at a bound (all losses equal, say)
    can overflow on the way to an N_opt."""
    from scalinglab.fitting.prediction import forecast

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
    if report.nd is not None:
        others = None if preds is None else (preds.N, preds.D, preds.actual)
        what = "held out" if report.runs.holdout else f"from {report.predicted_from}"
        plot.save_fit_figure(path, report.fit, *report.nd, others=others, others_label=what, title=report.label)
    else:
        from scalinglab.fitting.prediction.held_out import predict

        fitted = predict(report.fit, report.inputs, report.y, rows=report.fitted_rows)
        plot.save_figure(path, plot.law_figure(fitted, preds, others_label=report.what, target=report.fit.law.target,
                                               title=f"{report.label}: law {report.fit.law.name}"))
    return replace(report, outputs={**report.outputs, "plot": path})


def write_saved(report: FitReport, path: str) -> FitReport:
    """Save the fit with the runs it was fitted on (``fitting.saved``, a .slfit file)."""
    from scalinglab.fitting import saved

    if report.nd is None:
        raise OptionError(f"{{save}}: a saved fit holds Chinchilla's form; law {report.fit.law.name} cannot be saved",
                          "save")
    N, D, L = (np.asarray(x, float) for x in report.nd)
    cols = report.request.columns
    columns = dict(n_col=cols.n, d_col=None if cols.c else cols.d, loss_col=cols.loss, c_col=cols.c)
    note = None if report.calibration is None else report.calibration[1]
    saved.save(path, saved.SavedFit(report.fit, N, D, L, columns=columns, source=report.label,
                                    n_dropped=report.request.drop_highest, calibration=note))
    return replace(report, outputs={**report.outputs, "saved": path})


def _check_groups(labels, flag_value: str) -> None:
    """A bootstrap over groups needs enough of them for an interval: k groups give only C(2k-1, k) distinct
    resamples (10 for 3), whose "95% interval" is a few refits repeated."""
    from scalinglab.fitting.options import MIN_GROUPS

    k = len(np.unique(np.asarray(labels)))
    if k < MIN_GROUPS:
        raise OptionError(f"{{bootstrap_by}} {flag_value}: the runs fall in {k} groups; a cluster bootstrap needs at "
                          f"least {MIN_GROUPS} to give an interval", "bootstrap_by")


def _with_domain(predictions, inputs):
    """The predictions with each run's distance from the fitted runs, for a law of N and D."""
    if "n" not in inputs or "d" not in inputs:
        return predictions
    from scalinglab.fitting.prediction import forecast

    return forecast.with_domain(predictions, inputs["n"], inputs["d"])
