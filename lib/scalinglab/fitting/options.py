"""How to fit: ``FitOptions`` (the Huber δ, the resampling, constraints, the solver and its settings),
``NewtonSettings`` (Chinchilla's solver: box, starts, tolerances), ``Resampling`` (how many refits, of what unit,
seed, level), the free-coordinate parametrisation θ = c + T·φ Chinchilla's solver moves, and the most resamples
any bootstrap (Approaches 1, 2 and 3) takes.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np

from scalinglab.errors import OptionError, UserError
from scalinglab.files import MAX_COUNT
from scalinglab.fitting.chinchilla_law import PARAMS
from scalinglab.fitting.huber import HUBER_DELTA


def min_rows(n_free: int) -> int:
    """Runs needed to fit ``n_free`` parameters: twice as many. A robust loss on few runs can fit
    almost anything, so keep at least as many residual degrees of freedom as free parameters."""
    return 2 * n_free


MIN_ROWS = min_rows(len(PARAMS))
# Where Chinchilla's Newton solver (``fitting.solvers``' "chinchilla-newton") starts: Hoffmann's grid, or one start,
# the optimum of the least-squares estimator by variable projection (the solver "varpro"), then the same Huber fit.
STARTS = ("grid", "varpro")

# Elements (starts × rows) in one block of the solver's row-wise sums: 2^20 float64 = 8 MB per (K, rows)
# array, 40 MB for the Jacobian, so a fit's memory stays bounded whatever the number of rows.
BLOCK = 1 << 20


# The most resamples a bootstrap takes. Intervals stop moving long before (the Monte Carlo error of a
# 95% percentile at 100,000 draws is under 0.1% of the interval), and beyond it the replicates alone
# outgrow memory (100,000,000 resamples x 5 parameters is 4 GB) and the time runs to days.
MAX_RESAMPLES = MAX_COUNT   # the cap every count flag shares (scalinglab.files)


MIN_GROUPS = 5   # fewest groups a cluster bootstrap resamples (5 give 126 distinct resamples)


def check_resample_count(n_boot: int, flag: str = "--bootstrap") -> None:
    """A UserError stating the limit when ``n_boot`` resamples is more than ``MAX_RESAMPLES``."""
    if n_boot > MAX_RESAMPLES:
        raise UserError(f"{flag} {n_boot}: at most {MAX_RESAMPLES:,} resamples (intervals stop changing long "
                        "before; more would outgrow memory and take days)")


def hoffmann_grid() -> np.ndarray:
    """Hoffmann's 4,500 starts as rows of THETA: α, β ∈ {0,…,2}, e ∈ {−1,…,1}, a, b ∈ {0,5,…,25}."""
    exps = np.arange(0.0, 2.01, 0.5)
    es = np.arange(-1.0, 1.01, 0.5)
    abs_ = np.arange(0.0, 25.01, 5.0)
    return np.array([(e, a, b, al, be) for al, be, e, a, b in itertools.product(exps, exps, es, abs_, abs_)])


def check_level(level, name: str = "level") -> float:
    """An interval's level: a number strictly between 0 and 1, or a one-line UserError."""
    if isinstance(level, bool) or not isinstance(level, (int, float, np.floating)) or not 0 < level < 1:
        raise UserError(f"{name} {level!r}: an interval's level lies strictly between 0 and 1")
    return float(level)


MAX_FIXED_EXPONENT = 100.0

# Above this the Huber loss is least squares on every residual a loss can have (a log ratio of 100 is a loss
# e^100 times another), and delta^2/2 in its linear branch overflows near 1e154: numpy printed warnings.
MAX_DELTA = 100.0


def check_delta(delta, name: str = "delta") -> float:
    """The Huber threshold: a positive finite number at most MAX_DELTA, or a one-line UserError."""
    if isinstance(delta, bool) or not isinstance(delta, (int, float, np.floating)) or not 0 < delta <= MAX_DELTA:
        shown = f"{delta:g}" if isinstance(delta, (int, float, np.floating)) else repr(delta)
        raise UserError(f"{name} must be a positive finite number at most {MAX_DELTA:g} (least squares already), "
                        f"not {shown}")
    return float(delta)


