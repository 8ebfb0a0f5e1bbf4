"""Hoffmann's procedure as written (scipy L-BFGS-B from every start): the baseline bench/bench_fit.py
times, and the stage for notebook 01's loss-scale trap, which is why it stays in the library.
"""

from __future__ import annotations

import numpy as np

from scalinglab.fitting.chinchilla.approach3 import check_identifiable
from scalinglab.fitting.chinchilla.newton import objective, value_and_grad
from scalinglab.fitting.chinchilla.settings import hoffmann_grid
from scalinglab.fitting.huber import HUBER_DELTA
from scalinglab.fitting.rows import progress_bar


def lbfgs_per_start(N, D, L, starts: np.ndarray | None = None, *, reduction: str = "sum", delta: float = HUBER_DELTA,
                    progress: bool = False):
    """Hoffmann's procedure as written: scipy L-BFGS-B with its default tolerances from every start.

    The baseline for ``bench/`` and the stage for the loss-scale trap: with
    ``reduction="mean"`` the objective is n times smaller, so the default
    ``ftol``/``gtol`` stop the search early. Returns (θ (K, 5), objective (K,))
    in the sum scale, so the two reductions compare directly.
    """
    from scipy.optimize import minimize

    if reduction not in ("sum", "mean"):
        raise ValueError(f"reduction must be 'sum' or 'mean', not {reduction!r}")
    logN, logD, logL = check_identifiable(N, D, L)
    starts = hoffmann_grid() if starts is None else np.atleast_2d(np.asarray(starts, float))
    thetas = np.array([minimize(value_and_grad, th0, args=(logN, logD, logL, delta, reduction),
                                jac=True, method="L-BFGS-B").x
                       for th0 in progress_bar(starts, f"L-BFGS-B per start ({reduction})", progress)])
    return thetas, objective(thetas, logN, logD, logL, delta)
