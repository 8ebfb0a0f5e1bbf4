"""Our own ladder as a check of Bhagia et al.'s two-step chain: fit on the small models, predict the largest two.

The ladder is every model of a shape trained at several lengths in the scores table that
``inverse_scaling.probe_cloze`` writes (``role`` "ladder": 4 shapes × 2.5, 5, 10 and 20 tokens per parameter =
16 runs, as Bhagia et al.'s 16); the targets are the larger shapes trained once (32x1 and 48x2, 20 tokens per
parameter). Step 1 is the registry's ``chinchilla`` law on (N, D) → task loss, N the standard count (with the
head: the sweep sets each run's tokens per standard-count parameter and its compute C = 6ND with that count) and D
the tokens; step 2 the ``SIGMOID`` on the ladder's (task loss, accuracy) points plus (0, 1). The accuracy's
intervals (``downstream.intervals``) are calibrated on ladder runs left out in turn, with the parameter-only
bootstrap over runs beside them; both add the target's own sampling noise over the items. ``line_baseline`` is
the simplest rival: a straight line of the ladder's accuracies at the targets' tokens per parameter on log N.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from scalinglab.downstream.chain import ChainFit, fit_chain
from scalinglab.downstream.intervals import CALIBRATED_UNIT, _warm, bootstrap_by_run, chain_calibration, chain_interval
from scalinglab.errors import UserError
from scalinglab.fitting.laws import fit_law
from scalinglab.serialization import to_jsonable


def chain_tables(scores: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(ladder, targets), each with the chain's columns: ``run`` (the run id), ``n`` (standard count, with the
    head), ``d`` (tokens), ``loss`` (task loss, bits per byte), ``acc`` (accuracy as a fraction)."""
    t = scores.assign(run=scores["run_id"], n=scores["n_standard"].astype(float), d=scores["tokens"].astype(float),
                      loss=scores["task_loss"], acc=scores["accuracy"])
    ladder, targets = t[t["role"] == "ladder"], t[t["role"] == "target"]
    if len(ladder) < 6 or targets.empty:
        raise UserError(f"the chain needs at least 6 ladder runs and a target; the table has {len(ladder)} ladder "
                        f"runs and {len(targets)} targets")
    return ladder.reset_index(drop=True), targets.reset_index(drop=True)


@dataclass(frozen=True)
class OwnLadderCheck:
    """The chain fitted on our ladder and its predictions for the targets, with intervals (fractions for
    accuracy, bits per byte for task loss); ``table``: one row per target."""

    fit: ChainFit
    table: pd.DataFrame
    n_ladder: int
    n_boot: int
    n_failed: int
    level: float
    ladder: dict[str, Any]     # what the ladder spans: N (standard count), tokens per parameter, compute, items
    unit: str = "parameter-only: ladder runs resampled (refits), plus the target's own sampling noise over items"
    calibration: dict[str, Any] | None = None   # the accuracy's out-of-run calibration (UnitCalibration.to_dict())
    cal_unit: str = CALIBRATED_UNIT.replace("checkpoint noise", "sampling noise over items")

    def to_dict(self) -> dict[str, Any]:
        return to_jsonable({"targets": self.table.to_dict(orient="records"), "n_ladder": self.n_ladder, **self.ladder,
                            "n_boot": self.n_boot, "n_failed": self.n_failed, "level": self.level, "unit": self.unit,
                            "cal_unit": self.cal_unit, "calibration": self.calibration,
                            "step1": self.fit.step1.params, "step2": self.fit.step2.params,
                            "step1_status": self.fit.step1.status, "step2_status": self.fit.step2.status,
                            "loss_range": list(self.fit.loss_range)})

    def summary(self) -> str:
        lines = [f"chain fitted on {self.n_ladder} ladder runs; {self.level:.0%} intervals, calibrated on ladder runs "
                 f"left out and parameter-only over ladder runs ({self.n_boot - self.n_failed} of {self.n_boot} "
                 "refits), each plus the target's noise over items"]
        for r in self.table.itertuples():
            lines.append(
                f"  {r.model}: task loss {r.loss_pred:.4f} [{r.loss_lower:.4f}, {r.loss_upper:.4f}] vs "
                f"{r.loss_actual:.4f} ({'inside' if r.loss_inside else 'outside'}); accuracy "
                f"{100 * r.acc_pred:.1f}, calibrated [{100 * r.acc_cal_lower:.1f}, {100 * r.acc_cal_upper:.1f}] "
                f"({'inside' if r.acc_cal_inside else 'outside'}), parameter-only [{100 * r.acc_lower:.1f}, "
                f"{100 * r.acc_upper:.1f}] ({'inside' if r.acc_inside else 'outside'}) vs {100 * r.acc_actual:.1f}")
        return "\n".join(lines)


