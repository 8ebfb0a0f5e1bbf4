"""What ``scalinglab fit-curve`` and ``predict-curve`` compute and print: a curve law fitted to a table of
(run, step, lr, loss) rows (schedules from the table or given step by step), with the block bootstrap's
parameter-only band and, on request, the interval calibrated on runs left out (unit: the schedule,
:mod:`scalinglab.curves.calibration`), saved as JSON; a saved fit's prediction of a schedule. matplotlib is
imported inside the plotting functions only.

Saved fits are ``scalinglab-curve-fit/2`` (with the calibration when there is one); ``/1`` files (no
calibration) still load, and predict with the parameter-only band alone.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from scalinglab.curves import evaluate as E
from scalinglab.curves.calibration import CurveCalibration, calibrate_schedules, from_saved
from scalinglab.curves.data import curves_from_table, parse_schedule
from scalinglab.curves.fit import CurveFit, fit_curves
from scalinglab.curves.laws import LAWS, Curve, prepare
from scalinglab.errors import OptionError, UserError
from scalinglab.serialization import dumps, to_jsonable

SAVED_FORMAT = "scalinglab-curve-fit/2"
READABLE_FORMATS = ("scalinglab-curve-fit/1", SAVED_FORMAT)   # /1: no calibration


@dataclass(frozen=True)
class CurveFitReport:
    """A fit, its in-sample metrics per run and, with a bootstrap, its replicates."""

    source: str
    fit: CurveFit
    runs: tuple               # per run: name, points, r2, prede, final loss and fitted
    curves: tuple             # the curves fitted (for the plot)
    boot: E.CurveBootstrap | None = None
    calibration: CurveCalibration | None = None

    def summary(self) -> str:
        lines = [f"{self.source}:", self.fit.summary()]
        if self.boot is not None:
            lines.append(f"bootstrap (parameter-only): {len(self.boot.thetas)} resamples of blocks of "
                         f"{self.boot.block} consecutive logged points within each run (residuals, moving "
                         f"blocks); {self.boot.level:.0%} intervals")
            for name, (lo, hi) in self._param_intervals().items():
                lines.append(f"  {name:>6} {self.fit.params[name]:.4g}  [{lo:.4g}, {hi:.4g}]")
        lines.append(f"{'run':>24} {'points':>7} {'R2':>8} {'PredE':>8} {'final':>8} {'fitted':>8}")
        for r in self.runs:
            lines.append(f"{r['run']:>24} {r['points']:7d} {r['r2']:8.4f} {r['prede']:8.5f} {r['final']:8.4f} "
                         f"{r['fitted']:8.4f}")
        if self.calibration is not None:
            lines.append(self.calibration.summary())
        return "\n".join(lines)

    def _param_intervals(self) -> dict:
        a = (1 - self.boot.level) / 2
        return {n: (float(np.quantile(self.boot.thetas[:, i], a)), float(np.quantile(self.boot.thetas[:, i], 1 - a)))
                for i, n in enumerate(LAWS[self.fit.law].params)}

    def to_dict(self) -> dict:
        d = dict(source=self.source, fit=self.fit.to_dict(), runs=list(self.runs))
        if self.boot is not None:
            d["bootstrap"] = dict(self.boot.to_dict(), intervals=self._param_intervals(), band="parameter-only")
        if self.calibration is not None:
            d["calibration"] = self.calibration.to_dict()
        return to_jsonable(d)

    def save(self, path) -> None:
        from scalinglab.files import atomic_write

        d = dict(format=SAVED_FORMAT, fit=self.fit.to_dict(),
                 bootstrap=None if self.boot is None else dict(
                     thetas=self.boot.thetas.tolist(), block=self.boot.block, level=self.boot.level,
                     residuals=np.concatenate(self.boot.residuals).tolist()),
                 calibration=None if self.calibration is None else self.calibration.saved())
        with atomic_write(path, f"--save {path}") as tmp:
            tmp.write_text(dumps(d))

    def plot(self, path) -> None:
        import matplotlib.pyplot as plt

        from scalinglab.fitting.plot import save_figure

        fig, ax = plt.subplots(figsize=(7, 4.5))
        for i, c in enumerate(self.curves):
            p = prepare(c, warmup_in_sum=self.fit.warmup_in_sum)
            col = f"C{i % 10}"
            ax.plot(c.at, c.loss, ".", ms=2, color=col, label=f"{c.name} (observed)")
            ax.plot(c.at, self.fit.predict(p), "-", color=col, lw=1)
            if self.boot is not None:
                lo, hi = self.boot.interval(p, new_curve=False)
                ax.fill_between(c.at, lo, hi, color=col, alpha=0.25, lw=0)
        ax.set(xscale="log", xlabel="step", ylabel="loss (nats per token)",
               title=f"{self.fit.law} law fitted" + (" (bands: bootstrap intervals)" if self.boot else ""))
        ax.legend(fontsize=7)
        save_figure(path, fig)
        plt.close(fig)


def fit_source(table=None, *, datasets=(), schedules=(), where=None, law: str = "multipower", n_boot: int = 0,
               seed: int = 0, level: float = 0.95, calibrate: bool = False, label: str | None = None,
               read=None) -> CurveFitReport:
    """`scalinglab fit-curve`'s fit and ``sl.fit_curve``'s, one path: the (run, step, lr, loss) rows of ``table`` (a
    DataFrame, or a CSV path read by ``read``) or of the registered curves ``datasets`` (Luo et al.'s ``mpl-*``
    schedules rebuilt step by step), each run's exact schedule from ``schedules`` (``--schedule`` specs:
    ``[RUN=]NAME:key=value,...`` or a CSV of run, step, lr), the rows ``where`` keeps (conditions ANDed), then
    :func:`fit_table`. ``label`` names the source in messages and the report."""
    import os

    from scalinglab.curves.data import registered_table, schedule_specs
    from scalinglab.fitting.conditions import chosen
    from scalinglab.fitting.options import Resampling
    from scalinglab.runs import read_frame

    datasets, schedules, where = (_texts(v, what) for v, what in ((datasets, "dataset"), (schedules, "schedules"),
                                                                  (where, "where")))
    if (table is None) == (not datasets):
        raise UserError("fit a curve to a table of runs or to registered curves (datasets), one of them")
    if not isinstance(law, str) or law not in LAWS:
        raise UserError(f"law {law!r}: a curve law is one of {', '.join(LAWS)}")
    if not isinstance(calibrate, bool):
        raise UserError(f"calibrate {calibrate!r}: True or False")
    n_boot = int(Resampling(n_boot, None, seed, level).n)   # the count, seed and level checked as every fit's are
    read = read or read_frame
    given = schedule_specs(schedules, read)
    if datasets:
        df, known = registered_table(datasets)
        label = label or ", ".join(datasets)
        given = {**known, **given}
    else:
        table = os.fspath(table) if isinstance(table, os.PathLike) else table
        df = read(table) if isinstance(table, str) else table
        label = label or (table if isinstance(table, str) else "table")
    if where:
        try:
            df = df[chosen(df, where)]
        except OptionError as exc:
            raise exc.prefixed(f"{label}: ") from None
        except UserError as exc:
            raise UserError(f"{label}: {exc}") from None
    if df.empty:
        raise UserError(f"{label}: no runs to fit (the table has a header and no rows)")
    return fit_table(df, law, n_boot=n_boot, seed=seed, level=level, source=label, schedules=given,
                     calibrate=calibrate)


def _texts(value, what: str) -> list[str]:
    """A name, path or condition, or a list of them, as a list of strings; anything else a one-line UserError."""
    import os

    items = [] if value is None else [value] if isinstance(value, (str, os.PathLike)) else value
    if isinstance(items, (list, tuple)) and all(isinstance(v, (str, os.PathLike)) for v in items):
        return [os.fspath(v) for v in items]
    raise UserError(f"{what}: give a string or a list of strings, not {type(value).__name__}")


def fit_table(df, law: str = "multipower", *, n_boot: int = 0, seed: int = 0, level: float = 0.95,
              source: str = "table", schedules: dict | None = None, calibrate: bool = False) -> CurveFitReport:
    """Fit ``law`` to every run of a (run, step, lr, loss) table jointly (``schedules``: runs' exact per-step
    rates, :func:`curves_from_table`); with ``n_boot``, the block bootstrap; with ``calibrate``, the interval
    calibrated on runs left out in turn (each run one schedule)."""
    curves = curves_from_table(df, source, schedules=schedules)
    fit = fit_curves(curves, law)
    boot = E.bootstrap(fit, curves, n_boot, level=level, seed=seed) if n_boot else None
    cal = None
    if calibrate:
        if len(curves) < 3:
            raise OptionError(f"{{calibrate}}: {len(curves)} run(s); leaving one schedule out in turn needs at least 3 "
                              "(two refits on the others, two residuals)", "calibrate")
        cal = calibrate_schedules(curves, lambda cs: fit_curves(cs, law), law, level=level)
    runs = []
    for c in curves:
        pred = fit.predict(c)
        m = E.metrics(c.loss, pred)
        runs.append(dict(run=c.name, points=len(c.at), r2=m["r2"], prede=m["prede"], final=float(c.loss[-1]),
                         fitted=float(pred[-1])))
    return CurveFitReport(source, fit, tuple(runs), tuple(curves), boot, cal)


@dataclass(frozen=True)
class CurvePrediction:
    """A saved fit's loss curve for one schedule, with intervals when the fit was bootstrapped."""

    schedule: str
    law: str
    steps: np.ndarray
    loss: np.ndarray
    lo: np.ndarray | None = None          # the parameter-only band (block bootstrap), when the fit has one
    hi: np.ndarray | None = None
    level: float | None = None
    cal_lo: np.ndarray | None = None      # the interval calibrated on schedules left out, when the fit has one
    cal_hi: np.ndarray | None = None
    calibration: CurveCalibration | None = None

    @property
    def interval_kind(self) -> str:
        if self.cal_lo is not None:
            return "calibrated"
        return "parameter-only" if self.lo is not None else "none"

    def summary(self) -> str:
        head = f"{self.law} law, schedule {self.schedule}: predicted loss"
        cal = self.calibration
        if self.cal_lo is not None:
            head += (f"; {cal.calibration.level:.0%} interval calibrated on {cal.calibration.n_units} schedules left "
                     f"out in turn (unit: schedule; log loss, t on {cal.calibration.df} df)")
        elif cal is not None:
            head += f"; no calibrated interval ({cal.calibration.reason})"
        else:
            head += "; no calibrated interval (the fit was saved without --calibrate)"
        if self.lo is not None:
            head += f"; {self.level:.0%} parameter-only band (block bootstrap, one training residual added)"
        cols = [("low", "high")] * (self.cal_lo is not None) + [("p-low", "p-high")] * (self.lo is not None)
        lines = [head, f"{'step':>8} {'loss':>8}" + "".join(f" {a:>8} {b:>8}" for a, b in cols)]
        for i, s in enumerate(self.steps):
            row = f"{int(s):8d} {self.loss[i]:8.4f}"
            if self.cal_lo is not None:
                row += f" {self.cal_lo[i]:8.4f} {self.cal_hi[i]:8.4f}"
            if self.lo is not None:
                row += f" {self.lo[i]:8.4f} {self.hi[i]:8.4f}"
            lines.append(row)
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return to_jsonable(dict(schedule=self.schedule, law=self.law, steps=self.steps, loss=self.loss,
                                interval=self.interval_kind, low=self.cal_lo, high=self.cal_hi,
                                parameter_only_low=self.lo, parameter_only_high=self.hi, level=self.level,
                                calibration=None if self.calibration is None else self.calibration.to_dict()))

    def plot(self, path) -> None:
        import matplotlib.pyplot as plt

        from scalinglab.fitting.plot import save_figure

        fig, ax = plt.subplots(figsize=(7, 4.5))
        ax.plot(self.steps, self.loss, "-", label="predicted")
        if self.cal_lo is not None:
            ax.fill_between(self.steps, self.cal_lo, self.cal_hi, alpha=0.2, lw=0,
                            label=f"{self.calibration.calibration.level:.0%} interval, calibrated on schedules")
        if self.lo is not None:
            ax.fill_between(self.steps, self.lo, self.hi, alpha=0.4, lw=0,
                            label=f"{self.level:.0%} parameter-only band")
        ax.set(xscale="log", xlabel="step", ylabel="loss (nats per token)", title=f"{self.law} law: {self.schedule}")
        ax.legend(fontsize=8)
        save_figure(path, fig)
        plt.close(fig)


