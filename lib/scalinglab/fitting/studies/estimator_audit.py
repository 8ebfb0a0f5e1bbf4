"""Estimator audit: simulated isoFLOP experiments from Chinchilla laws with known a, and how well each
estimator of a recovers it (bias, RMSE, coverage of its own 95% interval, with Monte Carlo errors).

A design is an isoFLOP grid: budgets log-spaced over ``c_decades`` decades from ``c_min``, ``points`` sizes
per budget log-spaced over ``width`` decades of N, centred on the true optimum N*(C) times a miscentring
factor that drifts from 1 at the smallest budget to ``centring`` at the largest (a grid planned from a
wrong exponent and anchored at the smallest budget; a constant factor would move every optimum alike and
leave the slope nearly untouched). Losses are the law's, times exp(ε), ε ~ N(0, ``noise``²): Gaussian noise in log loss.

Estimators, each with the interval it reports itself:

``parabola``, ``spline``
    Approach 2 as ``scalinglab isoflop`` runs it (``fitting.frontier.isoflop``): per-budget optima with the noise
    bootstrap (default noise: the pooled parabola residual), bootstrap-median optima, WLS line, t interval.
``approach3``
    Our Huber fit (``fitting.chinchilla.approach3``) on the same points, started from Hoffmann's 4,500-start grid (never
    from variable projection's answer, so the two are scored as separate estimators), with the row
    bootstrap's percentile interval.
``varpro``
    Least squares in relative (≈ log) residuals by variable projection (``fitting.frontier.varpro``), the Wald
    interval from its Gauss-Newton covariance.

:func:`audit` runs ``reps`` simulated experiments of one grid, every estimator on every replicate;
:func:`summarise` turns estimates into bias, RMSE and coverage with their Monte Carlo errors (coverage with an
exact Clopper-Pearson interval); :func:`best_estimators` names the trusted estimators with the lowest mean
squared error, all of those that tie within Monte Carlo error (paired over the shared experiments), in no
order of preference.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from scalinglab.fitting.chinchilla.law import ScalingLaw
from scalinglab.serialization import to_jsonable

ESTIMATORS = ("parabola", "spline", "approach3", "varpro")
# Hoffmann's exponent sum α + β = 0.62 and coefficients; a = β/(α+β) is varied by splitting the sum.
EXPONENT_SUM = 0.62
E_A_B = (1.69, 406.4, 410.7)
# A design's estimator is trusted unless the replicates show it fails: its bias over BIAS_OK (in a, two Monte
# Carlo errors allowed), or the exact 95% interval of its coverage entirely below the nominal COVERAGE_OK.
# Testing against the nominal level, not a lower "usable" one, is what gives the rule power at the replicate
# counts the notebooks can afford (rule_power): a nominal interval is flagged at most 2.5% of the time, one that
# covers 84% at 64 replicates, 88% at 128, 80% of the time. Against 0.90 the same counts flag only 78% and 81%.
BIAS_OK = 0.01
COVERAGE_OK = 0.95

Grid = list[tuple[float, np.ndarray]]        # (budget C, sizes N) per budget


def law_for(a: float, exponent_sum: float = EXPONENT_SUM) -> ScalingLaw:
    """Hoffmann's E, A, B with α + β = ``exponent_sum`` split so that β/(α+β) = a."""
    E, A, B = E_A_B
    return ScalingLaw(E=E, A=A, B=B, alpha=(1 - a) * exponent_sum, beta=a * exponent_sum)


@dataclass(frozen=True)
class Design:
    """One isoFLOP design; see the module docstring."""

    a: float = 0.5
    width: float = 1.5        # decades of N per budget
    centring: float = 1.0     # grid centre / N*: 1 at the smallest budget, this at the largest
    points: int = 9           # sizes per budget
    budgets: int = 5
    noise: float = 0.005      # sd of log loss
    c_min: float = 1e18
    c_decades: float = 3.0

    def law(self) -> ScalingLaw:
        return law_for(self.a)

    def grid(self) -> Grid:
        law = self.law()
        flops = self.c_min * np.logspace(0, self.c_decades, self.budgets)
        tilt = np.linspace(0, 1, self.budgets) if self.budgets > 1 else np.zeros(1)
        half = self.width / 2
        out = []
        for c, t in zip(flops, tilt):
            centre = law.n_opt(c) * self.centring ** t
            out.append((float(c), centre * np.logspace(-half, half, self.points)))
        return out

    def to_dict(self) -> dict:
        return to_jsonable(asdict(self))


