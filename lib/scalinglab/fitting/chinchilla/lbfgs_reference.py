"""Hoffmann's procedure as written (scipy L-BFGS-B with its default tolerances from every start of their grid): the
solver "lbfgs-hoffmann" in ``fitting.solvers``, the baseline bench/bench_fit.py times, and the stage for notebook
01's loss-scale trap: on the averaged loss the default tolerances stop the search short of the optimum.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scalinglab.errors import UserError
from scalinglab.fitting.chinchilla.approach3 import check_identifiable, chinchilla_fit
from scalinglab.fitting.chinchilla.law import to_params
from scalinglab.fitting.chinchilla.newton import log_rss, value_and_grad
from scalinglab.fitting.chinchilla.newton import objective as summed_huber
from scalinglab.fitting.chinchilla.settings import NewtonSettings, hoffmann_grid
from scalinglab.fitting.huber import HUBER_DELTA
from scalinglab.fitting.rows import progress_bar

REDUCTIONS = ("sum", "mean")
N_STARTS = len(hoffmann_grid())   # Hoffmann's 4,500 starts


@dataclass(frozen=True)
class LbfgsSettings:
    """The settings of "lbfgs-hoffmann": whether the Huber loss is summed or averaged over the runs
    (``reduction``: their text does not say, and the mean, n times smaller, meets scipy's default tolerances early),
    and which of Hoffmann's 4,500 starts it runs from (every ``stride``-th; 1: all)."""

    reduction: str = "sum"
    stride: int = 1

    def __post_init__(self):
        if self.reduction not in REDUCTIONS:
            raise UserError(f"reduction must be one of {', '.join(REDUCTIONS)}, not {self.reduction!r}")
        n = N_STARTS
        if isinstance(self.stride, bool) or not isinstance(self.stride, (int, np.integer)) or not 1 <= self.stride <= n:
            raise UserError(f"stride {self.stride!r}: every stride-th of Hoffmann's {n:,} starts, a whole number "
                            f"from 1 to {n:,}")


def lbfgs_per_start(N, D, L, starts: np.ndarray | None = None, *, reduction: str = "sum", delta: float = HUBER_DELTA,
                    progress: bool = False):
    """Hoffmann's procedure as written: scipy L-BFGS-B with its default tolerances from every start.

    With ``reduction="mean"`` the objective is n times smaller, so the default ``ftol``/``gtol`` stop the search
    early. Returns (θ (K, 5), objective (K,)) in the sum scale, so the two reductions compare directly.
    """
    if reduction not in REDUCTIONS:
        raise ValueError(f"reduction must be 'sum' or 'mean', not {reduction!r}")
    return _per_start(*check_identifiable(N, D, L), starts, reduction, delta, progress)


def _per_start(logN, logD, logL, starts, reduction: str, delta: float, progress: bool):
    """``lbfgs_per_start`` on the runs' logs, checked."""
    from scipy.optimize import minimize

    starts = hoffmann_grid() if starts is None else np.atleast_2d(np.asarray(starts, float))
    thetas = np.array([minimize(value_and_grad, th0, args=(logN, logD, logL, delta, reduction),
                                jac=True, method="L-BFGS-B").x
                       for th0 in progress_bar(starts, f"L-BFGS-B per start ({reduction})", progress)])
    return thetas, summed_huber(thetas, logN, logD, logL, delta)


def solve(law, inputs, y, *, options, fixed=None, ties=None, objective=None, delta=None, n_boot=None, progress=False,
          names=None, **_):
    """The solver "lbfgs-hoffmann": ``lbfgs_per_start`` from every ``stride``-th start of Hoffmann's grid, the
    lowest summed objective kept, as a ``LawFit``. Its status says whether that point is an optimum (the gradient
    below the Newton solver's status tolerance) or where the search stopped ("failed", with the gradient in
    ``reason``). All five parameters, no bootstrap: constraints and resampling are the other solvers'. Its status
    tolerance is the Newton solver's, so even on the summed loss, where it lands within the bootstrap's noise of the
    optimum, scipy's default tolerances stop it short of "converged"; notebook 01 measures how far."""
    fixed = dict(options.fixed) if fixed is None else fixed
    n_boot = options.resampling.n if n_boot is None else n_boot
    objective = objective or options.objective or "huber"
    held = [what for what, given in (("parameters set on the law", law.edited), ("fixed parameters", fixed),
                                     ("tied parameters", ties or options.tied), ("a bootstrap", n_boot),
                                     ("least squares", objective != "huber")) if given]
    if held:
        raise UserError(f"solver lbfgs-hoffmann is Hoffmann et al.'s procedure as written, all five parameters by "
                        f"the Huber loss from their grid; for {held[0]}, use the chinchilla-newton or least-squares "
                        "solver")
    s = options.settings_for(LbfgsSettings)
    delta = options.delta if delta is None else delta
    cols = tuple((names or {}).get(k, d) for k, d in (("n", "N"), ("d", "D"), ("y", "loss")))
    logN, logD, logL = check_identifiable(inputs["n"], inputs["d"], y, cols)   # a refusal names the table's columns
    starts = hoffmann_grid()[:: s.stride]
    thetas, fs = _per_start(logN, logD, logL, starts, s.reduction, delta, progress)
    best = int(np.argmin(fs))
    theta = thetas[best]
    grad_norm = float(np.max(np.abs(value_and_grad(theta, logN, logD, logL, delta)[1])))
    tol = NewtonSettings().status_gtol
    ok = grad_norm <= tol
    reason = "" if ok else (f"L-BFGS-B stopped at gradient {grad_norm:.1e}, above {tol:g}, under scipy's default "
                            f"tolerances on the {s.reduction}")
    return chinchilla_fit(to_params(theta), options=options, objective=float(fs[best]),
                          status="converged" if ok else "failed", n_rows=len(logL), n_starts=len(starts),
                          grad_norm=grad_norm, rss=log_rss(theta, logN, logD, logL),
                          reason=reason)
