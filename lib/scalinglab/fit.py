"""The Chinchilla parametric law L(N, D) = E + A/N^α + B/D^β, fitted as Hoffmann did.

Hoffmann et al. 2022 (Approach 3, Appendix D.2) fit the law in log space,

    log L̂ = LSE(a − α log N, b − β log D, e),   A = eᵃ, B = eᵇ, E = eᵉ,

minimising the Huber loss (δ = 1e-3) of the log residuals, summed over runs,
with L-BFGS from a grid of 4,500 starts. Besiroglu et al. 2024 (Epoch AI)
showed that averaging instead of summing shrinks the objective n-fold, so
L-BFGS-B's default tolerances stop it far from the optimum;
``lbfgs_per_start(..., reduction="mean")`` reproduces that trap.

Here all 4,500 starts are scored at once, the best are optimised together by
a batched Newton solver (numpy, one array over all starts, exact Hessian
where it is positive definite, IRLS Gauss-Newton elsewhere, line search on
the true objective), and the bootstrap re-fits every row resample at once in
the same solver, warm-started from the point estimate, each resample being a
row of resample counts used as weights. ``bench/bench_fit.py`` checks the
result against scipy's L-BFGS-B run from every start.

Constraints (``FitOptions(fixed=..., tie_exponents=...)``) hold parameters at
given values or tie β to α (Gadre et al. 2024's form). The solver then moves
only the free coordinates φ, with θ = c + T·φ (``Parametrisation``), so a
constrained fit is the same Newton solver on fewer coordinates, not a box
squeezed shut; the grid is projected onto φ and deduplicated.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from scalinglab.errors import UserError

PARAMS = ("E", "A", "B", "alpha", "beta")
THETA = ("e", "a", "b", "alpha", "beta")  # the optimiser's coordinates: e, a, b are logs of E, A, B


def min_rows(n_free: int) -> int:
    """Runs needed to fit ``n_free`` parameters: twice as many. A robust loss on few runs can fit
    almost anything, so keep at least as many residual degrees of freedom as free parameters."""
    return 2 * n_free


MIN_ROWS = min_rows(len(PARAMS))  # 10 for the full law


def hoffmann_grid() -> np.ndarray:
    """Hoffmann's 4,500 starts as rows of THETA: α, β ∈ {0,…,2}, e ∈ {−1,…,1}, a, b ∈ {0,5,…,25}."""
    exps = np.arange(0.0, 2.01, 0.5)
    es = np.arange(-1.0, 1.01, 0.5)
    abs_ = np.arange(0.0, 25.01, 5.0)
    return np.array([(e, a, b, al, be) for al, be, e, a, b in itertools.product(exps, exps, es, abs_, abs_)])


@dataclass(frozen=True)
class FitOptions:
    """How to fit. The defaults are Hoffmann's method, done to convergence."""

    delta: float = 1e-3            # Huber threshold on log residuals
    n_refine: int = 50             # best-scoring grid starts optimised together
    grid_iters: int = 60           # batched iterations for those starts before picking finalists
    n_polish: int = 3              # distinct best solutions then solved to convergence
    # Box for (e, a, b, alpha, beta). Wide enough never to bind on real runs;
    # a parameter that ends on it is flagged (e at −20 means "no E": E ≈ 0).
    lower: tuple[float, ...] = (-20.0, -20.0, -20.0, 0.0, 0.0)
    upper: tuple[float, ...] = (5.0, 60.0, 60.0, 5.0, 5.0)
    # Gradient tolerances are in the summed objective's scale (≈ δ·n·|r| ≈ 1e-3
    # on Epoch's 240 rows), so 1e-9 is six orders below the objective.
    gtol: float = 1e-9             # the solver stops when max |projected gradient| < this
    status_gtol: float = 1e-7      # a result is "converged" below this, else "max_iter"
    batch_iters: int = 500         # batched Newton iterations, at most (most need < 15)
    batch_tol: float = 1e-10       # ...or when every |Δθ| is below this
    # Constraints: parameters held at a value, as (name, value) pairs (a dict is accepted; names are
    # case-insensitive and come out in PARAMS order), and beta tied to alpha. Fixing one exponent of a
    # tied pair fixes both. Invalid or degenerate combinations are a UserError here, at construction.
    fixed: tuple[tuple[str, float], ...] = ()
    tie_exponents: bool = False

    def __post_init__(self):
        object.__setattr__(self, "fixed", normalise_fixed(self.fixed, self.tie_exponents))
        object.__setattr__(self, "tie_exponents", bool(self.tie_exponents))


def param_name(name: str) -> str:
    """The PARAMS spelling of a parameter name given in any case, or a UserError."""
    canon = {p.lower(): p for p in PARAMS}.get(str(name).strip().lower())
    if canon is None:
        raise UserError(f"unknown parameter {str(name).strip()!r}; one of {', '.join(PARAMS)}")
    return canon