@dataclass(frozen=True)
class Resampling:
    """How a fit's uncertainty is estimated: ``n`` refits (0: none) on resamples of the runs drawn with
    replacement, or of whole groups of runs sharing a value of the column ``by`` (one model's checkpoints, one
    seed: the unit whose draws are independent); the draws' ``seed``; the ``level`` of percentile intervals."""

    n: int = 0
    by: str | None = None
    seed: int = 0
    level: float = 0.95

    def __post_init__(self):
        if isinstance(self.n, bool) or not isinstance(self.n, (int, np.integer, float)) or int(self.n) != self.n \
                or self.n < 0:
            raise UserError(f"the number of bootstrap resamples must be a whole number >= 0, not {self.n!r}")
        if self.n == 1:   # one resample has no spread: its "interval" would be a point
            raise UserError("bootstrap 1: one resample gives no interval; use 0 (none) or at least 2 (1000 is usual)")
        check_resample_count(int(self.n))
        if isinstance(self.seed, bool) or not isinstance(self.seed, (int, np.integer)) or self.seed < 0:
            raise UserError(f"seed {self.seed!r}: a resampling seed is a whole number >= 0")
        check_level(self.level)
        if self.by is not None and not isinstance(self.by, str):
            raise UserError(f"bootstrap_by {self.by!r}: the name of a column")
        if self.by is not None and not self.n:
            raise UserError(f"resampling groups of {self.by!r} needs a number of resamples")


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
    # least-squares law found by variable projection, ``fitting.varpro``; then the same Huber polish).
    start: str = "grid"

    def __post_init__(self):
        if self.start not in STARTS:
            raise UserError(f"start must be one of {', '.join(STARTS)}, not {self.start!r}")


@dataclass(frozen=True)
class FitOptions:
    """How to fit, for every law: the objective and its Huber δ, the resampling, the parameters held or tied, and
    the solver with its settings. The defaults are the law's own objective and solver (for Chinchilla's law,
    Hoffmann's method done to convergence), without a bootstrap."""

    delta: float = HUBER_DELTA     # Huber threshold on log residuals
    resampling: Resampling = Resampling()
    # Constraints: parameters held at a value, as (name, value) pairs (a dict is accepted; names are
    # case-insensitive and come out in PARAMS order), and beta tied to alpha. Fixing one exponent of a
    # tied pair fixes both. Invalid or degenerate combinations are a UserError here, at construction.
    fixed: tuple[tuple[str, float], ...] = ()
    tie_exponents: bool = False
    # Parameters tied to another, lmfit's ``expr="other"``: (name, other) pairs (a dict is accepted), every law.
    # ``tied={"beta": "alpha"}`` on Chinchilla's law is ``tie_exponents``; the law checks the names.
    tied: tuple[tuple[str, str], ...] = ()
    # What the fit minimises: "huber" (δ on the residuals in the law's space) or "squares"; None: the law's own
    # (``Law.objective``: Huber for losses, squares for downstream metrics).
    objective: str | None = None
    # The solver, by its name in ``fitting.solvers`` (None: the law's own, ``Law.solver``): "least-squares" fits
    # Chinchilla's form by the generic solver, which takes any tie, start or range its parameters set.
    solver: str | None = None
    # The solver's own settings (None: its defaults): a ``NewtonSettings`` for "chinchilla-newton"; the generic
    # solver has none (a law's parameters carry its starts and ranges). ``fit_law`` refuses settings of another.
    settings: NewtonSettings | None = None

    def settings_for(self, kind: type):
        """The solver settings of type ``kind`` these options give, or its defaults."""
        return self.settings if isinstance(self.settings, kind) else kind()

    def __post_init__(self):
        check_delta(self.delta)
        if self.solver is not None:
            from scalinglab.fitting.solvers import SOLVERS, get

            if get(self.solver).result == "CurveFit":
                fits = [s.name for s in SOLVERS.values() if s.result != "CurveFit"]
                raise UserError(f"solver {self.solver} fits training curves (scalinglab.curves), not a table of "
                                f"runs; the solvers of runs are {', '.join(fits)}")
        if self.objective not in (None, "huber", "squares"):
            raise UserError(f"objective {self.objective!r}: expected huber or squares (or None, the law's own)")
        if not isinstance(self.resampling, Resampling):
            raise UserError(f"resampling must be a Resampling, not {type(self.resampling).__name__}")
        if self.settings is not None and not isinstance(self.settings, NewtonSettings):
            raise UserError(f"settings must be a solver's settings (NewtonSettings), not "
                            f"{type(self.settings).__name__}")
        if self.settings == NewtonSettings():   # the defaults, given or not, are one set of options
            object.__setattr__(self, "settings", None)
        if self.settings_for(NewtonSettings).start == "varpro" and self.fixed:
            raise OptionError("the varpro start fits free or tied exponents; fixed parameters need the grid start "
                              "({start} grid)", "start")
        object.__setattr__(self, "fixed", normalise_fixed(self.fixed, self.tie_exponents))
        object.__setattr__(self, "tied", normalise_ties(self.tied))
        object.__setattr__(self, "tie_exponents", bool(self.tie_exponents))
        # An exponent held past MAX_FIXED_EXPONENT is no exponent a law means (beta = 1e300 was accepted). Up to
        # it, a term it makes negligible at every run is reported as not identified (alpha = 10 is such a test).
        for name, v in self.fixed:
            if name in ("alpha", "beta") and v > MAX_FIXED_EXPONENT:
                raise UserError(f"fixed {name} = {v:g}: an exponent is at most {MAX_FIXED_EXPONENT:g} (at 100, "
                                f"{'N' if name == 'alpha' else 'D'}^-{name} is already below 1e-700 at any run)")

    def with_resampling(self, n: int | None = None, **changes) -> FitOptions:
        """These options with the resampling's count ``n`` and any of ``by``, ``seed`` and ``level`` changed:
        ``fit_law(law, x, y, FitOptions().with_resampling(200, seed=1))``; a count of 0 drops the groups too."""
        if n is not None:
            changes["n"] = n
        if not changes.get("n", self.resampling.n):
            changes.setdefault("by", None)   # no resamples: no groups to resample
        return replace(self, resampling=replace(self.resampling, **changes)) if changes else self



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
    """Fixed parameters as ((name, value), ...), checked; see ``FitOptions``. Chinchilla's names (any case) come
    first, in PARAMS order, with the checks its solver needs; any other law's names follow as given, each a finite
    number: the law they are fitted with checks the name and its bounds (``fitting.laws.base.check_fixed``), so
    ``FitOptions(fixed={"Rstar_N": 5})`` holds the data-constrained law's R*_N."""
    pairs = fixed.items() if isinstance(fixed, Mapping) else fixed
    out: dict[str, float] = {}
    other: dict[str, float] = {}
    chinchilla = {p.lower(): p for p in PARAMS}
    for name, value in pairs:
        canon = chinchilla.get(str(name).strip().lower())
        if canon is None:
            key = str(name).strip()
            if not key:
                raise UserError("a fixed parameter needs a name")
            try:
                v = float(value)
            except (TypeError, ValueError):
                raise UserError(f"fixed {key} must be a number, not {value!r}") from None
            if not np.isfinite(v):
                raise UserError(f"fixed {key} must be a finite number, not {v:g}")
            if key in other:
                raise UserError(f"{key} is fixed twice ({other[key]:g} and {v:g})")
            other[key] = v
            continue
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
    return tuple((p, out[p]) for p in PARAMS if p in out) + tuple(other.items())


