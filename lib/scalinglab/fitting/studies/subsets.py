"""How many runs does a fit need? Fits on random subsets of runs, with and without constraints.

A lab with 8 runs gets one fit; how far that fit is from the one a lab with
240 runs would get is a property of the design, which subsets of a large set
of real runs can measure. ``subset_fits`` draws many random subsets of k runs
(seeded, without replacement), fits each under several ``FitOptions`` (the
same subsets for every variant, so that variants compare draw by draw) and
keeps what each fit says about allocation: the exponent a of N_opt ∝ C^a and
N_opt at a compute budget. ``summarise`` compares those with a reference law,
usually the fit on all the runs.

Three questions about the design, each an argument here:

* *Which runs could the lab have?* ``pool`` restricts the draws to some rows
  (e.g. the cheapest 40%), so that a small lab's runs are all small, instead
  of a uniform draw over runs up to the largest, which measures interpolation.
* *Are the fits' own intervals right?* With ``n_boot``, the first
  ``boot_draws`` subsets of each size are also bootstrapped (the CLI's
  ``--bootstrap``: rows resampled, percentile intervals) and ``summarise``
  reports how often the interval of a and of N_opt covers the reference.
* *Does a constraint help only because it is nearly true?* ``with_exponent``
  and ``synthetic_runs`` build runs with a known law whose a is wherever one
  wants it, on a real run design with real residual scatter.

A subset the fit refuses (too few runs for its free parameters, too few
distinct N or D) is recorded as refused with the reason, never silently
dropped: "the fit would not run" is part of the answer. Medians and
percentiles summarise the spread, since a fit on a few runs can land anywhere
(an exponent on its bound, E at zero); bias and root-mean-square error are
reported beside them because a constraint trades spread for bias, and only a
measure with both in it (RMSE) can say which side of that trade wins.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from scalinglab.errors import UserError
from scalinglab.fitting.allocation import check_budgets
from scalinglab.fitting.chinchilla import approach3 as F
from scalinglab.fitting.chinchilla.law import ScalingLaw
from scalinglab.fitting.laws.base import fit_law
from scalinglab.fitting.options import FitOptions
from scalinglab.fitting.results import LawFit
from scalinglab.fitting.rows import progress_bar
from scalinglab.serialization import to_jsonable


def pool_indices(n: int, pool=None) -> np.ndarray:
    """Row indices a draw may use: all of range(n), or those of ``pool`` (a boolean mask of length n, or
    indices), sorted and unique."""
    if pool is None:
        return np.arange(n)
    pool = np.asarray(pool)
    if pool.dtype == bool:
        if pool.shape != (n,):
            raise UserError(f"a pool mask needs one entry per run: {pool.size} for {n} runs")
        return np.flatnonzero(pool)
    idx = np.unique(pool.astype(int))
    if idx.size and (idx[0] < 0 or idx[-1] >= n):
        raise UserError(f"pool indices must lie in 0..{n - 1}, not {idx[0] if idx[0] < 0 else idx[-1]}")
    return idx


def draw_subsets(n: int, size: int, n_draws: int, seed: int = 0, pool=None) -> np.ndarray:
    """(n_draws, size) row indices: each row a subset of range(n) (or of ``pool``, see ``pool_indices``)
    drawn without replacement, sorted.

    The generator is seeded by (seed, size), so the draws at one size do not change when other sizes
    are added or removed; with a pool, it draws positions in the pool, so the same seed gives other rows.
    """
    allowed = pool_indices(n, pool)
    if not 1 <= size <= len(allowed):
        where = f"{len(allowed)} allowed of {n}" if pool is not None else str(n)
        raise UserError(f"cannot draw subsets of {size} runs from {where}")
    if n_draws < 1:
        raise UserError(f"need at least one draw, not {n_draws}")
    rng = np.random.default_rng([seed, size])
    picks = np.array([rng.choice(len(allowed), size, replace=False) for _ in range(n_draws)])
    return np.sort(allowed[picks], axis=1)


@dataclass(frozen=True)
class SubsetFits:
    """One record per (size, draw, variant): the fit's status ("refused" with ``reason`` when the data
    could not identify it), parameters, a and N_opt at ``budget``; for the first ``boot_draws`` draws
    of each size in ``boot_sizes`` (when ``n_boot``), ``a_ci`` and ``n_opt_ci``, the fit's bootstrap
    intervals at ``boot_level`` (NaN when no replicate counted), and ``boot_ok``, the replicates that
    counted."""

    records: tuple[dict[str, Any], ...]
    sizes: tuple[int, ...]
    variants: tuple[str, ...]
    n_draws: int
    budget: float
    seed: int
    pool: tuple[int, ...] | None = None
    n_boot: int = 0
    boot_draws: int = 0
    boot_sizes: tuple[int, ...] = ()
    boot_level: float = 0.95

    def to_dict(self) -> dict[str, Any]:
        """The settings, and per variant and size: fits made, refused, and the median and quartiles of a."""
        table = {v: {str(n): self._cell(v, n) for n in self.sizes} for v in self.variants}
        return to_jsonable({"sizes": self.sizes, "variants": self.variants, "n_draws": self.n_draws,
                            "budget": self.budget, "seed": self.seed, "n_boot": self.n_boot,
                            "boot_level": self.boot_level, "a": table})

    def summary(self) -> str:
        lines = [f"fits on random subsets: {self.n_draws} draws per size, N_opt at C = {self.budget:.3g}"]
        for v in self.variants:
            for n in self.sizes:
                c = self._cell(v, n)
                lines.append(f"  {v:<16}{n:>5} runs: {c['fits']} fits, {c['refused']} refused; a median "
                             f"{c['median']:.3f} [{c['q25']:.3f}, {c['q75']:.3f}] (quartiles)")
        return "\n".join(lines)

    def _cell(self, variant: str, size: int) -> dict[str, Any]:
        a = self.values(variant, size, "a")
        refused = sum(r["variant"] == variant and r["size"] == size and r["status"] == "refused" for r in self.records)
        q = np.percentile(a, [25, 50, 75]) if len(a) else [np.nan] * 3
        return {"fits": len(a), "refused": refused, "median": float(q[1]), "q25": float(q[0]), "q75": float(q[2])}

    def _mine(self, variant: str, size: int, bootstrapped: bool = False):
        return [r for r in self.records if r["variant"] == variant and r["size"] == size
                and r["status"] != "refused" and (not bootstrapped or "n_opt_ci" in r)]

    def values(self, variant: str, size: int, key: str) -> np.ndarray:
        """``key`` of the fits (not refused) of one variant at one size, in draw order."""
        return np.array([r[key] for r in self._mine(variant, size)], float)

    def intervals(self, variant: str, size: int, key: str) -> np.ndarray:
        """(fits, 2): the bootstrap interval of ``key`` ("a" or "n_opt") of each bootstrapped fit (not
        refused) of one variant at one size, in draw order."""
        return np.array([r[f"{key}_ci"] for r in self._mine(variant, size, True)], float).reshape(-1, 2)


def subset_fits(N, D, L, sizes: Sequence[int], variants: Mapping[str, FitOptions], *, n_draws: int = 100,
                seed: int = 0, budget: float = 5.88e23, pool=None, n_boot: int = 0, boot_draws: int | None = None,
                boot_sizes: Sequence[int] | None = None, boot_level: float = 0.95,
                progress: bool = False) -> SubsetFits:
    """Fit ``n_draws`` random subsets of each size (of the rows in ``pool``, default all) under each
    variant's options. With ``n_boot``, the first ``boot_draws`` (default all) subsets of each size in
    ``boot_sizes`` (default all) are bootstrapped too, ``n_boot`` row resamples each, the same resamples
    for every variant. A bootstrap costs several fits, hence the two limits."""
    N, D, L = (np.asarray(x, float).ravel() for x in (N, D, L))
    check_budgets(budget)
    allowed = pool_indices(len(N), pool)
    boot_draws = n_draws if boot_draws is None else min(int(boot_draws), n_draws)
    if n_boot < 0 or boot_draws < 0:
        raise UserError(f"n_boot and boot_draws must be >= 0, not {n_boot} and {boot_draws}")
    boot_sizes = tuple(sizes) if boot_sizes is None else tuple(boot_sizes)
    if not set(boot_sizes) <= set(sizes):
        raise UserError(f"boot_sizes {sorted(set(boot_sizes) - set(sizes))} are not among the sizes {list(sizes)}")
    records = []
    for size in sizes:
        draws = draw_subsets(len(N), size, n_draws, seed, pool)
        for i in progress_bar(range(n_draws), f"subsets of {size} runs", progress):
            rows = draws[i]
            boot = n_boot if i < boot_draws and size in boot_sizes else 0
            # Seeded by (seed, size, draw): paired across variants, independent of the other sizes.
            boot_seed = int(np.random.default_rng([seed, size, i]).integers(2**31))
            for name, opts in variants.items():
                rec: dict[str, Any] = {"size": size, "draw": i, "variant": name}
                try:
                    res = fit_law(F.CHINCHILLA, {"n": N[rows], "d": D[rows]}, L[rows],
                                  opts.with_resampling(boot, seed=boot_seed, level=boot_level))
                except UserError as exc:
                    records.append({**rec, "status": "refused", "reason": str(exc)})
                    continue
                rec.update(status=res.status, **res.params, a=res.a, n_opt=float(res.n_opt(budget)))
                if boot:
                    rec.update(_intervals(res, budget))
                records.append(rec)
    return SubsetFits(records=tuple(records), sizes=tuple(sizes), variants=tuple(variants), n_draws=n_draws,
                      budget=float(budget), seed=seed, pool=None if pool is None else tuple(int(i) for i in allowed),
                      n_boot=int(n_boot), boot_draws=boot_draws if n_boot else 0,
                      boot_sizes=boot_sizes if n_boot else (), boot_level=boot_level)


def _intervals(res: LawFit, budget: float) -> dict[str, Any]:
    """The fit's bootstrap intervals of a and N_opt at ``budget``, as ``fit --bootstrap --compute`` prints them."""
    bs = res.bootstrap
    # A replicate with β at its natural floor, 0, puts N_opt at infinity (or nowhere): kept, as the CLI keeps it.
    with np.errstate(divide="ignore", invalid="ignore"):
        n_opt_ci = res.allocate(budget)[0].get("ci", {}).get("n_opt", (np.nan, np.nan))
    return {"a_ci": tuple(bs.ci["a"]), "n_opt_ci": tuple(float(x) for x in n_opt_ci), "boot_ok": len(bs.samples)}