def fixed_value(name: str, value) -> float:
    """A value ``name`` may be fixed at, or a UserError saying why not."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise UserError(f"fixed {name} must be a number, not {value!r}") from None
    if name in ("alpha", "beta") and v == 0:
        term = "A/N^alpha" if name == "alpha" else "B/D^beta"
        raise UserError(f"fixed {name} must be positive, not 0: at 0, {term} is a constant, which E already is")
    if not np.isfinite(v) or v <= 0:
        raise UserError(f"fixed {name} must be a positive number, not {v:g}")
    return v


def normalise_fixed(fixed, tie_exponents: bool = False) -> tuple[tuple[str, float], ...]:
    """Fixed parameters as ((name, value), ...) in PARAMS order, checked; see ``FitOptions``."""
    pairs = fixed.items() if isinstance(fixed, Mapping) else fixed
    out: dict[str, float] = {}
    for name, value in pairs:
        canon = param_name(name)
        v = fixed_value(canon, value)
        if canon in out:
            raise UserError(f"{canon} is fixed twice ({out[canon]:g} and {v:g})")
        out[canon] = v
    if tie_exponents:
        if "alpha" in out and "beta" in out and out["alpha"] != out["beta"]:
            raise UserError(f"tied exponents need alpha = beta, but they are fixed at {out['alpha']:g} "
                            f"and {out['beta']:g}")
        for a, b in (("alpha", "beta"), ("beta", "alpha")):
            if a in out:
                out.setdefault(b, out[a])
    if len(out) == len(PARAMS):
        raise UserError("every parameter is fixed: there is nothing to fit")
    return tuple((p, out[p]) for p in PARAMS if p in out)


@dataclass(frozen=True)
class Parametrisation:
    """The coordinates φ the solver moves under constraints, with θ = c + T·φ.

    φ holds the free coordinates of θ (beta dropped when tied to alpha); c holds the fixed values
    (log E, log A, log B for E, A, B). T is 0/1, so θ is built from φ by assignment, and a fixed value
    or a tie holds bit for bit in every solution and bootstrap replicate. In φ the gradient is Tᵀg and
    the Hessian TᵀHT, and the box is θ's, intersected for a tied pair.
    """

    free: tuple[int, ...] = tuple(range(len(PARAMS)))   # θ index of each φ coordinate
    fixed: tuple[tuple[int, float], ...] = ()           # (θ index, θ value)
    tied: tuple[tuple[int, int], ...] = ()              # (θ index, φ index it copies)

    @property
    def identity(self) -> bool:
        return self.free == tuple(range(len(PARAMS))) and not self.tied

    @property
    def names(self) -> tuple[str, ...]:
        """The free parameters, one per φ coordinate (alpha stands for a tied pair)."""
        return tuple(PARAMS[i] for i in self.free)

    @property
    def T(self) -> np.ndarray:
        T = np.zeros((len(PARAMS), len(self.free)))
        T[list(self.free), np.arange(len(self.free))] = 1.0
        for i, k in self.tied:
            T[i, k] = 1.0
        return T

    def spread(self, x: np.ndarray, fill) -> np.ndarray:
        """(…, 5) from φ-shaped ``x``: free coordinates from x, tied ones copied, fixed ones from ``fill``
        ((θ index, value) pairs)."""
        x = np.asarray(x)
        out = np.empty(x.shape[:-1] + (len(PARAMS),), x.dtype)
        for i, v in fill:
            out[..., i] = v
        out[..., list(self.free)] = x
        for i, k in self.tied:
            out[..., i] = x[..., k]
        return out

    def theta(self, phi: np.ndarray) -> np.ndarray:
        return phi if self.identity else self.spread(np.asarray(phi, float), self.fixed)

    def phi(self, theta: np.ndarray) -> np.ndarray:
        return theta if self.identity else np.asarray(theta, float)[..., list(self.free)]

    def grad(self, g: np.ndarray) -> np.ndarray:
        return g if self.identity else g @ self.T

    def hessian(self, H: np.ndarray) -> np.ndarray:
        if self.identity:
            return H
        T = self.T
        return T.T @ H @ T

    def box(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self.identity:
            return lo, hi
        plo, phi_ = np.array(lo, float)[list(self.free)], np.array(hi, float)[list(self.free)]
        for i, k in self.tied:
            plo[k], phi_[k] = max(plo[k], lo[i]), min(phi_[k], hi[i])
        return plo, phi_

    def clip(self, theta: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """θ with its free coordinates clipped to the box (fixed values are never moved)."""
        if self.identity:
            return np.clip(theta, lo, hi)
        return self.theta(np.clip(self.phi(theta), *self.box(lo, hi)))


def parametrisation(options: FitOptions | None = None) -> Parametrisation:
    """The solver's coordinates for these options' constraints."""
    opts = options or FitOptions()
    fixed = dict(opts.fixed)
    ia, ib = PARAMS.index("alpha"), PARAMS.index("beta")
    tied = opts.tie_exponents and "beta" not in fixed  # both fixed: nothing left to tie
    free = tuple(i for i, p in enumerate(PARAMS) if p not in fixed and not (tied and i == ib))
    # θ holds E, A and B as logs (THETA), the exponents as they are.
    as_theta = {p: float(np.log(v)) if p in ("E", "A", "B") else v for p, v in fixed.items()}
    return Parametrisation(free=free, fixed=tuple((PARAMS.index(p), v) for p, v in as_theta.items()),
                           tied=((ib, free.index(ia)),) if tied else ())


def _exact_fixed(params: np.ndarray, options: FitOptions) -> np.ndarray:
    """Parameter rows with fixed columns set to the values given: exp(log E) can miss E by an ulp."""
    for name, value in options.fixed:
        params[..., PARAMS.index(name)] = value
    return params


@dataclass(frozen=True)
class ScalingLaw:
    """A parameter set of L(N, D) = E + A/N^α + B/D^β and what follows from it under C = 6ND."""

    E: float
    A: float
    B: float
    alpha: float
    beta: float

    @property
    def a(self) -> float:
        """N_opt ∝ C^a."""
        return self.beta / (self.alpha + self.beta)

    @property
    def b(self) -> float:
        """D_opt ∝ C^b."""
        return self.alpha / (self.alpha + self.beta)

    @property
    def theta(self) -> np.ndarray:
        return np.array([np.log(self.E), np.log(self.A), np.log(self.B), self.alpha, self.beta])

    def params(self) -> dict[str, float]:
        return {k: float(getattr(self, k)) for k in PARAMS}

    def loss(self, N, D):
        N, D = np.asarray(N, float), np.asarray(D, float)
        return self.E + self.A / N**self.alpha + self.B / D**self.beta

    def n_opt(self, C):
        """Loss-minimising N at compute C (FLOP), with D = C/(6N) (Hoffmann eq. 4)."""
        G = (self.alpha * self.A / (self.beta * self.B)) ** (1.0 / (self.alpha + self.beta))
        return G * (np.asarray(C, float) / 6.0) ** self.a

    def d_opt(self, C):
        return np.asarray(C, float) / (6.0 * self.n_opt(C))

    def tokens_per_param(self, C):
        return self.d_opt(C) / self.n_opt(C)


@dataclass(frozen=True)
class Bootstrap:
    """Resampling bootstrap (rows, or whole groups of rows): replicate fits, their spread and intervals."""

    samples: np.ndarray            # (n_ok, 5) columns PARAMS, converged replicates only
    converged: np.ndarray          # (n_boot,) bool: which resamples those are
    n_boot: int
    n_failed: int                  # replicates that hit max_iter or an artificial bound (excluded)
    level: float
    seed: int
    free: tuple[str, ...] = PARAMS  # the fit's free parameters (alpha stands for a tied pair)
    constant: tuple[str, ...] = ()  # names the constraints hold constant (fixed; a and b when tied)
    # What was resampled: "runs" (rows), or the name of what groups them (e.g. a model column), with how many.
    unit: str = "runs"
    n_units: int | None = None

    def column(self, name: str) -> np.ndarray:
        if name in PARAMS:
            return self.samples[:, PARAMS.index(name)]
        al, be = self.column("alpha"), self.column("beta")
        if name == "a":
            return be / (al + be)
        if name == "b":
            return al / (al + be)
        raise KeyError(name)

    @property
    def names(self) -> tuple[str, ...]:
        return PARAMS + ("a", "b")

    @property
    def se(self) -> dict[str, float]:
        """Standard deviations across replicates; NaN with fewer than two (e.g. every one at a bound)."""
        if len(self.samples) < 2:
            return {k: float("nan") for k in self.names}
        # Constant by construction: exactly 0, where np.std of equal values can leave a last-digit residue.
        return {k: 0.0 if k in self.constant else float(np.std(self.column(k), ddof=1)) for k in self.names}

    @property
    def ci(self) -> dict[str, tuple[float, float]]:
        """Percentile intervals at ``level``; NaN when no replicate converged."""
        if not len(self.samples):
            return {k: (float("nan"), float("nan")) for k in self.names}
        q = [(1 - self.level) / 2 * 100, (1 + self.level) / 2 * 100]
        return {k: tuple(float(v) for v in np.percentile(self.column(k), q)) for k in self.names}

    @property
    def cov(self) -> np.ndarray:
        """Covariance of (E, A, B, alpha, beta) across replicates."""
        return np.cov(self.samples, rowvar=False)

    @property
    def cov_log(self) -> np.ndarray:
        """Covariance of (log E, log A, log B, alpha, beta): closer to normal than A and B themselves."""
        return np.cov(_to_theta(self.samples), rowvar=False)

    def wald_test(self, estimate: ScalingLaw, law: ScalingLaw) -> tuple[float, float]:
        """χ² of ``law`` against ``estimate`` with the bootstrap covariance in log space; (χ², p).

        Over the free parameters only (5 df without constraints): fixed and tied ones have no spread,
        so the constraints are taken as given and ``law`` is judged on the rest."""
        from scipy import stats

        idx = [PARAMS.index(k) for k in self.free]
        diff = (estimate.theta - law.theta)[idx]
        chi2 = float(diff @ np.linalg.solve(self.cov_log[np.ix_(idx, idx)], diff))
        return chi2, float(stats.chi2.sf(chi2, df=len(diff)))

    def tokens_per_param(self, C: float) -> np.ndarray:
        return np.array([ScalingLaw(*row).tokens_per_param(C) for row in self.samples])


@dataclass(frozen=True)
class FitResult(ScalingLaw):
    """A fitted law with how it was found. ``status``: converged, max_iter, at_bound or unidentified
    (a term is negligible at every run, so its free parameters are not estimated: ``unidentified``).

    Data that cannot identify the law never get a result: ``check_identifiable``
    raises a UserError instead.
    """

    objective: float = float("nan")
    status: str = "converged"
    at_bound: tuple[str, ...] = ()
    unidentified: tuple[str, ...] = ()
    n_rows: int = 0
    n_starts: int = 0
    grad_norm: float = float("nan")
    options: FitOptions = field(default_factory=FitOptions)
    bootstrap: Bootstrap | None = None

    @property
    def law(self) -> ScalingLaw:
        return ScalingLaw(*(getattr(self, k) for k in PARAMS))

    @property
    def fixed(self) -> dict[str, float]:
        """Parameters held at a value, by name."""
        return dict(self.options.fixed)

    @property
    def tied(self) -> bool:
        """Whether beta was tied to alpha (and not fixed with it)."""
        return bool(parametrisation(self.options).tied)

    @property
    def free(self) -> tuple[str, ...]:
        """The parameters the fit estimated (alpha stands for a tied pair)."""
        return parametrisation(self.options).names

    @property
    def n_free(self) -> int:
        return len(self.free)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {**self.params(), "a": self.a, "b": self.b, "status": self.status,
                               "at_bound": list(self.at_bound), "unidentified": list(self.unidentified),
                               "objective": self.objective,
                               "n_rows": self.n_rows, "n_starts": self.n_starts,
                               "delta": self.options.delta, "fixed": self.fixed,
                               "tie_exponents": self.tied, "n_free": self.n_free}
        if self.bootstrap is not None:
            bs = self.bootstrap
            out["bootstrap"] = {"n_boot": bs.n_boot, "n_failed": bs.n_failed, "level": bs.level,
                                "seed": bs.seed, "unit": bs.unit, "n_units": bs.n_units,
                                "se": bs.se, "ci": {k: list(v) for k, v in bs.ci.items()}}
        return out


def _to_theta(params: np.ndarray) -> np.ndarray:
    """(…, E, A, B, alpha, beta) → (…, e, a, b, alpha, beta)."""
    out = np.array(params, float, copy=True)
    out[..., :3] = np.log(out[..., :3])
    return out


def _to_params(theta: np.ndarray) -> np.ndarray:
    out = np.array(theta, float, copy=True)
    out[..., :3] = np.exp(out[..., :3])
    return out


# --- the objective ---------------------------------------------------------


def _huber(r: np.ndarray, delta: float) -> np.ndarray:
    ar = np.abs(r)
    return np.where(ar <= delta, 0.5 * r * r, delta * (ar - 0.5 * delta))


def _terms(theta: np.ndarray, logN: np.ndarray, logD: np.ndarray):
    """log L̂ and the softmax weights of the three terms, for (K, 5) θ against n points: (K, n) each."""
    e, a, b, al, be = (theta[:, i, None] for i in range(5))
    tA = a - al * logN
    tB = b - be * logD
    tE = np.broadcast_to(e, tA.shape)
    m = np.maximum(np.maximum(tA, tB), tE)
    xA, xB, xE = np.exp(tA - m), np.exp(tB - m), np.exp(tE - m)
    s = xA + xB + xE
    return m + np.log(s), xE / s, xA / s, xB / s


def _jacobian(pE, pA, pB, logN, logD) -> np.ndarray:
    """∂ log L̂ / ∂θ, shape (K, n, 5)."""
    return np.stack([pE, pA, pB, -pA * logN, -pB * logD], axis=-1)


def objective(theta, logN, logD, logL, delta=1e-3, weights=None, reduction="sum"):
    """Huber objective for one θ (5,) or many (K, 5); ``weights`` (n,) or (K, n) are resample counts."""
    th = np.atleast_2d(theta)
    pred = _terms(th, logN, logD)[0]
    h = _huber(pred - logL, delta)
    if weights is not None:
        h = h * weights
    out = h.sum(axis=1)
    if reduction == "mean":
        out = out / (h.shape[1] if weights is None else np.sum(weights, axis=-1))
    return out if np.ndim(theta) == 2 else float(out[0])


def _value_and_grad(theta, logN, logD, logL, delta, reduction="sum", weights=None):
    """Objective and gradient at one θ, for scipy; ``weights`` are resample counts."""
    pred, pE, pA, pB = _terms(theta[None, :], logN, logD)
    r = pred[0] - logL
    w = np.ones_like(r) if weights is None else np.asarray(weights, float)
    J = _jacobian(pE[0], pA[0], pB[0], logN, logD)
    f, g = (_huber(r, delta) * w).sum(), J.T @ (np.clip(r, -delta, delta) * w)
    if reduction == "mean":
        f, g = f / w.sum(), g / w.sum()
    return f, g


# --- the batched solver ----------------------------------------------------


def _projected_grad(theta, g, lo, hi):
    """The gradient with components that push out of the box zeroed (KKT check)."""
    return np.where(((theta <= lo) & (g > 0)) | ((theta >= hi) & (g < 0)), 0.0, g)


def _weighted_gram(J: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Σ_n w_kn J_kn J_knᵀ, shape (K, 5, 5)."""
    return np.matmul(J.transpose(0, 2, 1) * w[:, None, :], J)