def check_chain(scores: pd.DataFrame, n_boot: int = 200, seed: int = 0, level: float = 0.95) -> OwnLadderCheck:
    """Fit the chain on the ladder rows of ``scores`` (step 1: Chinchilla's law on (N, D) → task loss; step 2:
    the sigmoid on the ladder's (task loss, accuracy) plus (0, 1)) and predict each target.

    Intervals: ladder runs resampled with replacement and both steps refitted (a run is the independent unit:
    each has its own initialisation and data order), then a normal draw of the target's own sampling noise over
    the items added, its task loss's and its accuracy's standard error over the 1,000 items. Every model answers
    the same items, so part of that noise is shared with the ladder: adding it in full makes the interval wider,
    not narrower."""
    ladder, targets = chain_tables(scores)
    fit = fit_chain(ladder, ladder, "loss", "acc", task="probe cloze")
    cal = chain_calibration(fit, ladder, ladder, "loss", "acc", level=level)
    acc_iv = chain_interval(fit, ladder, ladder, "loss", "acc", targets, noise_sd=targets["accuracy_se"].to_numpy(),
                            n_boot=n_boot, seed=seed, level=level, actual="acc", calibration=cal)
    law1 = _warm(fit.step1.law, fit.step1)   # the same warm-started refit chain_interval's step 1 uses
    n, d = targets["n"].to_numpy(float), targets["d"].to_numpy(float)

    def loss_at_targets(s1: pd.DataFrame) -> np.ndarray:
        f1 = fit_law(law1, {"n": s1["n"].to_numpy(float), "d": s1["d"].to_numpy(float)}, s1["loss"].to_numpy(float))
        if f1.status == "failed":
            raise ValueError("refit failed")
        return f1.predict({"n": n, "d": d})

    reps = bootstrap_by_run([ladder], loss_at_targets, n_boot, seed)
    reps = reps[np.all(np.isfinite(reps), axis=1)]
    reps = reps + np.random.default_rng(seed + 1).normal(size=reps.shape) * targets["task_loss_se"].to_numpy(float)
    q = (1 - level) / 2
    lo, hi = np.quantile(reps, [q, 1 - q], axis=0)
    loss_pred = fit.predict_loss(n, d)
    rows = []
    for i, (t, iv) in enumerate(zip(targets.itertuples(), acc_iv)):
        rows.append(dict(
            run_id=t.run_id, model=t.model, n=t.n, d=t.d, loss_pred=float(loss_pred[i]), loss_lower=float(lo[i]),
            loss_upper=float(hi[i]), loss_actual=float(t.loss), loss_miss=float(loss_pred[i] - t.loss),
            loss_inside=bool(lo[i] <= t.loss <= hi[i]), loss_noise_sd=float(t.task_loss_se),
            loss_below_ladder=float(fit.loss_outside(loss_pred[i])), acc_pred=iv.point, acc_lower=iv.lower,
            acc_upper=iv.upper, acc_actual=float(t.acc), acc_miss=float(iv.point - t.acc), acc_inside=bool(iv.inside),
            acc_cal_lower=iv.cal_lower, acc_cal_upper=iv.cal_upper, acc_cal_inside=bool(iv.cal_inside),
            acc_noise_sd=iv.noise_sd, acc_at_actual_loss=float(fit.accuracy_at(t.loss)[0]),
            compute_ratio=float(t.compute / ladder["compute"].max())))
    failed = max(acc_iv[0].n_failed, n_boot - len(reps))
    span = dict(n_min=float(ladder["n"].min()), n_max=float(ladder["n"].max()),
                tokens_per_param=sorted(set(np.round(ladder["tokens_per_param"], 1).tolist())),
                compute_max=float(ladder["compute"].max()), items=int(scores["items"].min()))
    return OwnLadderCheck(fit, pd.DataFrame(rows), len(ladder), n_boot, failed, level, span,
                          calibration=cal.to_dict())


