"""The seed bootstrap's exponents: one vectorised minimisation per budget (isoflop.resampled_exponents) vs
one budget_optima + fit_exponent per resample, in the same run, on the same resampled data. Prints the
speed-up and the largest difference between the two sets of exponents.

    .venv/bin/python bench/bench_isoflop.py [--resamples 300]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from scalinglab.fitting.frontier import isoflop

# A Chinchilla-form law (Hoffmann's printed fit) on 5 budgets × 9 sizes, the shape of a small sweep.
E, A, B, ALPHA, BETA = 1.69, 406.4, 410.7, 0.34, 0.28


def sweep_like(n_res: int, rng) -> list[tuple[float, np.ndarray, np.ndarray]]:
    budgets = []
    for c in np.geomspace(1e17, 1e21, 5):
        n_opt = (ALPHA * A / (BETA * B)) ** (1 / (ALPHA + BETA)) * (c / 6) ** (BETA / (ALPHA + BETA))
        n = n_opt * np.exp(np.linspace(-2.5, 2.5, 9))
        loss = E + A / n**ALPHA + B / (c / (6 * n)) ** BETA
        budgets.append((c, n, loss[:, None] + 0.01 * rng.standard_normal((len(n), n_res))))
    return budgets


def one_at_a_time(budgets, method, window) -> np.ndarray:
    out = []
    for b in range(budgets[0][2].shape[1]):
        table = pd.DataFrame({"flops": np.concatenate([np.full(len(n), c) for c, n, _ in budgets]),
                              "n": np.concatenate([n for _, n, _ in budgets]),
                              "loss": np.concatenate([loss[:, b] for _, _, loss in budgets])})
        fit = isoflop.fit_exponent(isoflop.budget_optima(table, method=method, window=window), weighted=False)
        out.append(fit.exponent)
    return np.array(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--resamples", type=int, default=300)
    args = ap.parse_args()
    budgets = sweep_like(args.resamples, np.random.default_rng(0))
    for method, window in (("spline", None), ("parabola", 5)):
        isoflop.resampled_exponents([(c, n, x[:, :2]) for c, n, x in budgets], method, window)  # warm-up
        t0 = time.perf_counter()
        slow = one_at_a_time(budgets, method, window)
        t_slow = time.perf_counter() - t0
        t0 = time.perf_counter()
        fast = isoflop.resampled_exponents(budgets, method, window)
        t_fast = time.perf_counter() - t0
        diff = float(np.nanmax(np.abs(fast - slow)))
        print(f"{method:8s} window={window}: {args.resamples} resamples, one fit each {t_slow:.2f} s, vectorised "
              f"{t_fast:.3f} s, speed-up x{t_slow / t_fast:.0f}; max |delta a| = {diff:.1e}")


if __name__ == "__main__":
    main()