def _newton_and_irls(theta, W, logN, logD, logL, delta):
    """Gradient, exact Hessian and IRLS (Gauss-Newton majoriser) Hessian of the weighted objective."""
    pred, pE, pA, pB = _terms(theta, logN, logD)
    r = pred - logL
    J = _jacobian(pE, pA, pB, logN, logD)
    psi = np.clip(r, -delta, delta) * W
    inside = (np.abs(r) <= delta) * W
    g = np.matmul(J.transpose(0, 2, 1), psi[..., None])[..., 0]
    H_irls = _weighted_gram(J, np.minimum(1.0, delta / np.maximum(np.abs(r), 1e-300)) * W)
    # Exact Hessian: quadratic-zone points, plus ψ times the curvature of the
    # log-sum-exp, Tᵀ(diag p − p pᵀ)T, whose diagonal part is assembled here.
    H = _weighted_gram(J, inside - psi)
    sE, sA, sB = (np.sum(psi * p, axis=1) for p in (pE, pA, pB))
    sAN, sBD = np.sum(psi * pA * logN, axis=1), np.sum(psi * pB * logD, axis=1)
    H[:, 0, 0] += sE
    H[:, 1, 1] += sA
    H[:, 2, 2] += sB
    H[:, 1, 3] -= sAN
    H[:, 3, 1] -= sAN
    H[:, 3, 3] += np.sum(psi * pA * logN**2, axis=1)
    H[:, 2, 4] -= sBD
    H[:, 4, 2] -= sBD
    H[:, 4, 4] += np.sum(psi * pB * logD**2, axis=1)
    return g, H, H_irls


