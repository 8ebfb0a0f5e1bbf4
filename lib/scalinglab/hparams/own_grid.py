"""Our own learning-rate x batch grid (sweep preset ``lrbatch``, ``data/sweeps/lrbatch/``): each model size's
optimal peak rate and batch, and the exponent of eta_opt in N at a fixed number of tokens per parameter.

Every size is trained at the same tokens per parameter, so D grows with N and only the combination of Step Law's
exponents at fixed D/N is measured: eta_opt ~ N^(a + b) = N^(-0.713 + 0.307) = N^-0.406 in their law (their N is
non-embedding; ours is counted both ways). Each size's optimum is its quadratic surface's minimum in
(ln lr, ln batch) where the surface has one inside the grid, else its best run (said so).

The independent unit is the model size, and there are only a few: the exponent's interval from the sizes is a
t interval on (sizes - 2) degrees of freedom, which with 3 sizes has one, and is wide. Beside it, an interval from
resampling runs within each size (the noise of each size's optimum, with the law assumed exact), labelled as
such: it is narrower because it leaves out how far the sizes scatter about a power law, which 3 sizes cannot
measure. numpy only (the sweep reader, no torch).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scalinglab.errors import UserError
from scalinglab.hparams.surface import fit_surface
from scalinglab.serialization import to_jsonable

STEP_LAW_FIXED_RATIO = -0.713 + 0.307   # Step Law's eta_opt exponent in N at fixed D/N


def grid_table(db) -> list[dict]:
    """The finished runs of an lrbatch sweep: width, depth, N (standard and non-embedding), tokens, lr,
    batch (sequences and tokens) and final validation loss."""
    from scalinglab.sweeps import SweepStore

    rows = []
    for r in SweepStore(db).runs(finished_only=True):
        t, m = r["spec"]["train"], r["spec"]["model"]
        rows.append(dict(run_id=r["run_id"], width=r["width"], depth=r["depth"], n=float(r["n_standard"]),
                         n_ne=float(r["n_non_embedding"]), tokens=float(r["tokens"]), lr=float(t["lr"]),
                         batch=int(t["batch_size"]), batch_tokens=float(t["batch_size"] * m["seq_len"]),
                         loss=float(r["final_loss"])))
    if not rows:
        raise UserError(f"{db}: no finished runs")
    return rows


@dataclass(frozen=True)
class OwnGrid:
    sizes: list              # per size: n, n_ne, runs, best run, the surface's optimum, where it came from
    exponent: dict           # eta_opt exponent in N (standard and non-embedding) with both intervals
    runs: int
    level: float

    def to_dict(self) -> dict:
        return to_jsonable(dict(sizes=self.sizes, exponent=self.exponent, runs=self.runs, level=self.level,
                                step_law_fixed_ratio=STEP_LAW_FIXED_RATIO))

    def summary(self) -> str:
        e = self.exponent
        lines = [f"{'size':>6} {'N':>9} {'runs':>4} {'best lr':>8} {'best batch':>10} {'lr*':>9} {'from':>8}"]
        for s in self.sizes:
            lines.append(f"{s['shape']:>6} {s['n']:9.3g} {s['runs']:4d} {s['best_lr']:8.3g} {s['best_batch']:10d} "
                         f"{s['lr_opt']:9.3g} {s['lr_opt_from']:>8}")
        lines.append(f"eta_opt ~ N^{e['slope']:.3f}  (sizes: {e['slope_lo']:.2f} to {e['slope_hi']:.2f} on "
                     f"{e['df']} df; runs within sizes: {e['runs_lo']:.3f} to {e['runs_hi']:.3f}); Step Law at "
                     f"fixed D/N: {STEP_LAW_FIXED_RATIO:.3f}")
        return "\n".join(lines)


def _t_quantile(df: int, level: float) -> float:
    from scipy import stats

    return float(stats.t.ppf(0.5 + level / 2, df))


def analyse(db, *, n_boot: int = 200, seed: int = 0, level: float = 0.95) -> OwnGrid:
    rows = grid_table(db)
    by = {}
    for r in rows:
        by.setdefault((r["width"], r["depth"]), []).append(r)
    sizes, draws = [], []
    rng = np.random.default_rng(seed)
    for (w, d), rs in sorted(by.items(), key=lambda kv: kv[1][0]["n"]):
        lr = np.array([r["lr"] for r in rs])
        bt = np.array([r["batch_tokens"] for r in rs])
        loss = np.array([r["loss"] for r in rs])
        best = rs[int(np.argmin(loss))]
        s = fit_surface(lr, bt, loss, n=rs[0]["n"], n_boot=n_boot, seed=int(rng.integers(1 << 31)), level=level)
        inside = s.ok and lr.min() <= s.lr_opt <= lr.max() and bt.min() <= s.batch_opt <= bt.max()
        lr_opt = s.lr_opt if inside else best["lr"]
        # per-size draws of ln lr*: resamples of its runs (the surface's bootstrap, refitted here to keep them)
        d_ = _optimum_draws(lr, bt, loss, n_boot, rng) if inside else np.full(n_boot, np.log(lr_opt))
        draws.append(d_)
        sizes.append(dict(shape=f"{w}x{d}", n=rs[0]["n"], n_ne=rs[0]["n_ne"], tokens=float(np.median(
            [r["tokens"] for r in rs])), runs=len(rs), best_lr=best["lr"], best_batch=best["batch"],
            best_loss=best["loss"], lr_opt=float(lr_opt), lr_opt_from="surface" if inside else "best run",
            lr_opt_interval=s.intervals["lr_opt"] if inside else (None, None),
            batch_opt=float(s.batch_opt) if inside else best["batch_tokens"],
            lr_grid=(float(lr.min()), float(lr.max())), best_at_grid_edge=bool(best["lr"] in (lr.min(), lr.max())),
            best_batch_at_grid_edge=bool(best["batch_tokens"] in (bt.min(), bt.max())),
            lr_flat=s.lr_flat if s.ok else None))
    if len(sizes) < 2:
        raise UserError(f"{db}: runs of {len(sizes)} model size(s); an exponent in N needs at least 2")
    y = np.log([s["lr_opt"] for s in sizes])
    exponent = {}
    for key in ("n", "n_ne"):
        x = np.log([s[key] for s in sizes])
        slope, icpt = np.polyfit(x, y, 1)
        df = len(sizes) - 2
        if df > 0:
            resid = y - (slope * x + icpt)
            se = np.sqrt(resid @ resid / df / ((x - x.mean()) @ (x - x.mean())))
            half = _t_quantile(df, level) * se
        else:
            se, half = float("nan"), float("nan")
        per = np.array([np.polyfit(x, np.array(col), 1)[0] for col in np.array(draws).T])
        q = (1 - level) / 2
        exponent[key] = dict(slope=float(slope), slope_lo=float(slope - half), slope_hi=float(slope + half),
                             se=float(se), df=df, unit_sizes="model size (t interval on sizes - 2 df)",
                             runs_lo=float(np.quantile(per, q)), runs_hi=float(np.quantile(per, 1 - q)),
                             unit_runs="runs within each size (each size's optimum refitted; the law taken as exact)",
                             sign_as_published=bool(slope < 0))
    e = exponent["n"]
    return OwnGrid(sizes=sizes, exponent=dict(**e, non_embedding=exponent["n_ne"]), runs=len(rows), level=level)


def _optimum_draws(lr, bt, loss, n_boot, rng) -> np.ndarray:
    """ln lr* of the surface refitted to resamples of one size's runs (a resample without a minimum inside the
    grid gives its best run's lr)."""
    out = np.empty(n_boot)
    for k in range(n_boot):
        i = rng.integers(0, lr.size, lr.size)
        s = fit_surface(lr[i], bt[i], loss[i], n_boot=0)
        ok = s.ok and lr.min() <= s.lr_opt <= lr.max()
        out[k] = np.log(s.lr_opt if ok else lr[i][np.argmin(loss[i])])
    return out
