"""What a sweep's results say: isoFLOP points and curves, exponents with intervals (bootstrap, seeds, seeds +
scatter), Approach 1 on its curves, and the difference between two sweeps. Reads through
:class:`scalinglab.sweeps.SweepStore`; fits with ``scalinglab.fitting``.
"""

from __future__ import annotations

import math
from pathlib import Path

from scalinglab.errors import UserError
from scalinglab.fitting.rows import unit_picks
from scalinglab.sweeps.store import SweepStore, run_of

# Resamples behind report()'s intervals, shared by exponent_differences() so it differences the same exponents:
# each isoFLOP budget's optimum is bootstrapped ISOFLOP_BOOT times, Approach 1's runs ENVELOPE_BOOT times
# (its intervals are percentiles, which a few hundred resamples move in the second decimal).
ISOFLOP_BOOT = 200
ENVELOPE_BOOT = 1000
BLOCK_BOOT = 1000  # exponent_differences' block bootstrap over shapes (spline, about a second per sweep)
SEED_BOOT = 1000   # seed_bootstrap's resamples: each is one isoFLOP fit without an inner bootstrap
# The steps of Porian et al.'s ladder (scalinglab.papers.porian.STEPS) each preset corresponds to, for its
# targets. kaplan is their "Reproducing Kaplan" but with a constant LR after warmup (theirs: a cosine over a long
# fixed horizon) and validation loss (theirs: smoothed train loss). hoffmann is their cosine step plus per-size
# lr/batch/β2 set by rule; their last step tunes those by search and drops the cosine, so it lies between the two.
PORIAN_STEPS = {"kaplan": ("kaplan_reproduction",), "hoffmann": ("plus_cosine", "tuned_constant_lr"),
                "ladder0": ("kaplan_reproduction", "plus_head"), "ladder2": ("plus_short_warmup",),
                "ladder3": ("plus_cosine",), "ladder4": ("tuned_constant_lr",)}


def _usable_budgets(points):
    """The budgets an isoFLOP fit uses: those with at least 4 finished sizes."""
    sizes = points.groupby("flops")["n"].nunique()
    return sizes[sizes >= 4].index


def isoflop_points(db_path: Path | str):
    """The finished runs' isoFLOP points (:meth:`SweepStore.points`)."""
    return SweepStore(db_path).points()


def loss_curves(db_path: Path | str, mean_over_seeds: bool = False):
    """Every evaluation of every finished run (:meth:`SweepStore.curves`)."""
    return SweepStore(db_path).curves(mean_over_seeds)


def exponent(db_path: Path | str, method: str = "spline", n_boot: int = ISOFLOP_BOOT,
             window: int | None = None) -> dict:
    """N* ∝ C^a from the sweep's isoFLOP points: {a, ci, n_budgets, dropped} or {a: None, reason}.

    ``window=k`` fits each budget on the k sizes around its lowest loss (``isoflop.budget_optima``)."""
    fit = _isoflop_fit(db_path, method, n_boot, window)
    if isinstance(fit, str):
        return dict(a=None, ci=None, reason=fit)
    if fit.status != "converged" or not math.isfinite(fit.exponent):
        return dict(a=None, ci=None, reason=f"{fit.status}: {fit.n_budgets} budget(s) with an interior optimum",
                    dropped=[list(d) for d in fit.dropped])
    ci = [None if not math.isfinite(x) else round(x, 4) for x in fit.ci]
    return dict(a=round(fit.exponent, 4), ci=ci, n_budgets=fit.n_budgets, method=method, window=window,
                dropped=[list(d) for d in fit.dropped])


