"""Curve laws on our own schedule sweep (``data/sweeps/schedules/schedules.db``): fit on the constant and cosine
runs of a model, predict its WSD and step runs; and "one run, many points": the final losses a fitted curve law
reads off WSD schedules of several lengths, as points for an Approach-3 fit.

Points inside the warmup are left out of every fit and metric (Luo et al.'s released curves also start after
warmup): the laws describe the loss once the rate has peaked. The loss is the validation loss (the same 8,192
tokens at every evaluation).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from scalinglab.curves import evaluate as E
from scalinglab.curves import fit as F
from scalinglab.curves.calibration import calibrate_schedules, pool_over
from scalinglab.curves.data import own_curves
from scalinglab.curves.laws import LAWS, Curve, prepare
from scalinglab.errors import UserError
from scalinglab.schedules import Schedule

TRAIN_SCHEDULES, TEST_SCHEDULES = ("constant", "cosine"), ("wsd", "step")


def after_warmup(c: Curve) -> Curve:
    keep = c.at > int(np.argmax(c.lrs)) + 1
    return replace(c, at=c.at[keep], loss=c.loss[keep])


def groups(db) -> dict[tuple[int, int], dict[str, Curve]]:
    """{(width, seed): {schedule: curve}}, warmup points dropped."""
    out: dict = {}
    for c in own_curves(db):
        out.setdefault((c.meta["width"], c.meta["seed"]), {})[c.meta["schedule"]] = after_warmup(c)
    return out


def fit_predict(db, laws=("multipower", "tissue", "baseline"), n_boot: int = 0, seed: int = 0,
                store: dict | None = None, level: float = 0.95) -> list[dict]:
    """One row per (model, law, unseen schedule): metrics, the final loss, its prediction, the block bootstrap's
    parameter-only band and the interval calibrated on the model's two training schedules, each left out in
    turn (one refit on the other: two residuals, a t on 1 degree of freedom, in log loss); and ``pooled_*``, the
    same interval with the schedule spread pooled over the widths (seed 0 of each: each its own bias, one df per
    width; absent for other seeds, whose misfit is their width's).
    ``store``, if given, receives each (width, seed, law)'s (fit, bootstrap, calibration)."""
    made, gs = {}, groups(db)
    for (width, rep), g in sorted(gs.items()):
        train = [g[s] for s in TRAIN_SCHEDULES]
        for law in laws:
            fit = F.fit_curves(train, law)
            boot = E.bootstrap(fit, train, n_boot, seed=seed, level=level) if n_boot else None
            cal = calibrate_schedules(train, lambda cs, lw=law: F.fit_curves(cs, lw), law, level=level)
            made[(width, rep, law)] = (fit, boot, cal)
    if store is not None:
        store.update(made)
    pooled = {}   # seed 0 only: other seeds of a width share its schedule misfit, so they add no degree of freedom
    for law in laws:
        pooled.update({(w, 0, law): c for w, c in
                       pool_over({w: made[(w, r, lw)][2] for w, r, lw in made if lw == law and r == 0}).items()})
    rows = []
    for (width, rep, law), (fit, boot, cal) in made.items():
        g = gs[(width, rep)]
        test = [g[s] for s in TEST_SCHEDULES]
        pc = pooled.get((width, rep, law))
        for sched, p in zip(TEST_SCHEDULES, E.predict_curves(fit, test, boot, cal)):
            pool = {}
            if pc is not None:
                plo, phi = (float(x[0]) for x in pc.interval(np.array([p.final_pred])))
                pool = dict(pooled_lo=plo, pooled_hi=phi, pooled_inside=bool(plo <= p.final <= phi),
                            pooled_df=pc.calibration.df, pooled_half_width=pc.calibration.half_width)
            rows.append(dict(width=width, seed=rep, n=g[sched].meta["n"], law=law, schedule=sched,
                             status=fit.reason, block=boot.block if boot else None,
                             cal_half_width=cal.calibration.half_width, **p.to_dict(), **pool))
    return rows


def wsd_curve(run: Curve, fraction: float) -> Curve:
    """A WSD schedule (20% cooldown to 0.1·peak) of ``fraction`` of ``run``'s tokens, with the run's warmup and
    peak: the run a cooldown branch at that point would have been."""
    m = run.meta
    peak = float(np.max(run.lrs))
    steps = len(run.lrs)
    warm = int(np.argmax(run.lrs)) + 1
    total = max(int(round(fraction * steps)), warm + 10)
    lrs = Schedule("wsd", peak=peak, total=total, warmup=warm).lrs()
    return Curve(f"wsd-{fraction:g}", lrs, np.array([total]), None, dict(m, tokens=total * m["tokens_per_step"]))


def one_run_points(db, fractions=(0.25, 0.4, 0.55, 0.7, 0.85, 1.0), n_boot: int = 0, seed: int = 0,
                   store: dict | None = None) -> dict:
    """Per model (seed 0): the multi-power law fitted to its constant and cosine runs predicts the final loss of a
    WSD run ending at each fraction of the run's tokens; with ``n_boot``, each block-bootstrap replicate does
    too (``store``: fits and bootstraps already made by :func:`fit_predict`, reused). Returns the points
    (N, D, predicted L), the replicates' L and the real WSD runs' final losses."""
    pts, reps, real = [], [], []
    for (width, rep), g in sorted(groups(db).items()):
        if rep != 0:
            continue
        train = [g[s] for s in TRAIN_SCHEDULES]
        if store and (width, rep, "multipower") in store:
            fit, boot = store[(width, rep, "multipower")][:2]
        else:
            fit = F.fit_curves(train, "multipower")
            boot = E.bootstrap(fit, train, n_boot, seed=seed) if n_boot else None
        n = g["wsd"].meta["n"]
        real.append(dict(width=width, n=n, d=int(g["wsd"].at[-1]) * g["wsd"].meta["tokens_per_step"],
                         loss=float(g["wsd"].loss[-1])))
        for f in fractions:
            c = wsd_curve(g["constant"], f)
            p = prepare(c)
            pts.append(dict(width=width, n=n, d=c.meta["tokens"], fraction=f,
                            loss=float(LAWS["multipower"].predict(fit.theta, p)[-1])))
            reps.append(boot.predict(p, new_curve=False)[:, -1] if boot else np.zeros(0))
    return dict(points=pts, replicates=np.array(reps), real=real)


def approach3_fit(points: list[dict], losses=None) -> dict | None:
    """The Chinchilla law fitted (Approach 3, Huber) to the points: a = β/(α+β), E, α, β, and whether E sits on
    its floor (E ≈ 0, log E at the solver's natural floor): then the fit has no irreducible loss and a is set by
    whatever split of the curvature between N and D the few points allow, not identified. None when the fit
    fails or a is not finite."""
    from scalinglab.fitting.chinchilla.approach3 import CHINCHILLA, NATURAL_FLOOR
    from scalinglab.fitting.laws.base import fit_law

    N = np.array([p["n"] for p in points], float)
    D = np.array([p["d"] for p in points], float)
    L = np.array([p["loss"] for p in points], float) if losses is None else np.asarray(losses, float)
    try:
        r = fit_law(CHINCHILLA, {"n": N, "d": D}, L)
    except UserError:
        return None
    a = float(r.a)
    if not np.isfinite(a):
        return None
    E_ = float(r.params["E"])
    return dict(a=a, E=E_, alpha=float(r.params["alpha"]), beta=float(r.params["beta"]),
                e_at_floor=bool(E_ <= 0 or np.log(E_) <= NATURAL_FLOOR[0] + 1e-3))


def approach3_exponent(points: list[dict], losses=None) -> float | None:
    """a = β/(α+β) of :func:`approach3_fit`; None when the points cannot give one."""
    r = approach3_fit(points, losses)
    return None if r is None else r["a"]


def exponent_status(fit: dict | None, replicates: list) -> dict:
    """Whether the one-run exponent is an estimate: not when E sits on its floor in the fit and in most
    replicates (a is then bounded by what the points allow, not estimated). Counts, and the replicates' range
    of a and largest β, computed."""
    ok = [r for r in replicates if r is not None]
    at_floor = sum(r["e_at_floor"] for r in ok)
    identified = fit is not None and not (fit["e_at_floor"] and ok and at_floor >= 0.5 * len(ok))
    return dict(identified=bool(identified), e_at_floor=None if fit is None else fit["e_at_floor"],
                replicates_e_at_floor=int(at_floor), replicates_fitted=len(ok),
                a_range=[float(min(r["a"] for r in ok)), float(max(r["a"] for r in ok))] if ok else None,
                beta_max=float(max(r["beta"] for r in ok)) if ok else None,
                alpha_max=float(max(r["alpha"] for r in ok)) if ok else None)