@dataclass(frozen=True)
class LineBaseline:
    """Accuracy as a straight line in log N through the ladder's runs at the targets' tokens per parameter:
    its predictions for the targets with the line's t prediction interval for a new run (``table``: model,
    pred, lower, upper, actual, miss, inside; fractions), and what it was fitted on."""

    table: pd.DataFrame
    tokens_per_param: float
    n_points: int
    slope: float
    level: float
    ladder_span: tuple[float, float]     # the lowest and highest accuracy of the whole ladder
    unit: str = "the line's residual scatter (t on n − 2 df): each run one point"

    def to_dict(self) -> dict[str, Any]:
        return to_jsonable({"targets": self.table.to_dict(orient="records"), "tokens_per_param":
                            self.tokens_per_param, "n_points": self.n_points, "slope_per_decade": self.slope,
                            "level": self.level, "ladder_span": list(self.ladder_span), "unit": self.unit})

    def summary(self) -> str:
        lines = [f"straight line of accuracy on log10 N through the {self.n_points} ladder runs at "
                 f"{self.tokens_per_param:g} tokens per parameter",
                 f"({100 * self.slope:+.1f} points per decade); {self.level:.0%} prediction intervals for a new run"]
        for r in self.table.itertuples():
            lines.append(f"  {r.model}: {100 * r.pred:.1f} [{100 * r.lower:.1f}, {100 * r.upper:.1f}] vs "
                         f"{100 * r.actual:.1f} ({'inside' if r.inside else 'outside'})")
        return "\n".join(lines)


def line_baseline(scores: pd.DataFrame, level: float = 0.95) -> LineBaseline:
    """The rival a chain must beat: the ladder's accuracies at the targets' tokens per parameter (the runs of
    that length), a least-squares line on log10 N, read at each target's N, with the t prediction interval for
    a new point, se·sqrt(1 + 1/n + (x − x̄)²/Sxx) on n − 2 df (the residual scatter holds the items' noise)."""
    from scalinglab.fitting.frontier.wls import t_quantile, wls_line

    ladder, targets = chain_tables(scores)
    tpp = float(np.round(targets["tokens_per_param"], 1).max())
    rows = ladder[np.round(ladder["tokens_per_param"], 1) == tpp]
    if len(rows) < 3:
        raise UserError(f"the line baseline needs at least 3 ladder runs at {tpp:g} tokens per parameter; "
                        f"the table has {len(rows)}")
    x, y = np.log10(rows["n"].to_numpy(float)), rows["acc"].to_numpy(float)
    line = wls_line(x, y, level=level)
    resid = y - line.intercept - line.slope * x
    df = len(x) - 2
    s = float(np.sqrt(resid @ resid / df))
    sxx = float(((x - x.mean()) ** 2).sum())
    q = t_quantile(0.5 + level / 2, df)
    out = []
    for t in targets.itertuples():
        x0 = np.log10(t.n)
        pred = line.intercept + line.slope * x0
        h = q * s * np.sqrt(1 + 1 / len(x) + (x0 - x.mean()) ** 2 / sxx)
        out.append(dict(model=t.model, pred=float(pred), lower=float(pred - h), upper=float(pred + h),
                        actual=float(t.acc), miss=float(pred - t.acc), inside=bool(pred - h <= t.acc <= pred + h)))
    return LineBaseline(pd.DataFrame(out), tpp, len(x), float(line.slope), level,
                        (float(ladder["acc"].min()), float(ladder["acc"].max())))