def _isoflop_fit(db_path: Path | str, method: str, n_boot: int, window: int | None, points=None, noise=None):
    """The IsoflopFit behind :func:`exponent` (of ``points`` if given: a subset of the sweep's; with
    ``noise`` for its bootstrap if given), or why there is none (a string)."""
    from scalinglab.fitting.frontier.isoflop import budget_optima, fit_exponent

    points = isoflop_points(db_path) if points is None else points
    usable = _usable_budgets(points)
    if len(usable) < 3:
        return f"{len(usable)} budget(s) with at least 4 finished sizes; the fit needs 3 such budgets"
    # replicates (runs that differ only in their seed) are averaged, and their spread is the bootstrap's noise
    optima = budget_optima(points[points["flops"].isin(usable)], "n", "flops", "loss", method=method,
                           n_boot=n_boot, window=window, replicates="mean", noise=noise)
    return fit_exponent(optima)


def exponent_by_seed(db_path: Path | str, method: str = "spline", window: int | None = None,
                     noise: str = "measured") -> list[dict]:
    """a from each seed's runs alone, one entry per replicate: {replicate, a, n_budgets} (a None, with a
    reason, where that seed has no fit). The estimator of :func:`exponent`, its bootstrap's noise the
    model measured on all the seeds (``noise="measured"``): the spread of these is how far the choice of
    one seed moves a one-seed sweep's exponent. ``noise="fallback"`` analyses each seed as a one-seed
    sweep would be, with the parabola residual as the noise: what a sweep without replicates reports."""
    from scalinglab.fitting.frontier.isoflop import seed_noise

    if noise not in ("measured", "fallback"):
        raise UserError(f"noise must be measured or fallback, not {noise!r}")
    points = isoflop_points(db_path)
    measured = seed_noise(points, "n", "flops", "loss")
    noise = measured.at if noise == "measured" and measured.dof else None
    out = []
    for rep, pts in points.groupby("replicate"):
        fit = _isoflop_fit(db_path, method, ISOFLOP_BOOT, window, points=pts, noise=noise)
        if isinstance(fit, str) or fit.status != "converged":
            out.append(dict(replicate=int(rep), a=None, reason=fit if isinstance(fit, str) else fit.status))
        else:
            out.append(dict(replicate=int(rep), a=round(fit.exponent, 4), n_budgets=fit.n_budgets))
    return out


def seed_bootstrap(db_path: Path | str, method: str = "spline", window: int | None = None,
                   n_boot: int = SEED_BOOT, seed: int = 0, level: float = 0.95) -> dict:
    """a from the seed-averaged isoFLOP points, with two intervals built on resampling each run's seeds.

    The unit is a run of the one-seed grid with its replicates (a Kaplan-preset run gives a point at
    every budget it passes, so the unit carries its points at all of them, and the correlation between
    budgets that the WLS interval ignores). Each resample draws, for every run, k of its k replicates
    with replacement and re-averages; with k of 2 or 3, plain resampling would understate the spread by
    (k−1)/k, so each replicate's deviation from its run's mean is first scaled by √(k/(k−1)). Then the
    isoFLOP optima (no inner bootstrap) and the least-squares fit of N* ∝ C^a
    (``isoflop.resampled_exponents``, on the budgets :func:`exponent` uses). ``a`` is that fit to the seed
    means: plain least squares on the optima, not :func:`exponent`'s WLS on bootstrap medians.

    - ``ci``: percentiles of the resampled a. Seed noise only: the grid, the estimator and the power
      law are held fixed, the budgets' scatter about the line does not enter, and the seeds' spread is
      taken as known (from 2 or 3 per run), so it is the narrowest honest interval, not the widest.
    - ``scatter``: generalised least squares on the same optima with the seeds' covariance of the
      budgets' log N* (the seed noise of shared runs included) plus τ²·I, the budgets' scatter beyond it
      (``isoflop.fit_exponent_scatter``): {a, ci, se, df, tau, n_budgets, n_boot_complete,
      budget_seed_sd (each budget's seed sd of log N*, to set τ against)}. Lack of fit enters, as
      independent across budgets; in a sweep whose budgets share runs (Kaplan preset) a shape's
      systematic deviation moves several budgets' optima together, which τ²·I does not carry.

    Resamples left with fewer than two budgets are counted in ``n_boot_failed``. It assumes the runs'
    seeds are independent; replicate i of every run draws its batches from the same stream (seed i),
    so a seed's luck with the data order is shared across its runs. Needs every run to have 2+ seeds.

    {a, ci, n_boot, n_boot_failed, runs, seeds, method, window, scatter, boot (the resampled a's)} or
    {a: None, ci: None, reason}."""
    out, _ = _seed_fits(db_path, method, window, n_boot, seed, level)
    return out