def load_fit(path) -> tuple[CurveFit, E.CurveBootstrap | None, CurveCalibration | None]:
    from scalinglab.files import regular_file

    regular_file(path)
    try:
        with open(path, encoding="utf-8") as fh:
            d = json.loads(fh.read())
        if not isinstance(d, dict) or d.get("format") not in READABLE_FORMATS or not isinstance(d.get("fit"), dict):
            raise ValueError("not a saved curve fit")
        f = d["fit"]
        if f.get("law") not in LAWS:
            raise ValueError(f"unknown law {f.get('law')!r}")
        fit = CurveFit(f["law"], {k: float(v) for k, v in f["params"].items()}, float(f["objective"]),
                       int(f["n_points"]), tuple(f["curves"]), tuple(f["at_bound"]), float(f["delta"]),
                       extra={"stopped": f["stopped"]} if f.get("stopped") else {},
                       solver=str(f.get("solver", "curve-early-stopped" if f.get("procedure") else "curve-huber")))
        fit.theta  # noqa: B018 -- every parameter of the law is there
        b = d.get("bootstrap")
        boot = None if b is None else E.CurveBootstrap(
            fit.law, np.array(b["thetas"], float), int(b["block"]), float(b["level"]), (np.array(b["residuals"]),))
        c = d.get("calibration")
        cal = None if c is None else from_saved(c)
        if cal is not None and cal.law != fit.law:
            raise ValueError("calibration of another law")
    except (ValueError, KeyError, TypeError, AttributeError, IndexError, RecursionError, UnicodeDecodeError):
        # A JSON list, a nesting deep enough to exhaust the recursion limit, a missing or mistyped field.
        raise UserError(f"{path}: not a curve fit saved by `scalinglab fit-curve --save`") from None
    if not all(np.isfinite(v) for v in fit.params.values()) or (boot is not None and not 0 < boot.level < 1):
        raise UserError(f"{path}: a corrupt curve fit (a parameter that is not finite, or a level outside (0, 1))")
    return fit, boot, cal


