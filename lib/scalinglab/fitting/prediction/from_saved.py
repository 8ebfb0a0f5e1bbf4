"""A saved fit's predictions for a table of runs (`scalinglab predict`): each run's predicted loss with the mean-law
and new-run intervals, the interval calibrated on units the fit never saw (when the fit was saved with its
calibration: ``fitting.prediction.run_calibration``), and its distance from the fitted runs, as one result with
``summary()`` and ``to_dict()``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from scalinglab.errors import OptionError, printable
from scalinglab.fitting.prediction.domain import Domain, legend, short
from scalinglab.fitting.prediction.forecast import prediction_rows
from scalinglab.serialization import to_jsonable


@dataclass(frozen=True)
class Forecast:
    """A saved fit's predictions for a table of runs (`scalinglab predict`): one dict per run (``rows``: N, D, C,
    predicted, mean and new-run intervals, distance from the fitted runs, and actual and relative error when the
    table has losses), with what they rest on."""

    rows: list[dict[str, Any]]
    source: str            # the runs the fit was made on
    data_sha256: str
    n_fitted: int
    status: str
    n_replicates: int      # the fit's converged bootstrap replicates (0: no mean interval)
    level: float
    residual_sd: float
    domain: Domain
    calibration: dict[str, Any] | None = None   # the saved fit's calibration (its unit, scheme, spread)

    @property
    def n_outside(self) -> int:
        return sum(r["extrapolation"]["outside"] for r in self.rows)

    def to_dict(self) -> dict[str, Any]:
        return to_jsonable({"source": self.source, "data_sha256": self.data_sha256, "level": self.level,
                            "residual_sd": self.residual_sd, "n_outside": self.n_outside,
                            "calibration": self.calibration, "domain": self.domain.to_dict(), "rows": self.rows})

    def summary(self, fit: str = "fit", label: str = "runs") -> str:
        boot = f"{self.n_replicates} bootstrap replicates" if self.n_replicates else "no bootstrap: no mean interval"
        actual = any("actual" in r for r in self.rows)
        lines = [f"{fit}: the law fitted on {self.n_fitted} runs of {printable(self.source, 200)} "
                 f"(status {self.status}; {boot})",
                 f"{label}: {len(self.rows)} runs; {round(self.level * 100):d}% intervals: mean law = the law's value "
                 f"(bootstrap of its parameters), new run = one more run's loss (adds residual sd "
                 f"{self.residual_sd:.3g} in log loss)", ""]
        cal = self.calibration is not None
        head = (f"{'row':>5}{'N':>11}{'D':>11}{'C':>11}{'predicted':>11}" + (f"   {'calibrated':<18}" if cal else "")
                + f"   {'mean law':<18}   {'new run':<18}")
        lines.append(head + (f"{'actual':>9}" if actual else "") + f"{'beyond':>11}")
        for i, r in enumerate(self.rows):
            lo, hi = r["mean_interval"]
            mean = "-" if not np.isfinite(lo) else f"[{lo:.4f}, {hi:.4f}]"
            c = r.get("calibrated_interval", [np.nan, np.nan])
            calib = (f"   {'-' if not np.isfinite(c[0]) else f'[{c[0]:.4f}, {c[1]:.4f}]':<18}" if cal else "")
            line = (f"{i:>5d}{r['N']:>11.4g}{r['D']:>11.4g}{r['C']:>11.4g}{r['predicted']:>11.4f}{calib}   "
                    f"{mean:<18}   [{r['new_run_interval'][0]:.4f}, {r['new_run_interval'][1]:.4f}]")
            lines.append(line + (f"{r['actual']:>9.4f}" if actual else "") + f"{short(r['extrapolation']):>11}")
        if cal:
            c = self.calibration
            lines += ["", (f"calibrated = the fit's error one {c['unit']} out: {c['n_units']} {c['unit']}s of the "
                           "fitted runs, " + ("each predicted from those below it" if c["scheme"] == "forward"
                                             else "each left out")
                           + f" (bias {c['bias']:+.3g}, sd {c['sigma_unit']:.3g} between {c['unit']}s, t on "
                             f"{c['df']} df, in {c['space']} loss)" if c.get("ok") else
                           f"calibrated: none ({c.get('reason')})")]
        else:
            lines += ["", "calibrated: none (the fit was saved without a calibration)"]
        lines += ["", legend([r["extrapolation"] for r in self.rows])]
        if self.n_outside:
            lines.append(f"WARNING: {self.n_outside} of {len(self.rows)} runs lie outside the fitted runs: their "
                         "predictions extrapolate the law's form")
        return "\n".join(lines)


def predict_table(saved, table, rows, cols: dict[str, str], level: float | None = None,
                  loss_given: bool = False) -> Forecast:
    """``saved`` (a ``fitting.saved.SavedFit``)'s predictions for the table's ``rows`` (indices). ``cols``: n_col,
    d_col or c_col (D = C/(6N)), loss_col; a loss column the table lacks is left out unless ``loss_given``."""
    from scalinglab.errors import UserError
    from scalinglab.fitting.studies.holdout import runs_at

    rows = np.asarray(rows, int)
    c_col = cols.get("c_col")
    d_col = None if c_col else (cols.get("d_col") or "D")
    n_col, loss_col = cols.get("n_col") or "N", cols.get("loss_col") or "loss"
    for col in (n_col, c_col or d_col):
        if col not in table:
            raise UserError(f"no column {col!r}; the table has {', '.join(table)}")
    if loss_given and loss_col not in table:
        raise OptionError(f"{{loss_col}}: no column {loss_col!r}; the table has {', '.join(table)}", "loss_col")
    with_loss = loss_col in table
    N, D, L, _ = runs_at(table, rows, n_col, d_col, loss_col if with_loss else None, c_col=c_col)
    res, bs = saved.result, saved.result.bootstrap
    level = level if level is not None else (bs.level if bs is not None else 0.95)
    out = prediction_rows(res, N, D, saved.domain, saved.residual_sd, level, L if with_loss else None)
    from scalinglab.fitting.prediction.run_calibration import from_saved

    cal = from_saved(saved.calibration)
    if cal is not None:
        lo, hi = cal.interval(np.array([r["predicted"] for r in out], float), level)
        for r, a, b in zip(out, lo, hi):
            r["calibrated_interval"] = [float(a), float(b)]
    return Forecast(out, saved.source, saved.data_hash, res.n_rows, res.status,
                    len(bs.samples) if bs is not None else 0, level, saved.residual_sd, saved.domain,
                    saved.calibration)
