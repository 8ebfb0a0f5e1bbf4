"""IsoFLOP analysis: each budget's compute-optimal size, and N*(C) as a power law.

Input is a table of training runs, one row per (model size N, compute budget C,
final loss). For every budget the loss is a U-shaped curve in log N; its
minimum is that budget's optimum N*(C). Fitting log N* against log C gives the
exponent a of N* ∝ C^a (Hoffmann et al. 2022's Approach 2; Porian et al. 2024).

Two estimators of a budget's minimum:

``method="parabola"``
    A quadratic in log N fitted to log loss; the vertex is the optimum
    (Hoffmann's Approach 2 fits parabolas).
``method="spline"``
    Porian et al.'s: an Akima spline through (log N, log loss), evaluated on a
    grid ``grid_multiplier`` (25) times denser than the sampled sizes, and its
    argmin.

Either way, an optimum at (or beyond) the smallest or largest sampled size is
an *edge* optimum: the true minimum may lie outside the sweep. Such budgets
are reported with ``edge=True`` and dropped by :func:`fit_exponent`, which
lists them in ``IsoflopFit.dropped``; they are never silently used.

Uncertainty (``n_boot > 0``) follows Porian et al.: add Gaussian noise to every
loss (standard deviation from ``noise``, a constant or a function of the loss,
modelling seed-to-seed variation), re-estimate the optimum, repeat. The
reported ``n_opt`` is then the median of the bootstrap optima, and
``log_n_opt_sd`` (floored at a third of the sizes' spacing, inflated by the
fraction of samples lost to the edge) weights the fit of N*(C).

This module is shared by the Chinchilla notebook, the Kaplan-vs-Hoffmann
notebook and the training sweeps; keep its names and columns stable.

The power law through the optima, its interval and the difference of two exponents are in
``fitting.frontier.isoflop_exponent`` (re-exported here: ``isoflop.fit_exponent``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from scalinglab.errors import UserError, row_name
from scalinglab.fitting.frontier.isoflop_exponent import (  # noqa: F401  (isoflop.fit_exponent etc. stay public names)
    ExponentDifference,
    IsoflopFit,
    bootstrap_difference,
    exponent_difference,
    exponents_of_optima,
    fit_exponent,
    fit_exponent_scatter,
)
from scalinglab.fitting.options import check_resample_count
from scalinglab.serialization import to_jsonable

METHODS = ("parabola", "spline")
# How several runs at one (N, C) become one point: Porian et al.'s runs there differ in hyperparameters
# (a tuning sweep: keep the best); runs that differ only in their seed are replicates (average them).
REPLICATES = ("min", "mean")

# Porian et al.'s defaults (analysis.py in their repository): the grid is 25x
# denser than the sampled sizes; a budget's log-sd of N* is at least a third of
# the spacing between sampled sizes, so that a spline whose argmin never moves
# under noise does not get an infinite weight.
GRID_MULTIPLIER = 25
MIN_SD_FACTOR = 0.33

Noise = float | Callable[[np.ndarray], np.ndarray] | None


def _check_columns(df: pd.DataFrame, cols: dict[str, str]) -> None:
    for role, col in cols.items():
        if col not in df.columns:
            raise UserError(f"isoFLOP data has no {role} column {col!r} (columns: {', '.join(map(str, df.columns))})")
        values = pd.to_numeric(df[col], errors="coerce")
        bad = ~np.isfinite(values) | (values <= 0)
        if bad.any():
            value = df[col].iloc[bad.argmax()]
            # numpy scalars repr as np.float64(-3.0); the user typed -3.0
            value = value.item() if hasattr(value, "item") else value
            raise UserError(f"isoFLOP data column {col!r} needs positive finite numbers; "
                            f"{row_name(df.index, int(bad.argmax()))} has {value!r}")


def _check_replicates(replicates: str) -> None:
    if replicates not in REPLICATES:
        raise UserError(f"isoFLOP replicates must be one of {', '.join(REPLICATES)}, not {replicates!r}")


def budget_groups(df: pd.DataFrame, n_col: str, c_col: str, loss_col: str,
             replicates: str = "min") -> list[tuple[float, pd.DataFrame]]:
    """(budget, its runs sorted by N), one row per (N, C): the lowest loss of the runs that share it, or
    their mean (``replicates``), with ``_k`` the number of runs behind the row."""
    _check_columns(df, {"N": n_col, "compute": c_col, "loss": loss_col})
    _check_replicates(replicates)
    data = df[[n_col, c_col, loss_col]].astype(float)
    data = data.groupby([c_col, n_col], as_index=False)[loss_col].agg([replicates, "size"])
    data = data.rename(columns={replicates: loss_col, "size": "_k"})
    return [(float(c), g.sort_values(n_col)) for c, g in data.groupby(c_col, sort=True)]


@dataclass(frozen=True)
class SeedNoise:
    """Seed-to-seed noise of one run's loss, from the (N, C) cells trained with several seeds.

    ``sd`` pools every such cell. Replicates are rarely that uniform: runs far from their budget's
    optimum (a large model given few tokens, still on the steep early part of its curve) vary between
    seeds much more than runs near it. So the noise is also modelled as sd(Δ) = √(floor² + (slope·Δ)²),
    Δ the loss's excess over its budget's lowest (mean) loss, fitted to the cells' sample variances by
    maximum likelihood (each s² is σ²·χ²_ν/ν); :meth:`at` evaluates it for ``budget_optima``.
    """

    sd: float            # pooled; NaN when no cell has two runs
    dof: int             # sum over those cells of (runs - 1)
    cells: int           # cells with at least two runs
    floor: float = float("nan")   # the model's sd at a budget's minimum (Δ = 0)
    slope: float = float("nan")   # its extra sd per nat of excess loss

    @property
    def modelled(self) -> bool:
        return bool(np.isfinite(self.floor) and np.isfinite(self.slope))

    def at(self, loss: np.ndarray) -> np.ndarray:
        """One run's sd at each of a budget's losses (the excess is over their lowest)."""
        loss = np.asarray(loss, dtype=float)
        if not self.modelled:
            return np.full(loss.shape, self.sd)
        return np.sqrt(self.floor**2 + (self.slope * (loss - loss.min())) ** 2)

    def to_dict(self) -> dict:
        return to_jsonable(dict(sd=float(self.sd), dof=self.dof, cells=self.cells, floor=float(self.floor),
                                slope=float(self.slope)))


# Fewer replicated cells than this and the two-parameter noise model is not fitted (the pooled sd is used).
MIN_NOISE_CELLS = 6


def seed_noise(df: pd.DataFrame, n_col: str = "n", c_col: str = "flops", loss_col: str = "loss") -> SeedNoise:
    """The seed-to-seed noise of the loss, pooled and modelled (:class:`SeedNoise`), over cells (same N
    and C) trained with several seeds.

    This is the noise Porian et al.'s bootstrap models (they had no replicates and assumed a schedule);
    measured, it replaces the parabola residual, which also carries the parabola's misfit."""
    cells = replicate_cells(df, n_col, c_col, loss_col)
    rep = cells[cells["runs"] > 1]
    nu, s2, excess = (rep["runs"] - 1).to_numpy(float), rep["sd"].to_numpy(float) ** 2, rep["excess"].to_numpy(float)
    dof = int(nu.sum())
    sd = float(np.sqrt(np.sum(nu * s2) / dof)) if dof else float("nan")
    floor = slope = float("nan")
    if len(rep) >= MIN_NOISE_CELLS and sd > 0:
        floor, slope = _fit_noise_model(nu, s2, excess, sd)
    return SeedNoise(sd=sd, dof=dof, cells=len(rep), floor=floor, slope=slope)


