"""The one engine that fits every law in the registry: ``fit_law(law, inputs, y, ...) -> LawFit``.

A ``Law`` (``fitting.form``) is fitted by ``scipy.optimize.least_squares``
from a grid of starts in the free coordinates: log residuals under Hoffmann's
Huber loss (δ = 1e-3) by default for losses, plain least squares on the
metric (or its logit) for downstream metrics: the solver named "least-squares"
(``generic_solver`` below). A law may name another (``Law.solver``, looked up in
``fitting.solvers``): Chinchilla's is "chinchilla-newton", ``approach3``'s batched
Newton/IRLS over Hoffmann's 4,500 starts, so ``--law chinchilla`` is the same
fit as ``fit``. Every path returns ``fitting.results.LawFit``.

The bootstrap resamples rows (or whole groups of rows) and refits each
replicate from the full-data optimum and the best few grid starts; replicates
that end at an artificial bound or fail are excluded and counted, as in
``approach3``. Information criteria need a likelihood, so they are given only
for the squares objective (Gaussian residuals in the fit's residual space).
"""

from __future__ import annotations

import copy
import itertools
import warnings
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from scalinglab.errors import UserError
from scalinglab.fitting.form import ROLE_NAMES, Law, Param, check_target, transform
from scalinglab.fitting.huber import huber
from scalinglab.fitting.options import FitOptions
from scalinglab.fitting.results import Bootstrap, LawFit
from scalinglab.fitting.rows import progress_bar, resample_indices
from scalinglab.fitting.solvers import get as get_solver

MAX_STARTS = 96      # grid starts solved per fit (a thinned grid beyond this)
SOLVED_STARTS = 8    # of those, the best-scoring ones solved (least squares)
AGREE = 3            # solved starts that reach the same lowest cost end the search
POLISHED = 2         # of those solutions, the best ones solved again under the Huber loss
BOOT_STARTS = 3      # grid starts (besides the full-data optimum) refitted per bootstrap replicate


# --- the fit ---------------------------------------------------------------------------------------------


def check_fixed(law: Law, fixed: Mapping[str, float] | None, ranges: bool = True) -> dict[str, float]:
    """Canonical names and checked values, or a UserError naming the parameter. ``ranges=False`` leaves the
    values' ranges to a law's own solver (Chinchilla's ``FitOptions`` check them: a value beyond the search box,
    such as alpha = 10, may be held)."""
    out: dict[str, float] = {}
    for name, value in (fixed or {}).items():
        p = law.param(name)
        v = float(value)
        if not np.isfinite(v) or (ranges and not p.lower <= v <= p.upper):
            raise UserError(f"{p.name}={value}: law {law.name} allows {p.name} in [{p.lower:g}, {p.upper:g}]")
        if p.name in out:
            raise UserError(f"{p.name} is fixed twice")
        out[p.name] = v
    if len(out) == len(law.params):
        raise UserError(f"every parameter of law {law.name} is fixed: nothing left to fit")
    return out


def check_ties(law: Law, tied, fixed: dict[str, float]) -> tuple[dict[str, float], dict[str, str]]:
    """(fixed, ties): each tie ``name -> formula`` by the law's names (lmfit's ``expr``: ``"alpha"`` holds it
    equal to alpha, ``"2*A"`` at twice A). A tie whose formula reads only held parameters is held too, at its
    value. A UserError names an unknown parameter, a parameter both fixed and tied, or a circle."""
    from scalinglab.fitting.expressions import order, parse

    exprs = {}
    for name, text in dict(tied or ()).items():
        a = law.param(name).name
        if a in fixed:
            raise UserError(f"{a} is both fixed (at {fixed[a]:g}) and tied to {text}; give one of them")
        e = parse(text, law.names, f"tie {a} =")
        if a in e.names:
            raise UserError(f"{a} is tied to itself ({a} = {text})")
        exprs[a] = e
    try:
        ordered = order(exprs)
    except UserError as exc:
        raise UserError(f"law {law.name}: {exc}") from None
    fixed = dict(fixed)
    for name in ordered:   # tied to held values only: held at the formula's value, within its own range
        e = exprs[name]
        if all(k in fixed for k in e.names):
            p, v = law.param(name), float(e(fixed))
            if not (np.isfinite(v) and p.lower <= v <= p.upper):
                raise UserError(f"{name} = {e.text} = {v:g}: law {law.name} allows {name} in "
                                f"[{p.lower:g}, {p.upper:g}]")
            fixed[name] = v
            del exprs[name]
    if len(fixed) + len(exprs) >= len(law.params):
        raise UserError(f"every parameter of law {law.name} is fixed or tied: nothing left to fit")
    # A tie to a parameter that is itself a plain tie names the free one (a chain c = b = a ties both to a).
    ties = {}
    for name in ordered:
        if name in exprs:
            e = exprs[name]
            while e.identity in exprs and exprs[e.identity].identity is not None:
                e = exprs[e.identity]
            ties[name] = e.identity if e.identity is not None else e.text
    return {k: fixed[k] for k in law.names if k in fixed}, ties