def _seed_fits(db_path, method, window, n_boot, seed, level):
    """(:func:`seed_bootstrap`'s dict, the scatter IsoflopFit or None)."""
    import numpy as np

    from scalinglab.fitting.frontier.isoflop import exponents_of_optima, fit_exponent_scatter, resampled_optima

    points = isoflop_points(db_path)
    points["run"] = run_of(points["run_id"])
    k = points.groupby("run")["replicate"].nunique()
    if points.empty or k.min() < 2:
        return dict(a=None, ci=None, reason=f"{int((k < 2).sum())} of {len(k)} runs have fewer than 2 seeds "
                                                 "(scalinglab sweep --seeds K)"), None
    usable = _usable_budgets(points)
    rng = np.random.default_rng(seed)
    columns = {}  # (flops, n) -> the seed mean, then n_boot resampled means
    for run, g in points[points["flops"].isin(usable)].groupby("run"):
        wide = g.pivot_table(index="replicate", columns="flops", values="loss")
        if wide.isna().any().any():
            return dict(a=None, ci=None, reason=f"run {run}: its seeds passed different budgets"), None
        loss = wide.to_numpy()
        mean = loss.mean(axis=0)
        resid = (loss - mean) * np.sqrt(len(loss) / (len(loss) - 1))
        draws = unit_picks(len(loss), n_boot, rng)
        boot = mean + resid[draws].mean(axis=1)           # (n_boot, budgets of this run)
        for j, c in enumerate(wide.columns):
            columns[c, float(g["n"].iloc[0])] = np.concatenate([[mean[j]], boot[:, j]])
    budgets = []
    for c in sorted({c for c, _ in columns}):
        ns = sorted(n for cc, n in columns if cc == c)
        budgets.append((c, np.array(ns), np.array([columns[c, n] for n in ns])))
    flops = [c for c, _, _ in budgets]
    opt = resampled_optima(budgets, method, window)
    a_all = exponents_of_optima(flops, opt)
    a, boot = a_all[0], a_all[1:]
    if not np.isfinite(a):
        return dict(a=None, ci=None, reason="no fit on the seed means"), None
    ok = boot[np.isfinite(boot)]
    ci = [round(float(q), 4) for q in np.quantile(ok, [(1 - level) / 2, (1 + level) / 2])] if len(ok) else None
    # the trend's interval: the budgets with an interior optimum on the means, their seed covariance from
    # the resamples in which all of them stay interior
    used = np.isfinite(opt[:, 0])
    rows = opt[used][:, 1:]
    complete = rows[:, np.isfinite(rows).all(axis=0)]
    scatter_fit, scatter = None, dict(a=None, ci=None, reason="fewer than 3 budgets with an interior optimum")
    if used.sum() >= 3 and complete.shape[1] < 20:
        scatter = dict(a=None, ci=None, reason=f"only {complete.shape[1]} resamples keep every budget's optimum "
                                               "interior (needs 20 for their covariance)")
    elif used.sum() >= 3:
        seed_cov = np.cov(complete)
        scatter_fit = fit_exponent_scatter(np.asarray(flops)[used], opt[used, 0], seed_cov)
        scatter = dict(a=round(scatter_fit.exponent, 4), ci=[round(float(v), 4) for v in scatter_fit.ci],
                       se=round(scatter_fit.se, 4), df=scatter_fit.df_resid, tau=round(scatter_fit.tau, 4),
                       n_budgets=scatter_fit.n_budgets, n_boot_complete=int(complete.shape[1]),
                       budget_seed_sd=[round(float(v), 4) for v in np.sqrt(np.diag(seed_cov))])
    return dict(a=round(float(a), 4), ci=ci, n_boot=n_boot, n_boot_failed=int(n_boot - len(ok)), runs=len(k),
                seeds=int(k.max()), method=method, window=window, scatter=scatter, boot=ok), scatter_fit