def replicate_cells(df: pd.DataFrame, n_col: str = "n", c_col: str = "flops", loss_col: str = "loss") -> pd.DataFrame:
    """One row per (C, N): ``runs`` behind it, their ``mean`` loss and sample ``sd`` (NaN for one run),
    ``excess``, the mean's excess over the lowest mean of its budget, and ``side``: "smaller" or "larger"
    than the size with that lowest mean, or "best". What :func:`seed_noise` fits."""
    _check_columns(df, {"N": n_col, "compute": c_col, "loss": loss_col})
    data = df[[n_col, c_col, loss_col]].astype(float)
    cells = data.groupby([c_col, n_col])[loss_col].agg(runs="size", mean="mean", sd="std").reset_index()
    cells["excess"] = cells["mean"] - cells.groupby(c_col)["mean"].transform("min")
    best_n = cells.loc[cells.groupby(c_col)["mean"].idxmin(), [c_col, n_col]].set_index(c_col)[n_col]
    rel = cells[n_col] - cells[c_col].map(best_n)
    cells["side"] = np.where(rel < 0, "smaller", np.where(rel > 0, "larger", "best"))
    return cells


def _fit_noise_model(nu: np.ndarray, s2: np.ndarray, excess: np.ndarray, sd: float) -> tuple[float, float]:
    """(floor, slope) maximising the likelihood of the sample variances s² ~ σ²·χ²_ν/ν, σ² = floor² + (slope·Δ)²."""
    from scipy.optimize import minimize

    def nll(theta):
        var = np.exp(2 * theta[0]) + (np.exp(theta[1]) * excess) ** 2
        return float(np.sum(nu / 2 * (np.log(var) + s2 / var)))

    # a slope of e^-20 nats⁻¹ is none at all: the bound keeps "no growth" reachable without -inf
    start = [np.log(sd), np.log(sd / max(float(excess.max()), 1e-12))]
    res = minimize(nll, start, method="L-BFGS-B", bounds=[(np.log(sd) - 20, np.log(sd) + 5), (-20, 10)])
    return float(np.exp(res.x[0])), float(np.exp(res.x[1]))


