"""A block bootstrap for isoFLOP exponents when one run gives points at several budgets.

Kaplan-style sweeps read each run (a model shape) at every budget it passes, so a shape that is better or
worse than a smooth function of N, or a lucky seed, moves its points at all those budgets together. A
bootstrap that resamples points, or seeds within a shape, treats the budgets as independent and is too
narrow. This one resamples whole shapes (all their budgets and seeds together) with replacement, finds
each budget's optimum on the resampled design and refits N* ∝ C^a.

A resample in which a budget's optimum sits at the edge of its sizes, or has fewer than three distinct
sizes, loses that budget; one left with fewer than two budgets is dropped. Both counts are reported,
since an interval over the surviving resamples is conditional on them (``BlockBootstrap.dropped``).
Each budget's optimum gets its own percentile interval from the resamples in which it is interior
(``BlockBootstrap.optima``, with the share of resamples that kept it), and the fitted line
``BlockBootstrap.n_opt(C)`` draws N* ∝ C^a through the optima of the data as they are.
With the parabola, a shape drawn twice counts twice (weighted least squares); the Akima spline cannot
take repeated sizes, so a resample's spline runs through its distinct shapes.

``difference`` gives a₁ − a₂ of two fits with an interval from their draws, resample by resample (paired
when both drew the same shapes, independent otherwise), and ``detectable`` the smallest true difference
that an interval of that width would detect with a given power.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from scalinglab.errors import UserError
from scalinglab.fitting.frontier.isoflop import GRID_MULTIPLIER, METHODS, exponents_of_optima, resampled_optima
from scalinglab.fitting.rows import unit_counts
from scalinglab.serialization import to_jsonable

MIN_SIZES = 3
OPTIMA_COLUMNS = ("flops", "n_opt", "n_opt_lo", "n_opt_hi", "kept")


@dataclass(frozen=True)
class BlockBootstrap:
    """The exponent a of N* ∝ C^a with a percentile interval from resampling whole runs (shapes)."""

    a: float                          # the estimate on the data as they are
    ci: tuple[float, float]
    level: float
    method: str
    n_boot: int
    n_dropped: int                    # resamples left with fewer than two budgets (not in the interval)
    budgets_lost: float               # mean share of budgets a kept resample lost (edge or too few sizes)
    n_shapes: int
    n_budgets: int
    # every resample's a, NaN where it was dropped; resample i draws the same shapes in any fit given the
    # same seed and universe of shapes, so two fits' draws pair by index
    draws: np.ndarray = field(default_factory=lambda: np.empty(0), repr=False, compare=False)
    # per budget: flops, n_opt (the data as they are; NaN at an edge), n_opt_lo, n_opt_hi (percentiles over the
    # resamples in which that budget's optimum is interior), kept (their share)
    optima: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=OPTIMA_COLUMNS), repr=False,
                                 compare=False)
    log_n_at_unit_c: float = float("nan")   # the fitted line's ln N* at C = 1 FLOP

    def n_opt(self, flops) -> np.ndarray:
        """N* on the fitted power law (slope ``a`` through the optima of the data as they are)."""
        return np.exp(self.log_n_at_unit_c + self.a * np.log(np.asarray(flops, float)))

    @property
    def dropped(self) -> float:
        """Share of resamples dropped: the interval is conditional on the others."""
        return self.n_dropped / self.n_boot if self.n_boot else 0.0

    @property
    def level_bounds(self) -> tuple[float, float]:
        """What dropping does to the interval: the share of *all* resamples, dropped ones included, that it
        holds, at worst and at best. It holds ``level`` of the kept ones, so ``level·(1 − d)`` of all of them,
        plus up to the dropped share ``d`` had those fallen inside. The nominal level holds only if the
        dropped resamples fall in the interval in the same proportion as the kept ones."""
        d = self.dropped
        return self.level * (1 - d), self.level * (1 - d) + d

    def to_dict(self) -> dict:
        return dict(a=self.a, ci=list(self.ci), level=self.level, method=self.method, n_boot=self.n_boot,
                    n_dropped=self.n_dropped, level_bounds=list(self.level_bounds),
                    budgets_lost=self.budgets_lost, n_shapes=self.n_shapes,
                    n_budgets=self.n_budgets, interval="block bootstrap over runs (shapes)",
                    log_n_at_unit_c=self.log_n_at_unit_c,
                    optima=to_jsonable(self.optima.to_dict("records")))

    def summary(self) -> str:
        pct = int(round(self.level * 100))
        return (f"a = {self.a:.3f}, {pct}% block-bootstrap interval [{self.ci[0]:.3f}, {self.ci[1]:.3f}] "
                f"({self.method}; {self.n_shapes} shapes resampled whole over {self.n_budgets} budgets; "
                f"{self.n_dropped} of {self.n_boot} resamples dropped, so the interval holds "
                f"{self.level_bounds[0]:.1%} to {self.level_bounds[1]:.1%} of all of them; kept ones lost "
                f"{self.budgets_lost:.0%} of budgets on average)")


def _table(points: pd.DataFrame, shape_col: str, n_col: str, c_col: str, loss_col: str):
    """(shapes, budgets, N per shape, loss matrix budgets × shapes with NaN where a shape has no point).
    A shape's seeds at one budget are averaged first."""
    missing = [c for c in (shape_col, n_col, c_col, loss_col) if c not in points.columns]
    if missing:
        raise UserError(f"block bootstrap needs column(s) {', '.join(map(repr, missing))}")
    cell = points.groupby([shape_col, c_col], as_index=False).agg(n=(n_col, "first"), loss=(loss_col, "mean"))
    wide = cell.pivot(index=c_col, columns=shape_col, values="loss").sort_index()
    n_of = cell.groupby(shape_col)["n"].first()
    shapes = list(n_of.sort_values().index)
    wide = wide[shapes]
    return shapes, wide.index.to_numpy(float), n_of[shapes].to_numpy(float), wide.to_numpy(float)


