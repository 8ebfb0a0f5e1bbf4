"""Hyperparameter laws: the optimal peak learning rate eta_opt(N, D) = c N^a D^b and batch size B_opt(N, D) = c D^b
(tokens), fitted the way Li et al. 2025 (Step Law) fit them: in each (N, D) group the near-optimal runs (every run
whose loss is within ``threshold`` of the group's best; ``threshold=0`` keeps the best alone), then least squares of
log lr and log batch on log N and log D through all of them.

The independent unit is the (N, D) group: its runs share one grid, one data order and one optimum, so resampling
rows (the authors' bootstrap) treats a group's 4-13 near-optimal runs as independent evidence about the law and
narrows the interval. ``fit_hparam_law(..., unit="group")`` resamples whole groups; ``unit="rows"`` is the
authors' bootstrap, kept to reproduce their file. Intervals are percentile intervals over the resamples;
tests/test_hparams.py checks their coverage on simulated grids whose law is known. numpy only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from scalinglab.errors import UserError
from scalinglab.fitting.rows import unit_picks
from scalinglab.serialization import to_jsonable

# The authors' near-optimal filter (code/fit_tool.py, query_optimal_lr_bs_data): |loss / best - 1| < 0.25%.
AUTHORS_THRESHOLD = 0.0025
PARAMS = ("lr_coef", "lr_exp_n", "lr_exp_d", "bs_coef", "bs_exp_n", "bs_exp_d")


@dataclass(frozen=True)
class HparamRuns:
    """Runs over a learning-rate x batch grid: arrays of N, D, peak lr, batch (tokens) and loss, one per run, and
    each run's (N, D) group index."""

    n: np.ndarray
    d: np.ndarray
    lr: np.ndarray
    batch: np.ndarray
    loss: np.ndarray
    label: str = "runs"

    @classmethod
    def from_arrays(cls, n, d, lr, batch, loss, label: str = "runs") -> HparamRuns:
        arrs = [np.asarray(v, dtype=float).ravel() for v in (n, d, lr, batch, loss)]
        if len({a.size for a in arrs}) != 1:
            raise UserError(f"{label}: N, D, lr, batch and loss have different lengths")
        for name, a in zip(("N", "D", "lr", "batch", "loss"), arrs):
            bad = ~np.isfinite(a) | (a <= 0)
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise UserError(f"{label}: {name} must be a positive number in every run; row {i + 1} has {a[i]:g}")
        return cls(*arrs, label=label)

    @property
    def groups(self) -> tuple[np.ndarray, np.ndarray]:
        """(keys, index): the distinct (N, D) pairs (rows of keys) and each run's group."""
        keys, index = np.unique(np.column_stack([self.n, self.d]), axis=0, return_inverse=True)
        return keys, index.ravel()

    def take(self, mask) -> HparamRuns:
        m = np.asarray(mask)
        return HparamRuns(self.n[m], self.d[m], self.lr[m], self.batch[m], self.loss[m], self.label)


def near_optimal(runs: HparamRuns, threshold: float = AUTHORS_THRESHOLD) -> np.ndarray:
    """The runs whose loss is within ``threshold`` (relative) of their (N, D) group's best (a boolean mask);
    ``threshold=0``: each group's best run alone (the first of ties)."""
    _, g = runs.groups
    best = np.full(g.max() + 1, np.inf)
    np.minimum.at(best, g, runs.loss)
    if threshold <= 0:
        mask = np.zeros(runs.loss.size, bool)
        for k in range(best.size):
            mask[np.flatnonzero((g == k) & (runs.loss == best[k]))[0]] = True
        return mask
    return np.abs(runs.loss / best[g] - 1) < threshold


def _design(logn, logd, on_n: bool) -> np.ndarray:
    cols = [np.ones_like(logn)] + ([logn] if on_n else []) + [logd]
    return np.column_stack(cols)