def simulate(law: ScalingLaw, grid: Grid, noise: float, reps: int, rng: np.random.Generator):
    """(C, N (k,), L (k, reps)) per budget: the law's losses at D = C/(6N), times exp(noise·ε)."""
    out = []
    for c, n in grid:
        n = np.asarray(n, float)
        clean = law.loss(n, c / (6 * n))
        out.append((c, n, clean[:, None] * np.exp(noise * rng.standard_normal((len(n), reps)))))
    return out


def _table(budgets, r: int):
    import pandas as pd

    return pd.DataFrame({"n": np.concatenate([n for _, n, _ in budgets]),
                         "flops": np.concatenate([np.full(len(n), c) for c, n, _ in budgets]),
                         "loss": np.concatenate([loss[:, r] for _, _, loss in budgets])})


def _approach2(table, method: str, n_boot: int, seed: int, noise=None) -> tuple[float, float, float]:
    from scalinglab.errors import UserError
    from scalinglab.fitting.frontier import isoflop

    # A noisy budget can put a parabola's vertex absurdly far out (exp overflows to inf): that budget's
    # optimum is then not finite and is dropped like an edge optimum, so the warning says nothing.
    with np.errstate(over="ignore", invalid="ignore"):
        try:
            opt = isoflop.budget_optima(table, method=method, n_boot=n_boot, seed=seed, noise=noise)
        except UserError:
            return (np.nan, np.nan, np.nan)
        fit = isoflop.fit_exponent(opt, weighted=n_boot > 0)
    return (fit.exponent, *fit.ci) if fit.status == "converged" else (np.nan, np.nan, np.nan)


def _approach3(N, D, L, n_boot: int, seed: int) -> tuple[float, float, float]:
    from scalinglab.errors import UserError
    from scalinglab.fitting.chinchilla.approach3 import CHINCHILLA
    from scalinglab.fitting.laws.base import fit_law
    from scalinglab.fitting.options import FitOptions

    try:
        res = fit_law(CHINCHILLA, {"n": N, "d": D}, L, FitOptions().with_resampling(n_boot, seed=seed))
    except UserError:
        return (np.nan, np.nan, np.nan)
    if res.status != "converged":
        return (np.nan, np.nan, np.nan)
    lo, hi = res.bootstrap.ci["a"] if res.bootstrap is not None else (np.nan, np.nan)
    return (res.beta / (res.alpha + res.beta), lo, hi)


def _varpro(N, D, L) -> tuple[float, float, float]:
    from scalinglab.errors import UserError
    from scalinglab.fitting.chinchilla.approach3 import CHINCHILLA
    from scalinglab.fitting.solvers import solve

    try:
        f = solve("varpro", CHINCHILLA, {"n": N, "d": D}, L, tol=1e-7)
    except UserError:
        return (np.nan, np.nan, np.nan)
    return (f.a, *f.a_ci)


def audit(law: ScalingLaw, grid: Grid, noise: float, reps: int, seed: int = 0,
          estimators=ESTIMATORS, n_boot: int = 200, a2_noise=None,
          progress: bool = False) -> dict[str, np.ndarray]:
    """Estimates and intervals of a for ``reps`` simulated experiments on ``grid``: {estimator: (reps, 3)
    array of (estimate, lo, hi)}, NaN where an estimator gave none. Every estimator sees every replicate, so
    their Monte Carlo errors are alike. ``a2_noise``: the noise Approach 2's bootstrap assumes
    (``isoflop.budget_optima``'s ``noise``; None: its default, the pooled parabola residual)."""
    rng = np.random.default_rng(seed)
    return estimate(simulate(law, grid, noise, reps, rng), seed=seed, estimators=estimators, n_boot=n_boot,
                    a2_noise=a2_noise, progress=progress)


