"""Pearce & Song 2024's account of Kaplan's exponent, simulated.

"Reconciling Kaplan and Chinchilla Scaling Laws" (arXiv:2406.12907): take a
Chinchilla law written in *total* parameters N_T, note that at Kaplan's small
scales embeddings are a large share of N_T, and look at the law the way Kaplan
did: non-embedding parameters N_E and compute C_E = 6·N_E·D, over Kaplan's
range of model sizes and budgets. The compute-optimal frontier, fitted as one
power law over that range, is much steeper than β/(α+β).

N_T = N_E + 47491·N_E^(1/3) is their fit to Chinchilla's model shapes
(32k vocabulary, width ∝ N_E^(1/3) at a fixed aspect ratio). Like their
script, we sweep a grid of model sizes, pick at each budget the size with the
lowest loss (D = C/(6N) in the convention being simulated) and fit log N*
against log C by least squares.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from scalinglab.fit import ScalingLaw

GAMMA = 47491.0
# Kaplan's sweep: "768 to 1.5 billion non-embedding parameters", and budgets
# from 10^12.95 FLOP to 10^20.7 in non-embedding compute (Pearce & Song §4);
# in total compute they start at 10^13.4.
N_E_RANGE = (10**2.9, 10**9.2)
C_E_RANGE = (10**12.95, 10**20.7)
C_T_RANGE = (10**13.4, 10**20.7)


def total_params(n_e, gamma: float = GAMMA):
    """N_T from non-embedding N_E: N_E + γ·N_E^(1/3)."""
    n_e = np.asarray(n_e, float)
    return n_e + gamma * n_e ** (1 / 3)


@dataclass(frozen=True)
class PearceSongResult:
    exponent_nonembedding: float   # local slope of N_E* vs C_E over Kaplan's range
    exponent_total: float          # slope of N_T* vs C_T = 6·N_T·D (→ β/(α+β))
    asymptotic: float              # β/(α+β)
    frontier: pd.DataFrame         # convention, flops, n_opt


def _frontier(law: ScalingLaw, n_e: np.ndarray, flops: np.ndarray, total: bool) -> np.ndarray:
    n_t = total_params(n_e)
    n_counted = n_t if total else n_e
    tokens = flops[:, None] / (6 * n_counted[None, :])
    loss = law.loss(n_t[None, :], tokens)
    return n_counted[np.argmin(loss, axis=1)]


def simulate(law: ScalingLaw, n_sizes: int = 20, n_budgets: int = 100) -> PearceSongResult:
    """The frontier in Kaplan's conventions and in total terms, and each one's fitted slope."""
    n_e = np.geomspace(*N_E_RANGE, n_sizes)
    rows, slopes = [], {}
    for conv, c_range, total in (("non_embedding", C_E_RANGE, False), ("total", C_T_RANGE, True)):
        flops = np.geomspace(*c_range, n_budgets)
        best = _frontier(law, n_e, flops, total)
        slopes[conv] = float(np.polyfit(np.log(flops), np.log(best), 1)[0])
        rows.append(pd.DataFrame(dict(convention=conv, flops=flops, n_opt=best)))
    return PearceSongResult(exponent_nonembedding=slopes["non_embedding"],
                            exponent_total=slopes["total"], asymptotic=law.a,
                            frontier=pd.concat(rows, ignore_index=True))