def constraints(law: Law, fixed: Mapping[str, float] | None, tied, ranges: bool = True):
    """(fixed, ties) from the law's own parameters (``Param.vary``/``expr``, set by ``Law.set``) and those given
    beside it (``FitOptions.fixed``/``tied``, ``--fix``/``--tie``); one parameter constrained by both is refused
    unless they agree."""
    given = check_fixed(law, fixed, ranges=ranges) if fixed else {}
    for k, v in law.held.items():
        if k in given and given[k] != v:
            raise UserError(f"{k} is held at {v:g} by the law's parameters and fixed at {given[k]:g} beside them")
    merged = {**law.held, **given}
    if len(merged) == len(law.params):
        raise UserError(f"every parameter of law {law.name} is fixed: nothing left to fit")
    tied = {law.param(k).name: str(v) for k, v in dict(tied or ()).items()}
    for k, text in law.exprs.items():
        if k in tied and tied[k].replace(" ", "") != text.replace(" ", ""):
            raise UserError(f"{k} is given by {text} in the law's parameters and tied to {tied[k]} beside them")
    return check_ties(law, {**law.exprs, **tied}, {k: merged[k] for k in law.names if k in merged})


def check_inputs(law: Law, inputs: Mapping[str, np.ndarray], y: np.ndarray, n_free: int) -> None:
    """UserError unless the runs can pin the free parameters: more runs than free parameters, and each
    input taking at least two values."""
    missing = [r for r in law.inputs if r not in inputs]
    if missing:
        raise UserError(f"law {law.name} needs {', '.join(ROLE_NAMES[r] for r in missing)}")
    if len(y) <= n_free:
        raise UserError(f"law {law.name} has {n_free} free parameters: it needs at least {n_free + 1} runs, got "
                        f"{len(y)}")
    for r in law.inputs:
        if np.unique(inputs[r]).size < 2:
            raise UserError(f"{ROLE_NAMES[r]} takes one value on every run: law {law.name} cannot be fitted")
    check_target(law, y)


class _Problem:
    """The free coordinates of a law's fit: z (log for log-parameters) ↔ parameter values. ``ties``: name ->
    the parameter it equals, or a formula of others (``check_ties``), evaluated after the free ones."""

    def __init__(self, law: Law, fixed: dict[str, float], inputs, y, space: str, ties: dict[str, str] | None = None):
        from scalinglab.fitting.expressions import order, parse

        self.law, self.fixed, self.inputs, self.ties = law, fixed, inputs, dict(ties or {})
        self.free = [p for p in law.params if p.name not in fixed and p.name not in self.ties]
        self.y = np.asarray(y, float)
        self.ty = transform(y, space)
        self.space = space
        self.exprs = {k: parse(v, law.names, f"tie {k} =") for k, v in self.ties.items()}
        self.order = order(self.exprs)
        # A free parameter's box is its own range cut to the ranges of the parameters tied to it (identity ties:
        # a formula's parameter is checked at the end, ``_at_bound``).
        self.bounds = {}
        for p in self.free:
            lo, hi = p.lower, p.upper
            same = [k for k, e in self.exprs.items() if e.identity == p.name]
            for q in (law.param(k) for k in same):
                lo, hi = max(lo, q.lower), min(hi, q.upper)
            if lo > hi:
                raise UserError(f"{p.name} and the parameters tied to it have no range in common "
                                f"(law {law.name}: {', '.join(same)})")
            self.bounds[p.name] = (lo, hi)
        self.lo = np.array([np.log(self.bounds[p.name][0]) if p.log else self.bounds[p.name][0] for p in self.free])
        self.hi = np.array([np.log(self.bounds[p.name][1]) if p.log else self.bounds[p.name][1] for p in self.free])

    def params(self, z) -> dict[str, float]:
        out = dict(self.fixed)
        for p, v in zip(self.free, z):
            out[p.name] = float(np.exp(v) if p.log else v)
        for name in self.order:  # a plain tie holds bit for bit: the same float
            e = self.exprs[name]
            out[name] = out[e.identity] if e.identity is not None else float(e(out))
        return {k: out[k] for k in self.law.names}

    def at_rows(self, idx) -> _Problem:
        """The same problem (coordinates, box, parsed ties) on the rows ``idx``: a bootstrap replicate's."""
        sub = copy.copy(self)
        sub.inputs = {k: v[idx] for k, v in self.inputs.items()}
        sub.y, sub.ty = self.y[idx], self.ty[idx]
        return sub

    def outside(self, params: Mapping[str, float]) -> tuple[str, ...]:
        """The parameters given by a formula whose value is outside (or on) their law's range."""
        out = []
        for name, e in self.exprs.items():
            if e.identity is None:
                p, v = self.law.param(name), params[name]
                if not (np.isfinite(v) and p.lower < v < p.upper):
                    out.append(name)
        return tuple(out)

    def z(self, params: Mapping[str, float]) -> np.ndarray:
        return np.array([np.log(params[p.name]) if p.log else params[p.name] for p in self.free])

    def residuals(self, z) -> np.ndarray:
        with np.errstate(all="ignore"):
            pred = self.law.predict(self.inputs, self.params(z))
            r = transform(pred, self.space) - self.ty
        return np.where(np.isfinite(r), r, 1e3)  # a prediction outside the space (≤ 0 in log) is far off

    def starts(self, y) -> np.ndarray:
        values = []
        for p in self.free:
            vals = p.starts(self.inputs, y) if callable(p.starts) else p.starts
            lo, hi = self.bounds[p.name]
            vals = [min(max(v, lo), hi) for v in vals]
            values.append([np.log(v) if p.log else v for v in vals])
        grid = np.array(list(itertools.product(*values)), float)
        if len(grid) > MAX_STARTS:  # thin evenly: keep the grid's spread, not its first corner
            grid = grid[np.linspace(0, len(grid) - 1, MAX_STARTS).round().astype(int)]
        return np.clip(grid, self.lo, self.hi)