def estimate(budgets, seed: int = 0, estimators=ESTIMATORS, n_boot: int = 200, a2_noise=None,
             progress: bool = False) -> dict[str, np.ndarray]:
    """:func:`audit` on experiments already drawn: ``budgets`` as :func:`simulate` returns them, (C, N (k,),
    L (k, reps)) per budget, from any truth and noise (``fitting.studies.audit_truths``)."""
    reps = budgets[0][2].shape[1]
    N = np.concatenate([n for _, n, _ in budgets])
    D = np.concatenate([c / (6 * n) for c, n, _ in budgets])
    out = {e: np.full((reps, 3), np.nan) for e in estimators}
    it = range(reps)
    if progress:
        from tqdm.auto import tqdm

        it = tqdm(it, leave=False)
    for r in it:
        L = np.concatenate([loss[:, r] for _, _, loss in budgets])
        table = None
        for e in estimators:
            if e in ("parabola", "spline"):
                table = _table(budgets, r) if table is None else table
                out[e][r] = _approach2(table, e, n_boot, seed + r, a2_noise)
            elif e == "approach3":
                out[e][r] = _approach3(N, D, L, n_boot, seed + r)
            elif e == "varpro":
                out[e][r] = _varpro(N, D, L)
            else:
                raise ValueError(f"unknown estimator {e!r}; one of {', '.join(ESTIMATORS)}")
    return out


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """The exact (Clopper-Pearson) ``level`` interval of a binomial proportion: k successes in n trials."""
    from scipy.stats import beta

    if n <= 0:
        return (float("nan"), float("nan"))
    tail = (1 - level) / 2
    lo = 0.0 if k == 0 else float(beta.ppf(tail, k, n - k + 1))
    hi = 1.0 if k == n else float(beta.ppf(1 - tail, k + 1, n - k))
    return lo, hi


def summarise(a_true: float, est: np.ndarray) -> dict:
    """Bias, RMSE, coverage and mean interval width of (reps, 3) estimates, with Monte Carlo errors: the
    standard errors ``bias_mc`` and ``rmse_mc``, and for coverage (``covered`` of ``n``) the exact 95%
    interval ``coverage_lo``–``coverage_hi`` (the replicate is the independent unit). ``n`` counts the
    replicates with an estimate, ``failed`` those without."""
    est = np.asarray(est, float)
    ok = np.isfinite(est[:, 0])
    x, lo, hi = est[ok, 0], est[ok, 1], est[ok, 2]
    n = int(ok.sum())
    nan = float("nan")
    if n < 2:
        return dict(n=n, failed=int((~ok).sum()), bias=nan, bias_mc=nan, rmse=nan, rmse_mc=nan,
                    coverage=nan, covered=0, coverage_lo=nan, coverage_hi=nan, ci_width=nan)
    err = x - a_true
    mse = float(np.mean(err**2))
    rmse = float(np.sqrt(mse))
    has_iv = np.isfinite(lo) & np.isfinite(hi)
    cov = (lo <= a_true) & (a_true <= hi) & has_iv
    k = int(cov.sum())
    c_lo, c_hi = clopper_pearson(k, n)
    return dict(n=n, failed=int((~ok).sum()), bias=float(err.mean()), bias_mc=float(err.std(ddof=1) / np.sqrt(n)),
                rmse=rmse, rmse_mc=float(np.std(err**2, ddof=1) / np.sqrt(n) / (2 * rmse)) if rmse > 0 else 0.0,
                coverage=k / n, covered=k, coverage_lo=c_lo, coverage_hi=c_hi,
                ci_width=float(np.mean(hi[has_iv] - lo[has_iv])) if has_iv.any() else nan)


def trusted(row: dict) -> bool:
    """Bias under BIAS_OK allowing two Monte Carlo errors, and a coverage whose exact 95% interval reaches
    COVERAGE_OK, the nominal level (the replicates cannot reject it); ``rule_power`` says what it can catch."""
    return (abs(row["bias"]) - 2 * row["bias_mc"] < BIAS_OK
            and row["coverage_hi"] >= COVERAGE_OK)


def coverage_flag_count(n: int, threshold: float = COVERAGE_OK) -> int:
    """The most replicates covered (of ``n``) at which :func:`trusted`'s coverage rule still fails: the largest
    k whose exact 95% upper bound lies below ``threshold`` (-1: no count fails, the rule cannot fail)."""
    k = -1
    while k + 1 <= n and clopper_pearson(k + 1, n)[1] < threshold:
        k += 1
    return k


def coverage_power(p: float, n: int, threshold: float = COVERAGE_OK) -> float:
    """The chance that the coverage rule flags an interval whose true coverage is ``p``, with ``n`` replicates."""
    from scipy.stats import binom

    k = coverage_flag_count(n, threshold)
    return float(binom.cdf(k, n, p)) if k >= 0 else 0.0