def normalise_ties(tied) -> tuple[tuple[str, str], ...]:
    """Ties as ((name, other), ...): each a parameter held equal to another, named once and not to itself. The
    law they are fitted with checks that both exist (``fitting.laws.base.check_ties``)."""
    pairs = tied.items() if isinstance(tied, Mapping) else tied
    out: dict[str, str] = {}
    for pair in pairs:
        try:
            name, other = (str(x).strip() for x in pair)
        except (TypeError, ValueError):
            raise UserError(f"tied {pair!r}: a tie is a pair (name, the parameter it equals)") from None
        if not name or not other:
            raise UserError(f"tied {pair!r}: a tie names two parameters")
        if name.lower() == other.lower():
            raise UserError(f"{name} is tied to itself")
        if name in out:
            raise UserError(f"{name} is tied twice ({out[name]} and {other})")
        out[name] = other
    return tuple(out.items())


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
    other = [k for k in fixed if k not in PARAMS]
    if other:   # another law's parameter reached Chinchilla's solver
        raise UserError(f"fixed {other[0]}: Chinchilla's law has no such parameter; one of {', '.join(PARAMS)}")
    canon = {p.lower(): p for p in PARAMS}
    ties = {canon.get(k.lower(), k): canon.get(v.strip().lower(), v) for k, v in opts.tied}
    if ties and ties not in ({"beta": "alpha"}, {"alpha": "beta"}):
        named = " and ".join(f"{k} to {v}" for k, v in ties.items())
        raise OptionError(f"Chinchilla's solver ties its exponents only (beta = alpha), not {named}; the "
                          "least-squares solver takes any tie ({solver}=least-squares)", "solver")
    if ties and len({"alpha", "beta"} & fixed.keys()) == 1:   # tied to a held exponent: held at it too
        fixed["alpha"] = fixed["beta"] = fixed.get("alpha", fixed.get("beta"))
    ia, ib = PARAMS.index("alpha"), PARAMS.index("beta")
    # Both exponents fixed: nothing left to tie (``normalise_fixed`` fixes both when tie_exponents holds one).
    tied = (opts.tie_exponents or bool(ties)) and not {"alpha", "beta"} <= fixed.keys()
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