def _solve(prob: _Problem, starts: np.ndarray, kind: str, delta: float, *, first: bool = False):
    """The best of least_squares from the starts: (z, objective, rss, success).

    Squares from each start (the best-scoring ``SOLVED_STARTS``), then Huber from the ``POLISHED`` best of
    those: scipy's Huber from a far start takes several times the steps. ``first``: stop at the first start
    that succeeds (the bootstrap, whose first start is the full-data optimum)."""
    from scipy.optimize import least_squares

    cost_delta = delta if kind == "huber" else np.inf
    if len(starts) > SOLVED_STARTS and not first:  # scoring a start is one prediction
        score = np.array([_huber_cost(prob.residuals(z), cost_delta) for z in starts])
        starts = starts[np.argsort(score, kind="stable")[:SOLVED_STARTS]]
    solver = dict(bounds=(prob.lo, prob.hi), method="trf", x_scale="jac", xtol=1e-10, ftol=1e-12, gtol=1e-10,
                  max_nfev=200 * starts.shape[1])
    pad = 1e-9 * (1 + np.abs(prob.lo)), 1e-9 * (1 + np.abs(prob.hi))

    def run(z0, **kw):
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore", RuntimeWarning)
                return least_squares(prob.residuals, np.clip(z0, prob.lo + pad[0], prob.hi - pad[1]), **solver, **kw)
        except (ValueError, FloatingPointError, np.linalg.LinAlgError):
            return None

    best = (None, np.inf, np.nan, False)
    if first:
        for z0 in starts:
            sol = run(z0)
            if sol is not None and kind == "huber" and np.max(np.abs(sol.fun)) > delta:
                sol = run(sol.x, loss="huber", f_scale=delta)
            if sol is not None and np.isfinite(sol.cost) and sol.status > 0:
                return sol.x, float(sol.cost), float(np.sum(sol.fun ** 2)), True
        return best
    solved: list = []
    for z0 in starts:
        sol = run(z0)
        if sol is None or not np.isfinite(sol.cost):
            continue
        solved.append(sol)
        # Enough: AGREE starts have reached the lowest cost so far (to 1e-9 relative), so the rest would add nothing.
        low = min(x.cost for x in solved)
        if sum(x.cost <= low * (1 + 1e-9) + 1e-14 for x in solved) >= AGREE:
            break
    solved.sort(key=lambda sol: _huber_cost(sol.fun, cost_delta))
    for sol in solved[:POLISHED] if kind == "huber" else solved[:1]:
        # Every residual within δ: Huber is the squares there, so the squares optimum is Huber's too.
        if kind == "huber" and np.max(np.abs(sol.fun)) > delta:
            sol = run(sol.x, loss="huber", f_scale=delta) or sol
        # ``cost`` is 0.5·Σρ: Huber for loss="huber" (δ·(|r| − δ/2) beyond δ), half the RSS for squares.
        obj = _huber_cost(sol.fun, cost_delta)
        if np.isfinite(obj) and obj < best[1]:
            best = (sol.x, obj, float(np.sum(sol.fun ** 2)), bool(sol.status > 0))
    return best


