"""The estimator audit under truths that are not the Chinchilla law: an audit that Approach 3 and variable
projection can lose, because the form they fit is not the form that made the data.

A ``Truth`` is a clean loss L(N, D) and a noise model. Its *true exponent* is what every estimator of a is
after: the least-squares slope of log N_opt(C) on log C over the design's budgets, with N_opt(C) found
numerically (the Chinchilla law's a = β/(α+β) when the truth is that law; the local slope over the budgets
when N_opt(C) is no power law, as under a broken power law). The grid is the design's (``estimator_audit.Design``:
width, sizes, budgets), centred on the truth's own optimum at each budget.

Truths (``truths``):

``chinchilla``
    The baseline: Hoffmann's E, A, B, α + β = 0.62, a = 0.5; Gaussian noise in log loss.
``kaplan``
    Kaplan et al. 2020's L = [(N_c/N)^(α_N/α_D) + D_c/D]^α_D with their α_N = 0.076, α_D = 0.095,
    N_c = 8.8e13, D_c = 5.4e13 (their Table 1 / eq. 1.5): no irreducible term and an interaction of N and D.
``broken``
    The Chinchilla law with the N term's exponent rising by ``BREAK_SHIFT`` across a smooth break
    (Caballero et al. 2023's form, one break) in the middle of the design's sizes.
``noise grows with loss``
    The baseline law; the sd of log loss grows with the run's excess over its budget's lowest loss,
    σ·(1 + ``HETERO_SLOPE``·(L/L_min − 1)), as seed noise does away from a budget's optimum (``isoflop.seed_noise``).
``seed-shared noise``
    The baseline law; besides independent noise, each experiment draws one seed offset, a smooth random
    function of log N shared by every budget's runs of similar size (the runs of one seed and shape read at
    several budgets), sd ``σ`` as large as the independent part.
``resampled residuals: NAME``
    The baseline law times exp(r), r drawn with replacement from the log residuals of a real sweep's fit
    (centred, so the law stays the truth): heavy tails and outliers as real runs have them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from scalinglab.fitting.studies import estimator_audit as EA

KAPLAN = dict(alpha_N=0.076, alpha_D=0.095, N_c=8.8e13, D_c=5.4e13)
BREAK_SHIFT = 0.15          # the N exponent after the break minus before it
BREAK_SHARPNESS = 0.3       # Caballero et al.'s f: smaller is sharper
HETERO_SLOPE = 20.0         # sd multiplier per unit of L/L_min − 1 (2 at a 5% excess)
SEED_PERIODS = (0.7, 1.3, 2.9)   # decades of N: the seed offset's wavelengths
N_GRID = 4001


@dataclass(frozen=True)
class Truth:
    """A clean loss ``loss(N, D)``, a noise kind (``gaussian``, ``hetero``, ``seed``, ``resampled``) and the
    residuals a ``resampled`` truth draws from."""

    name: str
    loss: Callable[[np.ndarray, np.ndarray], np.ndarray]
    noise: str = "gaussian"
    residuals: np.ndarray | None = None
    description: str = ""

    def n_opt(self, c: float) -> float:
        """N minimising the loss at compute c (D = c/6N), on a fine log grid over ten decades around 6ND's
        middle, refined by a parabola through the grid's three best points."""
        lo, hi = np.log(np.sqrt(c / 6)) - 12, np.log(np.sqrt(c / 6)) + 12
        x = np.linspace(lo, hi, N_GRID)
        y = np.log(self.loss(np.exp(x), c / (6 * np.exp(x))))
        i = int(np.clip(np.argmin(y), 1, N_GRID - 2))
        c2, c1, _ = np.polyfit(x[i - 1:i + 2] - x[i], y[i - 1:i + 2], 2)
        return float(np.exp(x[i] - c1 / (2 * c2)))


def true_exponent(truth: Truth, budgets) -> float:
    """The least-squares slope of log N_opt(C) on log C over ``budgets``."""
    c = np.asarray(budgets, float)
    return float(np.polyfit(np.log(c), np.log([truth.n_opt(x) for x in c]), 1)[0])


def grid_for(truth: Truth, design: EA.Design) -> EA.Grid:
    """The design's grid (budgets, width, sizes, miscentring) around the truth's own optima."""
    flops = design.c_min * np.logspace(0, design.c_decades, design.budgets)
    tilt = np.linspace(0, 1, design.budgets) if design.budgets > 1 else np.zeros(1)
    half = design.width / 2
    return [(float(c), truth.n_opt(c) * design.centring ** t * np.logspace(-half, half, design.points))
            for c, t in zip(flops, tilt)]


def _seed_offsets(logn: np.ndarray, reps: int, sigma: float, rng) -> np.ndarray:
    """(k, reps): a smooth random function of log10 N per experiment, sd ``sigma`` (three sinusoids of the
    SEED_PERIODS wavelengths with random phases and Gaussian amplitudes)."""
    x = logn / np.log(10)
    amp = rng.standard_normal((len(SEED_PERIODS), reps)) * sigma * np.sqrt(2 / len(SEED_PERIODS))
    phase = rng.uniform(0, 2 * np.pi, (len(SEED_PERIODS), reps))
    return sum(amp[j] * np.sin(2 * np.pi * x[:, None] / p + phase[j]) for j, p in enumerate(SEED_PERIODS))