def select_replicates(db_path: Path | str, replicates, out_path: Path | str) -> Path:
    """A copy of a sweep database with only the runs of ``replicates`` (:meth:`SweepStore.select_replicates`)."""
    return SweepStore(db_path).select_replicates(replicates, out_path)


def replicate_noise(db_path: Path | str) -> dict:
    """How many seeds the sweep's isoFLOP points have, and the noise its intervals assume.

    {seeds: the most runs behind one (budget, size) point, points_with_replicates, seed_sd, dof,
    runs_per_seed, median_point_sd, noise_floor, noise_slope, parabola_sd, exponent_by_seed}.
    ``seed_sd`` is the pooled seed-to-seed sd of one run's loss (a few far-off points can dominate it:
    ``median_point_sd`` is the typical point's); the bootstrap uses the model ``isoflop.seed_noise``
    fits, √(noise_floor² + (noise_slope·Δ)²) with Δ the excess over the budget's lowest loss. Without
    replicates these are None and the isoFLOP bootstrap falls back on ``parabola_sd``, the residual sd
    of per-budget parabolas (of seed 0's points: what a one-seed sweep uses), which also holds their
    misfit. ``exponent_by_seed`` (with several seeds): :func:`exponent_by_seed`. A Kaplan-style run
    gives points at several budgets, so its points' deviations are correlated and ``dof`` overstates
    the information."""
    from scalinglab.fitting.frontier.isoflop import budget_groups, pooled_parabola_sd, replicate_cells, seed_noise

    points = isoflop_points(db_path)
    if points.empty:
        return dict(seeds=0, points_with_replicates=0, seed_sd=None, dof=0, parabola_sd=None)
    noise = seed_noise(points, "n", "flops", "loss")
    cells = replicate_cells(points, "n", "flops", "loss")
    try:  # what a one-seed sweep's bootstrap would use: seed 0's parabola residual
        first = points[points["replicate"] == points["replicate"].min()]
        parabola = pooled_parabola_sd(budget_groups(first, "n", "flops", "loss", "mean"), "loss", "n")
    except UserError:  # no budget with more than three sizes
        parabola = None
    modelled = noise.to_dict()
    replicated = cells[cells["runs"] > 1]
    out = dict(seeds=int(cells["runs"].max()), points_with_replicates=noise.cells, seed_sd=modelled["sd"],
               dof=noise.dof, runs_per_seed=int(points.loc[points["replicate"] == 0, "run_id"].nunique()),
               median_point_sd=float(replicated["sd"].median()) if len(replicated) else None,
               noise_floor=modelled["floor"], noise_slope=modelled["slope"], parabola_sd=parabola)
    if points["replicate"].nunique() > 1:
        out["exponent_by_seed"] = exponent_by_seed(db_path)
    return out