def _huber_cost(r, delta: float) -> float:
    return float(np.sum(huber(r, delta)))


def _at_bound(prob: _Problem, z) -> tuple[str, ...]:
    span = prob.hi - prob.lo
    near = (z - prob.lo < 1e-6 * span) | (prob.hi - z < 1e-6 * span)
    return tuple(p.name for p, b in zip(prob.free, near) if b and not _natural(p, z[prob.free.index(p)], prob))


def _unidentified(prob: _Problem, z) -> tuple[str, ...]:
    """Free parameters whose residual sensitivity (a central-difference Jacobian column, in the solver's
    coordinates) is under 1e-6 of the largest: moving them changes no prediction the runs can see. Equal losses
    under a saturating law left A·x^−α at 1e-10 of the loss and called A and α "converged"; on real runs every
    column of the registry's laws is within a few decades of the largest."""
    J = np.empty((len(prob.y), len(z)))
    for k in range(len(z)):
        h = 1e-6 * (1 + abs(z[k]))
        up, down = z.copy(), z.copy()
        up[k] += h
        down[k] -= h
        J[:, k] = (prob.residuals(up) - prob.residuals(down)) / (2 * h)
    norms = np.linalg.norm(J, axis=0)
    if not np.all(np.isfinite(norms)) or norms.max() <= 0:
        return ()
    return tuple(p.name for p, n in zip(prob.free, norms) if n < 1e-6 * norms.max())


def _natural(p: Param, z: float, prob: _Problem) -> bool:
    """A lower bound of 0 on a non-log parameter (E = 0, an exponent of 0) is a natural floor, not artificial."""
    return (not p.log) and p.lower == 0 and abs(z - p.lower) < 1e-6 * (p.upper - p.lower)


def fit_law(law: Law, inputs: Mapping[str, Any], y, options: FitOptions | None = None, *,
            fixed: Mapping[str, float] | None = None, groups=None, unit: str | None = None, progress: bool = False,
            names: Mapping[str, str] | None = None) -> LawFit:
    """Fit ``law`` to runs: ``inputs`` maps each of ``law.inputs`` to an array, ``y`` the target. The result is a
    ``LawFit``, or the solver's own type where it has one (``Solver.result``: variable projection's ``VarproFit``).

    ``options`` (``FitOptions``) say how, and nothing beside them does: the objective and its Huber δ, the
    resampling (``Resampling``: how many refits, of what unit, seed, level; ``options.with_resampling``) and the
    solver's settings. The law's own parameters say what is held, bounded or tied (``Law.set``); ``fixed``
    (parameters held at a value) replaces ``options.fixed`` where given. The bootstrap resamples rows, or whole
    groups when ``groups`` (one label per row, named ``unit``) is given. ``names``: the column each role was read
    from, for messages.
    """
    opts = options or FitOptions()
    rs = opts.resampling
    delta, n_boot, seed, level = opts.delta, rs.n, rs.seed, rs.level
    unit = unit or rs.by or "groups"
    solver = get_solver(opts.solver or law.solver)
    solver.check(law)
    solver.check_settings(opts.settings)
    if solver.result != "LawFit":   # an estimator with a result of its own (variable projection's)
        return _own_result(solver, law, inputs, y, opts, fixed)
    generic = solver.generic
    fixed, ties = constraints(law, dict(opts.fixed) if fixed is None else fixed, opts.tied, ranges=generic)
    kind = opts.objective or law.objective
    inputs = {r: np.asarray(inputs[r], float).ravel() for r in law.inputs if r in inputs}
    y = np.asarray(y, float).ravel()
    if not generic:   # a law's own solver checks its runs (Chinchilla's names the columns)
        missing = [r for r in law.inputs if r not in inputs]
        if missing:
            raise UserError(f"law {law.name} needs {', '.join(ROLE_NAMES[r] for r in missing)}")
        opts = replace(opts, tied=tuple(ties.items()))  # by the law's names, each to a free parameter
    fit = solver(law, inputs, y, options=opts, fixed=fixed, ties=ties, objective=kind, delta=delta, n_boot=n_boot,
                 seed=seed, level=level, groups=groups, unit=unit, progress=progress, names=names)
    return fit if solver.name == law.solver else replace(fit, solver=solver.name)   # the result names its solver


