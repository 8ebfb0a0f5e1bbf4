"""Speed of the Chinchilla fit on Epoch's 240 rows, against scipy in the same run.

1. Grid fit: scalinglab.fitting.chinchilla.approach3.fit_arrays (all 4,500 starts scored at once, the
   best optimised by the batched Newton solver) against Hoffmann's procedure
   as written, scipy L-BFGS-B (analytic gradient) from each of the same 4,500
   starts. Prints the ratio and both optima.
2. Bootstrap: 4,000 row resamples re-fitted at once, warm-started; a sample of
   replicates re-solved one by one with scipy L-BFGS-B (tight tolerances) to
   show they agree. Target: grid fit + bootstrap under 5 s on 2 cores.

Run: SCALINGLAB_DATA_MIRROR=../shared/data python bench/bench_fit.py [--quick]
(--quick times the scipy loop on 450 starts and scales it by 10).
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from timing import best_of


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="scipy loop on every 10th start, scaled by 10")
    ap.add_argument("--n-boot", type=int, default=4000)
    args = ap.parse_args()

    from scalinglab import data
    from scalinglab.errors import UserError
    from scalinglab.fitting.chinchilla import approach3 as F
    from scalinglab.fitting.chinchilla.lbfgs_reference import lbfgs_per_start
    from scalinglab.fitting.rows import resample_counts

    try:
        table = data.load("epoch-chinchilla")
    except UserError as exc:
        print(f"bench_fit: {exc}\nbench_fit: set $SCALINGLAB_DATA_MIRROR to the data mirror "
              "(e.g. ../shared/data) or go online", file=sys.stderr)
        return 2
    N, D, L, _ = F.runs_from_table(table, "Model Size", c_col="Training FLOP", drop_highest=5)
    grid = F.hoffmann_grid()
    print(f"Epoch's {len(L)} rows, {len(grid)} starts")

    t_fast, res = best_of(lambda: F.fit_arrays(N, D, L))
    starts = grid[::10] if args.quick else grid
    t0 = time.perf_counter()
    thetas, fs = lbfgs_per_start(N, D, L, starts, progress=True)
    t_slow = (time.perf_counter() - t0) * len(grid) / len(starts)
    ref = F.ScalingLaw(*F.to_params(thetas[np.argmin(fs)]))
    label = "scaled from every 10th start" if args.quick else "all starts"
    print(f"\ngrid fit, vectorised:            {t_fast:8.3f} s   objective {res.objective:.10g}  ({res.status})")
    print(f"scipy L-BFGS-B per start ({label}): {t_slow:8.3f} s   objective {fs.min():.10g}")
    print(f"speed-up: {t_slow / t_fast:.0f}x")
    print(f"{'':8}{'vectorised':>14}{'scipy loop':>14}{'difference':>12}")
    for k in F.PARAMS:
        a, b = getattr(res, k), getattr(ref, k)
        print(f"{k:<8}{a:>14.6g}{b:>14.6g}{(a - b) / b:>+12.2e}")

    t_boot, bs = best_of(lambda: F.bootstrap(res, N, D, L, n_boot=args.n_boot, seed=0), repeat=1)
    print(f"\nbootstrap, {args.n_boot} resamples at once: {t_boot:.3f} s ({bs.n_failed} failed); "
          f"grid fit + bootstrap {t_fast + t_boot:.2f} s (target < 5 s)")
    print("  SE: " + ", ".join(f"{k} {v:.3g}" for k, v in bs.se.items()))

    # Agreement: re-solve a sample of the same resamples one at a time with scipy.
    from scipy.optimize import minimize

    logN, logD, logL = np.log(N), np.log(D), np.log(L)
    counts = resample_counts(len(L), args.n_boot, seed=0)  # the same resamples as above
    rows = np.cumsum(bs.converged) - 1  # replicate k's row in bs.samples
    worst = 0.0
    for k in np.flatnonzero(bs.converged)[:: max(1, args.n_boot // 20)]:
        x = minimize(F.value_and_grad, res.theta, args=(logN, logD, logL, 1e-3, "sum", counts[k]), jac=True,
                     method="L-BFGS-B", options=dict(ftol=0, gtol=1e-10, maxiter=10_000)).x
        worst = max(worst, float(np.max(np.abs(x[3:] - bs.samples[rows[k], 3:]))))
    print(f"  20 replicates re-solved by scipy L-BFGS-B: max |Δα|, |Δβ| = {worst:.1e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
