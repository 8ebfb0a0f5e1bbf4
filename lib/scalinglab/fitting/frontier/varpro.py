"""Approach 3 by variable projection: search α and β, solve E, A and B by non-negative least squares.

For fixed exponents the law L̂ = E + A·N^-α + B·D^-β is linear in (E, A, B), so the best (E, A, B) for a
pair (α, β) is a 3-column non-negative least-squares problem, and the fit reduces to a search over two
numbers (Golub & Pereyra's variable projection; Open-Athena's ``vpnls`` fits the Chinchilla law this
way). The residual is relative, (L̂ − L)/L, which is the log residual log L̂ − log L to first order, so
the fit is least squares in log loss, what Gaussian noise in log loss calls for.

The search: every (α, β) of a grid at once (the NNLS of 3 coefficients is solved exactly by trying all 7
active sets and keeping the best feasible one), then zooms on the best cell, ×4 finer each time, until the
step is below ``tol`` (a zoom whose best point is on its box's edge moves at the same step instead of
shrinking, so a long valley is followed to its end). Noise-free data are fitted exactly (to the zoom's
tolerance). numpy only: this module is on ``scalinglab fit --start varpro``'s path, where scipy stays unloaded.

:func:`fit_varpro` returns a :class:`VarproFit` with a Wald interval for a = β/(α+β) from the Gauss-Newton
covariance of the five parameters (the residual variance estimated on n − 5 degrees of freedom).
:func:`varpro_theta` is the start that ``approach3.fit_arrays`` polishes under its own Huber objective.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from scalinglab.errors import UserError
from scalinglab.fitting.chinchilla.law import ScalingLaw
from scalinglab.fitting.protocol import FitResult

# The 7 non-empty active sets of (E, A, B).
_SUBSETS = [s for k in (1, 2, 3) for s in itertools.combinations(range(3), k)]
# 1.959964 = the standard normal's 97.5% quantile (no scipy here).
Z975 = 1.959963984540054


def _design(alpha: np.ndarray, beta: np.ndarray, logN: np.ndarray, logD: np.ndarray, L: np.ndarray) -> np.ndarray:
    """(G, n, 3) columns 1, N^-α, D^-β divided by L (the relative residual's weights), one per (α, β)."""
    def powers(exps, logx):  # each distinct exponent's powers once (a grid repeats every value)
        uniq, inv = np.unique(exps, return_inverse=True)
        return (np.exp(-uniq[:, None] * logx[None, :]) / L)[inv]

    cols = [np.broadcast_to(1.0 / L, (len(alpha), len(L))), powers(alpha, logN), powers(beta, logD)]
    return np.stack(cols, axis=-1)


# Pairs profiled at once are capped so that their (pairs, rows, 3) design stays near 4M values (~32 MB a copy):
# the whole 1,600-pair grid over 300,000 rows asked for 3.6 GiB at once.
_DESIGN_VALUES = 4_000_000


def profile(alpha, beta, logN, logD, L, nonneg: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(rss (G,), coef (G, 3) = E, A, B): the best linear coefficients for each exponent pair (α_g, β_g).

    ``rss`` is Σ((L̂ − L)/L)². With ``nonneg`` the coefficients are ≥ 0 (NNLS, exact: the best feasible
    solution over all active sets); without, plain least squares. Pairs are profiled in chunks (memory)."""
    alpha, beta = np.atleast_1d(np.asarray(alpha, float)), np.atleast_1d(np.asarray(beta, float))
    chunk = max(1, _DESIGN_VALUES // (3 * max(len(L), 1)))
    if len(alpha) > chunk:
        parts = [_profile(alpha[i:i + chunk], beta[i:i + chunk], logN, logD, L, nonneg)
                 for i in range(0, len(alpha), chunk)]
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
    return _profile(alpha, beta, logN, logD, L, nonneg)


def _profile(alpha, beta, logN, logD, L, nonneg: bool) -> tuple[np.ndarray, np.ndarray]:
    X = _design(alpha, beta, logN, logD, L)
    # Columns scaled to unit norm: N^-α and 1 differ by orders of magnitude, the Gram matrix squares that.
    scale = np.sqrt(np.sum(X * X, axis=1))  # (G, 3)
    # A column that underflows to zero (a large exponent on large N) stays zero instead of 0/0: that pair's
    # solve then meets the ridge below, not NaN and a RuntimeWarning on stderr.
    scale = np.where(scale > 0, scale, 1.0)
    Xs = X / scale[:, None, :]
    gram = np.matmul(Xs.transpose(0, 2, 1), Xs)
    rhs = Xs.sum(axis=1)  # Xsᵀ·1: the target (L/L) is all ones
    G = len(alpha)
    best_rss, best = np.full(G, np.inf), np.zeros((G, 3))
    todo = np.arange(G)
    # The full set first; the smaller active sets only for the pairs whose solution has a negative coefficient.
    for s in ([(0, 1, 2)] + _SUBSETS[:-1]) if nonneg else [(0, 1, 2)]:
        if not todo.size:
            break
        idx = list(s)
        with np.errstate(all="ignore"):
            try:
                c = np.linalg.solve(gram[np.ix_(todo, idx, idx)] + 1e-15 * np.eye(len(idx)),
                                    rhs[np.ix_(todo, idx)][..., None])[..., 0]
            except np.linalg.LinAlgError:
                continue
            r = np.matmul(Xs[todo][:, :, idx], c[..., None])[..., 0] - 1.0
            rss = np.sum(r * r, axis=1)
        ok = np.isfinite(rss) & (np.all(c >= 0, axis=1) if nonneg else True)
        better = ok & (rss < best_rss[todo])
        rows = todo[better]
        best_rss[rows] = rss[better]
        best[rows] = 0.0
        best[np.ix_(rows, idx)] = c[better]
        if s == (0, 1, 2):  # a feasible full solution is the NNLS solution: nothing smaller can beat it
            todo = todo[~ok]
    return best_rss, best / scale


@dataclass(frozen=True, repr=False)
class VarproFit(FitResult):
    """The least-squares law found by variable projection, with Wald intervals (the Gauss-Newton covariance
    at the optimum; NaN with a coefficient on its bound, where the Wald form does not apply)."""

    law: ScalingLaw
    rss: float                 # Σ((L̂ − L)/L)²
    n_rows: int
    n_evals: int               # (α, β) pairs profiled
    a_se: float                # delta-method standard error of a = β/(α+β); NaN when not estimable
    level: float = 0.95
    # s²(JᵀJ)⁻¹ of (E, A, B, alpha, beta); None when not estimable.
    cov: np.ndarray | None = field(default=None, repr=False, compare=False)
    data: object = field(default=None, repr=False, compare=False)   # the runs it saw (a FitData), from a table

    _scale = ("A", "B")

    @property
    def params(self) -> dict[str, float]:
        return dict(self.law.params)

    @property
    def status(self) -> str:
        if not np.isfinite(self.rss):
            return "failed"
        return "at_bound" if min(self.law.E, self.law.A, self.law.B) <= 0 else "converged"

    def _se(self, name: str) -> float:
        if self.cov is None:
            return float("nan")
        i = list(self.law.params).index(name)
        return float(np.sqrt(max(self.cov[i, i], 0.0)))

    def _interval(self, name: str, level: float) -> tuple[float, float]:
        half = _z(level) * self._se(name)
        return (self.params[name] - half, self.params[name] + half)

    def predict(self, inputs) -> np.ndarray:
        """The loss at ``{"n": N, "d": D}``, as ``LawFit.predict`` takes them."""
        return self.law.loss(np.asarray(inputs["n"], float), np.asarray(inputs["d"], float))

    @property
    def a(self) -> float:
        return self.law.a

    @property
    def a_ci(self) -> tuple[float, float]:
        half = _z(self.level) * self.a_se
        return (self.a - half, self.a + half)

    def to_dict(self) -> dict:
        from scalinglab.serialization import to_jsonable

        return to_jsonable(dict(**self.law.params, a=self.a, a_se=self.a_se, a_ci=list(self.a_ci), rss=self.rss,
                                n_rows=self.n_rows, n_evals=self.n_evals, level=self.level))

    def summary(self) -> str:
        p = self.law
        return (f"varpro least squares on {self.n_rows} runs ({self.n_evals} exponent pairs profiled): "
                f"E = {p.E:.4g}, A = {p.A:.4g}, B = {p.B:.4g}, alpha = {p.alpha:.4f}, beta = {p.beta:.4f}; "
                f"a = {self.a:.4f}, {self.level:.0%} interval [{self.a_ci[0]:.4f}, {self.a_ci[1]:.4f}]")


def _z(level: float) -> float:
    if abs(level - 0.95) < 1e-12:
        return Z975
    from statistics import NormalDist

    return NormalDist().inv_cdf((1 + level) / 2)


def search(logN, logD, L, *, lo: float = 0.05, hi: float = 2.0, step: float = 0.05, tol: float = 1e-9,
           tied: bool = False) -> tuple[float, float, np.ndarray, float, int]:
    """(α, β, (E, A, B), rss, pairs profiled): the grid, then ×4 zooms on the best cell to ``tol``.
    ``tied``: β = α (the diagonal only)."""
    grid = np.arange(lo, hi + step / 2, step)
    al, be = (grid, grid) if tied else (np.repeat(grid, len(grid)), np.tile(grid, len(grid)))
    rss, _ = profile(al, be, logN, logD, L)
    evals = len(al)
    i = int(np.argmin(rss))
    a0, b0 = al[i], be[i]
    h = step
    for _ in range(1000):  # a guard; a zoom needs ~15 shrinks, and walks along a valley take a few more
        if h <= tol:
            break
        offs = np.arange(-6, 7) * (h / 4)  # ±1.5 current steps, 4x finer
        if tied:
            al = be = np.clip(a0 + offs, 1e-6, None)
        else:
            al = np.clip(np.repeat(a0 + offs, len(offs)), 1e-6, None)
            be = np.clip(np.tile(b0 + offs, len(offs)), 1e-6, None)
        rss, _ = profile(al, be, logN, logD, L)
        evals += len(al)
        i = int(np.argmin(rss))
        # On the box's edge the minimum may lie beyond it (a long, tilted valley): move there at the same
        # step instead of shrinking, a pattern search's rule.
        on_edge = (i // len(offs)) in (0, len(offs) - 1) or (i % len(offs)) in (0, len(offs) - 1)
        if tied:
            on_edge = i in (0, len(offs) - 1)
        a0, b0 = al[i], be[i]
        if not on_edge:
            h = h / 4
    rss, coef = profile(np.array([a0]), np.array([b0]), logN, logD, L)
    return float(a0), float(b0), coef[0], float(rss[0]), evals


def _checked(N, D, L):
    arrays = []
    for x, name in zip((N, D, L), ("N", "D", "loss")):
        x = np.asarray(x, float).ravel()
        bad = np.flatnonzero(~np.isfinite(x) | (x <= 0))
        if bad.size:
            raise UserError(f"varpro: column {name!r} needs positive finite numbers; row {bad[0]} is {x[bad[0]]!r}")
        arrays.append(x)
    if len(arrays[2]) < 6:
        raise UserError(f"varpro: need at least 6 runs to fit 5 parameters with a residual; got {len(arrays[2])}")
    from scalinglab.files import check_size

    check_size("varpro_rows", len(arrays[2]), "varpro")
    return arrays


def fit_varpro(N, D, L, *, step: float = 0.05, tol: float = 1e-9, level: float = 0.95,
               tied: bool = False) -> VarproFit:
    """Least squares in relative (≈ log) residuals over E, A, B ≥ 0 and α, β in (0, 2], by variable
    projection; see the module docstring."""
    N, D, L = _checked(N, D, L)
    logN, logD = np.log(N), np.log(D)
    al, be, (E, A, B), rss, evals = search(logN, logD, L, step=step, tol=tol, tied=tied)
    law = ScalingLaw(E=float(E), A=float(A), B=float(B), alpha=al, beta=be)
    cov = None if tied else _wald_cov(law, logN, logD, L, rss)
    return VarproFit(law=law, rss=rss, n_rows=len(L), n_evals=evals, a_se=_a_se(law, cov), level=level, cov=cov)


def solve(law, inputs, y, *, step: float = 0.05, tol: float = 1e-9, level: float = 0.95,
          tied: bool = False) -> VarproFit:
    """The solver "varpro" (``fitting.solvers``): ``fit_varpro`` on Chinchilla's roles (n, d) and the losses."""
    return fit_varpro(inputs["n"], inputs["d"], y, step=step, tol=tol, level=level, tied=tied)


def _wald_cov(law: ScalingLaw, logN, logD, L, rss: float) -> np.ndarray | None:
    """The Gauss-Newton covariance s²(JᵀJ)⁻¹ of (E, A, B, α, β) in relative residuals; None with a
    coefficient on its bound (the Wald form does not apply) or too few rows."""
    n = len(L)
    if n <= 5 or min(law.E, law.A, law.B) <= 0:
        return None
    tA, tB = np.exp(-law.alpha * logN), np.exp(-law.beta * logD)
    J = np.column_stack([np.ones(n), tA, tB, -law.A * logN * tA, -law.B * logD * tB]) / L[:, None]
    try:
        return (rss / (n - 5)) * np.linalg.inv(J.T @ J)
    except np.linalg.LinAlgError:
        return None


def _a_se(law: ScalingLaw, cov: np.ndarray | None) -> float:
    """Delta-method SE of a = β/(α+β) from the covariance of (E, A, B, α, β)."""
    if cov is None:
        return float("nan")
    s = law.alpha + law.beta
    grad = np.array([0, 0, 0, -law.beta / s**2, law.alpha / s**2])
    var = float(grad @ cov @ grad)
    return float(np.sqrt(var)) if var >= 0 else float("nan")


def varpro_theta(logN, logD, logL, *, tied: bool = False) -> np.ndarray:
    """One start (e, a, b, α, β) for the Huber fit: the least-squares law, logs of E, A, B floored at e^-20
    (the fit's natural floor, where an NNLS zero belongs)."""
    from scalinglab.files import check_size

    check_size("varpro_rows", len(logL), "variable projection")
    L = np.exp(logL)
    al, be, coef, _, _ = search(logN, logD, L, tol=1e-6, tied=tied)
    logs = np.log(np.maximum(coef, np.exp(-20.0)))
    return np.array([logs[0], logs[1], logs[2], al, be])
