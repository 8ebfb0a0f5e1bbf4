"""The loss surface around the optimum of one (N, D) group: a quadratic in (ln lr, ln batch) fitted to the
group's runs near its best, so that the optimum (the quadratic's minimum) and its flatness (how far lr or batch
may move for a 0.1% loss penalty) come with intervals, and a loss can be read at any (lr, batch) near the grid.

The runs used are those within ``window`` of the group's best loss (relative; widened until at least ``MIN_RUNS``
runs are in it): far from the optimum the loss is not quadratic in the logs (it rises steeply at high lr, slowly
at low). The quadratic is fitted to the relative excess r = loss / best - 1 by least squares. The interval
resamples the group's runs (the unit here: each run is its own training) and refits; resamples whose quadratic
has no minimum (a saddle or a ridge) are counted and left out. numpy only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scalinglab.fitting.rows import unit_picks
from scalinglab.serialization import to_jsonable

MIN_RUNS = 10            # 6 parameters: at least 4 runs more than the quadratic has
WINDOWS = (0.01, 0.02, 0.05, 0.1, 0.2)
FLAT_PENALTY = 1e-3      # flatness: the lr (or batch) factor over which the loss stays within 0.1% of the optimum


def _terms(x, y) -> np.ndarray:
    return np.column_stack([np.ones_like(x), x, y, x * x, y * y, x * y])


def _minimum(c: np.ndarray) -> tuple[float, float, float] | None:
    """(x*, y*, r*) of r = c0 + c1 x + c2 y + c3 x^2 + c4 y^2 + c5 xy, or None without a minimum."""
    h = np.array([[2 * c[3], c[5]], [c[5], 2 * c[4]]])
    if c[3] <= 0 or np.linalg.det(h) <= 0:
        return None
    xy = np.linalg.solve(h, -c[1:3])
    return float(xy[0]), float(xy[1]), float(c[0] + c[1:3] @ xy / 2)


@dataclass(frozen=True)
class Surface:
    """One group's quadratic: coefficients of r(ln lr, ln batch), the optimum (lr, batch, loss) with intervals over
    resamples of its runs, and the flatness: the full factor in lr (batch held at its optimum) and in batch (lr at
    its optimum) within which the loss is within 0.1% of the optimum."""

    n: float
    d: float
    best_loss: float
    coef: np.ndarray | None
    window: float
    n_runs: int
    lr_opt: float
    batch_opt: float
    loss_opt: float
    lr_flat: float
    batch_flat: float
    intervals: dict
    failed: int
    resamples: int
    level: float

    @property
    def ok(self) -> bool:
        return self.coef is not None and np.isfinite(self.lr_opt)

    def loss_at(self, lr, batch) -> np.ndarray:
        """The quadratic's loss at (lr, batch): a reading of the surface, trusted near the window's runs only."""
        x, y = np.log(np.asarray(lr, float)), np.log(np.asarray(batch, float))
        r = _terms(np.atleast_1d(x), np.atleast_1d(y)) @ self.coef
        return self.best_loss * (1 + r)

    def to_dict(self) -> dict:
        return to_jsonable(dict(n=self.n, d=self.d, best_loss=self.best_loss, ok=self.ok, window=self.window,
                                n_runs=self.n_runs, lr_opt=self.lr_opt, batch_opt=self.batch_opt,
                                loss_opt=self.loss_opt, lr_flat=self.lr_flat, batch_flat=self.batch_flat,
                                intervals=self.intervals, failed=self.failed, resamples=self.resamples,
                                level=self.level, unit="run (within the group)",
                                coef=None if self.coef is None else list(self.coef)))

    def summary(self) -> str:
        if not self.ok:
            return f"N={self.n:.3g} D={self.d:.3g}: no minimum in the quadratic over {self.n_runs} runs"
        iv = self.intervals
        return (f"N={self.n:.3g} D={self.d:.3g}: lr* {self.lr_opt:.3g} [{iv['lr_opt'][0]:.3g}, {iv['lr_opt'][1]:.3g}], "
                f"batch* {self.batch_opt:.3g} [{iv['batch_opt'][0]:.3g}, {iv['batch_opt'][1]:.3g}] tokens, "
                f"loss {self.loss_opt:.4f}; within 0.1%: lr x{self.lr_flat:.2f}, batch x{self.batch_flat:.2f} "
                f"({self.n_runs} runs within {100 * self.window:g}%)")


def _flat(c: np.ndarray, best: float, r_opt: float) -> tuple[float, float]:
    # Along ln lr at the optimal batch the excess rises as c3 dx^2; the loss is within FLAT_PENALTY of the optimum's
    # loss for |dx| < sqrt(penalty (1 + r*) / c3): the full width as a factor of lr.
    scale = FLAT_PENALTY * (1 + r_opt)
    return float(np.exp(2 * np.sqrt(scale / c[3]))), float(np.exp(2 * np.sqrt(scale / c[4])))


def fit_surface(lr, batch, loss, *, n: float = np.nan, d: float = np.nan, n_boot: int = 200, seed: int = 0,
                level: float = 0.95) -> Surface:
    """The quadratic through one group's runs near its best (see the module), with a bootstrap over those runs."""
    lr, batch, loss = (np.asarray(v, float) for v in (lr, batch, loss))
    best = float(loss.min())
    rel = loss / best - 1
    window = WINDOWS[-1]
    for w in WINDOWS:
        if (rel <= w).sum() >= MIN_RUNS:
            window = w
            break
    use = rel <= window
    x, y, r = np.log(lr[use]), np.log(batch[use]), rel[use]
    nan = float("nan")
    empty = dict(lr_opt=(nan, nan), batch_opt=(nan, nan), loss_opt=(nan, nan), lr_flat=(nan, nan),
                 batch_flat=(nan, nan))
    if use.sum() < 6 or np.linalg.matrix_rank(_terms(x, y)) < 6:
        return Surface(n, d, best, None, window, int(use.sum()), nan, nan, nan, nan, nan, empty, 0, 0, level)
    coef = np.linalg.lstsq(_terms(x, y), r, rcond=None)[0]
    m = _minimum(coef)
    if m is None:
        return Surface(n, d, best, coef, window, int(use.sum()), nan, nan, nan, nan, nan, empty, 0, 0, level)
    draws, failed = [], 0
    for i in unit_picks(r.size, n_boot, seed):
        t = _terms(x[i], y[i])
        if np.linalg.matrix_rank(t) < 6:
            failed += 1
            continue
        c = np.linalg.lstsq(t, r[i], rcond=None)[0]
        mb = _minimum(c)
        if mb is None:
            failed += 1
            continue
        draws.append([np.exp(mb[0]), np.exp(mb[1]), best * (1 + mb[2]), *_flat(c, best, mb[2])])
    q = (1 - level) / 2
    names = ("lr_opt", "batch_opt", "loss_opt", "lr_flat", "batch_flat")
    intervals = empty if not draws else {
        k: tuple(float(v) for v in np.quantile(np.array(draws)[:, j], [q, 1 - q])) for j, k in enumerate(names)}
    lr_flat, batch_flat = _flat(coef, best, m[2])
    return Surface(n, d, best, coef, window, int(use.sum()), float(np.exp(m[0])), float(np.exp(m[1])),
                   best * (1 + m[2]), lr_flat, batch_flat, intervals, failed, n_boot, level)


def pooled_curvature(surfaces) -> np.ndarray | None:
    """The median over groups of each quadratic's second-order coefficients (c3, c4, c5 of the relative excess):
    the penalty model for a query away from every group, where no surface of its own exists."""
    cs = np.array([s.coef[3:] for s in surfaces if s.ok])
    return None if not len(cs) else np.median(cs, axis=0)


def penalty(curv: np.ndarray, dlog_lr, dlog_batch) -> np.ndarray:
    """The relative loss penalty of moving ln lr and ln batch by (dlog_lr, dlog_batch) from the optimum."""
    dx, dy = np.asarray(dlog_lr, float), np.asarray(dlog_batch, float)
    return curv[0] * dx * dx + curv[1] * dy * dy + curv[2] * dx * dy