def _ols(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.linalg.lstsq(x, y, rcond=None)[0]


def _coefs(logn, logd, loglr, logbs, bs_on_n: bool) -> np.ndarray:
    """(lr_coef, lr_exp_n, lr_exp_d, bs_coef, bs_exp_n, bs_exp_d); bs_exp_n is 0 when B is fitted on D alone."""
    a = _ols(_design(logn, logd, True), loglr)
    b = _ols(_design(logn, logd, bs_on_n), logbs)
    bn, bd = (b[1], b[2]) if bs_on_n else (0.0, b[1])
    return np.array([np.exp(a[0]), a[1], a[2], np.exp(b[0]), bn, bd])


@dataclass(frozen=True)
class HparamLaw:
    """eta_opt = lr_coef N^lr_exp_n D^lr_exp_d and B_opt = bs_coef N^bs_exp_n D^bs_exp_d (tokens; bs_exp_n = 0 when B
    depends on D alone, the published form), with the resamples behind each interval."""

    params: dict
    boot: np.ndarray                 # (resamples, 6) in PARAMS order; empty without a bootstrap
    unit: str                        # what was resampled: "(N, D) group" or "run"
    level: float
    threshold: float
    bs_on_n: bool
    n_groups: int
    n_rows: int                      # near-optimal runs the fit used
    n_range: tuple[float, float]
    d_range: tuple[float, float]
    keys: np.ndarray = field(repr=False, default=None)   # the fitted (N, D) pairs

    def interval(self, name: str) -> tuple[float, float]:
        if not self.boot.size:
            return (float("nan"), float("nan"))
        col = self.boot[:, PARAMS.index(name)]
        q = (1 - self.level) / 2
        return tuple(float(v) for v in np.quantile(col, [q, 1 - q]))

    def boot_mean(self, name: str) -> float:
        """The resamples' mean (for a log-scale coefficient: exp of the mean log), the authors' reported law."""
        col = self.boot[:, PARAMS.index(name)]
        return float(np.exp(np.log(col).mean()) if name.endswith("coef") else col.mean())

    def predict(self, n, d) -> tuple[np.ndarray, np.ndarray]:
        """(eta_opt, B_opt in tokens) at (n, d) by the point fit."""
        p = self.params
        n, d = np.asarray(n, float), np.asarray(d, float)
        return (p["lr_coef"] * n ** p["lr_exp_n"] * d ** p["lr_exp_d"],
                p["bs_coef"] * n ** p["bs_exp_n"] * d ** p["bs_exp_d"])

    def predict_boot(self, n: float, d: float) -> tuple[np.ndarray, np.ndarray]:
        """eta_opt and B_opt at one (n, d) under every resample."""
        b = self.boot
        return (b[:, 0] * n ** b[:, 1] * d ** b[:, 2], b[:, 3] * n ** b[:, 4] * d ** b[:, 5])

    def to_dict(self) -> dict:
        return to_jsonable(dict(
            params=self.params, intervals={k: self.interval(k) for k in PARAMS},
            unit=self.unit, level=self.level, resamples=int(self.boot.shape[0]), threshold=self.threshold,
            bs_on_n=self.bs_on_n, n_groups=self.n_groups, n_rows=self.n_rows,
            n_range=self.n_range, d_range=self.d_range))

    def summary(self) -> str:
        p = self.params
        lo = {k: self.interval(k) for k in PARAMS}
        iv = lambda k, f: f"[{lo[k][0]:{f}}, {lo[k][1]:{f}}]"  # noqa: E731
        bs_n = f" N^{p['bs_exp_n']:.3f}" if self.bs_on_n else ""
        return "\n".join([
            f"eta_opt = {p['lr_coef']:.3g} N^{p['lr_exp_n']:.3f} D^{p['lr_exp_d']:.3f}   "
            f"(c {iv('lr_coef', '.3g')}, N {iv('lr_exp_n', '.3f')}, D {iv('lr_exp_d', '.3f')})",
            f"B_opt   = {p['bs_coef']:.3g}{bs_n} D^{p['bs_exp_d']:.3f} tokens   "
            f"(c {iv('bs_coef', '.3g')}, D {iv('bs_exp_d', '.3f')})",
            f"from {self.n_rows} near-optimal runs (within {100 * self.threshold:g}% of each best) of "
            f"{self.n_groups} (N, D) groups; {100 * self.level:g}% intervals over {self.boot.shape[0]} resamples "
            f"of the {self.unit}"])


def fit_hparam_law(runs: HparamRuns, *, threshold: float = AUTHORS_THRESHOLD, bs_on_n: bool = False,
                   n_boot: int = 1000, unit: str = "group", seed: int = 0, level: float = 0.95) -> HparamLaw:
    """The law through each (N, D) group's near-optimal runs, with a bootstrap over ``unit`` ("group": whole
    (N, D) groups, the independent unit; "rows": the near-optimal runs, the authors' procedure)."""
    if unit not in ("group", "rows"):
        raise UserError(f"unit must be 'group' or 'rows', got {unit!r}")
    keys, g = runs.groups
    if len(keys) < 3:
        raise UserError(f"{runs.label}: {len(keys)} (N, D) group(s); the law's three lr parameters need at least 3")
    if np.linalg.matrix_rank(_design(np.log(keys[:, 0]), np.log(keys[:, 1]), True)) < 3:
        raise UserError(f"{runs.label}: N and D do not vary independently across the (N, D) groups, so the law's "
                        "exponents of N and D cannot be told apart")
    sel = near_optimal(runs, threshold)
    logn, logd = np.log(runs.n[sel]), np.log(runs.d[sel])
    loglr, logbs = np.log(runs.lr[sel]), np.log(runs.batch[sel])
    point = _coefs(logn, logd, loglr, logbs, bs_on_n)
    rng = np.random.default_rng(seed)
    boot = []
    gsel = g[sel]
    members = [np.flatnonzero(gsel == k) for k in range(len(keys))]
    tries = 0
    while len(boot) < n_boot and tries < 10 * n_boot:
        tries += 1
        if unit == "rows":
            idx = unit_picks(int(sel.sum()), 1, rng)[0]
        else:
            idx = np.concatenate([members[k] for k in unit_picks(len(keys), 1, rng)[0]])
        x = _design(logn[idx], logd[idx], True)
        if np.linalg.matrix_rank(x) < 3:  # a resample whose groups cannot separate N from D: drawn again
            continue
        boot.append(_coefs(logn[idx], logd[idx], loglr[idx], logbs[idx], bs_on_n))
    return HparamLaw(params=dict(zip(PARAMS, map(float, point))), boot=np.array(boot).reshape(-1, 6),
                     unit="(N, D) group" if unit == "group" else "run", level=level, threshold=threshold,
                     bs_on_n=bs_on_n, n_groups=len(keys), n_rows=int(sel.sum()),
                     n_range=(float(runs.n.min()), float(runs.n.max())),
                     d_range=(float(runs.d.min()), float(runs.d.max())), keys=keys)
