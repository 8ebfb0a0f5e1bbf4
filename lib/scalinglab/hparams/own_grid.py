"""Our own learning-rate x batch grid (sweep preset ``lrbatch``, ``data/sweeps/lrbatch/``): each model size's
optimal peak rate and batch, and the exponent of eta_opt in N at a fixed number of tokens per parameter.

Every size is trained at the same tokens per parameter, so D grows with N and only the combination of Step Law's
exponents at fixed D/N is measured: eta_opt ~ N^(a + b) = N^(-0.713 + 0.307) = N^-0.406 in their law (their N is
non-embedding; ours is counted both ways). Each size's optimum is at its best batch: the vertex of a parabola in
ln lr through the best run and its two neighbours, or the best run when that lies at the grid's edge (said so).
A size has one run per (lr, batch) and one seed, so there is no resampling within a size that would measure its
optimum's noise.

The independent unit is the model size, and there are only a few: the exponent's interval from the sizes is a
t interval on (sizes - 2) degrees of freedom, which with 3 sizes has one, and is wide. Beside it the grid's
resolution: the exponent's range when each size's optimum moves up to one grid step either way (not a
probability interval). numpy and scipy only (the sweep reader, no torch).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scalinglab.errors import UserError
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
                     f"{e['df']} df; grid resolution: {e['resolution_lo']:.2f} to {e['resolution_hi']:.2f}); "
                     f"Step Law at fixed D/N: {STEP_LAW_FIXED_RATIO:.3f}")
        return "\n".join(lines)


def _t_quantile(df: int, level: float) -> float:
    from scipy import stats

    return float(stats.t.ppf(0.5 + level / 2, df))


def _vertex(lr: np.ndarray, loss: np.ndarray) -> tuple[float, str]:
    """ln lr* of one batch's runs: the vertex of the parabola in ln lr through the best run and its two
    neighbours when the best is inside the grid (and the parabola opens upwards), else the best run's."""
    order = np.argsort(lr)
    x, y = np.log(lr[order]), loss[order]
    k = int(np.argmin(y))
    if 0 < k < len(x) - 1:
        c = np.polyfit(x[k - 1:k + 2], y[k - 1:k + 2], 2)
        if c[0] > 0:
            return float(-c[1] / (2 * c[0])), "parabola"
    return float(x[k]), "best run (grid edge)"


def analyse(db, *, level: float = 0.95) -> OwnGrid:
    """Each size's optimum and the exponent of eta_opt in N (see the module), from a sweep database."""
    return analyse_rows(grid_table(db), level=level, label=str(db))


def analyse_rows(rows: list[dict], *, level: float = 0.95, label: str = "runs") -> OwnGrid:
    """The same from rows as ``grid_table`` gives them (width, depth, n, n_ne, tokens, lr, batch, loss)."""
    by = {}
    for r in rows:
        by.setdefault((r["width"], r["depth"]), []).append(r)
    sizes = []
    for (w, d), rs in sorted(by.items(), key=lambda kv: kv[1][0]["n"]):
        lr = np.array([r["lr"] for r in rs])
        bs = np.array([r["batch"] for r in rs])
        loss = np.array([r["loss"] for r in rs])
        best = rs[int(np.argmin(loss))]
        at = bs == best["batch"]
        x_opt, how = _vertex(lr[at], loss[at])
        rates = np.unique(lr)
        sizes.append(dict(shape=f"{w}x{d}", n=rs[0]["n"], n_ne=rs[0]["n_ne"],
                          tokens=float(np.median([r["tokens"] for r in rs])), runs=len(rs), best_lr=best["lr"],
                          best_batch=best["batch"], best_loss=best["loss"], lr_opt=float(np.exp(x_opt)),
                          lr_opt_from=how, lr_step=float(rates[1] / rates[0]) if len(rates) > 1 else None,
                          lr_grid=(float(rates.min()), float(rates.max())),
                          best_at_grid_edge=bool(best["lr"] in (rates.min(), rates.max())),
                          best_batch_at_grid_edge=bool(best["batch"] in (bs.min(), bs.max())),
                          batches=sorted(int(b) for b in np.unique(bs)),
                          best_lr_by_batch={int(b): float(lr[bs == b][np.argmin(loss[bs == b])])
                                            for b in np.unique(bs)}))
    if len(sizes) < 2:
        raise UserError(f"{label}: runs of {len(sizes)} model size(s); an exponent in N needs at least 2")
    y = np.log([s["lr_opt"] for s in sizes])
    exponent = {}
    for key in ("n", "n_ne"):
        x = np.log([s[key] for s in sizes])
        slope, icpt = np.polyfit(x, y, 1)
        df = len(sizes) - 2
        if df > 0:
            resid = y - (slope * x + icpt)
            se = float(np.sqrt(resid @ resid / df / ((x - x.mean()) @ (x - x.mean()))))
            half = _t_quantile(df, level) * se
        else:
            se, half = float("nan"), float("nan")
        # the grid's resolution: every size's optimum anywhere within a grid step of its estimate, every
        # combination of the ends (the exponent's range over them)
        steps = np.log([s["lr_step"] or 1.0 for s in sizes])
        corners = np.array(np.meshgrid(*[[-h, h] for h in steps])).reshape(len(sizes), -1).T
        res = [np.polyfit(x, y + c, 1)[0] for c in corners]
        exponent[key] = dict(slope=float(slope), slope_lo=float(slope - half), slope_hi=float(slope + half),
                             se=se, df=df, unit_sizes="model size (t interval on sizes - 2 df)",
                             resolution_lo=float(min(res)), resolution_hi=float(max(res)),
                             resolution="each size's optimum moved up to one grid step (a factor 2) either way",
                             sign_as_published=bool(slope < 0))
    e = exponent["n"]
    return OwnGrid(sizes=sizes, exponent=dict(**e, non_embedding=exponent["n_ne"]), runs=len(rows), level=level)