def coverage_detectable(n: int, power: float = 0.8, threshold: float = COVERAGE_OK) -> float:
    """The highest true coverage the rule flags with probability ``power`` at ``n`` replicates (NaN when it
    never does): a coverage this far below the nominal 95% or further is caught 80% of the time."""
    from scipy.optimize import brentq

    if coverage_flag_count(n, threshold) < 0 or coverage_power(1e-9, n, threshold) < power:
        return float("nan")
    return float(brentq(lambda p: coverage_power(p, n, threshold) - power, 1e-9, 1 - 1e-9))


def bias_detectable(se: float, power: float = 0.8) -> float:
    """The |bias| the bias rule (|bias| − 2 se ≥ BIAS_OK) flags with probability ``power`` when the estimate's
    Monte Carlo error is ``se``: BIAS_OK + (2 + z_power)·se, the far tail neglected."""
    from statistics import NormalDist

    return float(BIAS_OK + (2 + NormalDist().inv_cdf(power)) * se)


def rule_power(reps: int, bias_se, power: float = 0.8) -> dict:
    """What the trust rule can see at ``reps`` replicates: ``coverage_80`` (the highest true coverage flagged
    ``power`` of the time), ``coverage_false_flag`` (the chance a nominal 95% interval is flagged), and
    ``bias_80`` (the |bias| flagged ``power`` of the time) at the median of ``bias_se`` (Monte Carlo errors)."""
    se = float(np.nanmedian(np.asarray(bias_se, float)))
    return {"reps": reps, "power": power, "coverage_80": coverage_detectable(reps, power),
            "coverage_false_flag": coverage_power(0.95, reps), "bias_se_median": se,
            "bias_80": bias_detectable(se, power)}


def paired_gaps(a_true: float, est: dict[str, np.ndarray], candidates: list[str]) -> dict[str, tuple[float, float]]:
    """{estimator: (gap, se)} for ``candidates``: the mean over replicates of its squared error minus that of
    the candidate with the lowest mean squared error, and that difference's Monte Carlo standard error. Paired:
    every estimator ran on the same simulated experiments, so the replicate (the independent unit) is the
    pair, and the experiments' shared luck cancels. Only replicates where every candidate gave an estimate
    count; with fewer than two, every gap is NaN."""
    if not candidates:
        return {}
    sq = np.array([(np.asarray(est[e], float)[:, 0] - a_true) ** 2 for e in candidates])
    common = np.isfinite(sq).all(axis=0)
    if common.sum() < 2:
        return {e: (float("nan"), float("nan")) for e in candidates}
    sq = sq[:, common]
    best = int(np.argmin(sq.mean(axis=1)))
    diff = sq - sq[best]
    se = diff.std(axis=1, ddof=1) / np.sqrt(common.sum())
    return {e: (float(diff[i].mean()), float(se[i])) for i, e in enumerate(candidates)}


def best_estimators(rows: list[dict]) -> tuple[list[str], bool]:
    """(names, trusted) for one design's rows (dicts with ``estimator`` and :func:`summarise`'s keys): the
    trusted estimators that tie with the most accurate, in the rows' order, with no preference among them;
    with none trusted, the same among all estimators, and ``trusted`` False.

    A tie: where the rows carry ``mse_gap`` and ``mse_gap_se`` (:func:`run_designs` adds them from
    :func:`paired_gaps`), a paired difference in mean squared error within two standard errors of zero;
    otherwise RMSEs within two Monte Carlo errors of the lowest, each side's own error (unpaired, so a tie
    is declared generously)."""
    finite = [r for r in rows if np.isfinite(r["rmse"])]
    good = [r for r in finite if trusted(r)]
    pool = good or finite
    if not pool:
        return [], False
    if all(np.isfinite(r.get("mse_gap", np.nan)) for r in pool):
        return [r["estimator"] for r in pool if r["mse_gap"] - 2 * r["mse_gap_se"] <= 0], bool(good)
    best = min(pool, key=lambda r: r["rmse"])
    edge = best["rmse"] + 2 * best.get("rmse_mc", 0.0)
    return [r["estimator"] for r in pool if r["rmse"] - 2 * r.get("rmse_mc", 0.0) <= edge], bool(good)


def verdict(names: list[str], trusted_: bool = True) -> str:
    """A sentence for :func:`best_estimators`' answer: 'varpro', 'approach3 and varpro tie within Monte
    Carlo error', or '... (none trusted)'."""
    if not names:
        return "none"
    text = names[0] if len(names) == 1 else (
        f"{', '.join(names[:-1])} and {names[-1]} tie within Monte Carlo error")
    return text if trusted_ else f"{text} (none trusted)"