def predict_schedule(fit_path, schedule: str, *, at=None, points: int = 12, source: str | None = None,
                     table=None) -> CurvePrediction:
    """A saved fit's prediction of ``schedule``: a name with parameters (``wsd:peak=3e-4,steps=24000``) or, with
    ``table``, a (run, step, lr) table of one run. ``at``: the steps to predict (default ``points`` spread
    geometrically over the schedule)."""
    if table is not None:
        curves = curves_from_table(table, source or schedule, need_loss=False)
        if len(curves) != 1:
            raise UserError(f"{source or schedule}: {len(curves)} runs; a schedule table holds one run")
        lrs = curves[0].lrs
    else:
        lrs = parse_schedule(schedule)
    fit, boot, cal = load_fit(fit_path)
    T = len(lrs)
    if at is None:
        start = max(int(np.argmax(lrs)) + 2, 1)
        at = np.unique(np.geomspace(min(start, T), T, points).round().astype(int))
    at = np.asarray(at, int)
    if (at < 1).any():
        raise OptionError(f"{{at}}: steps must be >= 1, not {int(at.min())}", "at")
    if (np.diff(at) <= 0).any():
        raise OptionError("{at}: steps not increasing", "at")
    if at[-1] > T:
        raise UserError(f"schedule {schedule}: shorter ({T} steps) than the curve asked for (step {int(at[-1])})")
    p = prepare(Curve(schedule, lrs, at))
    pred = LAWS[fit.law].predict(fit.theta, p)
    lo = hi = level = cal_lo = cal_hi = None
    if boot is not None:
        lo, hi = boot.interval(p)
        level = boot.level
    if cal is not None and cal.ok:
        cal_lo, cal_hi = cal.interval(pred)
    return CurvePrediction(schedule, fit.law, at, pred, lo, hi, level, cal_lo, cal_hi, cal)