def envelope_exponent(db_path: Path | str, n_boot: int = ENVELOPE_BOOT) -> dict:
    """N* ∝ C^a by Hoffmann's Approach 1 on the sweep's curves (each run a curve, mid-run evaluations
    included): {a, ci, n_sizes, status} or {a: None, reason}.

    ENVELOPE_BOOT resamples (1,000, as notebook 01 uses). Resamples left with fewer than two sizes among
    their optima are dropped and counted in ``n_boot_failed``, so the interval is conditional on the rest."""
    fit = _envelope_fit(db_path, n_boot)
    if isinstance(fit, str):
        return dict(a=None, ci=None, reason=fit)
    if fit.status != "converged":
        return dict(a=None, ci=None, reason=f"{fit.status}: {fit.reason}")
    ci = [None if not math.isfinite(x) else round(x, 4) for x in fit.ci]
    return dict(a=round(fit.exponent, 4), ci=ci, n_sizes=fit.n_sizes, method="grid, edges dropped",
                n_boot=n_boot, n_boot_failed=fit.n_boot_failed)


def _envelope_fit(db_path: Path | str, n_boot: int):
    """The EnvelopeFit behind :func:`envelope_exponent`, or why there is none (a string)."""
    from scalinglab.fitting.frontier.envelope import EnvelopeOptions, fit_envelope

    curves = loss_curves(db_path, mean_over_seeds=True)  # the envelope of single seeds would pick lucky ones
    if curves["run_id"].nunique() < 2:
        return f"{curves['run_id'].nunique()} finished run(s) (needs 2)"
    return fit_envelope(curves, EnvelopeOptions(n_boot=n_boot, seed=0), run_col="run_id")


def budget_sharing(db_path: Path | str) -> dict:
    """How many of a sweep's finished runs give an isoFLOP point at more than one budget.

    {runs, budgets, shared_runs}: a Kaplan-style sweep reads one run per size at every budget it
    passes, so every budget's optimum comes from the same runs and the optima (and a WLS fit's
    residuals across budgets) are correlated; a Hoffmann-style sweep trains one run per (budget,
    size) and shares none. ``independent_budgets`` is ``shared_runs == 0``.
    """
    points = isoflop_points(db_path)
    per_run = points.groupby("run_id")["flops"].nunique()
    shared = int((per_run > 1).sum())
    return dict(runs=int(len(per_run)), budgets=int(points["flops"].nunique()), shared_runs=shared,
                independent_budgets=shared == 0)


