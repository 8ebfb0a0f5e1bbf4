"""What the scoreboard fits: each entry (a law by an estimator, Approach 2, or a naive baseline) fitted to some
runs, as one object that predicts what the entry can: the loss of a run, the compute-optimal size N_opt(C), the
lowest loss L_min(C) a budget reaches. And the reference the held-out optima are scored against.

Naive baselines, the bar a law must clear to be worth its parameters:

- ``baseline / power law in C``: on isoFLOP sets, log N_opt and log L_min each a straight line in log C through
  the largest ``BASELINE_BUDGETS`` training budgets' own optima; on other runs, log loss a straight line in
  log C through the training runs (a run's loss from its compute alone).
- ``baseline / last optimum``: isoFLOP sets only; the largest training budget's optimum carried forward: its
  lowest loss kept, and its tokens per parameter kept (N_opt ∝ C^½ from there; carrying N_opt itself would
  assume a = 0, a straw man).

The reference optimum of a budget (``budget_reference``): the minimum of a cubic in log N through the budget's
runs (inside their range of N; NaN at an edge). No entry uses a cubic: Approach 2 fits a parabola or an Akima
spline, the laws their own forms, so the reference favours none of them; the baselines read their inputs off
the same cubic on the training budgets, so if anything it favours the baselines, which makes "a law beats the
baselines" the harder claim. Its own uncertainty is shown beside it: how far a parabola's and the best run's
optimum fall from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from scalinglab.errors import UserError

LOSS_ENTRIES = (("chinchilla", "approach3"), ("chinchilla", "varpro"), ("kaplan", "law engine"),
                ("gadre", "law engine"), ("data_constrained", "law engine"))
A2_ENTRIES = (("approach2", "parabola"), ("approach2", "spline"))
A1_ENTRY = ("approach1", "envelope")
POWER_LAW = ("baseline", "power law in C")
LAST_OPTIMUM = ("baseline", "last optimum")
BASELINES = (POWER_LAW, LAST_OPTIMUM)
BASELINE_BUDGETS = 3
N_GRID = 801
MIN_REFERENCE_RUNS = 5


def key(law: str, estimator: str) -> str:
    return f"{law} / {estimator}"


@dataclass
class Fitted:
    """One entry fitted to some runs: ``loss(table)``, ``n_opt(c)``, ``l_min(c)`` (each None where the entry
    cannot say), its free parameters and status, and Approach 3's LawFit (for its bootstrap)."""

    loss: Any = None
    n_opt: Any = None
    l_min: Any = None
    k: int = 0
    status: str = "converged"
    result: Any = None


def _grid(n_lo: float, n_hi: float) -> np.ndarray:
    # two decades past the runs each way: an optimum beyond that is no optimum the runs say anything about
    return np.exp(np.linspace(np.log(n_lo) - np.log(100), np.log(n_hi) + np.log(100), N_GRID))


def law_optimum(predict, c: float, n_lo: float, n_hi: float) -> tuple[float, float]:
    """(N, loss) minimising the predicted loss at compute c (D = c/6N) on a log grid; NaN at the grid's edge."""
    grid = _grid(n_lo, n_hi)
    with np.errstate(all="ignore"):
        loss = np.asarray(predict(pd.DataFrame({"n": grid, "d": c / (6 * grid)})), float)
    loss = np.where(np.isfinite(loss), loss, np.inf)
    i = int(np.argmin(loss))
    return (float(grid[i]), float(loss[i])) if 0 < i < N_GRID - 1 else (float("nan"), float("nan"))


def _law(law: str, estimator: str, t: pd.DataFrame, n_boot: int, seed: int, n_range) -> Fitted:
    n, d, y = (t[k].to_numpy(float) for k in ("n", "d", "loss"))
    res = None
    if estimator == "approach3":
        from scalinglab.fitting.chinchilla.approach3 import CHINCHILLA
        from scalinglab.fitting.laws.base import fit_law
        from scalinglab.fitting.options import FitOptions

        res = fit_law(CHINCHILLA, {"n": n, "d": d}, y, FitOptions().with_resampling(n_boot, seed=seed))
        predict, k, status = (lambda q: res.loss(q["n"].to_numpy(float), q["d"].to_numpy(float))), res.n_free, \
            res.status
    elif estimator == "varpro":
        from scalinglab.fitting.chinchilla.approach3 import CHINCHILLA
        from scalinglab.fitting.solvers import solve

        f = solve("varpro", CHINCHILLA, {"n": n, "d": d}, y, tol=1e-7)
        predict, k, status = (lambda q: f.law.loss(q["n"].to_numpy(float), q["d"].to_numpy(float))), 5, f.status
    else:
        from scalinglab.fitting import laws

        lw = laws.get(law)
        fit = laws.fit_law(lw, {r: t[r].to_numpy(float) for r in lw.inputs}, y,
                           laws.FitOptions().with_resampling(n_boot or None, seed=seed))
        res = fit if n_boot else None
        predict, k, status = ((lambda q: fit.predict({r: q[r].to_numpy(float) for r in lw.inputs})), len(fit.free),
                              fit.status)
    out = Fitted(loss=predict, k=k, status=status, result=res)
    if "u" not in t:   # N_opt(C) of a law with unique tokens needs U too
        out.n_opt = lambda c: law_optimum(predict, c, *n_range)[0]
        out.l_min = lambda c: law_optimum(predict, c, *n_range)[1]
    return out


