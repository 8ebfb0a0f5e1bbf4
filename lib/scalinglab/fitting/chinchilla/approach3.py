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

Constraints (``FitOptions(fixed=..., tied={"beta": "alpha"})``) hold parameters at
given values or tie β to α (Gadre et al. 2024's form). The solver then moves
only the free coordinates φ, with θ = c + T·φ (``Parametrisation``), so a
constrained fit is the same Newton solver on fewer coordinates, not a box
squeezed shut; the grid is projected onto φ and deduplicated.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from scalinglab.errors import OptionError, UserError
from scalinglab.fitting.chinchilla.law import PARAMS, ScalingLaw, to_params, to_theta
from scalinglab.fitting.chinchilla.newton import (
    batched_solve,
    law_terms,
    log_rss,
    objective,
    projected_grad,
    value_and_grad,
)
from scalinglab.fitting.chinchilla.settings import (
    NewtonSettings,
    Parametrisation,
    chinchilla_options,
    exact_fixed,
    hoffmann_grid,
    parametrisation,
)
from scalinglab.fitting.conditions import _n_rows
from scalinglab.fitting.form import Law, Param
from scalinglab.fitting.options import FitOptions, check_resample_count, min_rows
from scalinglab.fitting.results import NEGLIGIBLE_TERM, Bootstrap, LawFit
from scalinglab.fitting.rows import keep_below_highest, positive_logs, progress_bar, subsample_counts, unit_counts


def newton_settings(options: FitOptions) -> NewtonSettings:
    """The Newton solver's settings ``options`` give (``FitOptions.settings``), or its defaults."""
    return options.settings_for(NewtonSettings)

# --- the law -----------------------------------------------------------------------------------------------


def _predict(inputs, p):
    return p["E"] + p["A"] / inputs["n"] ** p["alpha"] + p["B"] / inputs["d"] ** p["beta"]


def _closed_form(p) -> ScalingLaw:
    return ScalingLaw(p["E"], p["A"], p["B"], p["alpha"], p["beta"])


def newton(law, inputs, y, *, options: FitOptions | None = None, fixed=None, ties=None, objective="huber",
           delta=None, n_boot=0, seed=0, level=0.95, groups=None, unit="groups", progress=False, names=None,
           starts=None) -> LawFit:
    """The solver "chinchilla-newton" (``fitting.solvers``): ``fit_arrays`` with ``options``' settings. Least
    squares is the Huber objective with δ = ∞ (every residual on the quadratic branch), half the sum of squares,
    as in the registry's other laws. ``fixed`` defaults to ``options.fixed`` and ``delta`` to ``options.delta``;
    ``ties`` are already in ``options.tied`` (``fit_law`` puts them there); ``starts`` replace Hoffmann's grid;
    ``names``: role -> column, for the messages that name the runs' columns."""
    options = _law_box(law, options or FitOptions())
    fixed = dict(options.fixed) if fixed is None else fixed
    delta = options.delta if delta is None else delta
    # Its own rules (``chinchilla_options``): a tie other than beta = alpha is refused there.
    opts = chinchilla_options(replace(options, delta=delta if objective == "huber" else float("inf"),
                                      fixed=tuple(fixed.items())))
    cols = tuple((names or {}).get(k, d) for k, d in (("n", "N"), ("d", "D"), ("y", "loss")))
    return fit_arrays(inputs["n"], inputs["d"], y, opts, starts=starts, n_boot=n_boot, seed=seed, level=level,
                      groups=groups, unit=unit, progress=progress, names=cols)


def _law_box(law, options: FitOptions) -> FitOptions:
    """``options`` with the box cut to the ranges ``law.set`` narrowed (θ holds log E, log A, log B), or a
    UserError for a start value, which Hoffmann's grid has no place for."""
    box = newton_settings(options)
    lower, upper = list(box.lower), list(box.upper)
    own = {q.name: q for q in CHINCHILLA.params}
    for p in law.params:
        q, i = own[p.name], PARAMS.index(p.name)   # θ's coordinate of the parameter
        if p.vary and p.expr is None and p.starts != q.starts:
            raise OptionError(f"{p.name} = {p.starts[0]:g} as a start: the chinchilla-newton solver starts from "
                              "Hoffmann's grid (or the varpro start); the least-squares solver takes a start "
                              "({solver}=least-squares)", "solver")
        if (p.lower, p.upper) != (q.lower, q.upper):
            in_logs = p.name in ("E", "A", "B")   # θ holds their logs, the exponents as they are
            lo, hi = (np.log(p.lower) if p.lower > 0 else -np.inf, np.log(p.upper)) if in_logs else (p.lower, p.upper)
            lower[i], upper[i] = max(lower[i], lo), min(upper[i], hi)
            if lower[i] >= upper[i]:
                raise UserError(f"{p.name} in [{p.lower:g}, {p.upper:g}]: outside the solver's box")
    if (tuple(lower), tuple(upper)) == (box.lower, box.upper):
        return options
    return replace(options, settings=replace(box, lower=tuple(lower), upper=tuple(upper)))


def refit(theta0, inputs, y, weights, options: FitOptions, *, max_iter: int | None = None, log_y=None):
    """The solver's batched re-solve (``Solver.refit``): every row of ``weights`` ((K, runs) resample counts) from
    its row of ``theta0`` ((K, 5)) under ``options``' objective, box and constraints, for ``max_iter`` iterations
    (default the settings' ``batch_iters``): (theta (K, 5), converged (K,)). ``log_y``: the target's logs instead of
    ``y``, where the caller made them (a simulation that adds its noise in log loss)."""
    logN, logD = (np.log(np.asarray(x, float).ravel()) for x in (inputs["n"], inputs["d"]))
    logL = np.log(np.asarray(y, float).ravel()) if log_y is None else np.asarray(log_y, float)
    s = newton_settings(options)
    th, _, ok = batched_solve(np.asarray(theta0, float), logN, logD, logL, weights=weights, delta=options.delta,
                              lower=np.asarray(s.lower), upper=np.asarray(s.upper),
                              max_iter=s.batch_iters if max_iter is None else max_iter,
                              tol=s.batch_tol, gtol=s.gtol, param=parametrisation(options), block=s.block)
    return th, ok


CHINCHILLA = Law(
    name="chinchilla", title="Chinchilla's parametric loss",
    formula="L = E + A/N^alpha + B/D^beta",
    citation="Hoffmann et al. 2022, Training Compute-Optimal Large Language Models, eq. 2 (arXiv:2203.15556)",
    inputs=("n", "d"), target="loss",
    params=(Param("E", "irreducible loss (the entropy of text)", 0.0, 1e3, (0.0, 1.0)),
            Param("A", "scale of the finite-model term", 1e-9, 1e26, (1e2,), log=True),
            Param("B", "scale of the finite-data term", 1e-9, 1e26, (1e2,), log=True),
            Param("alpha", "exponent of N", 0.0, 5.0, (0.3,)),
            Param("beta", "exponent of D", 0.0, 5.0, (0.3,))),
    predict=_predict, solver="chinchilla-newton", closed_form=_closed_form,
    derived={"a": lambda p: _closed_form(p).a, "b": lambda p: _closed_form(p).b},
    log_scale=("E", "A", "B"), exponents=("alpha", "beta"),
    note="a = beta/(alpha+beta): N_opt ∝ C^a;  b = alpha/(alpha+beta): D_opt ∝ C^b  (C = 6ND)",
)

# --- data checks -----------------------------------------------------------


def describe_free(options: FitOptions | None = None) -> str:
    """The free parameters in words, e.g. 'E, A, B, alpha (beta = alpha)'."""
    P = parametrisation(options)
    return ", ".join(P.names) + (" (beta = alpha)" if P.tied else "")


def check_identifiable(N, D, L, names=("N", "D", "loss"),
                       options: FitOptions | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Logs of N, D, L as float arrays, or a UserError saying why the law cannot be fitted
    (with ``options``' constraints: fixed parameters need no data)."""
    options = chinchilla_options(options)
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
    fixed = dict(options.fixed)
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
        # The run is named by its values: rows here may already be a selection (--where, --drop-highest).
        i = bad[0]
        raise UserError(f"{' plus '.join(parts)} puts the law at {floor[i]:.4g} or above, but the run with "
                        f"{names[0]} {N[i]:.4g}, {names[1]} {D[i]:.4g} has {names[2]} {L[i]:.4g} ({bad.size} run(s) at "
                        "or below the law's floor): fix a smaller value")


# --- the fit ---------------------------------------------------------------


def bound_flags(theta: np.ndarray, opts: FitOptions) -> np.ndarray:
    """(…, 5) bool: which coordinates sit on the box (within 1e-6 of its width); a fixed one never
    does (it was given, not found), a tied beta does when its alpha does."""
    P = parametrisation(opts)
    s = newton_settings(opts)
    lo, hi = P.box(np.asarray(s.lower), np.asarray(s.upper))
    x = P.phi(theta)
    flags = np.minimum(x - lo, hi - x) < 1e-6 * (hi - lo)
    return flags if P.identity else P.spread(flags, [(i, False) for i, _ in P.fixed])


# Lower bounds that stand for a parameter's natural limit: E, A or B at e^-20 ≈ 2e-9 is zero, and an
# exponent at 0 means no dependence. A replicate there is a real estimate (its data say "none"); one on
# any other bound (an upper bound, or a floor a caller raised) is an artefact of the box.
NATURAL_FLOOR = (-20.0, -20.0, -20.0, 0.0, 0.0)


def natural_floor_shares(result: LawFit) -> dict[str, float]:
    """Share of the counted bootstrap replicates with each parameter on its natural floor
    (``NATURAL_FLOOR``: E, A or B ≈ 0, an exponent at 0). Those replicates count as estimates
    ("these runs cannot tell the term from nothing"), so a large share says the interval reaches zero
    because the data allow it, not because of the box. A fixed parameter was not estimated: 0. Empty
    without a bootstrap."""
    bs = result.bootstrap
    if bs is None or not len(bs.samples):
        return {}
    on = _on_natural_floor(to_theta(bs.samples), result.options)
    fixed = dict(result.options.fixed)
    return {name: 0.0 if name in fixed else float(on[:, i].mean()) for i, name in enumerate(PARAMS)}


def _on_natural_floor(theta: np.ndarray, opts: FitOptions) -> np.ndarray:
    """(…, 5) bool: coordinates on their lower bound (the bound flags' tolerance) where that bound is
    the natural floor; a floor a caller raised above the natural one is not natural."""
    s = newton_settings(opts)
    lo, hi = np.asarray(s.lower), np.asarray(s.upper)
    return (np.abs(theta - lo) < 1e-6 * (hi - lo)) & (lo <= np.asarray(NATURAL_FLOOR))


def artificial_bound_flags(theta: np.ndarray, opts: FitOptions) -> np.ndarray:
    """(…, 5) bool: coordinates on a bound that is not the parameter's natural floor."""
    return bound_flags(theta, opts) & ~_on_natural_floor(theta, opts)


def fit_arrays(N, D, L, options: FitOptions | None = None, *, starts: np.ndarray | None = None,
               n_boot: int = 0, seed: int = 0, level: float = 0.95, names=("N", "D", "loss"),
               progress: bool = False, groups=None, unit: str = "groups") -> LawFit:
    """Fit L(N, D) to runs (N, D, L). ``starts`` defaults to Hoffmann's grid.

    Every start is scored at once; the ``n_refine`` best are optimised together
    by ``batched_solve`` for ``grid_iters`` iterations; the ``n_polish`` best
    distinct solutions are then solved to convergence and the lowest wins.
    With more than the settings' ``screen_rows`` rows, scoring, refining and polishing the
    finalists use a seeded subsample of that many (``screening_rows``), and only the
    best finalist's final solve sees every row; sums over rows go in blocks of
    ``block`` elements, so memory stays bounded (about 0.1 GB beyond the
    data) whatever the row count.
    numpy only: scipy stays off this path so that the CLI starts fast.

    With constraints in ``options`` the starts are projected onto the free
    coordinates and deduplicated (tying the exponents leaves 900 of the 4,500).
    """
    opts = chinchilla_options(options)   # its rules: names, values, the one tie
    check_resample_count(n_boot)  # before the fit, which can take a while on many rows
    logN, logD, logL = check_identifiable(N, D, L, names, opts)
    P = parametrisation(opts)
    s = newton_settings(opts)
    lo, hi = np.asarray(s.lower), np.asarray(s.upper)
    solve = dict(delta=opts.delta, lower=lo, upper=hi, tol=s.batch_tol, gtol=s.gtol, param=P, block=s.block)
    if s.start == "varpro" and starts is None:
        from scalinglab.fitting.frontier.varpro import varpro_theta

        # One start: the least-squares law (variable projection), polished below under the Huber objective.
        starts = finalists = P.clip(varpro_theta(logN, logD, logL, tied=P.tied != ())[None, :], lo, hi)
    else:
        starts = hoffmann_grid() if starts is None else np.atleast_2d(np.asarray(starts, float))
        if not P.identity:
            starts = P.theta(np.unique(P.phi(starts), axis=0))
        sub = screening_rows(logN, logD, s.screen_rows)
        sN, sD, sL = logN[sub], logD[sub], logL[sub]
        score = objective(P.clip(starts, lo, hi), sN, sD, sL, opts.delta, block=s.block)
        thetas, fs, _ = batched_solve(starts[np.argsort(score)[: s.n_refine]], sN, sD, sL,
                                      max_iter=s.grid_iters, **solve)
        # Finalists: distinct basins (solutions that agree to 1e-4 are one) within 1% of the best so far.
        order = np.argsort(fs)
        _, first = np.unique(np.round(thetas[order], 4), axis=0, return_index=True)
        pick = order[np.sort(first)[: s.n_polish]]
        finalists = thetas[pick[fs[pick] <= 1.01 * fs[order[0]]]]
        if not isinstance(sub, slice):  # screened: the finalists converge on the subsample, the best goes on
            thetas, fs, _ = batched_solve(finalists, sN, sD, sL, max_iter=s.batch_iters, **solve)
            finalists = thetas[[int(np.argmin(fs))]]
    thetas, fs, converged = batched_solve(finalists, logN, logD, logL, max_iter=s.batch_iters, **solve)
    best = int(np.argmin(fs))
    theta, f = thetas[best], float(fs[best])
    g = value_and_grad(theta, logN, logD, logL, opts.delta)[1]
    grad_norm = float(np.max(np.abs(projected_grad(P.phi(theta), P.grad(g), *P.box(lo, hi)))))
    flags = bound_flags(theta, opts)
    at_bound = tuple(PARAMS[i] for i in np.flatnonzero(flags))
    ok = converged[best] and grad_norm <= s.status_gtol
    unidentified = _vanished_terms(theta, logN, logD, P, at_bound)
    status = ("at_bound" if at_bound else "unidentified" if unidentified else "converged" if ok else "failed")
    rss = log_rss(theta, logN, logD, logL)
    result = chinchilla_fit(exact_fixed(to_params(theta), opts), objective=f, status=status, at_bound=at_bound,
                            unidentified=unidentified, n_rows=len(logL), n_starts=len(starts), grad_norm=grad_norm,
                            options=opts, rss=rss)
    if n_boot:
        result = replace(result, bootstrap=bootstrap(result, N, D, L, n_boot=n_boot, seed=seed, level=level,
                                                      progress=progress, groups=groups, unit=unit,
                                                      fraction=opts.resampling.fraction))
    return result




def chinchilla_fit(params, *, options: FitOptions, bootstrap: Bootstrap | None = None, **fields) -> LawFit:
    """A ``LawFit`` of the Chinchilla law from its five parameters (E, A, B, alpha, beta) and the solver's
    ``options`` (the one place such a result is assembled: the fit, a saved fit, a reference solver)."""
    squares = not np.isfinite(options.delta)
    return LawFit(CHINCHILLA, dict(zip(PARAMS, (float(v) for v in params))), fields.pop("status", "converged"),
                  fields.pop("objective", float("nan")), objective_kind="squares" if squares else "huber",
                  delta=options.delta, fixed=dict(options.fixed), options=options, bootstrap=bootstrap, **fields)


def screening_rows(logN, logD, m: int, seed: int = 0):
    """The rows the start grid is scored and refined on: all of them (a slice) when there are at most
    ``m``, else ``m`` row indices, sorted: the first row of every distinct N and of every distinct D
    (so the subsample can identify what the whole can, drawn among if they are more than ``m``), the
    rest drawn at random with a fixed seed so that a fit is repeatable."""
    n = len(logN)
    if n <= m:
        return slice(None)
    rng = np.random.default_rng(seed)
    # A column with few distinct values (a grid of sizes) keeps one row of each; one with many (every run
    # its own N) is covered by the random draw anyway.
    firsts = [idx for x in (logN, logD)
              if (idx := np.unique(np.round(x, 6), return_index=True)[1]).size <= m // 2]
    firsts = np.unique(np.concatenate(firsts)) if firsts else np.empty(0, int)
    if firsts.size >= m:
        return np.sort(rng.choice(firsts, m, replace=False))
    rest = np.setdiff1d(np.arange(n), firsts, assume_unique=True)
    return np.sort(np.concatenate([firsts, rng.choice(rest, m - firsts.size, replace=False)]))


def _vanished_terms(theta, logN, logD, P: Parametrisation, at_bound) -> tuple[str, ...]:
    """Free parameters of a term negligible at every run, e.g. A and alpha under ``--fix alpha=10``.

    Unconstrained fits reach this only on a bound (A at its floor, an exponent at 5: ``at_bound``); a
    fixed value can put it anywhere. A tied alpha stays identified through the other term."""
    _, pE, pA, pB = law_terms(theta[None, :], logN, logD)
    free = set(P.names)
    out = []
    for weight, params in ((pE, ("E",)), (pA, ("A", "alpha")), (pB, ("B", "beta"))):
        if weight.max() < NEGLIGIBLE_TERM:
            out += [p for p in params if p in free and p not in at_bound and not (P.tied and p == "alpha")]
    return tuple(p for p in PARAMS if p in out)


def bootstrap(result: LawFit, N, D, L, *, n_boot: int = 4000, seed: int = 0, level: float = 0.95,
              chunk: int = 1000, progress: bool = False, groups=None, unit: str = "groups",
              counts: np.ndarray | None = None, fraction: float | None = None) -> Bootstrap:
    """Re-fit ``n_boot`` row resamples at once, each warm-started from ``result``.

    ``groups`` (one label per run) resamples whole groups instead of rows (``group_counts``): when
    several rows come from one model (checkpoints, cooldowns, eval sets) they share its seed, data
    order and shape, so the model is the independent unit, and resampling rows would treat its
    rows as independent evidence and make the intervals too narrow. ``unit`` names the groups.
    ``counts`` ((n_boot, runs) weights) replaces the resampling scheme altogether, e.g. Hoffmann's refits on
    80% of the runs drawn without replacement; ``fraction`` draws those (``fitting.rows.subsample_counts``, of the
    runs or of the groups).
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
    n = len(logL)
    inverse = None
    if counts is not None:
        counts = np.asarray(counts, float)
        if counts.ndim != 2 or counts.shape[1] != n:
            raise UserError(f"bootstrap weights of shape {counts.shape} for {n} runs")
        n_boot, n_units = len(counts), n
        unit = "runs" if groups is None else unit
    elif groups is None:
        unit, n_units = "runs", n
    else:
        groups = np.asarray(groups)
        if groups.shape != logL.shape:
            raise UserError(f"{groups.size} group labels for {n} runs")
        _, inverse = np.unique(groups, return_inverse=True)
        n_units = int(inverse.max()) + 1
        if n_units < 2:
            raise UserError(f"a bootstrap over {unit} needs at least 2 of them to give an interval; the "
                            f"{n} runs fall in {n_units}")
    if fraction is not None and counts is None:
        counts = subsample_counts(n_units, n_boot, fraction, seed)
        counts = counts if inverse is None else counts[:, inverse]
    check_resample_count(n_boot)
    # Resamples are drawn chunk by chunk from one generator: the same counts as ``resample_counts`` /
    # ``group_counts`` draw at once, without ever holding n_boot × rows of them. A chunk's weights stay
    # near 4 × ``block`` elements (32 MB), and the solver sums over rows in blocks.
    rng = np.random.default_rng(seed)
    s = newton_settings(opts)
    chunk = max(1, min(chunk, 4 * s.block // max(n, 1)))
    lo, hi = np.asarray(s.lower), np.asarray(s.upper)
    thetas, oks = [], []
    for start in progress_bar(range(0, n_boot, chunk), f"bootstrap over {unit} ({chunk} resamples a step)", progress):
        if counts is not None:
            W = counts[start:start + chunk]
        else:
            W = unit_counts(n_units, min(chunk, n_boot - start), rng)
            if inverse is not None:
                W = W[:, inverse]
        th0 = np.repeat(result.theta[None, :], len(W), axis=0)
        th, _, ok = batched_solve(th0, logN, logD, logL, weights=W, delta=opts.delta, lower=lo, upper=hi,
                                  max_iter=s.batch_iters, tol=s.batch_tol, gtol=s.gtol, param=P, block=s.block)
        thetas.append(th)
        oks.append(ok & ~artificial_bound_flags(th, opts).any(axis=1))
    theta, ok = np.concatenate(thetas), np.concatenate(oks)
    fixed = dict(opts.fixed)
    # a = β/(α+β) is 0.5 exactly when β = α, and constant when both exponents are fixed.
    constant = tuple(fixed) + (("a", "b") if P.tied or {"alpha", "beta"} <= fixed.keys() else ())
    return Bootstrap(exact_fixed(to_params(theta[ok]), opts), PARAMS, n_boot, int((~ok).sum()), level, seed,
                     constant=constant, unit=unit, n_units=n_units, converged=ok, free=P.names,
                     derived=CHINCHILLA.derived, scale=CHINCHILLA.scale_params, fraction=fraction)


def chinchilla_arrays(table, rows=None, n_col: str = "N", d_col: str | None = "D", loss_col: str | None = "loss",
                      *, c_col: str | None = None):
    """(N, D, L, names) at the table's ``rows`` (all when None), read by ``fitting.columns.inputs_at``, the reader
    every law's fit uses; D = C/(6N) when ``c_col`` is given; L None when ``loss_col`` is (runs not trained yet).
    Errors name the column and the table's row."""
    from scalinglab.fitting.columns import Columns, inputs_at

    cols = Columns(n=n_col, d=None if c_col else d_col, loss=loss_col, c=c_col)
    rows = np.arange(_n_rows(table)) if rows is None else rows
    inputs, L = inputs_at(CHINCHILLA, table, rows, cols, target=loss_col is not None)
    names = cols.names(CHINCHILLA)
    return inputs["n"], inputs["d"], L, (names["n"], names["d"], names["y"])


def runs_from_table(table, n_col: str = "N", d_col: str | None = "D", loss_col: str = "loss", *,
                    c_col: str | None = None, drop_highest: int = 0):
    """(N, D, L, names) from a DataFrame or a dict of columns; D = C/(6N) when ``c_col`` is given.

    Every value is checked (a number, finite, positive) before the
    ``drop_highest`` highest losses are removed, so row numbers in errors are the table's.
    """
    N, D, L, names = chinchilla_arrays(table, None, n_col, d_col, loss_col, c_col=c_col)
    keep = keep_below_highest(L, drop_highest)
    return N[keep], D[keep], L[keep], names