def exponent_differences(db_a: Path | str, db_b: Path | str, level: float = 0.95) -> dict:
    """a(db_a) − a(db_b) by each estimator of :func:`report`, for two independently trained sweeps.

    {spline, parabola, envelope} → ``isoflop.ExponentDifference.to_dict()``, or {difference: None,
    reason} when either sweep has no exponent by that estimator. The isoFLOP estimators' intervals are
    WLS t-intervals, so their standard errors combine (Welch–Satterthwaite,
    ``isoflop.exponent_difference``); Approach 1's are bootstrap percentiles, often skewed, so its
    resamples are differenced pair by pair (``isoflop.bootstrap_difference``), and so are those of
    :func:`seed_bootstrap` (``seeds``: spline optima of the seed means, resampling seeds; it needs two
    or more seeds per run in both sweeps); ``seeds_scatter`` combines its two GLS fits with the seeds'
    covariance plus the budgets' scatter (Welch–Satterthwaite, as the WLS entries; its scatter term
    assumes independent budgets, so it is marked like them). The Welch entries also carry
    ``ci_min_df``, the interval on the smaller fit's residual df, a conservative check. Same settings
    as :func:`report`, so the differences are of the exponents it prints.

    The WLS intervals assume independent budget optima, which a sweep that reads one run at several budgets
    (:func:`budget_sharing`; the kaplan preset) breaks: entries carry ``shared_runs``,
    ``assumes_independent_budgets`` and ``assumption_holds``. Approach 1 and the seed bootstrap resample
    whole runs, and ``block`` (the spline exponent, each sweep's shapes resampled whole by
    ``fitting.frontier.block_bootstrap``; ``by_sweep``: each sweep's a) whole shapes: their assumption holds.
    """
    from scalinglab.fitting.frontier.isoflop import bootstrap_difference, exponent_difference

    def unavailable(fits) -> str:
        why = [(Path(db).stem, f if isinstance(f, str) else f.status) for db, f in zip((db_a, db_b), fits)]
        return "; ".join(f"{name}: {w}" for name, w in why if w != "converged")

    out = {}
    shared = {Path(db).stem: budget_sharing(db)["shared_runs"] for db in (db_a, db_b)}
    for key, method, window in (("spline", "spline", None), ("parabola", "parabola", 5)):
        fits = [_isoflop_fit(db, method, ISOFLOP_BOOT, window) for db in (db_a, db_b)]
        why = unavailable(fits)
        out[key] = dict(difference=None, reason=why) if why else exponent_difference(*fits, level=level).to_dict()
        out[key].update(shared_runs=shared, assumes_independent_budgets=True,
                        assumption_holds=not any(shared.values()))
    fits = [_envelope_fit(db, ENVELOPE_BOOT) for db in (db_a, db_b)]
    why = unavailable(fits)
    out["envelope"] = dict(difference=None, reason=why) if why else bootstrap_difference(
        fits[0].boot[:, 0], fits[1].boot[:, 0], fits[0].exponent - fits[1].exponent, level=level).to_dict()
    out["envelope"].update(shared_runs=shared, assumes_independent_budgets=False, assumption_holds=True)
    seeds = [_seed_fits(db, "spline", None, SEED_BOOT, 0, level) for db in (db_a, db_b)]
    why = "; ".join(f"{Path(db).stem}: {b['reason']}" for db, (b, _) in zip((db_a, db_b), seeds) if b["a"] is None)
    (first, fit_a), (second, fit_b) = seeds
    out["seeds"] = dict(difference=None, reason=why) if why else bootstrap_difference(
        first["boot"], second["boot"], first["a"] - second["a"], level=level).to_dict()
    out["seeds"].update(shared_runs=shared, assumes_independent_budgets=False, assumption_holds=True)
    why = why or "; ".join(f"{Path(db).stem}: {b['scatter']['reason']}" for db, (b, f) in zip((db_a, db_b), seeds)
                           if f is None)
    out["seeds_scatter"] = (dict(difference=None, reason=why) if why
                            else exponent_difference(fit_a, fit_b, level=level).to_dict())
    # its seed covariance carries shared runs, but its scatter term is independent across budgets
    out["seeds_scatter"].update(shared_runs=shared, assumes_independent_budgets=True,
                                assumption_holds=not any(shared.values()))
    out["block"] = {**_block_difference(db_a, db_b, level), "shared_runs": shared,
                    "assumes_independent_budgets": False, "assumption_holds": True}
    return out


def _block_difference(db_a: Path | str, db_b: Path | str, level: float) -> dict:
    """a(db_a) − a(db_b): spline optima of the seed means on :func:`exponent`'s budgets, each sweep's shapes
    resampled whole (independent draws: seeds 0 and 1); or {difference: None, reason}."""
    from scalinglab.fitting.frontier.block_bootstrap import block_bootstrap, difference
    fits = {}
    for seed, db in enumerate((db_a, db_b)):
        pts = isoflop_points(db)
        pts = pts[pts["flops"].isin(_usable_budgets(pts))].assign(shape=lambda t: t["width"] * 1000 + t["depth"])
        if pts["flops"].nunique() < 3 or pts["shape"].nunique() < 3:
            return dict(difference=None, reason=f"{Path(db).stem}: fewer than 3 usable budgets or shapes")
        fits[Path(db).stem] = block_bootstrap(pts, method="spline", n_boot=BLOCK_BOOT, seed=seed, level=level)
    if not all(math.isfinite(f.a) for f in fits.values()):
        return dict(difference=None, reason="a sweep has fewer than 2 interior optima")
    keep = ("a", "ci", "n_shapes", "n_budgets", "n_dropped", "n_boot")
    return {**difference(*fits.values(), level), "by_sweep": {k: {x: f.to_dict()[x] for x in keep} for k, f in fits.items()}}
