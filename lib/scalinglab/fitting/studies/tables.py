"""Tables for people: held-out checks and subset studies as narrow DataFrames, intervals as text.

The notebooks print what the fitting modules compute; these helpers turn the results into rows and
columns that fit in about 120 characters, with a blank cell (never "nan") where a value does not exist
(a refused fit, a size that was not bootstrapped, a fit without an interval). The numbers are not
rounded here beyond the format asked for, and nothing is computed that the results do not hold,
except the few derived columns each function names.

pandas is imported here, so this module stays off ``scalinglab fit``'s start path (the CLI never imports it).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from scalinglab.fitting.prediction.held_out import Predictions
from scalinglab.fitting.studies import holdout as H

BLANK = ""


def _finite(x) -> bool:
    try:
        return bool(np.isfinite(float(x)))
    except (TypeError, ValueError):
        return False


def formatted(values: Iterable, spec: str) -> list[str]:
    """Each value with ``format(value, spec)``, or a blank where it is missing or not finite."""
    return [format(float(v), spec) if _finite(v) else BLANK for v in values]


def interval_text(lo_hi: Sequence | None, spec: str = "+.1f", scale: float = 1.0) -> str:
    """``(lo, hi)`` → ``"[lo, hi]"`` with each end multiplied by ``scale`` and formatted with ``spec``;
    a blank when there is no interval (None, or an end that is not finite)."""
    if lo_hi is None or len(lo_hi) != 2 or not all(_finite(v) for v in lo_hi):
        return BLANK
    lo, hi = (float(v) * scale for v in lo_hi)
    return f"[{lo:{spec}}, {hi:{spec}}]"


def heldout_frame(pred: Predictions, tokens_per_param: float = 20.0) -> pd.DataFrame:
    """One row per predicted run, indexed by its table row: N, the token multiplier
    M = D/(``tokens_per_param``·N) (20: Chinchilla's, so M = 1 is compute-optimal), actual and predicted loss,
    the signed relative error (predicted − actual)/actual, the mean law's interval (NaN without a bootstrap) and
    the new-run interval (NaN without one)."""
    nan = np.full(len(pred.rows), np.nan)
    new = pred.has_new_run_interval
    return pd.DataFrame({"N": pred.N, "M": pred.D / (tokens_per_param * pred.N), "actual": pred.actual,
                         "predicted": pred.predicted, "rel_error": pred.rel_error, "lower": pred.lower,
                         "upper": pred.upper, "new_lower": pred.new_lower if new else nan,
                         "new_upper": pred.new_upper if new else nan}, index=pd.Index(pred.rows, name="row"))


def holdout_row(res: H.HoldoutResult) -> dict[str, Any]:
    """A held-out check as one table row: the fit (runs, E, α, β, a) and its held-out errors in percent
    (mean and median |error|, max |error|, mean signed error) and how many runs were held out."""
    f, s = res.fit, res.stats()
    return {"runs": f.n_rows, "E": f.E, "alpha": f.alpha, "beta": f.beta, "a": f.a, "held out": s["n"],
            "mean |err| %": 100 * s["mean_abs_rel_error"], "median %": 100 * s["median_abs_rel_error"],
            "max %": 100 * s["max_abs_rel_error"], "mean signed %": 100 * s["mean_rel_error"]}


def training_set_row(res: H.HoldoutResult, table, n_col: str = "N", d_col: str = "D", *,
                     focus: np.ndarray | None = None, focus_label: str = "largest") -> dict[str, Any]:
    """One fit of ``holdout.training_sets`` as a row: its runs and training compute Σ 6ND, α, β, a and the
    interval of a; the target's median |error|, mean error and max |error| in percent, with 95% intervals
    for the first two (``Predictions.error_intervals``); the error of one ``focus`` run (a mask over the
    held-out rows; default the largest N) with its interval, as ``"{focus_label} err %"``; the share of
    replicates with E at its natural floor, 0, and how many replicates counted.

    Intervals are lists [lo, hi] (NaN without a bootstrap), so that the row serialises to JSON."""
    h, s, bs = res.heldout, res.stats(), res.fit.bootstrap
    ci = h.error_intervals()
    focus = np.asarray(h.N == h.N.max() if focus is None else focus, bool)
    one = h.subset(focus)
    if len(one.rows) != 1:
        raise ValueError(f"the focus must pick one held-out run, not {len(one.rows)}")
    lo, hi = one.rel_error_bounds()
    N, D, _, _ = H.runs_at(table, res.train_rows, n_col, d_col, n_col)
    nan2 = [float("nan")] * 2
    return {"runs": len(res.train_rows), "compute": float((6.0 * N * D).sum()),
            "alpha": res.fit.alpha, "beta": res.fit.beta, "a": res.fit.a,
            "a 95%": list(bs.ci["a"]) if bs is not None else nan2, "target runs": s["n"],
            "median |err| %": 100 * s["median_abs_rel_error"], "mean err %": 100 * s["mean_rel_error"],
            "max |err| %": 100 * s["max_abs_rel_error"], f"{focus_label} err %": 100 * one.rel_error.item(),
            "median |err| 95%": [100 * x for x in ci["median_abs_rel_error"]],
            "mean err 95%": [100 * x for x in ci["mean_rel_error"]],
            f"{focus_label} err 95%": [100 * lo.item(), 100 * hi.item()],
            "E = 0 share": H.at_natural_floor(res.fit)["E"] if bs is not None else float("nan"),
            "replicates": len(bs.samples) if bs is not None else 0}


# Column → (summary key, format) for the two halves of a subset study's table.
SPREAD = {"a": ("a_median", ".2f"), "a 16-84%": (("a_lo", "a_hi"), ".2f"), "a RMSE": ("a_rmse", ".3f"),
          "N_opt/ref": ("n_opt_ratio_median", ".2f"), "N 16-84%": (("n_opt_ratio_lo", "n_opt_ratio_hi"), ".2f"),
          "ln N bias": ("ln_n_opt_bias", "+.2f"), "ln N RMSE": ("ln_n_opt_rmse", ".2f"),
          "within 2x": ("n_opt_within_2x", ".0%")}
COVERAGE = {"boot fits": ("boot_fits", ".0f"), "covers a": ("a_covered", ".0%"),
            "covers N_opt": ("n_opt_covered", ".0%"), "N_opt span": ("n_opt_ci_span", ".1f")}


def subset_table(summary, part: str = "spread") -> pd.DataFrame:
    """A subset study's ``subsets.summarise`` rows (a list of dicts or a DataFrame indexed by variant and
    size) as text, one row per variant and size:

    * ``part="spread"``: fits (draws not refused) and flagged (not converged), then across subsets the
      median and 16–84% range of a and of N_opt/reference, the RMSE of a, the bias and RMSE of ln N_opt
      and the share within 2×;
    * ``part="coverage"``: the bootstrapped sizes only: how many fits were bootstrapped, the share whose
      95% interval covers the reference's a and N_opt, and N_opt's median span (upper/lower), as "12.3x".

    Missing values (a variant refused at a size) are blank."""
    t = summary if isinstance(summary, pd.DataFrame) else pd.DataFrame(list(summary)).set_index(["variant", "size"])
    if part not in ("spread", "coverage"):
        raise ValueError(f"part is 'spread' or 'coverage', not {part!r}")
    if part == "spread":
        out = {"fits": (t["draws"] - t["refused"]).astype(int), "flagged": t["not_converged"].astype(int)}
        columns = SPREAD
    else:
        if "boot_fits" not in t:
            return pd.DataFrame(index=t.index[:0])
        t = t[t["boot_fits"].notna()]
        out, columns = {}, COVERAGE
    for name, (key, spec) in columns.items():
        if isinstance(key, tuple):
            out[name] = [interval_text(pair, spec) for pair in zip(*(_column(t, k) for k in key))]
        else:
            text = formatted(_column(t, key), spec)
            out[name] = [f"{v}x" if v and name == "N_opt span" else v for v in text]
    return pd.DataFrame(out, index=t.index)


def _column(t: pd.DataFrame, key: str):
    return t[key] if key in t else [float("nan")] * len(t)
