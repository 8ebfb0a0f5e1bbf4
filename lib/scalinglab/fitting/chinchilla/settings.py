"""Chinchilla's Newton solver's own settings and rules: ``NewtonSettings`` (where it starts, grid sizes, box,
tolerances, memory bound), Hoffmann's 4,500-start grid, the values its parameters may be held at and its one tie
(beta = alpha, with a held exponent holding both), and the free coordinates θ = c + T·φ it moves under them
(``Parametrisation``). ``FitOptions`` carries the settings; ``chinchilla_options`` applies the rules."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

import numpy as np

from scalinglab.errors import OptionError, UserError
from scalinglab.fitting.chinchilla.law import PARAMS
from scalinglab.fitting.options import FitOptions, min_rows

MIN_ROWS = min_rows(len(PARAMS))
# Where Chinchilla's Newton solver (``fitting.solvers``' "chinchilla-newton") starts: Hoffmann's grid, or one start,
# the optimum of the least-squares estimator by variable projection (the solver "varpro"), then the same Huber fit.
STARTS = ("grid", "varpro")

# Elements (starts × rows) in one block of the solver's row-wise sums: 2^20 float64 = 8 MB per (K, rows)
# array, 40 MB for the Jacobian, so a fit's memory stays bounded whatever the number of rows.
BLOCK = 1 << 20


MAX_FIXED_EXPONENT = 100.0


def hoffmann_grid() -> np.ndarray:
    """Hoffmann's 4,500 starts as rows of THETA: α, β ∈ {0,…,2}, e ∈ {−1,…,1}, a, b ∈ {0,5,…,25}."""
    exps = np.arange(0.0, 2.01, 0.5)
    es = np.arange(-1.0, 1.01, 0.5)
    abs_ = np.arange(0.0, 25.01, 5.0)
    return np.array([(e, a, b, al, be) for al, be, e, a, b in itertools.product(exps, exps, es, abs_, abs_)])


@dataclass(frozen=True)
class NewtonSettings:
    """The settings of Chinchilla's batched Newton solver (``fitting.solvers``' "chinchilla-newton"): where it
    starts, how many grid starts it refines and polishes, the box it searches, its tolerances and its memory
    bound. The defaults are Hoffmann's method done to convergence; ``FitOptions(settings=NewtonSettings(...))``
    changes them, and only that solver takes them."""

    n_refine: int = 50             # best-scoring grid starts optimised together
    grid_iters: int = 60           # batched iterations for those starts before picking finalists
    n_polish: int = 3              # distinct best solutions then solved to convergence
    # With more rows than this, the grid is scored and refined, and the finalists polished, on a seeded
    # subsample of this many rows (one row of each distinct N and D kept where they are few), and the best
    # finalist is then solved on every row: scoring 4,500 starts on a million rows would cost 4.5e9 law
    # evaluations for a choice of basin.
    screen_rows: int = 1000
    block: int = BLOCK             # elements (starts × rows) per block of the solver's sums (memory bound)
    # Box for (e, a, b, alpha, beta). Wide enough never to bind on real runs;
    # a parameter that ends on it is flagged (e at −20 means "no E": E ≈ 0).
    lower: tuple[float, ...] = (-20.0, -20.0, -20.0, 0.0, 0.0)
    upper: tuple[float, ...] = (5.0, 60.0, 60.0, 5.0, 5.0)
    # Gradient tolerances are in the summed objective's scale (≈ δ·n·|r| ≈ 1e-3
    # on Epoch's 240 rows), so 1e-9 is six orders below the objective.
    gtol: float = 1e-9             # the solver stops when max |projected gradient| < this
    status_gtol: float = 1e-7      # a result is "converged" below this, else "failed"
    batch_iters: int = 500         # batched Newton iterations, at most (most need < 15)
    batch_tol: float = 1e-10       # ...or when every |Δθ| is below this
    # Where it starts: "grid" (Hoffmann's 4,500 starts, the best refined) or "varpro" (one start, the
    # least-squares law found by variable projection, ``fitting.frontier.varpro``; then the same Huber polish).
    start: str = "grid"

    def __post_init__(self):
        if self.start not in STARTS:
            raise UserError(f"start must be one of {', '.join(STARTS)}, not {self.start!r}")


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