def _noise_sd(noise: Noise, loss: np.ndarray) -> np.ndarray:
    if callable(noise):
        return np.broadcast_to(np.asarray(noise(loss), dtype=float), loss.shape)
    return np.full(loss.shape, float(noise))


def _grid(log_n: np.ndarray, grid_multiplier: int) -> np.ndarray:
    """The evaluation grid in log N: ``(k - 1) * grid_multiplier`` points, ends included."""
    return np.linspace(log_n[0], log_n[-1], max((len(log_n) - 1) * grid_multiplier, 3))


def _window_start(lowest, n_sizes: int, window: int):
    """First index of the ``window`` sizes centred on index ``lowest`` (scalar or array), kept inside
    the ``n_sizes`` sampled ones."""
    return np.clip(np.asarray(lowest) - window // 2, 0, n_sizes - window)


def _check_method(method: str) -> None:
    if method not in METHODS:
        raise UserError(f"isoFLOP method must be one of {', '.join(METHODS)}, not {method!r}")


def _spline_on_grid(log_n: np.ndarray, y: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Akima interpolation of each column of ``y`` (k,) or (k, B) at ``grid``."""
    from scipy.interpolate import Akima1DInterpolator

    return Akima1DInterpolator(log_n, y, axis=0)(grid)


def _parabola(log_n: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
    """(x0, [c2, c1, c0]): a quadratic in log N - x0 for each column of ``y``.

    Centring x keeps the quadratic's normal equations well conditioned.
    """
    x0 = float(log_n.mean())
    return x0, np.polyfit(log_n - x0, y, 2)


def _minimise(log_n: np.ndarray, log_loss: np.ndarray, method: str, grid: np.ndarray):
    """Optimal log N, optimal log loss and an edge flag, for each column of ``log_loss``.

    ``log_loss`` is (k,) or (k, B); the return values are (B,) arrays (B=1 for 1-D).
    """
    y = log_loss.reshape(len(log_n), -1)
    if method == "spline":
        curves = _spline_on_grid(log_n, y, grid)  # (G, B)
        idx = np.argmin(curves, axis=0)
        cols = np.arange(y.shape[1])
        edge = (idx == 0) | (idx == len(grid) - 1)
        return grid[idx], curves[idx, cols], edge
    x0, (c2, c1, c0) = _parabola(log_n, y)
    return _vertex(log_n, x0, c2, c1, c0)


def _vertex(log_n: np.ndarray, x0: float, c2, c1, c0):
    """(optimal log N, optimal log loss, edge) of quadratics c2·x² + c1·x + c0 in x = log N − x0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        vertex = -c1 / (2 * c2)
    # A parabola opening downwards has no minimum: treat it as an edge optimum.
    edge = ~(c2 > 0) | (vertex <= log_n[0] - x0) | (vertex >= log_n[-1] - x0)
    vertex = np.where(np.isfinite(vertex), vertex, 0.0)
    return vertex + x0, c0 + c1 * vertex + c2 * vertex**2, edge


# Elements (sizes × draws) of one block of noisy losses in the parabola bootstrap: 2^18 float64 = 2 MB.
BLOCK = 1 << 18


def _noisy_parabola_optima(log_n: np.ndarray, loss: np.ndarray, sd: np.ndarray, n_boot: int, rng,
                           block: int = BLOCK):
    """``_minimise(log_n, log(max(loss + sd·Z, tiny)), "parabola", …)`` for Z = rng.standard_normal((k,
    n_boot)), without ever holding k × n_boot numbers: Z is drawn a block of rows at a time (the same
    draws, in the same order, as one call), and since a least-squares quadratic's coefficients are a
    fixed linear map of the data, pinv(V)·log(noisy), each block adds its rows' share to them. Memory is
    ``block`` elements whatever the sizes and draws; the numbers agree with ``np.polyfit`` to rounding."""
    x0 = float(log_n.mean())
    x = log_n - x0
    pinv = np.linalg.pinv(np.column_stack([x * x, x, np.ones_like(x)]))  # (3, k)
    coef = np.zeros((3, n_boot))
    step = max(1, int(block) // max(n_boot, 1))
    buf = np.empty((min(step, len(x)), n_boot))
    for i in range(0, len(x), step):
        rows = slice(i, min(i + step, len(x)))
        z = buf[:rows.stop - i]  # worked in place: a block that stays in cache is ~20% faster than fresh arrays
        rng.standard_normal(out=z)
        z *= sd[rows, None]
        z += loss[rows, None]
        np.maximum(z, np.finfo(float).tiny, out=z)  # a negative loss can only come from absurd noise
        coef += pinv[:, rows] @ np.log(z, out=z)
    return _vertex(log_n, x0, *coef)


def pooled_parabola_sd(groups: list[tuple[float, pd.DataFrame]], loss_col: str, n_col: str) -> float:
    """Residual sd of per-budget quadratics in log N (the default bootstrap noise)."""
    resid, dof = 0.0, 0
    for _, g in groups:
        if len(g) > 3:
            x, y = np.log(g[n_col].to_numpy()), g[loss_col].to_numpy()
            x0, coef = _parabola(x, y)
            resid += float(np.sum((np.polyval(coef, x - x0) - y) ** 2))
            dof += len(g) - 3
    if dof == 0:
        raise UserError("isoFLOP bootstrap needs noise=... (no budget has more than 3 sizes to estimate it from)")
    return float(np.sqrt(resid / dof))


def local_parabola_sd(df: pd.DataFrame, n_col: str = "n", c_col: str = "flops", loss_col: str = "loss",
                      window: int = 5, replicates: str = "min") -> float:
    """Residual sd of quadratics fitted to every ``window`` consecutive sizes of each budget, pooled.

    What the default bootstrap noise (:func:`pooled_parabola_sd`, one parabola per budget) would be without
    the parabola's misfit: over a few neighbouring sizes a smooth curve is nearly quadratic, so on a dense
    grid of noise-free losses this is ~0 while the whole-budget residual is all misfit. NaN when no budget
    has more than 3 sizes."""
    ms = []
    for _, g in budget_groups(df, n_col, c_col, loss_col, replicates):
        x, y = np.log(g[n_col].to_numpy()), g[loss_col].to_numpy()
        m = min(window, len(x))
        if m <= 3:
            continue
        for s in range(len(x) - m + 1):
            x0, coef = _parabola(x[s:s + m], y[s:s + m])
            ms.append(float(np.sum((np.polyval(coef, x[s:s + m] - x0) - y[s:s + m]) ** 2)) / (m - 3))
    return float(np.sqrt(np.mean(ms))) if ms else float("nan")


# The default bootstrap noise is called mostly misfit when the local residual is under this share of it
# (then over three quarters of its variance is the parabola's lack of fit, not noise).
MISFIT_RATIO = 0.5


def budget_optima(
    df: pd.DataFrame,
    n_col: str = "n",
    c_col: str = "flops",
    loss_col: str = "loss",
    method: str = "parabola",
    n_boot: int = 0,
    seed: int = 0,
    noise: Noise = None,
    *,
    grid_multiplier: int = GRID_MULTIPLIER,
    min_sd_factor: float = MIN_SD_FACTOR,
    min_points: int = 3,
    window: int | None = None,
    replicates: str = "min",
    level: float = 0.95,
    block: int = BLOCK,
    progress: bool = False,
) -> pd.DataFrame:
    """One row per budget: its optimal size, with bootstrap uncertainty when ``n_boot > 0``.

    Columns: ``flops``, ``n_opt``, ``loss_opt``, ``n_points``, ``edge`` (optimum at
    the edge of the sampled sizes), ``n_opt_point`` (the noiseless estimate) and
    ``note`` (why a budget has no usable optimum, else ""). With a bootstrap also
    ``n_opt_lo``/``n_opt_hi`` (the central ``level`` interval's quantiles), ``log_n_opt_sd`` and
    ``n_boot_valid``; ``n_opt`` and ``loss_opt`` are then bootstrap medians
    (Porian et al.'s ``bs_median_as_obs``), and a budget whose optimum falls on
    the edge in more than half the samples is marked edge too.

    ``noise`` is the sd of the Gaussian noise added to each loss: a number, a
    function of the loss array, or None (the pooled residual sd of per-budget
    parabolas). Several runs at one (N, C) keep the lowest loss, as Porian et
    al. do, or with ``replicates="mean"`` (runs that differ only in their seed)
    their mean. A mean of k runs gets noise/√k; with ``noise=None`` and cells
    run more than once, the noise is their measured seed-to-seed sd, growing
    with the loss's excess over the budget's minimum (:func:`seed_noise`),
    instead of the parabola residual. ``window=k`` fits each budget only on the k sampled sizes centred on
    its lowest observed loss (a parabola is a good model of the curve only near
    its minimum); edges are then judged against that window. ``block`` bounds the parabola bootstrap's
    memory (``_noisy_parabola_optima``); n_boot is at most ``MAX_RESAMPLES``. ``progress`` shows a bar
    over the budgets (tqdm).
    """
    _check_method(method)
    check_resample_count(n_boot)
    groups = budget_groups(df, n_col, c_col, loss_col, replicates)
    if n_boot > 0 and noise is None:
        measured = seed_noise(df, n_col, c_col, loss_col) if replicates == "mean" else None
        noise = measured.at if measured and measured.dof else pooled_parabola_sd(groups, loss_col, n_col)
    rng = np.random.default_rng(seed)

    rows = []
    if progress and n_boot > 0:  # tqdm only when asked for: the bar's ETA is for many sizes × draws
        from tqdm.auto import tqdm

        groups = tqdm(groups, desc=f"isoFLOP bootstrap ({n_boot} draws a budget)", unit="budget")
    for c, g in groups:
        if window is not None and len(g) > window:
            start = int(_window_start(np.argmin(g[loss_col].to_numpy()), len(g), window))
            g = g.iloc[start:start + window]
        log_n = np.log(g[n_col].to_numpy())
        loss = g[loss_col].to_numpy()
        # a mean of k replicates is √k times less noisy than one run; the best of k is not
        per_run = np.sqrt(g["_k"].to_numpy()) if replicates == "mean" else np.ones(len(g))
        row = dict(flops=c, n_opt=np.nan, loss_opt=np.nan, n_points=len(g), edge=False, n_opt_point=np.nan, note="")
        if n_boot > 0:
            row.update(n_opt_lo=np.nan, n_opt_hi=np.nan, log_n_opt_sd=np.nan, n_boot_valid=0)
        rows.append(row)
        if len(g) < min_points:
            row["note"] = f"only {len(g)} sizes (needs {min_points})"
            continue
        if np.ptp(loss) <= 1e-12 * np.abs(loss).max():  # flat: any size is "optimal", so none is
            row["note"] = "losses all equal: no minimum"
            continue
        grid = _grid(log_n, grid_multiplier)
        x, y, edge = _minimise(log_n, np.log(loss), method, grid)
        row.update(n_opt_point=float(np.exp(x[0])), n_opt=float(np.exp(x[0])), loss_opt=float(np.exp(y[0])),
                   edge=bool(edge[0]))
        if edge[0]:
            row["note"] = "optimum at the edge of the sampled sizes"
        if n_boot <= 0 or edge[0]:
            continue
        point_sd = _noise_sd(noise, loss) / per_run
        if method == "parabola":  # in blocks of rows: bounded memory on budgets of many sizes
            bx, by, bedge = _noisy_parabola_optima(log_n, loss, point_sd, n_boot, rng, block)
        else:
            noisy = loss[:, None] + point_sd[:, None] * rng.standard_normal((len(loss), n_boot))
            noisy = np.maximum(noisy, np.finfo(float).tiny)  # a negative loss can only come from absurd noise
            bx, by, bedge = _minimise(log_n, np.log(noisy), method, grid)
        ok = ~bedge
        row["n_boot_valid"] = int(ok.sum())
        if ok.sum() < n_boot / 2:
            row.update(edge=True, note=f"bootstrap optimum at the edge in {int(bedge.sum())}/{n_boot} samples")
            continue
        bx, by = bx[ok], by[ok]
        # Floor: a third of the sampled sizes' spacing (Porian et al.), expressed
        # through the grid step; inflate by the share of samples lost to the edge.
        floor = min_sd_factor * grid_multiplier * (grid[1] - grid[0])
        sd = max(float(np.std(bx)), floor) * n_boot / ok.sum()
        lo, hi = np.quantile(bx, [(1 - level) / 2, (1 + level) / 2])
        row.update(n_opt=float(np.exp(np.median(bx))), loss_opt=float(np.exp(np.median(by))),
                   n_opt_lo=float(np.exp(lo)), n_opt_hi=float(np.exp(hi)), log_n_opt_sd=sd)
    return pd.DataFrame(rows)


def resampled_exponents(budgets: list[tuple[float, np.ndarray, np.ndarray]], method: str = "spline",
                        window: int | None = None, *, grid_multiplier: int = GRID_MULTIPLIER,
                        min_points: int = 3) -> np.ndarray:
    """The exponent a of N* ∝ C^a for each of B resampled data sets at once.

    ``budgets``: (C, sizes N (k,), losses (k, B)), one per budget, one loss column per resample. Each
    column goes through what ``fit_exponent(budget_optima(..., n_boot=0, window=window))`` does to
    one data set: optimum per budget (``window``: the k sizes around the column's lowest loss), edge
    optima dropped, least squares of log N* on log C; NaN where fewer than two budgets are left. The
    optima of all columns come from one vectorised minimisation per budget (and window position).
    """
    opt = resampled_optima(budgets, method, window, grid_multiplier=grid_multiplier, min_points=min_points)
    return exponents_of_optima([c for c, _, _ in budgets], opt)


def resampled_optima(budgets: list[tuple[float, np.ndarray, np.ndarray]], method: str = "spline",
                     window: int | None = None, *, grid_multiplier: int = GRID_MULTIPLIER,
                     min_points: int = 3) -> np.ndarray:
    """log N* of every budget (rows, in the order given) for every resampled column: (budgets, B),
    NaN at an edge optimum. The first step of :func:`resampled_exponents`."""
    _check_method(method)
    n_res = budgets[0][2].shape[1] if budgets else 0
    opt = np.full((len(budgets), n_res), np.nan)
    for i, (_, n, loss) in enumerate(budgets):
        order = np.argsort(n)
        log_n, loss = np.log(np.asarray(n, float)[order]), np.asarray(loss, float)[order]
        starts = np.zeros(n_res, dtype=int)
        if window is not None and len(log_n) > window:
            starts = _window_start(np.argmin(loss, axis=0), len(log_n), window)
        size = len(log_n) if window is None else min(window, len(log_n))
        if size < min_points:
            continue
        for start in np.unique(starts):
            cols = starts == start
            part = log_n[start:start + size]
            x, _, edge = _minimise(part, np.log(loss[start:start + size][:, cols]), method,
                                   _grid(part, grid_multiplier))
            opt[i, cols] = np.where(edge, np.nan, x)
    return opt


def fitted_curves(df: pd.DataFrame, n_col: str = "n", c_col: str = "flops", loss_col: str = "loss",
                  method: str = "spline", *, grid_multiplier: int = GRID_MULTIPLIER,
                  replicates: str = "min") -> pd.DataFrame:
    """Each budget's fitted loss curve on the estimator's grid (for plots): flops, n, loss."""
    _check_method(method)
    parts = []
    for c, g in budget_groups(df, n_col, c_col, loss_col, replicates):
        if len(g) < 3:
            continue
        log_n, log_loss = np.log(g[n_col].to_numpy()), np.log(g[loss_col].to_numpy())
        grid = _grid(log_n, grid_multiplier)
        if method == "spline":
            curve = _spline_on_grid(log_n, log_loss, grid)
        else:
            x0, coef = _parabola(log_n, log_loss)
            curve = np.polyval(coef, grid - x0)
        parts.append(pd.DataFrame({"flops": c, "n": np.exp(grid), "loss": np.exp(curve)}))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["flops", "n", "loss"])