def covers(intervals, value: float) -> tuple[float, int]:
    """(share of the (k, 2) ``intervals`` that contain ``value``, ends included; how many had none (NaN)).
    The share is over the intervals that exist; NaN when none does."""
    iv = np.asarray(intervals, float).reshape(-1, 2)
    ok = np.isfinite(iv).all(axis=1)
    share = float(np.mean((iv[ok, 0] <= value) & (value <= iv[ok, 1]))) if ok.any() else float("nan")
    return share, int((~ok).sum())


def summarise(fits: SubsetFits, reference: ScalingLaw, *, level: float = 0.68) -> list[dict[str, Any]]:
    """Per variant and size: how many fits ran, and how their a and N_opt sit against ``reference``.

    a: ``a_median`` and ``a_lo``/``a_hi``, the central ``level`` interval across draws; ``a_bias``, the
    mean a minus the reference's, and ``a_rmse``, the root-mean-square of a minus the reference's.
    N_opt is compared as a ratio to the reference's: its median and interval, the typical factor off
    (10^median |log10 ratio|), the share of draws within a factor of 2, and the bias and RMSE of the
    natural log of the ratio (``ln_n_opt_bias``, ``ln_n_opt_rmse``: 0.1 is about 10%).
    With bootstrapped fits: ``boot_fits``, how many; ``a_covered`` and ``n_opt_covered``, the share whose
    interval contains the reference's value; ``no_interval``, fits with no counted replicate, left out of
    those shares; ``a_ci_width``, the median width of the interval of a, and ``n_opt_ci_span``, the median
    factor from the lower end of N_opt's interval to the upper. A tied fit's interval of a is the point
    0.5, so it covers only a reference a of 0.5. Fits with any status other than "converged" (at a bound,
    failed, unidentified; counted in ``not_converged``) stay in every number, as a user who ignored the
    flag would use them.
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
                ln_ratio = np.log(n / ref_n)
                r_lo, r_med, r_hi = 10 ** np.percentile(log_ratio, q)
                row.update(a_median=med, a_lo=lo, a_hi=hi, a_bias=float(np.mean(a - reference.a)),
                           a_rmse=float(np.sqrt(np.mean((a - reference.a) ** 2))),
                           n_opt_ratio_median=r_med, n_opt_ratio_lo=r_lo, n_opt_ratio_hi=r_hi,
                           n_opt_factor_off=float(10 ** np.median(np.abs(log_ratio))),
                           n_opt_within_2x=float(np.mean(np.abs(log_ratio) <= np.log10(2))),
                           ln_n_opt_bias=float(np.mean(ln_ratio)), ln_n_opt_rmse=float(np.sqrt(np.mean(ln_ratio**2))))
            if fits.n_boot:
                a_iv, n_iv = fits.intervals(name, size, "a"), fits.intervals(name, size, "n_opt")
                if len(n_iv):
                    a_cov, _ = covers(a_iv, reference.a)
                    n_cov, missing = covers(n_iv, ref_n)
                    ok = np.isfinite(n_iv).all(axis=1)
                    # Coverage alone rewards width: an interval from 0 to infinity always covers.
                    with np.errstate(divide="ignore", invalid="ignore"):
                        spans = n_iv[ok, 1] / n_iv[ok, 0]
                    row.update(boot_fits=len(n_iv), a_covered=a_cov, n_opt_covered=n_cov, no_interval=missing,
                               a_ci_width=float(np.median(np.diff(a_iv[ok], axis=1))) if ok.any() else np.nan,
                               n_opt_ci_span=float(np.median(spans)) if ok.any() else np.nan)
            out.append(row)
    return out


def with_exponent(law: ScalingLaw, a: float, d_ref: float) -> ScalingLaw:
    """``law`` with β changed so that a = β/(α+β) is ``a``, and B rescaled so that the data term B/D^β is
    unchanged at D = ``d_ref`` (e.g. the geometric mean D of a run design): the same runs then see a data
    term of the same size where they are, only with another slope. E, A and α are kept."""
    if not 0 < a < 1:
        raise UserError(f"a = beta/(alpha+beta) must lie strictly between 0 and 1, not {a}")
    if not d_ref > 0:
        raise UserError(f"d_ref must be a positive number of tokens, not {d_ref}")
    beta = law.alpha * a / (1 - a)
    return ScalingLaw(E=float(law.E), A=float(law.A), B=float(law.B * d_ref ** (beta - law.beta)),
                        alpha=float(law.alpha), beta=float(beta))


def synthetic_runs(law: ScalingLaw, N, D, log_residuals, seed: int = 0) -> np.ndarray:
    """Losses of ``law`` at the runs (N, D), each multiplied by exp of one of ``log_residuals`` (e.g. a real
    fit's log residuals), in a seeded random order: a real design's N and D and its residual scatter,
    tails included, on a law that is known. Shuffling keeps the scatter's distribution but not any trend
    of the residuals in N or D."""
    N, D, r = (np.asarray(x, float).ravel() for x in (N, D, log_residuals))
    if not (N.shape == D.shape == r.shape):
        raise UserError(f"need one residual per run: {r.size} residuals for {N.size} runs")
    return law.loss(N, D) * np.exp(np.random.default_rng(seed).permutation(r))


def allocation(laws: Mapping[str, ScalingLaw], budget: float, n_ref: float) -> dict[str, dict[str, Any]]:
    """Per named law: its parameters (``to_dict`` where it has one, else ``params``), N_opt at ``budget``
    and that N_opt as a ratio to ``n_ref`` (a reference law's N_opt at the same budget)."""
    out = {}
    for name, law in laws.items():
        n = float(law.n_opt(budget))
        base = law.to_dict() if hasattr(law, "to_dict") else {**law.params, "a": float(law.a)}
        out[name] = {**base, "n_opt": n, "n_opt_ratio": n / float(n_ref)}
    return out


def excludes(fits: SubsetFits, value: float, variant: str = "free", key: str = "a") -> dict[int, float]:
    """Per bootstrapped size: the share of ``variant``'s bootstrapped fits whose interval of ``key``
    excludes ``value`` (e.g. whether a free fit's interval of a rules out the tie's 0.5), over the
    fits that have an interval; NaN where none has."""
    return {size: 1.0 - covers(fits.intervals(variant, size, key), value)[0] for size in fits.boot_sizes}


def flagged(fits: SubsetFits) -> list[dict[str, Any]]:
    """The records of fits that ran but did not converge (at a bound, failed, unidentified), in order:
    kept in every summary number, so worth naming."""
    return [r for r in fits.records if r["status"] not in ("refused", "converged")]
