"""Speed of `scalinglab fit --start varpro` against today's grid-plus-Newton solver, in the same run.

1. Epoch's 240 rows (Besiroglu et al.'s protocol: the 5 highest losses dropped): the default fit (Hoffmann's
   4,500 starts scored, the best 50 refined by the batched Newton solver, 3 finalists polished) against
   ``FitOptions(settings=NewtonSettings(start="varpro"))`` (one start from variable projection, the same Newton
   polish). Prints both optima, their difference and the time ratio.
2. The bare least-squares fit by variable projection (``fitting.frontier.varpro.fit_varpro``) on noise-free rows of a
   known law: how far from the truth, and how long, against the grid solver on the same rows.

Run: SCALINGLAB_DATA_MIRROR=../shared/data python bench/bench_varpro.py
"""

from __future__ import annotations

import sys

import numpy as np
from timing import best_of


def main() -> int:
    from scalinglab import data
    from scalinglab.errors import UserError
    from scalinglab.fitting.chinchilla import approach3 as F
    from scalinglab.fitting.chinchilla.law import PARAMS, ScalingLaw
    from scalinglab.fitting.frontier.varpro import fit_varpro

    try:
        table = data.load("epoch-chinchilla")
    except UserError as exc:
        print(f"bench_varpro: {exc}\nbench_varpro: set $SCALINGLAB_DATA_MIRROR to the data mirror", file=sys.stderr)
        return 2
    N, D, L, _ = F.runs_from_table(table, "Model Size", c_col="Training FLOP", drop_highest=5)
    t_grid, grid = best_of(lambda: F.fit_arrays(N, D, L), repeat=5)
    t_vp, vp = best_of(lambda: F.fit_arrays(N, D, L, F.FitOptions(settings=F.NewtonSettings(start="varpro"))), repeat=5)
    print(f"Epoch's {len(L)} rows, Huber objective (delta 1e-3), best of 5 runs each")
    print(f"  {'':8}" + "".join(f"{p:>12}" for p in PARAMS) + f"{'objective':>14}{'status':>11}{'seconds':>9}")
    for name, r, t in (("grid", grid, t_grid), ("varpro", vp, t_vp)):
        print(f"  {name:8}" + "".join(f"{getattr(r, p):12.6g}" for p in PARAMS)
              + f"{r.objective:14.8g}{r.status:>11}{t:9.3f}")
    rel = max(abs(getattr(vp, p) / getattr(grid, p) - 1) for p in PARAMS)
    print(f"  largest relative difference in a parameter: {rel:.1e}; objective difference "
          f"{vp.objective - grid.objective:+.1e}")
    print(f"  speed-up (grid / varpro): {t_grid / t_vp:.1f}x")

    law = ScalingLaw(E=1.69, A=406.4, B=410.7, alpha=0.34, beta=0.28)
    rng = np.random.default_rng(0)
    n_sim = np.exp(rng.uniform(np.log(N.min()), np.log(N.max()), len(N)))
    d_sim = np.exp(rng.uniform(np.log(D.min()), np.log(D.max()), len(N)))
    l_sim = law.loss(n_sim, d_sim)
    t_ls, ls = best_of(lambda: fit_varpro(n_sim, d_sim, l_sim), repeat=5)
    t_g2, g2 = best_of(lambda: F.fit_arrays(n_sim, d_sim, l_sim), repeat=5)
    err_ls = max(abs(getattr(ls.law, p) / getattr(law, p) - 1) for p in PARAMS)
    err_g = max(abs(getattr(g2, p) / getattr(law, p) - 1) for p in PARAMS)
    print(f"\nNoise-free rows of Hoffmann's law ({len(N)} rows at Epoch's N and D ranges)")
    print(f"  varpro least squares: largest relative error {err_ls:.1e}, {t_ls:.3f} s")
    print(f"  grid + Newton (Huber): largest relative error {err_g:.1e}, {t_g2:.3f} s")
    print(f"  speed-up (grid / varpro): {t_g2 / t_ls:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