def budget_reference(table: pd.DataFrame) -> pd.DataFrame:
    """Per budget (column ``c``): the reference optimum ``n_ref``, ``l_ref`` (a cubic in log N, see the module
    docstring), and beside it the parabola's ``n_parabola`` and the best run's ``n_best``, ``l_best``."""
    rows = []
    for c, g in table.groupby("c"):
        x, y = np.log(g["n"].to_numpy(float)), np.log(g["loss"].to_numpy(float))
        best = int(np.argmin(y))
        row = {"c": float(c), "n_best": float(np.exp(x[best])), "l_best": float(np.exp(y[best])),
               "n_ref": np.nan, "l_ref": np.nan, "n_parabola": np.nan, "runs": len(g)}
        if len(np.unique(x)) >= MIN_REFERENCE_RUNS:
            x0 = x.mean()
            fine = np.linspace(x.min(), x.max(), 2001)
            cubic = np.polyval(np.polyfit(x - x0, y, 3), fine - x0)
            i = int(np.argmin(cubic))
            if 0 < i < len(fine) - 1:
                row.update(n_ref=float(np.exp(fine[i])), l_ref=float(np.exp(cubic[i])))
            quad = np.polyfit(x - x0, y, 2)
            if quad[0] > 0:
                row["n_parabola"] = float(np.exp(x0 - quad[1] / (2 * quad[0])))
        rows.append(row)
    return pd.DataFrame(rows)


def _line(x, y, at) -> float:
    ok = np.isfinite(x) & np.isfinite(y)
    if ok.sum() < 2:
        return float("nan")
    b, a = np.polyfit(np.log(x[ok]), np.log(y[ok]), 1)
    return float(np.exp(a + b * np.log(at)))


def _baseline(estimator: str, t: pd.DataFrame, iso: bool) -> Fitted:
    if not iso:
        if estimator != POWER_LAW[1]:
            raise UserError(f"baseline {estimator!r} needs isoFLOP budgets")
        x, y = np.log(t["c"].to_numpy(float)), np.log(t["loss"].to_numpy(float))
        if len(np.unique(x)) < 2:
            raise UserError("a power law in C needs runs at two computes at least")
        b, a = np.polyfit(x, y, 1)
        return Fitted(loss=lambda q: np.exp(a + b * np.log(q["c"].to_numpy(float))), k=2)
    ref = budget_reference(t).dropna(subset=["n_ref"]).sort_values("c")
    if ref.empty:
        raise UserError("no training budget has an interior optimum")
    if estimator == POWER_LAW[1]:
        top = ref.tail(BASELINE_BUDGETS)
        if len(top) < 2:
            raise UserError("a power law through the optima needs two budgets with one")
        cs, ns, ls = (top[k].to_numpy(float) for k in ("c", "n_ref", "l_ref"))
        return Fitted(n_opt=lambda c: _line(cs, ns, c), l_min=lambda c: _line(cs, ls, c), k=4)
    last = ref.iloc[-1]
    return Fitted(n_opt=lambda c: float(last["n_ref"] * np.sqrt(c / last["c"])), l_min=lambda c: float(last["l_ref"]),
                  k=0)


def _approach2(estimator: str, t: pd.DataFrame) -> Fitted:
    from scalinglab.fitting.frontier import isoflop

    frame = t.rename(columns={"c": "flops"})[["n", "flops", "loss"]]
    with np.errstate(all="ignore"):
        fit = isoflop.fit_exponent(isoflop.budget_optima(frame, method=estimator), weighted=False)
    if fit.status != "converged":
        return Fitted(status=fit.status, result=fit)
    return Fitted(n_opt=lambda c: float(fit.predict(c)), status="converged", k=2, result=fit)


def fit_entry(law: str, estimator: str, t: pd.DataFrame, *, iso: bool, n_range, n_boot: int = 0,
              seed: int = 0) -> Fitted:
    """Entry (law, estimator) fitted to the runs ``t`` (standard columns); ``n_range``: (smallest, largest) N
    of the whole dataset, the N_opt grid's span; ``n_boot``: a row bootstrap where the estimator has one."""
    if law == "baseline":
        return _baseline(estimator, t, iso)
    if law == "approach2":
        return _approach2(estimator, t)
    return _law(law, estimator, t, n_boot, seed, n_range)


def exponent(fitted: Fitted, budgets) -> float:
    """a = d log N_opt / d log C between the smallest and largest of ``budgets``."""
    if fitted.n_opt is None:
        return float("nan")
    c0, c1 = float(np.min(budgets)), float(np.max(budgets))
    return float(np.log(fitted.n_opt(c1) / fitted.n_opt(c0)) / np.log(c1 / c0))
