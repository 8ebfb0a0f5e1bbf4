"""Spearman's rank correlation between predicted and actual losses, with intervals whose unit is the mixture:
RegMix's test mixtures were each trained once and independently, so a mixture is the independent unit and the
bootstrap resamples whole mixtures (a row of predictions and actual losses together).

The regression is held fixed while the test mixtures are resampled: the interval says how much the score
depends on which mixtures were drawn for testing, not how much it would move with another 512 training runs.
Two scores on the same mixtures (the 1M and the 60M losses, or two regressions) are compared on the same
resamples (paired), so the shared draw of mixtures cancels from their difference.

The interval is the bias-corrected percentile bootstrap (Efron 1982): near ρ = 1 the sample ρ is biased
low by about a standard error (E r_s = ((n − 2) ρ_s + 3 τ)/(n + 1), and τ < ρ_s), so the plain percentile
interval covers 81% on 256 simulated mixtures at ρ_s = 0.994, and Fisher's z with Fieller et al.'s variance 82%;
the bias correction brings it to 94% (tests/test_regmix.py checks it at ρ_s = 0.89 and 0.994). Above
ρ_s ≈ 0.998 it too falls short (85% at 0.999): read the upper ends there as loose.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import norm, rankdata

from scalinglab.errors import UserError
from scalinglab.fitting.rows import unit_picks


def spearman(a, b) -> float:
    """Spearman's ρ (ties share their average rank), the Pearson correlation of the ranks."""
    a, b = _pair(a, b)
    return float(_pearson_rows(rankdata(a)[None], rankdata(b)[None])[0])


def _pair(a, b) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(a, float).ravel(), np.asarray(b, float).ravel()
    if a.shape != b.shape:
        raise UserError(f"rank correlation of {a.size} predictions against {b.size} losses: they must pair up")
    if a.size < 5:   # a ranking needs at least five independent units
        raise UserError(f"rank correlation over {a.size} mixtures: at least 5 are needed")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise UserError("rank correlation: a prediction or loss is NaN or infinite")
    return a, b


def _pearson_rows(ra: np.ndarray, rb: np.ndarray) -> np.ndarray:
    ra = ra - ra.mean(axis=1, keepdims=True)
    rb = rb - rb.mean(axis=1, keepdims=True)
    den = np.sqrt((ra * ra).sum(axis=1) * (rb * rb).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return (ra * rb).sum(axis=1) / den


def resamples(n: int, n_boot: int, seed: int) -> np.ndarray:
    """(n_boot, n) indices of mixtures drawn with replacement: one set shared by every score it is used for."""
    return unit_picks(n, n_boot, seed)


def boot_spearman(a, b, idx: np.ndarray) -> np.ndarray:
    """ρ on each resample of mixtures (rows of ``idx``); a resample whose ranks are constant gives NaN."""
    a, b = _pair(a, b)
    return _pearson_rows(rankdata(a[idx], axis=1), rankdata(b[idx], axis=1))


def bias_corrected(reps: np.ndarray, estimate: float, level: float = 0.95) -> tuple[float, float]:
    """The bias-corrected percentile interval: the quantiles shifted by z0, the normal score of the share of
    replicates below the estimate (ties counted half)."""
    reps = reps[np.isfinite(reps)]
    share = (np.sum(reps < estimate) + 0.5 * np.sum(reps == estimate)) / reps.size
    z0 = norm.ppf(np.clip(share, 0.5 / reps.size, 1 - 0.5 / reps.size))
    q = norm.cdf(2 * z0 + norm.ppf([(1 - level) / 2, (1 + level) / 2]))
    lo, hi = np.quantile(reps, q)
    return float(lo), float(hi)


def spearman_interval(a, b, *, n_boot: int = 2000, seed: int = 0, level: float = 0.95,
                      idx: np.ndarray | None = None) -> dict:
    """ρ with its bias-corrected bootstrap interval over mixtures: {"rho", "lo", "hi", "level", "unit", "n"}."""
    a, b = _pair(a, b)
    idx = resamples(a.size, n_boot, seed) if idx is None else idx
    rho = spearman(a, b)
    lo, hi = bias_corrected(boot_spearman(a, b, idx), rho, level)
    return {"rho": rho, "lo": lo, "hi": hi, "level": level, "unit": "test mixtures (bias-corrected bootstrap)",
            "n": int(a.size)}


def paired_difference(a1, b1, a2, b2, *, idx: np.ndarray, level: float = 0.95) -> dict:
    """ρ(a1, b1) − ρ(a2, b2) on the same mixtures, with its interval from the same resamples."""
    diff = boot_spearman(a1, b1, idx) - boot_spearman(a2, b2, idx)
    est = spearman(a1, b1) - spearman(a2, b2)
    lo, hi = bias_corrected(diff, est, level)
    return {"diff": est, "lo": lo, "hi": hi, "level": level,
            "unit": "test mixtures (paired bootstrap)"}
