"""Compute-optimal allocations from a fitted law with a closed form (Chinchilla's, C = 6ND): N_opt, D_opt,
tokens per parameter and the loss there, each with an interval over the bootstrap's replicates; and the table
`scalinglab fit --compute` prints. ``LawFit.allocate`` is the front door; ``forecast.allocations`` adds the
new-run interval and the distance from the fitted runs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from scalinglab.errors import UserError

ALLOCATION = ("n_opt", "d_opt", "tokens_per_param", "loss")


def check_budgets(C) -> np.ndarray:
    """Compute budgets as a 1-d array, or a UserError naming the first that is not a positive number."""
    C = np.atleast_1d(np.asarray(C, float))
    bad = ~np.isfinite(C) | (C <= 0)
    if bad.any():
        raise UserError(f"compute budgets must be positive numbers of FLOP, not {C[bad][0]:g}")
    return C


def compute_optimal(result, C, level: float | None = None) -> list[dict[str, Any]]:
    """What the fitted law says to train at each compute budget C (FLOP, C = 6ND): N_opt, D_opt, tokens
    per parameter and the loss at that optimum, each with a percentile interval over the bootstrap
    replicates when the fit has them (``level`` defaults to the bootstrap's).

    The intervals carry the parameters' uncertainty only, and far beyond the fitted runs they also rest on
    the law's form holding there (notebook 04 shows where it does not)."""
    C = check_budgets(C)
    point = result.scaling_law
    bs = result.bootstrap
    # The closed form with each parameter a column of replicates: every replicate's allocation at once.
    replicates = result.replicate_laws if bs is not None and len(bs.samples) else None
    level = bs.level if level is None and bs is not None else (level or 0.95)
    q = [(1 - level) / 2 * 100, (1 + level) / 2 * 100]

    def allocation(law, c: float) -> dict[str, np.ndarray]:
        n, d = law.n_opt(c), law.d_opt(c)
        return dict(n_opt=n, d_opt=d, tokens_per_param=d / n, loss=law.loss(n, d))

    out = []
    for c in C:
        row: dict[str, Any] = {"C": float(c), **{k: float(v) for k, v in allocation(point, c).items()}}
        if replicates is not None:
            reps = allocation(replicates, c)
            row["ci"] = {k: tuple(float(x) for x in np.percentile(reps[k], q)) for k in ALLOCATION}
            row["level"] = level
        out.append(row)
    return out


def allocation_summary(rows: list[dict[str, Any]]) -> str:
    """The table `scalinglab fit --compute` prints for ``compute_optimal``'s rows."""
    names = {"n_opt": ("N_opt", ".4g"), "d_opt": ("D_opt", ".4g"), "tokens_per_param": ("tokens/param", ".1f"),
             "loss": ("loss there", ".4f")}
    lines: list[str] = []
    for r in rows:
        head = f"compute-optimal allocation at C = {r['C']:.3g} FLOP (C = 6ND)"
        if "ci" in r:
            head += f"; {round(r['level'] * 100):d}% intervals from the bootstrap (parameter uncertainty only)"
        lines += ([""] if lines else []) + [head]
        for key, (name, fmt) in names.items():
            row = f"  {name:<14}{format(r[key], fmt):>12}"
            if "ci" in r:
                lo, hi = r["ci"][key]
                row += f"   [{format(lo, fmt)}, {format(hi, fmt)}]"
            lines.append(row)
    return "\n".join(lines)
