"""Hoffmann et al.'s Approach 1: the lower envelope of training curves.

Input is a long table of training curves, one row per (run, checkpoint): the
run's size N, the compute C it had spent (or the tokens D it had seen) and its
loss there. Every checkpoint of a run is a candidate "model of size N trained
for D tokens", so at each compute C the lowest loss over all runs names the
compute-optimal size N_opt(C) and data D_opt(C); fitting log N_opt and log
D_opt against log C gives the exponents a and b of N_opt ∝ C^a, D_opt ∝ C^b
(Hoffmann et al. 2022, §3.1 and Table 2: a = 0.50, b = 0.50).

Two ways to take the envelope:

``method="grid"`` (Hoffmann's)
    Each run's loss is interpolated linearly in log C between its recorded
    checkpoints (never extrapolated), evaluated on ``n_grid`` (1500, as
    Hoffmann) log-spaced values of C, and the run with the lowest loss at each
    grid value is that value's optimum.
``method="hull"`` (McLeish et al. 2025, Gemstones)
    The lower convex hull of all checkpoints in (log C, log loss), kept from
    the cheapest checkpoint down to the lowest loss; each hull vertex is an
    optimum. No interpolation: only recorded checkpoints can be optima.

Either way the optima are fitted by ordinary least squares in log space.

Edges. An optimum is an *edge* when its run is the smallest or the largest
model among the runs whose curves cover that C: the true optimum may then lie
outside the sampled sizes (a larger model whose curve has not started yet, or
a smaller one whose curve has already ended). ``drop_edges=True`` leaves them
out of the fit, as :mod:`scalinglab.fitting.frontier.isoflop` does with edge budgets; they stay
in ``EnvelopeFit.points`` with ``edge=True``. Curves that start late have a
subtler edge: the envelope cannot move to a larger model before that model's
first checkpoint, so checkpoints that begin at many tokens bias N_opt low at
small C and steepen a. Nothing in the data can flag that; the notebooks
measure it by moving the first checkpoint.

Uncertainty. The envelope's optima are not independent observations: one run
holds the envelope over a whole interval of C, so the 1500 grid points carry
as many distinct sizes as there are runs, and a least-squares interval on them
would be far too narrow. The interval here comes from a bootstrap over runs
(resample the runs with replacement, retake the envelope, refit), which asks
how much the exponent depends on which model sizes happened to be trained.
Hoffmann's Table 2 intervals are 10th-90th percentiles of a bootstrap on 80%
subsamples of their runs; pass ``level=0.8`` to compare like with like.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from scalinglab.errors import UserError, row_name
from scalinglab.fitting.options import check_resample_count
from scalinglab.fitting.protocol import FitResult
from scalinglab.fitting.rows import unit_picks
from scalinglab.serialization import to_jsonable

METHODS = ("grid", "hull")
# Hoffmann et al. 2022 §3.1: "at 1500 logarithmically spaced FLOP values".
N_GRID = 1500
# 6 FLOPs per parameter per token (forward 2, backward 4) when the table has
# tokens but no compute column.
FLOPS_PER_PARAM_TOKEN = 6.0

@dataclass(frozen=True)
class EnvelopeOptions:
    """How to take the envelope and how to bound the exponents."""

    method: str = "grid"
    n_grid: int = N_GRID
    drop_edges: bool = True
    n_boot: int = 1000
    level: float = 0.95
    seed: int = 0


def _positive(df: pd.DataFrame, col: str) -> np.ndarray:
    values = pd.to_numeric(df[col], errors="coerce").to_numpy(float)
    bad = ~np.isfinite(values) | (values <= 0)
    if bad.any():
        i = int(bad.argmax())
        value = df[col].iloc[i]
        value = value.item() if hasattr(value, "item") else value  # 0.0, not np.float64(0.0)
        raise UserError(f"training curves: column {col!r} needs positive finite numbers; {row_name(df.index, i)} "
                        f"has {value!r}")
    return values


def curves_table(df: pd.DataFrame, run_col: str = "run", n_col: str = "n", loss_col: str = "loss", *,
                 flops_col: str | None = "flops", tokens_col: str | None = "tokens") -> pd.DataFrame:
    """The curves as columns run, n, tokens, flops, loss, checked and sorted by (run, flops).

    Compute comes from ``flops_col`` when the table has it, else C = 6·N·D from
    ``tokens_col``; tokens likewise fall back to C/(6N). Several rows at one
    (run, C) keep the lowest loss. Raises UserError naming the column or value
    at fault: a missing column, a non-positive or non-finite number, a run
    whose N changes, or fewer than two runs.
    """
    if not isinstance(df, pd.DataFrame):
        raise UserError(f"training curves must be a pandas DataFrame, not {type(df).__name__}")
    for role, col in (("run", run_col), ("N", n_col), ("loss", loss_col)):
        if col not in df.columns:
            raise UserError(f"training curves have no {role} column {col!r} "
                            f"(columns: {', '.join(map(str, df.columns))})")
    has_flops = flops_col is not None and flops_col in df.columns
    has_tokens = tokens_col is not None and tokens_col in df.columns
    if not (has_flops or has_tokens):
        wanted = " or ".join(repr(c) for c in (flops_col, tokens_col) if c is not None) or "none given"
        raise UserError(f"training curves need a compute or a tokens column ({wanted}; columns: "
                        f"{', '.join(map(str, df.columns))})")
    if df[run_col].isna().any():
        raise UserError(f"training curves: column {run_col!r} has an empty run id in "
                        f"{row_name(df.index, int(df[run_col].isna().to_numpy().argmax()))}")
    n = _positive(df, n_col)
    loss = _positive(df, loss_col)
    flops = _positive(df, flops_col) if has_flops else None
    tokens = _positive(df, tokens_col) if has_tokens else None
    if flops is None:
        flops = FLOPS_PER_PARAM_TOKEN * n * tokens
    if tokens is None:
        tokens = flops / (FLOPS_PER_PARAM_TOKEN * n)
    out = pd.DataFrame({"run": df[run_col].astype(str).to_numpy(), "n": n, "tokens": tokens, "flops": flops,
                        "loss": loss})
    sizes = out.groupby("run")["n"].nunique()
    if (sizes > 1).any():
        raise UserError(f"training curves: run {sizes.index[(sizes > 1).argmax()]!r} has more than one value "
                        f"in {n_col!r}; one run is one model size")
    runs = out["run"].unique()
    if len(runs) < 2:
        which = f" (only {runs[0]!r})" if len(runs) else ""
        raise UserError(f"training curves: an envelope needs at least 2 runs in {run_col!r}, got {len(runs)}{which}")
    out = out.sort_values(["run", "flops", "loss"]).drop_duplicates(["run", "flops"], keep="first")
    return out.reset_index(drop=True)


@dataclass(frozen=True)
class _Runs:
    """Per-run arrays the envelope needs, in a fixed run order."""

    names: np.ndarray          # (R,)
    n: np.ndarray              # (R,)
    first: np.ndarray          # (R,) log C of each run's first checkpoint
    last: np.ndarray           # (R,) log C of its last
    tokens_per_flop: np.ndarray  # (R,) D/C along the run (constant for a fixed FLOPs-per-token count)


def _runs(curves: pd.DataFrame) -> _Runs:
    g = curves.groupby("run", sort=True)
    first = np.log(g["flops"].min().to_numpy())
    return _Runs(names=g["n"].first().index.to_numpy(), n=g["n"].first().to_numpy(),
                 first=first, last=np.log(g["flops"].max().to_numpy()),
                 tokens_per_flop=(g["tokens"].sum() / g["flops"].sum()).to_numpy())


def _covering(runs: _Runs, log_c: np.ndarray, subset: np.ndarray | None = None) -> np.ndarray:
    """(R, G) mask: run r has checkpoints on both sides of (or at) log C g, and is in the subset."""
    tol = 1e-12  # a grid end equal to a run's end must count as covered despite rounding in log
    cov = (runs.first[:, None] <= log_c[None, :] + tol) & (log_c[None, :] - tol <= runs.last[:, None])
    if subset is not None:
        cov &= subset[:, None]
    return cov


def _edge(runs: _Runs, cov: np.ndarray, best: np.ndarray) -> np.ndarray:
    """An optimum is an edge when its run is the smallest or largest model covering its C."""
    n = runs.n[:, None]
    smallest = np.where(cov, n, np.inf).min(axis=0)
    largest = np.where(cov, n, -np.inf).max(axis=0)
    return (runs.n[best] <= smallest) | (runs.n[best] >= largest)


def _grid_losses(curves: pd.DataFrame, runs: _Runs, log_c: np.ndarray) -> np.ndarray:
    """(R, G) loss of each run at each grid C, +inf where its curve does not reach."""
    out = np.full((len(runs.names), len(log_c)), np.inf)
    for i, (_, g) in enumerate(curves.groupby("run", sort=True)):
        x = np.log(g["flops"].to_numpy())
        inside = (log_c >= x[0] - 1e-12) & (log_c <= x[-1] + 1e-12)
        out[i, inside] = np.interp(log_c[inside], x, g["loss"].to_numpy())
    return out


def _points_frame(runs: _Runs, log_c: np.ndarray, loss: np.ndarray, best: np.ndarray,
                  cov: np.ndarray) -> pd.DataFrame:
    c = np.exp(log_c)
    return pd.DataFrame({"flops": c, "loss": loss, "run": runs.names[best], "n": runs.n[best],
                         "tokens": c * runs.tokens_per_flop[best], "n_covering": cov.sum(axis=0),
                         "edge": _edge(runs, cov, best)})


def _check_options(options: EnvelopeOptions) -> None:
    if options.method not in METHODS:
        raise UserError(f"envelope method must be one of {', '.join(METHODS)}, not {options.method!r}")
    if options.n_grid < 2:
        raise UserError(f"envelope n_grid must be at least 2, not {options.n_grid!r}")
    if not 0 < options.level < 1:
        raise UserError(f"envelope level must lie strictly between 0 and 1, not {options.level!r}")
    check_resample_count(options.n_boot)  # one envelope per resample, in a loop: 1e8 would run for days


def _grid_envelope(runs: _Runs, log_c: np.ndarray, losses: np.ndarray,
                   subset: np.ndarray | None = None) -> pd.DataFrame:
    """The grid's optima over the runs in ``subset`` (all by default). A grid C that none of them reaches
    (a gap between runs' ranges of C) has no optimum and is left out, never credited to some run."""
    masked = losses if subset is None else np.where(subset[:, None], losses, np.inf)
    best = masked.argmin(axis=0)
    loss = masked[best, np.arange(len(log_c))]
    reached = np.isfinite(loss)
    cov = _covering(runs, log_c, subset)
    return _points_frame(runs, log_c[reached], loss[reached], best[reached], cov[:, reached])


def lower_envelope(curves: pd.DataFrame, n_grid: int = N_GRID) -> pd.DataFrame:
    """Hoffmann's envelope: one row per log-spaced C (flops, loss, run, n, tokens, n_covering, edge).

    ``curves`` is a :func:`curves_table`. The grid runs from the cheapest to the
    most expensive checkpoint of any run.
    """
    curves = curves_table(curves)
    runs = _runs(curves)
    log_c = np.linspace(runs.first.min(), runs.last.max(), n_grid)
    return _grid_envelope(runs, log_c, _grid_losses(curves, runs, log_c))


def _lower_hull(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Indices of the lower convex hull of (x, y), left to right (Andrew's monotone chain)."""
    order = np.lexsort((y, x))
    hull: list[int] = []
    for i in order:
        while len(hull) >= 2:
            j, k = hull[-2], hull[-1]
            # drop k unless it lies strictly below the chord from j to i
            if (x[k] - x[j]) * (y[i] - y[j]) - (y[k] - y[j]) * (x[i] - x[j]) <= 0:
                hull.pop()
            else:
                break
        hull.append(int(i))
    return np.array(hull, dtype=int)


def _hull_frame(curves: pd.DataFrame, runs: _Runs, subset: np.ndarray | None = None) -> pd.DataFrame:
    """The checkpoints on the falling part of the lower hull in (log C, log loss), as envelope points.

    ``subset`` (a mask over ``runs``) restricts the hull, and the edge test, to those runs.
    """
    run_idx = np.searchsorted(runs.names, curves["run"].to_numpy())
    rows = np.arange(len(curves)) if subset is None else np.flatnonzero(subset[run_idx])
    x = np.log(curves["flops"].to_numpy()[rows])
    y = np.log(curves["loss"].to_numpy()[rows])
    idx = _lower_hull(x, y)
    # From the cheapest checkpoint down to the lowest loss: past it the hull
    # rises, and a rising loss is never a compute-optimal choice.
    idx = rows[idx[: int(np.argmin(y[idx])) + 1]]
    log_c = np.log(curves["flops"].to_numpy()[idx])
    points = _points_frame(runs, log_c, curves["loss"].to_numpy()[idx], run_idx[idx],
                           _covering(runs, log_c, subset))
    points["tokens"] = curves["tokens"].to_numpy()[idx]  # the checkpoint's own count, not C·(D/C)
    return points


@dataclass(frozen=True, repr=False)
class EnvelopeFit(FitResult):
    """N_opt = coef · C^exponent and D_opt = d_coef · C^d_exponent from a training-curve envelope."""

    exponent: float                 # a
    ci: tuple[float, float]         # bootstrap-over-runs interval of a at ``level``
    coef: float
    d_exponent: float               # b
    d_ci: tuple[float, float]
    d_coef: float
    method: str
    status: str = "converged"       # converged | unidentified (too few points or one size: ``reason``)
    n_points: int = 0               # envelope points in the fit
    n_edge: int = 0                 # edge points (left out when drop_edges)
    n_sizes: int = 0                # distinct model sizes among the fitted optima
    n_runs: int = 0
    level: float = 0.95
    n_boot: int = 0
    n_boot_failed: int = 0          # resamples with fewer than 2 sizes among their optima
    # (B, 4) per resample: a, b, log coef, log d_coef (the intercepts give N_opt and D_opt at any C).
    boot: np.ndarray = field(default_factory=lambda: np.empty((0, 4)), repr=False, compare=False)
    # Which resample (0 … n_boot-1) each row of ``boot`` came from: with the same runs and seed,
    # resample i draws the same runs in any fit, so two fits' rows can be paired (pearce_song does).
    boot_draw: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=int), repr=False, compare=False)
    points: pd.DataFrame = field(default_factory=pd.DataFrame, repr=False, compare=False)
    reason: str = ""

    _scale = ("coef", "d_coef")

    @property
    def params(self) -> dict[str, float]:
        return {"a": self.exponent, "coef": self.coef, "b": self.d_exponent, "d_coef": self.d_coef}

    def _draws(self) -> dict[str, np.ndarray]:
        if len(self.boot) == 0:
            return {}
        a, b, ka, kb = self.boot.T
        return {"a": a, "b": b, "coef": np.exp(ka), "d_coef": np.exp(kb)}

    def predict(self, flops):
        """N_opt at compute ``flops``; ``d_opt`` gives the tokens."""
        return self.n_opt(flops)

    def to_dict(self) -> dict:
        """JSON-ready: the exponents as every report shapes them (``exponent``: a, ci, coef; ``d_exponent``:
        b, ci, coef), then how the fit went."""
        return to_jsonable(dict(exponent=dict(a=self.exponent, ci=list(self.ci), coef=self.coef),
                                d_exponent=dict(b=self.d_exponent, ci=list(self.d_ci), coef=self.d_coef),
                                method=self.method, status=self.status, n_points=self.n_points, n_edge=self.n_edge,
                                n_sizes=self.n_sizes, n_runs=self.n_runs, level=self.level, n_boot=self.n_boot,
                                n_boot_failed=self.n_boot_failed))

    def summary(self) -> str:
        """Two lines: a and b with their intervals (or why they were not fitted)."""
        if self.status != "converged":
            return f"a, b: not fitted ({self.reason}); status {self.status}"

        def iv(ci):
            return f"{self.level:.0%} interval [{ci[0]:.3f}, {ci[1]:.3f}]" if np.isfinite(ci[0]) else "no interval"

        return (f"a = {self.exponent:.3f}, {iv(self.ci)}; N_opt = {self.coef:.3g}·C^a ({self.method} envelope, "
                f"{self.n_points} points, {self.n_sizes} sizes)\n"
                f"b = {self.d_exponent:.3f}, {iv(self.d_ci)}; D_opt = {self.d_coef:.3g}·C^b")

    def n_opt(self, flops):
        return self.coef * np.asarray(flops, dtype=float) ** self.exponent

    def d_opt(self, flops):
        return self.d_coef * np.asarray(flops, dtype=float) ** self.d_exponent

    def tokens_per_param(self, flops: float, level: float | None = None) -> tuple[float, tuple[float, float]]:
        """D_opt/N_opt at compute ``flops`` from the two fitted lines, with its bootstrap-over-runs interval
        at ``level`` (default the fit's; NaN without resamples). Far outside the fitted compute this is an
        extrapolation of both lines."""
        x = np.log(float(flops))
        point = float(self.d_opt(flops) / self.n_opt(flops))
        if len(self.boot) == 0:
            return point, (np.nan, np.nan)
        a, b, ka, kb = self.boot.T
        level = self.level if level is None else level
        lo, hi = np.quantile(np.exp(kb - ka + (b - a) * x), [(1 - level) / 2, (1 + level) / 2])
        return point, (float(lo), float(hi))

    def interval(self, level: float, which: str = "a") -> tuple[float, float]:
        """The bootstrap interval of a (or ``which="b"``) at another level, from the stored resamples."""
        col = {"a": 0, "b": 1}[which]
        if len(self.boot) == 0:
            return (np.nan, np.nan)
        lo, hi = np.quantile(self.boot[:, col], [(1 - level) / 2, (1 + level) / 2])
        return (float(lo), float(hi))


def _ols(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(slope, intercept) of y on x."""
    slope, intercept = np.polyfit(x, y, 1)
    return float(slope), float(intercept)


def _fit_points(points: pd.DataFrame, drop_edges: bool) -> tuple[str, tuple[float, float, float, float], pd.Series]:
    """(why the lines cannot be fitted, "" when they can; a, log coef, b, log d_coef; the points used)."""
    used = ~points["edge"] if drop_edges else pd.Series(True, index=points.index)
    sub = points[used]
    if len(sub) < 2:
        return f"{len(sub)} envelope point(s): a line needs 2", (np.nan,) * 4, used
    if sub["n"].nunique() < 2:
        return "every envelope point has one model size: N_opt cannot vary with C", (np.nan,) * 4, used
    x = np.log(sub["flops"].to_numpy())
    a, ka = _ols(x, np.log(sub["n"].to_numpy()))
    b, kb = _ols(x, np.log(sub["tokens"].to_numpy()))
    return "", (a, ka, b, kb), used


def fit_envelope(curves: pd.DataFrame, options: EnvelopeOptions = EnvelopeOptions(), *, run_col: str = "run",
                 n_col: str = "n", loss_col: str = "loss", flops_col: str | None = "flops",
                 tokens_col: str | None = "tokens") -> EnvelopeFit:
    """Approach 1 on a table of training curves: the envelope, its power laws and a bootstrap over runs.

    Column names default to :func:`curves_table`'s; with ``flops_col=None`` compute
    is 6·N·D. ``options.n_boot=0`` skips the bootstrap (the intervals are then NaN).
    """
    _check_options(options)
    curves = curves_table(curves, run_col, n_col, loss_col, flops_col=flops_col, tokens_col=tokens_col)
    runs = _runs(curves)
    if options.method == "grid":
        log_c = np.linspace(runs.first.min(), runs.last.max(), options.n_grid)
        losses = _grid_losses(curves, runs, log_c)
        points = _grid_envelope(runs, log_c, losses)
    else:
        points = _hull_frame(curves, runs)
    reason, (a, ka, b, kb), used = _fit_points(points, options.drop_edges)
    status = "unidentified" if reason else "converged"
    points = points.assign(used=used.to_numpy())

    boot, draws, failed = _bootstrap(curves, runs, options, losses if options.method == "grid" else None,
                              log_c if options.method == "grid" else None)
    half = (1 - options.level) / 2
    ci = d_ci = (np.nan, np.nan)
    if status == "converged" and len(boot):
        ci = tuple(float(q) for q in np.quantile(boot[:, 0], [half, 1 - half]))
        d_ci = tuple(float(q) for q in np.quantile(boot[:, 1], [half, 1 - half]))
    fitted = points[points["used"]]
    return EnvelopeFit(exponent=a, ci=ci, coef=float(np.exp(ka)), d_exponent=b, d_ci=d_ci, d_coef=float(np.exp(kb)),
                       method=options.method, status=status, n_points=int(len(fitted)),
                       n_edge=int(points["edge"].sum()), n_sizes=int(fitted["n"].nunique()),
                       n_runs=len(runs.names), level=options.level, n_boot=options.n_boot, n_boot_failed=failed,
                       boot=boot, boot_draw=draws, points=points, reason=reason)


def _bootstrap(curves: pd.DataFrame, runs: _Runs, options: EnvelopeOptions, losses: np.ndarray | None,
               log_c: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, int]:
    """(B, 4) exponents and log intercepts (a, b, log coef, log d_coef) refitted on resamples of the runs,
    each one's resample index, the failures."""
    if options.n_boot <= 0:
        return np.empty((0, 4)), np.empty(0, dtype=int), 0
    n_runs = len(runs.names)
    out, draws, failed = [], [], 0
    for draw, pick in enumerate(unit_picks(n_runs, options.n_boot, options.seed)):
        subset = np.zeros(n_runs, dtype=bool)
        subset[pick] = True  # a run drawn twice adds nothing to a minimum
        if options.method == "grid":
            points = _grid_envelope(runs, log_c, losses, subset)
        else:
            if subset.sum() < 2:
                failed += 1
                continue
            points = _hull_frame(curves, runs, subset)
        reason, (a, ka, b, kb), _ = _fit_points(points, options.drop_edges)
        if reason:
            failed += 1
            continue
        out.append((a, b, ka, kb))
        draws.append(draw)
    return np.array(out).reshape(-1, 4), np.array(draws, dtype=int), failed
