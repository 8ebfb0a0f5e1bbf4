"""Speed of the multi-power law's fit and prediction on Luo et al. 2025's split, against the naive evaluation,
in the same run.

For each model size (25M, 100M, 400M): fit the law to the three training curves (cosine_24000, constant_24000,
wsdcon_9: ``scalinglab.curves.fit.fit_curves``, screened starts and scipy polish) and predict the six unseen
curves (up to 72,000 steps, every logged point). The whole of that is timed, best of 3.

The naive evaluation is the law by its definition, one logged point at a time with a numpy sum over every
earlier step (``laws.multipower_naive``, the way the authors' own evaluation computes it): O(m·T) work with a
Python loop over the m points. It is timed on the same nine curves at the fitted parameters; the fit needs one
evaluation per objective and Jacobian call, so its count times the naive evaluation's time is what the same fit
would cost with naive evaluation of the training curves (an extrapolation, printed as such; running it
would take a minute or more per size).

Goal: the whole fit and prediction of one size in under 5 s on 2 cores.

Run: OPENBLAS_NUM_THREADS=1 SCALINGLAB_DATA_MIRROR=../shared/data python bench/bench_curves.py
"""

from __future__ import annotations

import sys

import numpy as np
from timing import best_of


def main() -> int:
    from scalinglab.curves import fit as F
    from scalinglab.curves import laws
    from scalinglab.curves.data import LUO_SIZES, LUO_TEST, LUO_TRAIN, luo_curves
    from scalinglab.errors import UserError

    law = laws.LAWS["multipower"]
    print("Multi-power law on Luo et al.'s split: fit 3 curves, predict 6 unseen (every logged point)")
    print(f"{'size':>5}{'fit+predict s':>15}{'evaluations':>13}{'eval fast s':>13}{'eval naive s':>14}"
          f"{'ratio':>8}{'naive fit s (extrap.)':>23}{'max |fast-naive|':>18}")
    worst = 0.0
    for size in LUO_SIZES:
        try:
            curves = luo_curves(size)
        except UserError as exc:
            print(f"bench_curves: {exc}\nbench_curves: set $SCALINGLAB_DATA_MIRROR to the data mirror",
                  file=sys.stderr)
            return 2
        train, test = [curves[n] for n in LUO_TRAIN], [curves[n] for n in LUO_TEST]

        def fit_and_predict():
            fit = F.fit_curves(train, "multipower")
            return fit, [fit.predict(c) for c in test]

        t_all, (fit, _) = best_of(fit_and_predict)
        calls = [0]
        stack = F._stack

        def counting(*a):
            calls[0] += 1
            return stack(*a)

        F._stack = counting
        try:
            F.fit_curves(train, "multipower")
        finally:
            F._stack = stack
        every = train + test

        def fast():
            return [law.predict(fit.theta, laws.prepare(c)) for c in every]

        def naive():
            return [laws.multipower_naive(fit.theta, c) for c in every]

        t_fast, a = best_of(fast)
        t_naive, b = best_of(naive, repeat=1)
        t_naive_train, _ = best_of(lambda: [laws.multipower_naive(fit.theta, c) for c in train], repeat=1)
        diff = max(float(np.abs(x - y).max()) for x, y in zip(a, b))
        worst = max(worst, t_all)
        print(f"{size:>5}{t_all:15.2f}{calls[0]:13d}{t_fast:13.3f}{t_naive:14.3f}{t_naive / t_fast:8.0f}x"
              f"{calls[0] * t_naive_train:23.0f}{diff:18.1e}")
    print(f"slowest size: {worst:.2f} s for fit + prediction (goal < 5 s): {'met' if worst < 5 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