def batched_solve(theta0, logN, logD, logL, *, weights=None, delta=1e-3, lower=None, upper=None,
                  max_iter=100, tol=1e-8, gtol=1e-9, param: Parametrisation | None = None):
    """Minimise the summed (weighted) Huber objective from K starts at once.

    Each iteration takes a Newton step where the exact Hessian is positive
    definite, and otherwise a Gauss-Newton step on the IRLS majoriser of the
    Huber loss (curvature min(1, δ/|r|) per point); both are Levenberg-damped,
    followed by a backtracking line search on the true objective and
    projection onto the box. Returns (θ (K, 5), objective (K,), converged (K,)):
    converged means the projected gradient is below ``gtol`` (the summed
    objective's scale) or the last step moved every coordinate less than
    ``tol``.

    ``param`` (from ``parametrisation``) restricts the search to the free
    coordinates φ: steps, box and convergence tests are in φ, and θ (K, 5)
    comes back with fixed and tied coordinates exact.
    """
    P = param if param is not None and not param.identity else None
    lo = np.full(5, -np.inf) if lower is None else np.asarray(lower, float)
    hi = np.full(5, np.inf) if upper is None else np.asarray(upper, float)
    # Below, theta, lo and hi are the solver's coordinates: θ itself, or φ under constraints.
    if P is None:
        theta = np.array(theta0, float, copy=True)
    else:
        theta = P.phi(np.asarray(theta0, float))
        lo, hi = P.box(lo, hi)

    def full(x):  # the solver's coordinates -> θ
        return x if P is None else P.theta(x)

    K = len(theta)
    W = np.ones((1, len(logL))) if weights is None else np.asarray(weights, float)
    theta = np.clip(theta, lo, hi)
    lam = np.full(K, 1e-8)
    active = np.ones(K, bool)
    converged = np.zeros(K, bool)

    def obj(th, Wt):  # th is (K, m), so objective returns one value per start
        return objective(full(th), logN, logD, logL, delta, weights=Wt)

    f = obj(theta, W)
    eye = np.eye(theta.shape[1])
    for _ in range(max_iter):
        idx = np.flatnonzero(active)
        if idx.size == 0:
            break
        th = theta[idx]
        Wi = W if W.shape[0] == 1 else W[idx]
        Wi_full = np.broadcast_to(Wi, (idx.size, W.shape[1]))
        g, H_newton, H_irls = _newton_and_irls(full(th), Wi_full, logN, logD, logL, delta)
        if P is not None:  # chain rule through θ = c + T·φ
            g, H_newton, H_irls = P.grad(g), P.hessian(H_newton), P.hessian(H_irls)
        small = np.max(np.abs(_projected_grad(th, g, lo, hi)), axis=1) < gtol
        eig = np.linalg.eigvalsh(H_newton)
        newton_ok = eig[:, 0] > 1e-10 * np.abs(eig[:, -1])
        H = np.where(newton_ok[:, None, None], H_newton, H_irls)
        diagH = np.einsum("kpp->kp", H)
        damp = lam[idx, None, None] * (diagH[:, :, None] * eye) + 1e-14 * eye
        step = -np.linalg.solve(H + damp, g[..., None])[..., 0]
        # Backtracking: halve until the true objective does not increase.
        t = np.ones(idx.size)
        f_old = f[idx]
        accepted = np.zeros(idx.size, bool)
        new_th, f_new = th.copy(), f_old.copy()
        for _ in range(40):
            todo = np.flatnonzero(~accepted & ~small)
            if todo.size == 0:
                break
            cand = np.clip(th[todo] + t[todo, None] * step[todo], lo, hi)
            fc = obj(cand, Wi if Wi.shape[0] == 1 else Wi[todo])
            ok = fc <= f_old[todo]
            new_th[todo[ok]], f_new[todo[ok]] = cand[ok], fc[ok]
            accepted[todo[ok]] = True
            t[todo[~ok]] *= 0.5
        moved = np.max(np.abs(new_th - th), axis=1)
        theta[idx], f[idx] = new_th, f_new
        # Trust the quadratic model more after a full step, less after a cut one.
        lam[idx] = np.where(t >= 1.0, np.maximum(lam[idx] * 0.1, 1e-12), np.minimum(lam[idx] * 10, 1e6))
        done = small | (accepted & (moved < tol)) | ~accepted
        converged[idx[done]] = small[done] | (accepted[done] & (moved[done] < tol))
        active[idx[done]] = False
    return full(theta), f, converged