def chinchilla_options(options: FitOptions | None = None) -> FitOptions:
    """``options`` under Chinchilla's rules, or a UserError saying why not: held parameters by their PARAMS names
    (any case), in PARAMS order, each at a value the law can take (exponents positive and at most
    MAX_FIXED_EXPONENT); one tie, beta = alpha, kept as ``(("beta", "alpha"),)``, where holding one exponent of the
    pair holds both; something left to fit; the varpro start only without held parameters."""
    opts = options or FitOptions()
    canon = {p.lower(): p for p in PARAMS}
    out: dict[str, float] = {}
    for name, value in opts.fixed:   # FitOptions has refused a name given twice, in any case
        canon_name = canon.get(name.lower())
        if canon_name is None:   # another law's parameter reached Chinchilla's solver
            raise UserError(f"fixed {name}: Chinchilla's law has no such parameter; one of {', '.join(PARAMS)}")
        v = fixed_value(canon_name, value)
        # An exponent held past MAX_FIXED_EXPONENT is no exponent a law means (beta = 1e300 was accepted). Up to
        # it, a term it makes negligible at every run is reported as not identified (alpha = 10 is such a test).
        if canon_name in ("alpha", "beta") and v > MAX_FIXED_EXPONENT:
            raise UserError(f"fixed {canon_name} = {v:g}: an exponent is at most {MAX_FIXED_EXPONENT:g} (at 100, "
                            f"{'N' if canon_name == 'alpha' else 'D'}^-{canon_name} is already below 1e-700 at any "
                            "run)")
        out[canon_name] = v
    ties = {canon.get(k.lower(), k): canon.get(v.strip().lower(), v) for k, v in opts.tied}
    if ties and ties not in ({"beta": "alpha"}, {"alpha": "beta"}):
        named = " and ".join(f"{k} to {v}" for k, v in ties.items())
        raise OptionError(f"Chinchilla's solver ties its exponents only (beta = alpha), not {named}; the "
                          "least-squares solver takes any tie ({solver}=least-squares)", "solver")
    if ties:
        if "alpha" in out and "beta" in out and out["alpha"] != out["beta"]:
            raise UserError(f"tied exponents need alpha = beta, but they are fixed at {out['alpha']:g} "
                            f"and {out['beta']:g}")
        for a, b in (("alpha", "beta"), ("beta", "alpha")):
            if a in out:
                out.setdefault(b, out[a])
    if len(out) == len(PARAMS):
        raise UserError("every parameter is fixed: there is nothing to fit")
    if opts.settings_for(NewtonSettings).start == "varpro" and out:
        raise OptionError("the varpro start fits free or tied exponents; fixed parameters need the grid start "
                          "({start} grid)", "start")
    fixed = tuple((p, out[p]) for p in PARAMS if p in out)
    tied = (("beta", "alpha"),) if ties else ()
    return opts if (fixed, tied) == (opts.fixed, opts.tied) else replace(opts, fixed=fixed, tied=tied)


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
    """The solver's coordinates for these options' constraints (under ``chinchilla_options``' rules)."""
    opts = chinchilla_options(options)
    fixed = dict(opts.fixed)
    ia, ib = PARAMS.index("alpha"), PARAMS.index("beta")
    # Both exponents fixed: nothing left to tie (``chinchilla_options`` fixes both when a tie holds one).
    tied = bool(opts.tied) and not {"alpha", "beta"} <= fixed.keys()
    free = tuple(i for i, p in enumerate(PARAMS) if p not in fixed and not (tied and i == ib))
    # θ holds E, A and B as logs (THETA), the exponents as they are.
    as_theta = {p: float(np.log(v)) if p in ("E", "A", "B") else v for p, v in fixed.items()}
    return Parametrisation(free=free, fixed=tuple((PARAMS.index(p), v) for p, v in as_theta.items()),
                           tied=((ib, free.index(ia)),) if tied else ())


def exact_fixed(params: np.ndarray, options: FitOptions) -> np.ndarray:
    """Parameter rows with fixed columns set to the values given: exp(log E) can miss E by an ulp."""
    for name, value in options.fixed:
        params[..., PARAMS.index(name)] = value
    return params