def plot_check(scores: pd.DataFrame, check: OwnLadderCheck, level: float | None = None):
    """Two panels: (left) task loss against compute, the ladder by tokens per parameter with the step-1 law along
    each length, and the targets actual (o) and predicted (x, with the interval); (right) accuracy against task
    loss, the ladder with ±1 SE over items, the sigmoid, chance, and the targets actual and chained
    (matplotlib imported inside)."""
    import matplotlib.pyplot as plt

    level = check.level if level is None else level
    fit, tab = check.fit, check.table
    ladder, targets = chain_tables(scores)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10.5, 4.0))
    mult = np.round(ladder["tokens_per_param"], 1)
    n_grid = np.geomspace(ladder["n"].min() * 0.9, ladder["n"].max() * 1.1, 40)
    n_out = np.geomspace(ladder["n"].max() * 1.1, targets["n"].max() * 1.1, 30)
    target_mult = set(np.round(targets["tokens_per_param"], 1))
    for i, m in enumerate(sorted(mult.unique())):
        rows = ladder[mult == m]
        colour = plt.cm.viridis(0.85 * i / max(1, mult.nunique() - 1))
        ax1.scatter(rows["compute"], rows["loss"], s=22, color=colour, label=f"ladder, {m:g} tokens/param")
        ax1.plot(6 * m * n_grid ** 2, fit.predict_loss(n_grid, m * n_grid), color=colour, lw=0.9)
        if m in target_mult:  # the law extrapolated along the targets' length
            ax1.plot(6 * m * n_out ** 2, fit.predict_loss(n_out, m * n_out), color=colour, lw=0.9, ls="--")
        ax2.errorbar(rows["loss"], 100 * rows["acc"], yerr=100 * rows["accuracy_se"], fmt="o", ms=4, color=colour,
                     lw=0.7, label=f"ladder, {m:g} tokens/param")
    c = 6 * tab["n"] * tab["d"]
    ax1.scatter(c, tab["loss_actual"], marker="o", facecolor="none", edgecolor="k", s=50, zorder=3,
                label="targets, actual")
    ax1.errorbar(c, tab["loss_pred"], yerr=[tab["loss_pred"] - tab["loss_lower"], tab["loss_upper"] - tab["loss_pred"]],
                 fmt="x", color="C3", ms=7, capsize=3, zorder=3, label=f"targets, predicted ({level:.0%} interval)")
    for r, cc in zip(tab.itertuples(), c):
        ax1.annotate(r.model.split(" ")[0], (cc, r.loss_actual), textcoords="offset points", xytext=(8, -3),
                     fontsize=7)
    ax1.set_xscale("log")
    ax1.set_xlim(right=c.max() * 2.5)
    ax1.set_xlabel("training compute C = 6ND (FLOP)")
    ax1.set_ylabel("task loss (bits per byte of the correct word)")
    ax1.set_title("step 1: (N, D) → task loss", fontsize=9)
    ax1.legend(fontsize=7)
    lo = min(tab["loss_lower"].min(), ladder["loss"].min()) - 0.05
    x = np.linspace(lo, ladder["loss"].max() + 0.05, 200)
    ax2.plot(x, 100 * fit.accuracy_at(x), color="0.2", lw=1.1, label="fitted sigmoid (through (0, 100%))")
    ax2.axhline(50, color="0.5", lw=0.7, ls=":", label="chance (two classes)")
    ax2.errorbar(tab["loss_actual"], 100 * tab["acc_actual"], yerr=100 * tab["acc_noise_sd"], fmt="o", mfc="none",
                 mec="k", ecolor="k", ms=7, capsize=3, zorder=3, label="targets, actual (±1 SE)")
    ax2.errorbar(tab["loss_pred"], 100 * tab["acc_pred"],
                 yerr=[100 * (tab["acc_pred"] - tab["acc_lower"]), 100 * (tab["acc_upper"] - tab["acc_pred"])],
                 fmt="x", color="C3", ms=7, capsize=3, zorder=3, label=f"targets, chained ({level:.0%} interval)")
    ax2.set_xlabel("task loss (bits per byte of the correct word)")
    ax2.set_ylabel("accuracy (%)")
    ax2.set_title("step 2: task loss → accuracy", fontsize=9)
    ax2.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    return fig
