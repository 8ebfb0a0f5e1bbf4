"""How many runs does a fit need? Fits on random subsets of runs, with and without constraints.

A lab with 8 runs gets one fit; how far that fit is from the one a lab with
240 runs would get is a property of the design, which subsets of a large set
of real runs can measure. ``subset_fits`` draws many random subsets of k runs
(seeded, without replacement), fits each under several ``FitOptions`` (the
same subsets for every variant, so that variants compare draw by draw) and
keeps what each fit says about allocation: the exponent a of N_opt ∝ C^a and
N_opt at a compute budget. ``summarise`` compares those with a reference law,
usually the fit on all the runs.

A subset the fit refuses (too few runs for its free parameters, too few
distinct N or D) is recorded as refused with the reason, never silently
dropped: "the fit would not run" is part of the answer. Medians and
percentiles, not means, summarise the rest, since a fit on a few runs can
land anywhere (an exponent on its bound, E at zero) and one such fit would
dominate a mean.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from scalinglab import fit as F
from scalinglab.errors import UserError


def draw_subsets(n: int, size: int, n_draws: int, seed: int = 0) -> np.ndarray:
    """(n_draws, size) row indices: each row a subset of range(n) drawn without replacement, sorted.

    The generator is seeded by (seed, size), so the draws at one size do not change when other sizes
    are added or removed.
    """
    if not 1 <= size <= n:
        raise UserError(f"cannot draw subsets of {size} runs from {n}")
    if n_draws < 1:
        raise UserError(f"need at least one draw, not {n_draws}")
    rng = np.random.default_rng([seed, size])
    return np.sort(np.array([rng.choice(n, size, replace=False) for _ in range(n_draws)]), axis=1)


@dataclass(frozen=True)
class SubsetFits:
    """One record per (size, draw, variant): the fit's status ("refused" with ``reason`` when the data
    could not identify it), parameters, a and N_opt at ``budget``."""

    records: tuple[dict[str, Any], ...]
    sizes: tuple[int, ...]
    variants: tuple[str, ...]
    n_draws: int
    budget: float
    seed: int

    def values(self, variant: str, size: int, key: str) -> np.ndarray:
        """``key`` of the fits (not refused) of one variant at one size, in draw order."""
        return np.array([r[key] for r in self.records
                         if r["variant"] == variant and r["size"] == size and r["status"] != "refused"], float)


def subset_fits(N, D, L, sizes: Sequence[int], variants: Mapping[str, F.FitOptions], *, n_draws: int = 100,
                seed: int = 0, budget: float = 5.88e23, progress: bool = False) -> SubsetFits:
    """Fit ``n_draws`` random subsets of each size under each variant's options (no bootstrap)."""
    N, D, L = (np.asarray(x, float).ravel() for x in (N, D, L))
    F.check_budgets(budget)
    records = []
    for size in sizes:
        draws = draw_subsets(len(N), size, n_draws, seed)
        for i in _progress(range(n_draws), f"subsets of {size} runs", progress):
            rows = draws[i]
            for name, opts in variants.items():
                rec: dict[str, Any] = {"size": size, "draw": i, "variant": name}
                try:
                    res = F.fit_arrays(N[rows], D[rows], L[rows], opts)
                except UserError as exc:
                    records.append({**rec, "status": "refused", "reason": str(exc)})
                    continue
                records.append({**rec, "status": res.status, **res.params(), "a": res.a,
                                "n_opt": float(res.n_opt(budget))})
    return SubsetFits(records=tuple(records), sizes=tuple(sizes), variants=tuple(variants), n_draws=n_draws,
                      budget=float(budget), seed=seed)


def _progress(iterable, desc: str, on: bool):
    if not on:
        return iterable
    from tqdm.auto import tqdm

    return tqdm(iterable, desc=desc)


def summarise(fits: SubsetFits, reference: F.ScalingLaw, *, level: float = 0.68) -> list[dict[str, Any]]:
    """Per variant and size: how many fits ran, and how their a and N_opt sit against ``reference``.

    ``a_bias`` is the median a minus the reference's; ``a_lo``/``a_hi`` the central ``level`` interval of
    a across draws. N_opt is compared as a ratio to the reference's: its median, its interval, the
    typical factor off (10^median |log10 ratio|, bias and spread together) and the share of draws within
    a factor of 2.
    """
    q = [(1 - level) / 2 * 100, 50, (1 + level) / 2 * 100]
    ref_n = float(reference.n_opt(fits.budget))
    out = []
    for name in fits.variants:
        for size in fits.sizes:
            mine = [r for r in fits.records if r["variant"] == name and r["size"] == size]
            row: dict[str, Any] = {"variant": name, "size": size, "draws": len(mine),
                                   "refused": sum(r["status"] == "refused" for r in mine),
                                   "not_converged": sum(r["status"] not in ("refused", "converged") for r in mine)}
            a, n = fits.values(name, size, "a"), fits.values(name, size, "n_opt")
            if a.size:
                lo, med, hi = np.percentile(a, q)
                log_ratio = np.log10(n / ref_n)
                r_lo, r_med, r_hi = 10 ** np.percentile(log_ratio, q)
                row.update(a_median=med, a_bias=med - reference.a, a_lo=lo, a_hi=hi,
                           n_opt_ratio_median=r_med, n_opt_ratio_lo=r_lo, n_opt_ratio_hi=r_hi,
                           n_opt_factor_off=float(10 ** np.median(np.abs(log_ratio))),
                           n_opt_within_2x=float(np.mean(np.abs(log_ratio) <= np.log10(2))))
            out.append(row)
    return out