def _optimum_weighted_parabola(log_n: np.ndarray, log_loss: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Vertex of the weighted least-squares quadratic in log N for each column of ``w`` (k, B); NaN at an
    edge, for a parabola opening downwards, or with fewer than MIN_SIZES distinct sizes."""
    x = log_n - log_n.mean()
    X = np.stack([np.ones_like(x), x, x**2], axis=1)                       # (k, 3)
    XtW = X.T[:, :, None] * w[None, :, :]                                 # (3, k, B)
    A = np.einsum("ikb,kj->bij", XtW, X)                                  # (B, 3, 3)
    rhs = np.einsum("ikb,k->bi", XtW, log_loss)                           # (B, 3)
    distinct = (w > 0).sum(axis=0)
    out = np.full(w.shape[1], np.nan)
    ok = distinct >= MIN_SIZES
    if ok.any():
        coef = np.linalg.solve(A[ok], rhs[ok][:, :, None])[:, :, 0]
        c1, c2 = coef[:, 1], coef[:, 2]
        with np.errstate(divide="ignore", invalid="ignore"):
            v = -c1 / (2 * c2)
        lo = np.array([x[w[:, b] > 0].min() for b in np.flatnonzero(ok)])
        hi = np.array([x[w[:, b] > 0].max() for b in np.flatnonzero(ok)])
        good = (c2 > 0) & (v > lo) & (v < hi)
        out[np.flatnonzero(ok)] = np.where(good, v + log_n.mean(), np.nan)
    return out


def _optima(flops, n, loss, counts, method: str) -> np.ndarray:
    """log N* per budget (rows) and resample (columns, from ``counts`` (shapes, B)); NaN where lost."""
    opt = np.full((len(flops), counts.shape[1]), np.nan)
    for i in range(len(flops)):
        have = np.isfinite(loss[i])
        if have.sum() < MIN_SIZES:
            continue
        log_n, log_l, w = np.log(n[have]), np.log(loss[i, have]), counts[have]
        if method == "parabola":
            opt[i] = _optimum_weighted_parabola(log_n, log_l, w)
            continue
        # spline: each resample's distinct shapes; resamples with the same support share one fit
        support = w > 0
        keys, inverse = np.unique(support.T, axis=0, return_inverse=True)
        for j, key in enumerate(keys):
            if key.sum() < MIN_SIZES:
                continue
            cols = np.flatnonzero(inverse.ravel() == j)
            x = resampled_optima([(flops[i], np.exp(log_n[key]), np.exp(log_l[key])[:, None])], "spline",
                                 grid_multiplier=GRID_MULTIPLIER)[0, 0]
            opt[i, cols] = x
    return opt


def block_bootstrap(points: pd.DataFrame, shape_col: str = "shape", n_col: str = "n", c_col: str = "flops",
                    loss_col: str = "loss", *, method: str = "spline", n_boot: int = 1000, seed: int = 0,
                    level: float = 0.95, universe=None) -> BlockBootstrap:
    """N* ∝ C^a from isoFLOP ``points`` (one row per shape, budget and seed), with an interval from
    resampling whole shapes. ``a`` is the estimate on the data as given (seeds averaged).

    ``universe``: the shapes to draw from (default: those in ``points``). Two fits given the same universe
    and seed draw the same shapes in each resample, so their draws pair (e.g. two readings of one sweep);
    a drawn shape absent from ``points`` contributes nothing."""
    if method not in METHODS:
        raise UserError(f"unknown method {method!r}: use one of {', '.join(METHODS)}")
    if not 0 < level < 1:
        raise UserError(f"level must be between 0 and 1, not {level}")
    if n_boot < 1:
        raise UserError(f"n_boot must be at least 1, not {n_boot}")
    shapes, flops, n, loss = _table(points, shape_col, n_col, c_col, loss_col)
    if len(shapes) < MIN_SIZES:
        raise UserError(f"block bootstrap needs at least {MIN_SIZES} shapes, got {len(shapes)}")
    universe = sorted(shapes) if universe is None else sorted(universe)
    missing = sorted(set(shapes) - set(universe))
    if missing:
        raise UserError(f"shapes {missing} are not in the universe to draw from")
    drawn = unit_counts(len(universe), n_boot, seed).T
    counts = drawn[[universe.index(s_) for s_ in shapes]]
    full = np.ones((len(shapes), 1))
    full_opt = _optima(flops, n, loss, full, method)
    a = float(exponents_of_optima(flops, full_opt)[0])
    on_data = np.isfinite(full_opt[:, 0])
    intercept = (float(np.polyfit(np.log(flops[on_data]), full_opt[on_data, 0], 1)[1]) if on_data.sum() >= 2
                 else float("nan"))
    opt = _optima(flops, n, loss, counts, method)
    draws = exponents_of_optima(flops, opt)
    kept = np.isfinite(draws)
    usable = np.isfinite(loss).sum(axis=1) >= MIN_SIZES
    lost = 1 - np.isfinite(opt[:, kept]).sum(axis=0) / max(int(usable.sum()), 1) if kept.any() else np.array([1.0])
    tail = (1 - level) / 2
    ci = tuple(np.quantile(draws[kept], [tail, 1 - tail])) if kept.sum() >= 2 else (np.nan, np.nan)
    return BlockBootstrap(a=a, ci=(float(ci[0]), float(ci[1])), level=level, method=method, n_boot=n_boot,
                          n_dropped=int((~kept).sum()), budgets_lost=float(np.mean(lost)),
                          n_shapes=len(shapes), n_budgets=int(usable.sum()), draws=draws,
                          optima=_optima_table(flops, full_opt[:, 0], opt, tail), log_n_at_unit_c=intercept)


def difference(first: BlockBootstrap, second: BlockBootstrap, level: float = 0.95) -> dict:
    """``first.a − second.a`` with a percentile interval of the draws' differences, resample by resample.

    Paired when both fits drew the same shapes (the same ``universe`` and seed), independent when they came
    from separate sweeps with their own seeds. Resamples dropped by either fit are left out and counted
    (``n_kept``): the interval is conditional on them. ``detectable`` is :func:`detectable` of the interval."""
    n = min(len(first.draws), len(second.draws))
    d = first.draws[:n] - second.draws[:n]
    d = d[np.isfinite(d)]
    tail = (1 - level) / 2
    lo, hi = (float(v) for v in np.quantile(d, [tail, 1 - tail])) if len(d) >= 2 else (np.nan, np.nan)
    return dict(difference=first.a - second.a, ci=[lo, hi], level=level, n_boot=n, n_kept=int(len(d)),
                method="block_bootstrap", interval="block bootstrap over runs (shapes)",
                detectable=detectable((lo, hi), level))


def detectable(ci, level: float = 0.95, power: float = 0.8) -> float:
    """The smallest true effect a two-sided test at ``1 − level`` rejects with probability ``power``, for an
    estimate whose ``level`` interval is ``ci``: (z_{(1+level)/2} + z_power) · SE, with SE = width / (2·z_{(1+level)/2})
    (a normal approximation; at 95% and 80% power, 0.71 × the interval's width). NaN without an interval."""
    from statistics import NormalDist

    lo, hi = (np.nan if v is None else float(v) for v in ci)
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return float("nan")
    z = NormalDist().inv_cdf((1 + level) / 2)
    return float((z + NormalDist().inv_cdf(power)) * (hi - lo) / (2 * z))


def _optima_table(flops, log_opt: np.ndarray, resampled: np.ndarray, tail: float) -> pd.DataFrame:
    """Each budget's optimum on the data as they are, with a percentile interval over the resamples in
    which it is interior (NaN where fewer than two are)."""
    rows = []
    for c, x, r in zip(flops, log_opt, resampled):
        r = r[np.isfinite(r)]
        lo, hi = np.quantile(r, [tail, 1 - tail]) if len(r) >= 2 else (np.nan, np.nan)
        rows.append((float(c), float(np.exp(x)), float(np.exp(lo)), float(np.exp(hi)),
                     len(r) / resampled.shape[1] if resampled.shape[1] else 0.0))
    return pd.DataFrame(rows, columns=list(OPTIMA_COLUMNS))