def recommend(rows: list[dict]) -> str:
    """:func:`verdict` of :func:`best_estimators`."""
    return verdict(*best_estimators(rows))


def run_designs(designs: dict[str, Design], reps: int, seed: int = 0, n_boot: int = 200,
                estimators=ESTIMATORS, progress: bool = False) -> list[dict]:
    """One row per (design, estimator): the design's name and settings, the estimator, its summary, and
    ``mse_gap``/``mse_gap_se``: its paired excess mean squared error over the most accurate of the trusted
    estimators (of all of them when none is trusted; NaN for the others), which :func:`best_estimators` reads."""
    rows = []
    items = designs.items()
    if progress:
        from tqdm.auto import tqdm

        items = tqdm(items, desc="designs")
    for k, (name, d) in enumerate(items):
        law = d.law()
        est = audit(law, d.grid(), d.noise, reps, seed=seed + 1000 * k, estimators=estimators, n_boot=n_boot)
        here = [{**d.to_dict(), "design": name, "estimator": e, **summarise(law.a, est[e])} for e in estimators]
        good = [r["estimator"] for r in here if np.isfinite(r["rmse"]) and trusted(r)]
        gaps = paired_gaps(law.a, est, good or [r["estimator"] for r in here if np.isfinite(r["rmse"])])
        for r in here:
            r["mse_gap"], r["mse_gap_se"] = gaps.get(r["estimator"], (np.nan, np.nan))
        rows += here
    return rows


def noise_free_bias(design: Design, estimator: str = "parabola") -> float:
    """The estimator's error in a on the design's grid with noise-free losses (no bootstrap): the part of its
    bias that is the method's, not the noise's."""
    from dataclasses import replace

    d = replace(design, noise=0.0)
    est = audit(d.law(), d.grid(), 0.0, reps=1, estimators=(estimator,), n_boot=0)
    return float(est[estimator][0, 0] - d.a)


def parabola_offset(law: ScalingLaw, c: float, width: float, centre_factor: float, points: int = 201) -> float:
    """log(N̂*/N*) of a parabola in log N fitted to noise-free log loss on ``points`` sizes spanning ``width``
    decades around centre_factor · N*(C): the parabola's own bias at one budget."""
    n = law.n_opt(c) * centre_factor * np.logspace(-width / 2, width / 2, points)
    x = np.log(n)
    y = np.log(law.loss(n, c / (6 * n)))
    x0 = x.mean()
    c2, c1, _ = np.polyfit(x - x0, y, 2)
    return float(x0 - c1 / (2 * c2) - np.log(law.n_opt(c)))


def law_through(a: float, c: float, n: float, exponent_sum: float = EXPONENT_SUM) -> ScalingLaw:
    """:func:`law_for` (E and A as Hoffmann's) with B chosen so that N*(c) = n: a known law placed on a
    given grid (N* = G·(C/6)^a with G = (αA/(βB))^(1/(α+β)), solved for B)."""
    base = law_for(a, exponent_sum)
    G = n / (c / 6.0) ** a
    B = base.alpha * base.A / (base.beta * G**exponent_sum)
    return ScalingLaw(E=base.E, A=base.A, B=B, alpha=base.alpha, beta=base.beta)


def grid_of(points, n_col: str = "n", c_col: str = "flops", min_sizes: int = 4) -> Grid:
    """The (C, distinct sizes N) of a table of runs, budgets with at least ``min_sizes`` sizes."""
    out = []
    for c, g in points.groupby(c_col):
        n = np.unique(np.asarray(g[n_col], float))
        if len(n) >= min_sizes:
            out.append((float(c), n))
    return out


def grid_centre_line(grid: Grid) -> tuple[float, float, float]:
    """(slope, C, N) of the grid's centres: the least-squares slope of log(geometric-mean N) on log C (the
    exponent the grid was planned around), and the middle budget with its centre, where :func:`law_through`
    anchors a law."""
    logc = np.log([c for c, _ in grid])
    centre = np.array([np.mean(np.log(n)) for _, n in grid])
    slope = float(np.polyfit(logc, centre, 1)[0]) if len(grid) > 1 else float("nan")
    mid = len(grid) // 2
    return slope, float(np.exp(logc[mid])), float(np.exp(centre[mid]))