# --- data checks -----------------------------------------------------------


def positive_logs(values, name: str) -> np.ndarray:
    """log of a column that must be finite and positive, or a UserError naming the first bad row."""
    x = np.asarray(values, dtype=float).ravel()
    bad = np.flatnonzero(~np.isfinite(x))
    if bad.size:
        raise UserError(f"column {name!r} has {bad.size} missing or non-finite value(s) (first at row {bad[0]})")
    bad = np.flatnonzero(x <= 0)
    if bad.size:
        raise UserError(f"column {name!r} must be positive; row {bad[0]} is {x[bad[0]]:g}")
    return np.log(x)


def describe_free(options: FitOptions | None = None) -> str:
    """The free parameters in words, e.g. 'E, A, B, alpha (beta = alpha)'."""
    P = parametrisation(options)
    return ", ".join(P.names) + (" (beta = alpha)" if P.tied else "")


def check_identifiable(N, D, L, names=("N", "D", "loss"),
                       options: FitOptions | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Logs of N, D, L as float arrays, or a UserError saying why the law cannot be fitted
    (with ``options``' constraints: fixed parameters need no data)."""
    arrays = [positive_logs(x, name) for x, name in zip((N, D, L), names)]
    logN, logD, logL = arrays
    P = parametrisation(options)
    free = set(P.names)
    if len(logN) < min_rows(len(free)):
        raise UserError(f"need at least {min_rows(len(free))} runs to fit {describe_free(options)}; "
                        f"got {len(logN)}")
    # How many distinct N and D. With D varying at each N, the runs pin the N term A/N^alpha only up
    # to a constant (E absorbs it): through the k_N − 1 differences between its k_N distinct values;
    # likewise the D term through k_D − 1. Their common level is one more equation, spent on E when E
    # is free. Each free parameter needs an equation of its own: A and alpha from N's differences, B
    # and beta from D's, a tied exponent from either, and any one of them from the level when E is
    # fixed. So the full law needs 3 distinct N and 3 distinct D (as Hoffmann's form always did), with
    # alpha fixed 2 distinct N are enough, and with E fixed as well a single N.
    spare_level = int("E" not in free)
    spare = {}
    for col, term in ((names[0], ("A", "alpha")), (names[1], ("B", "beta"))):
        x = logN if term[0] == "A" else logD
        k = np.unique(np.round(x, 6)).size
        own = [p for p in term if p in free and not (P.tied and p == "alpha")]
        short = max(0, len(own) - (k - 1))
        borrowed = min(short, spare_level)
        spare_level -= borrowed
        if short > borrowed:
            easier = [p for p in (term[1], "E") if p in free and (p == "E" or len(own) == 2)]
            hint = f" (fixing {' or '.join(easier)} needs one fewer)" if easier else ""
            raise UserError(f"column {col!r} takes fewer than {len(own) + 1 - borrowed} distinct values: "
                            f"{' and '.join(own)} cannot be identified{hint}")
        spare[col] = k - 1 - (len(own) - short)
    if P.tied and sum(spare.values()) + spare_level < 1:
        raise UserError(f"neither {names[0]!r} nor {names[1]!r} takes enough distinct values to identify "
                        "the tied exponent alpha = beta")
    # D ∝ N^k (e.g. every run at 20 tokens per parameter) confounds A/N^α with B/D^β, unless one of
    # the two terms is fixed outright and so needs no telling apart.
    fixed = dict(options.fixed) if options else {}
    whole_term_fixed = {"A", "alpha"} <= fixed.keys() or {"B", "beta"} <= fixed.keys()
    X = np.column_stack([np.ones_like(logN), logN])
    resid = logD - X @ np.linalg.lstsq(X, logD, rcond=None)[0]
    if resid.std() < 1e-2 and not whole_term_fixed:
        raise UserError(f"log {names[1]} is a linear function of log {names[0]} (D ∝ N^k, e.g. a fixed "
                        "tokens-per-parameter ratio): A/N^alpha and B/D^beta cannot be told apart; "
                        "vary D at fixed N")
    _check_below_fixed_floor(np.exp(logN), np.exp(logD), np.exp(logL), fixed, names)
    return logN, logD, logL


def _check_below_fixed_floor(N, D, L, fixed: dict[str, float], names) -> None:
    """Every loss above what the fixed parts of the law already add up to: the law never goes below
    E plus any fully fixed term, so a run under that floor contradicts the constraints."""
    floor = np.zeros_like(L)
    parts = []
    if "E" in fixed:
        floor += fixed["E"]
        parts.append(f"E = {fixed['E']:g}")
    for scale, exp, x, col in (("A", "alpha", N, names[0]), ("B", "beta", D, names[1])):
        if scale in fixed and exp in fixed:
            floor += fixed[scale] / x ** fixed[exp]
            parts.append(f"the fixed {scale}/{col}^{exp}")
    bad = np.flatnonzero(L <= floor)
    if parts and bad.size:
        i = bad[0]
        raise UserError(f"{' plus '.join(parts)} puts the law at {floor[i]:.4g} or above, but row {i} has "
                        f"{names[2]} {L[i]:.4g} ({bad.size} row(s) at or below the law's floor): fix a smaller value")


# --- the fit ---------------------------------------------------------------


def _bound_flags(theta: np.ndarray, opts: FitOptions) -> np.ndarray:
    """(…, 5) bool: which coordinates sit on the box (within 1e-6 of its width); a fixed one never
    does (it was given, not found), a tied beta does when its alpha does."""
    P = parametrisation(opts)
    lo, hi = P.box(np.asarray(opts.lower), np.asarray(opts.upper))
    x = P.phi(theta)
    flags = np.minimum(x - lo, hi - x) < 1e-6 * (hi - lo)
    return flags if P.identity else P.spread(flags, [(i, False) for i, _ in P.fixed])


# Lower bounds that stand for a parameter's natural limit: E, A or B at e^-20 ≈ 2e-9 is zero, and an
# exponent at 0 means no dependence. A replicate there is a real estimate (its data say "none"); one on
# any other bound (an upper bound, or a floor a caller raised) is an artefact of the box.
NATURAL_FLOOR = (-20.0, -20.0, -20.0, 0.0, 0.0)


def natural_floor_shares(result: FitResult) -> dict[str, float]:
    """Share of the counted bootstrap replicates with each parameter on its natural floor
    (``NATURAL_FLOOR``: E, A or B ≈ 0, an exponent at 0). Those replicates count as estimates
    ("these runs cannot tell the term from nothing"), so a large share says the interval reaches zero
    because the data allow it, not because of the box. A fixed parameter was not estimated: 0. Empty
    without a bootstrap."""
    bs = result.bootstrap
    if bs is None or not len(bs.samples):
        return {}
    on = _on_natural_floor(_to_theta(bs.samples), result.options)
    fixed = dict(result.options.fixed)
    return {name: 0.0 if name in fixed else float(on[:, i].mean()) for i, name in enumerate(PARAMS)}


def _on_natural_floor(theta: np.ndarray, opts: FitOptions) -> np.ndarray:
    """(…, 5) bool: coordinates on their lower bound (the bound flags' tolerance) where that bound is
    the natural floor; a floor a caller raised above the natural one is not natural."""
    lo, hi = np.asarray(opts.lower), np.asarray(opts.upper)
    return (np.abs(theta - lo) < 1e-6 * (hi - lo)) & (lo <= np.asarray(NATURAL_FLOOR))


def _artificial_bound_flags(theta: np.ndarray, opts: FitOptions) -> np.ndarray:
    """(…, 5) bool: coordinates on a bound that is not the parameter's natural floor."""
    return _bound_flags(theta, opts) & ~_on_natural_floor(theta, opts)


def fit_arrays(N, D, L, options: FitOptions | None = None, *, starts: np.ndarray | None = None,
               n_boot: int = 0, seed: int = 0, level: float = 0.95, names=("N", "D", "loss"),
               progress: bool = False, groups=None, unit: str = "groups") -> FitResult:
    """Fit L(N, D) to runs (N, D, L). ``starts`` defaults to Hoffmann's grid.

    Every start is scored at once; the ``n_refine`` best are optimised together
    by ``batched_solve`` for ``grid_iters`` iterations; the ``n_polish`` best
    distinct solutions are then solved to convergence and the lowest wins.
    numpy only: scipy stays off this path so that the CLI starts fast.

    With constraints in ``options`` the starts are projected onto the free
    coordinates and deduplicated (tying the exponents leaves 900 of the 4,500).
    """
    opts = options or FitOptions()
    logN, logD, logL = check_identifiable(N, D, L, names, opts)
    P = parametrisation(opts)
    starts = hoffmann_grid() if starts is None else np.atleast_2d(np.asarray(starts, float))
    if not P.identity:
        starts = P.theta(np.unique(P.phi(starts), axis=0))
    lo, hi = np.asarray(opts.lower), np.asarray(opts.upper)
    solve = dict(delta=opts.delta, lower=lo, upper=hi, tol=opts.batch_tol, gtol=opts.gtol, param=P)
    score = objective(P.clip(starts, lo, hi), logN, logD, logL, opts.delta)
    thetas, fs, _ = batched_solve(starts[np.argsort(score)[: opts.n_refine]], logN, logD, logL,
                                  max_iter=opts.grid_iters, **solve)
    # Finalists: distinct basins (solutions that agree to 1e-4 are one) within 1% of the best so far.
    order = np.argsort(fs)
    _, first = np.unique(np.round(thetas[order], 4), axis=0, return_index=True)
    pick = order[np.sort(first)[: opts.n_polish]]
    finalists = thetas[pick[fs[pick] <= 1.01 * fs[order[0]]]]
    thetas, fs, converged = batched_solve(finalists, logN, logD, logL, max_iter=opts.batch_iters, **solve)
    best = int(np.argmin(fs))
    theta, f = thetas[best], float(fs[best])
    g = _value_and_grad(theta, logN, logD, logL, opts.delta)[1]
    grad_norm = float(np.max(np.abs(_projected_grad(P.phi(theta), P.grad(g), *P.box(lo, hi)))))
    flags = _bound_flags(theta, opts)
    at_bound = tuple(PARAMS[i] for i in np.flatnonzero(flags))
    ok = converged[best] and grad_norm <= opts.status_gtol
    unidentified = _vanished_terms(theta, logN, logD, P, at_bound)
    status = ("at_bound" if at_bound else "unidentified" if unidentified else "converged" if ok else "max_iter")
    result = FitResult(*_exact_fixed(_to_params(theta), opts), objective=f, status=status, at_bound=at_bound,
                       unidentified=unidentified, n_rows=len(logL), n_starts=len(starts), grad_norm=grad_norm,
                       options=opts)
    if n_boot:
        result = replace(result, bootstrap=bootstrap(result, N, D, L, n_boot=n_boot, seed=seed, level=level,
                                                      progress=progress, groups=groups, unit=unit))
    return result


# Below this share of the predicted loss at every run, a term moves no residual: its parameters have no
# gradient, stay where the start put them, and a bootstrap shows them with zero spread, as if known.
NEGLIGIBLE_TERM = 1e-6


def _vanished_terms(theta, logN, logD, P: Parametrisation, at_bound) -> tuple[str, ...]:
    """Free parameters of a term negligible at every run, e.g. A and alpha under ``--fix alpha=10``.

    Unconstrained fits reach this only on a bound (A at its floor, an exponent at 5: ``at_bound``); a
    fixed value can put it anywhere. A tied alpha stays identified through the other term."""
    _, pE, pA, pB = _terms(theta[None, :], logN, logD)
    free = set(P.names)
    out = []
    for weight, params in ((pE, ("E",)), (pA, ("A", "alpha")), (pB, ("B", "beta"))):
        if weight.max() < NEGLIGIBLE_TERM:
            out += [p for p in params if p in free and p not in at_bound and not (P.tied and p == "alpha")]
    return tuple(p for p in PARAMS if p in out)


def progress_bar(iterable, desc: str, on: bool):
    """``iterable`` with a tqdm bar when ``on`` (tqdm is imported only then)."""
    if not on:
        return iterable
    from tqdm.auto import tqdm

    return tqdm(iterable, desc=desc)


def resample_counts(n: int, n_boot: int, seed: int = 0) -> np.ndarray:
    """(n_boot, n) counts of each row in each resample (rows drawn with replacement)."""
    rng = np.random.default_rng(seed)
    return rng.multinomial(n, np.full(n, 1.0 / n), size=n_boot).astype(float)


def group_counts(labels, n_boot: int, seed: int = 0) -> np.ndarray:
    """(n_boot, rows) weights of a cluster bootstrap: each resample draws as many groups as there are,
    with replacement, and every row counts as often as its group was drawn. With one row per group
    this is ``resample_counts`` (same draws for the same seed)."""
    _, inverse = np.unique(np.asarray(labels), return_inverse=True)
    k = int(inverse.max()) + 1
    drawn = np.random.default_rng(seed).multinomial(k, np.full(k, 1.0 / k), size=n_boot).astype(float)
    return drawn[:, inverse]


def bootstrap(result: FitResult, N, D, L, *, n_boot: int = 4000, seed: int = 0, level: float = 0.95,
              chunk: int = 1000, progress: bool = False, groups=None, unit: str = "groups") -> Bootstrap:
    """Re-fit ``n_boot`` row resamples at once, each warm-started from ``result``.

    ``groups`` (one label per run) resamples whole groups instead of rows (``group_counts``): when
    several rows come from one model (checkpoints, cooldowns, eval sets) they share its seed, data
    order and shape, so the model is the independent unit, and resampling rows would treat its
    rows as independent evidence and make the intervals too narrow. ``unit`` names the groups.
    A replicate counts when ``batched_solve`` converged (projected gradient
    < ``gtol``, or steps < ``batch_tol``) and is on no artificial bound; the
    rest are counted in ``n_failed`` and left out of the SEs and intervals.
    Replicates on a natural floor (E, A or B ≈ 0; an exponent at 0) count:
    leaving them out would pull the intervals away from zero exactly when
    the data cannot tell a term from nothing.
    """
    opts = result.options
    P = parametrisation(opts)
    logN, logD, logL = (np.log(np.asarray(x, float).ravel()) for x in (N, D, L))
    if groups is None:
        counts, unit, n_units = resample_counts(len(logL), n_boot, seed), "runs", len(logL)
    else:
        groups = np.asarray(groups)
        if groups.shape != logL.shape:
            raise UserError(f"{groups.size} group labels for {len(logL)} runs")
        counts, n_units = group_counts(groups, n_boot, seed), len(np.unique(groups))
        if n_units < 2:
            raise UserError(f"a bootstrap over {unit} needs at least 2 of them; all {len(logL)} runs are in one")
    lo, hi = np.asarray(opts.lower), np.asarray(opts.upper)
    thetas, oks = [], []
    # Chunks keep the (K, n, 5) Jacobian small.
    for start in progress_bar(range(0, n_boot, chunk), f"bootstrap over {unit} ({chunk} resamples a step)", progress):
        W = counts[start:start + chunk]
        th0 = np.repeat(result.theta[None, :], len(W), axis=0)
        th, _, ok = batched_solve(th0, logN, logD, logL, weights=W, delta=opts.delta, lower=lo, upper=hi,
                                  max_iter=opts.batch_iters, tol=opts.batch_tol, gtol=opts.gtol, param=P)
        thetas.append(th)
        oks.append(ok & ~_artificial_bound_flags(th, opts).any(axis=1))
    theta, ok = np.concatenate(thetas), np.concatenate(oks)
    fixed = dict(opts.fixed)
    # a = β/(α+β) is 0.5 exactly when β = α, and constant when both exponents are fixed.
    constant = tuple(fixed) + (("a", "b") if P.tied or {"alpha", "beta"} <= fixed.keys() else ())
    return Bootstrap(samples=_exact_fixed(_to_params(theta[ok]), opts), converged=ok, n_boot=n_boot,
                     n_failed=int((~ok).sum()), level=level, seed=seed, free=P.names, constant=constant,
                     unit=unit, n_units=n_units)


def runs_from_table(table, n_col: str = "N", d_col: str | None = "D", loss_col: str = "loss", *,
                    c_col: str | None = None, drop_highest: int = 0):
    """(N, D, L, names) from a DataFrame or a dict of columns; D = C/(6N) when ``c_col`` is given.

    Every value is checked (a number, finite, positive) before the
    ``drop_highest`` highest losses are removed, so row numbers in errors are the table's.
    """
    cols = [n_col, loss_col, c_col or d_col]
    absent = [c for c in cols if c not in table]
    if absent:
        raise UserError(f"no column {absent[0]!r}; the table has {', '.join(map(str, table))}")
    N, L, X = (_column(table, c) for c in cols)
    for x, c in zip((N, L, X), cols):
        positive_logs(x, c)
    D, d_name = (X / (6.0 * N), f"{c_col}/(6*{n_col})") if c_col else (X, d_col)
    keep = keep_below_highest(L, drop_highest)
    return N[keep], D[keep], L[keep], (n_col, d_name, loss_col)


def fit(table, n_col: str = "N", d_col: str | None = "D", loss_col: str = "loss", *, c_col: str | None = None,
        options: FitOptions | None = None, drop_highest: int = 0, n_boot: int = 0, seed: int = 0,
        level: float = 0.95, progress: bool = False) -> FitResult:
    """Fit a table of runs (DataFrame or dict of columns). Give D (``d_col``) or compute (``c_col``).

    ``drop_highest`` removes the K highest-loss rows first (Epoch drops 5 of 245).
    """
    N, D, L, names = runs_from_table(table, n_col, d_col, loss_col, c_col=c_col, drop_highest=drop_highest)
    return fit_arrays(N, D, L, options, n_boot=n_boot, seed=seed, level=level, names=names, progress=progress)


ALLOCATION = ("n_opt", "d_opt", "tokens_per_param", "loss")


def check_budgets(C) -> np.ndarray:
    """Compute budgets as a 1-d array, or a UserError naming the first that is not a positive number."""
    C = np.atleast_1d(np.asarray(C, float))
    bad = ~np.isfinite(C) | (C <= 0)
    if bad.any():
        raise UserError(f"compute budgets must be positive numbers of FLOP, not {C[bad][0]:g}")
    return C


def compute_optimal(result: FitResult, C, level: float | None = None) -> list[dict[str, Any]]:
    """What the fitted law says to train at each compute budget C (FLOP, C = 6ND): N_opt, D_opt, tokens
    per parameter and the loss at that optimum, each with a percentile interval over the bootstrap
    replicates when the fit has them (``level`` defaults to the bootstrap's).

    The intervals carry the parameters' uncertainty only, and far beyond the fitted runs they also rest on
    the law's form holding there (notebook 04 shows where it does not)."""
    C = check_budgets(C)
    bs = result.bootstrap
    replicates = ScalingLaw(*bs.samples.T) if bs is not None and len(bs.samples) else None  # columns as arrays
    level = bs.level if level is None and bs is not None else (level or 0.95)
    q = [(1 - level) / 2 * 100, (1 + level) / 2 * 100]

    def allocation(law: ScalingLaw, c: float) -> dict[str, np.ndarray]:
        n, d = law.n_opt(c), law.d_opt(c)
        return dict(n_opt=n, d_opt=d, tokens_per_param=d / n, loss=law.loss(n, d))

    out = []
    for c in C:
        row: dict[str, Any] = {"C": float(c), **{k: float(v) for k, v in allocation(result, c).items()}}
        if replicates is not None:
            reps = allocation(replicates, c)
            row["ci"] = {k: tuple(float(x) for x in np.percentile(reps[k], q)) for k in ALLOCATION}
            row["level"] = level
        out.append(row)
    return out


def keep_below_highest(L, k: int) -> np.ndarray:
    """Boolean mask dropping the ``k`` highest losses (Epoch drops 5 of 245 as outliers)."""
    L = np.asarray(L, float)
    if k < 0:
        raise UserError(f"--drop-highest must be >= 0, not {k}")
    if k >= len(L):
        raise UserError(f"cannot drop the {k} highest losses of {len(L)} rows")
    keep = np.ones(len(L), bool)
    if k:
        keep[np.argsort(L, kind="stable")[len(L) - k:]] = False
    return keep


def _column(table, col: str) -> np.ndarray:
    try:
        return np.asarray(table[col], dtype=float)
    except (TypeError, ValueError):
        for i, v in enumerate(table[col]):
            try:
                float(v)
            except (TypeError, ValueError):
                raise UserError(f"column {col!r} holds a non-number at row {i}: {v!r}") from None
        raise


def lbfgs_per_start(N, D, L, starts: np.ndarray | None = None, *, reduction: str = "sum", delta: float = 1e-3,
                    progress: bool = False):
    """Hoffmann's procedure as written: scipy L-BFGS-B with its default tolerances from every start.

    The baseline for ``bench/`` and the stage for the loss-scale trap: with
    ``reduction="mean"`` the objective is n times smaller, so the default
    ``ftol``/``gtol`` stop the search early. Returns (θ (K, 5), objective (K,))
    in the sum scale, so the two reductions compare directly.
    """
    from scipy.optimize import minimize

    if reduction not in ("sum", "mean"):
        raise ValueError(f"reduction must be 'sum' or 'mean', not {reduction!r}")
    logN, logD, logL = check_identifiable(N, D, L)
    starts = hoffmann_grid() if starts is None else np.atleast_2d(np.asarray(starts, float))
    thetas = np.array([minimize(_value_and_grad, th0, args=(logN, logD, logL, delta, reduction),
                                jac=True, method="L-BFGS-B").x
                       for th0 in progress_bar(starts, f"L-BFGS-B per start ({reduction})", progress)])
    return thetas, objective(thetas, logN, logD, logL, delta)