def simulate(truth: Truth, grid: EA.Grid, sigma: float, reps: int, rng: np.random.Generator):
    """(C, N (k,), L (k, reps)) per budget, as ``estimator_audit.simulate`` returns them, under the truth's
    noise. The seed offsets are drawn once per experiment over all budgets' sizes, so budgets share them."""
    all_n = np.concatenate([np.asarray(n, float) for _, n in grid])
    seed = _seed_offsets(np.log(all_n), reps, sigma, rng) if truth.noise == "seed" else None
    out, k = [], 0
    for c, n in grid:
        n = np.asarray(n, float)
        clean = truth.loss(n, c / (6 * n))
        shape = (len(n), reps)
        if truth.noise == "resampled":
            eps = rng.choice(truth.residuals, size=shape, replace=True)
        elif truth.noise == "hetero":
            sd = sigma * (1 + HETERO_SLOPE * (clean / clean.min() - 1))
            eps = sd[:, None] * rng.standard_normal(shape)
        else:
            eps = sigma * rng.standard_normal(shape)
            if seed is not None:
                eps = eps + seed[k:k + len(n)]
        out.append((c, n, clean[:, None] * np.exp(eps)))
        k += len(n)
    return out


def _kaplan(N, D):
    p = KAPLAN
    a = p["alpha_N"] / p["alpha_D"] * (np.log(p["N_c"]) - np.log(N))
    return np.exp(p["alpha_D"] * np.logaddexp(a, np.log(p["D_c"]) - np.log(D)))


def _broken(law, n_break: float):
    def loss(N, D):
        t = np.logaddexp(0.0, (np.log(N) - np.log(n_break)) / BREAK_SHARPNESS)
        return law.E + law.A / N ** law.alpha * np.exp(-BREAK_SHIFT * BREAK_SHARPNESS * t) + law.B / D ** law.beta
    return loss


def centred_residuals(loss, predicted) -> np.ndarray:
    """log(loss / predicted) minus its median: a fit's log residuals as a noise distribution around 0."""
    r = np.log(np.asarray(loss, float)) - np.log(np.asarray(predicted, float))
    r = r[np.isfinite(r)]
    return r - np.median(r)


def truths(design: EA.Design, residuals: dict[str, np.ndarray] | None = None) -> dict[str, Truth]:
    """The baseline law and its misspecified variants (module docstring); ``residuals``: {name: centred log
    residuals} for one resampled-residual truth each."""
    law = design.law()
    base = Truth("chinchilla", law.loss, description="the Chinchilla law itself (correctly specified)")
    flops = design.c_min * np.logspace(0, design.c_decades, design.budgets)
    n_mid = law.n_opt(float(np.sqrt(flops[0] * flops[-1])))
    out = {
        "chinchilla": base,
        "kaplan": Truth("kaplan", _kaplan, description="Kaplan et al.'s form: no irreducible loss, N and D interact"),
        "broken": Truth("broken", _broken(law, n_mid),
                        description=f"N exponent rising by {BREAK_SHIFT:g} across a break at {n_mid:.2g} parameters"),
        "noise grows with loss": replace(base, name="noise grows with loss", noise="hetero",
                                         description="sd of log loss growing with the excess over the budget's "
                                                     "minimum"),
        "seed-shared noise": replace(base, name="seed-shared noise", noise="seed",
                                     description="a seed offset shared by every budget's runs of similar size"),
    }
    for name, r in (residuals or {}).items():
        key = f"resampled residuals: {name}"
        out[key] = replace(base, name=key, noise="resampled", residuals=np.asarray(r, float),
                           description=f"log residuals of a fit to {name}, drawn with replacement")
    return out


def run_truths(design: EA.Design, truths_: dict[str, Truth], reps: int, seed: int = 0, n_boot: int = 200,
               estimators=EA.ESTIMATORS, progress: bool = False) -> list[dict]:
    """One row per (truth, estimator): the truth, its true exponent, the estimator and ``EA.summarise``'s bias,
    RMSE and exact coverage interval; every estimator on the same experiments, and the paired gaps in mean
    squared error that ``EA.best_estimators`` reads (ties as ties)."""
    rows = []
    items = list(truths_.items())
    if progress:
        from tqdm.auto import tqdm

        items = tqdm(items, desc="truths", leave=False)
    for k, (name, truth) in enumerate(items):
        grid = grid_for(truth, design)
        a_true = true_exponent(truth, [c for c, _ in grid])
        budgets = simulate(truth, grid, design.noise, reps, np.random.default_rng(seed + 7919 * k))
        est = EA.estimate(budgets, seed=seed + 7919 * k, estimators=estimators, n_boot=n_boot)
        here = [{"truth": name, "description": truth.description, "a_true": a_true, "estimator": e,
                 **EA.summarise(a_true, est[e])} for e in estimators]
        good = [r["estimator"] for r in here if np.isfinite(r["rmse"]) and EA.trusted(r)]
        gaps = EA.paired_gaps(a_true, est, good or [r["estimator"] for r in here if np.isfinite(r["rmse"])])
        for r in here:
            r["mse_gap"], r["mse_gap_se"] = gaps.get(r["estimator"], (np.nan, np.nan))
        rows += here
    return rows