def _own_result(solver, law: Law, inputs, y, opts: FitOptions, fixed):
    """The fit of a solver whose result is its own type (``Solver.result``: variable projection's ``VarproFit``,
    least squares over all five parameters with Wald intervals): the runs in, that result out. Options it would
    ignore are refused, each in one line."""
    from scalinglab.fitting.huber import HUBER_DELTA

    inputs = {r: np.asarray(inputs[r], float).ravel() for r in law.inputs if r in inputs}
    missing = [r for r in law.inputs if r not in inputs]
    if missing:
        raise UserError(f"law {law.name} needs {', '.join(ROLE_NAMES[r] for r in missing)}")
    held = dict(opts.fixed) if fixed is None else dict(fixed)
    changed = law.edited   # law.set(...): held, tied, bounded or started
    refused = ((f"parameters set on the law ({', '.join(changed)})", bool(changed)), ("fixed parameters", bool(held)),
               ("tied parameters", bool(opts.tied)),
               ("a bootstrap", bool(opts.resampling.n)), ("a Huber objective", opts.objective == "huber"),
               (f"Huber delta {opts.delta:g}", opts.delta != HUBER_DELTA))
    for what, given in refused:
        if given:
            raise UserError(f"solver {solver.name} fits every parameter by least squares with Wald intervals; "
                            f"for {what}, use the chinchilla-newton or least-squares solver")
    return solver(law, inputs, np.asarray(y, float).ravel(), level=opts.resampling.level)


def generic_solver(law: Law, inputs: Mapping[str, np.ndarray], y: np.ndarray, *, options: FitOptions,
                   fixed: dict[str, float], ties: dict[str, str], objective: str, delta: float, n_boot: int,
                   seed: int, level: float, groups, unit: str, progress: bool = False,
                   names: Mapping[str, str] | None = None) -> LawFit:
    """The generic solver (``solvers.SOLVERS["least-squares"]``): ``fit_law``'s checked arguments in, the best of
    scipy's least_squares from the law's grid of starts out, with its bootstrap when ``n_boot``."""
    check_inputs(law, inputs, y, len(law.params) - len(fixed) - len(ties))
    prob = _Problem(law, fixed, inputs, y, law.space, ties)
    starts = prob.starts(y)
    z, obj, rss, ok = _solve(prob, starts, objective, delta)
    if z is None:
        nan = {k: fixed.get(k, float("nan")) for k in law.names}
        return LawFit(law, nan, "failed", float("nan"), objective, delta, len(y), len(starts), fixed=fixed, ties=ties)
    bound = _at_bound(prob, z) + prob.outside(prob.params(z))
    loose = _unidentified(prob, z)
    status = "at_bound" if bound else "unidentified" if loose else ("converged" if ok else "failed")
    fit = LawFit(law, prob.params(z), status, obj, objective, delta, len(y), len(starts), rss=rss, at_bound=bound,
                 fixed=fixed, unidentified=loose, ties=ties)
    if n_boot:
        fit = _with_bootstrap(fit, prob, starts, objective, delta, n_boot, seed, level, groups, unit, progress,
                              options.resampling.fraction)
    return fit


def _with_bootstrap(fit: LawFit, prob: _Problem, starts, kind, delta, n_boot, seed, level, groups, unit,
                    progress, fraction: float | None = None) -> LawFit:


    # The replicates start from the full-data optimum and the grid starts that scored best on all the data.
    z_hat = prob.z(fit.params)
    with np.errstate(all="ignore"):
        score = np.array([np.sum(np.square(prob.residuals(z))) for z in starts])
    seeds = np.vstack([z_hat, starts[np.argsort(score)[:BOOT_STARTS]]])  # the next are tried if one fails
    n = fit.n_rows
    samples, ok = [], []
    for idx in progress_bar(resample_indices(n, n_boot, seed, groups, fraction), f"bootstrap {fit.law.name}", progress):
        sub = prob.at_rows(idx)
        z, _, _, success = _solve(sub, seeds, kind, delta, first=True)
        good = z is not None and success and not _at_bound(sub, z) and not sub.outside(sub.params(z))
        ok.append(good)
        if good:
            samples.append([sub.params(z)[k] for k in prob.law.names])
    n_units = None if groups is None else len(set(np.asarray(groups).tolist()))
    law = prob.law
    bs = Bootstrap(np.array(samples, float).reshape(-1, len(law.names)), law.names, n_boot, int(n_boot - sum(ok)),
                   level, seed, constant=tuple(fit.fixed), unit="runs" if groups is None else unit, n_units=n_units,
                   derived=law.derived, scale=law.scale_params,
                   free=tuple(p.name for p in prob.free) if prob.ties else None, fraction=fraction)
    return replace(fit, bootstrap=bs)

