"""Figures of the chain: task loss against compute, accuracy against task loss with the fitted sigmoid, and
predicted against actual accuracy (matplotlib imported inside: the CLI starts without it)."""

from __future__ import annotations

import numpy as np
import pandas as pd


def _axes(n: int, width: float = 3.0, height: float = 2.6):
    import matplotlib.pyplot as plt

    cols = min(4, n)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, axes.flat


def loss_vs_compute(fits, step1: pd.DataFrame, targets: pd.DataFrame, names: dict[str, str], flops_per_token):
    """Per task: each run's task loss against its compute (C = D × FLOPs per token), the fitted step-1 curve
    along each ladder size's D and to the targets, and the targets' actual (o) and predicted (x) losses."""
    fig, axes = _axes(len(fits))
    sizes = list(dict.fromkeys(step1["n"]))
    colours = dict(zip(sizes, ["#1b9e77", "#d95f02", "#7570b3", "#e7298a"]))
    for ax, (task, fit) in zip(axes, fits.items()):
        for n in sizes:
            rows = step1[step1["n"] == n]
            ax.scatter(rows["c"], rows[f"{task}_loss"], s=14, color=colours[n], label=f"ladder, N = {n:.2g}")
            d = np.geomspace(rows["d"].min() * 0.8, rows["d"].max() * 1.2, 40)
            ax.plot(d * flops_per_token[n], fit.predict_loss(np.full_like(d, n), d), color=colours[n], lw=0.8)
        for _, t in targets.iterrows():
            d = np.geomspace(t["d"] / 30, t["d"], 40)
            ax.plot(d * t["c"] / t["d"], fit.predict_loss(np.full_like(d, t["n"]), d), color="0.4", lw=0.8, ls="--")
            ax.scatter([t["c"]], [t[f"{task}_loss"]], marker="o", facecolor="none", edgecolor="k", s=30,
                       label="target, actual" if _ == 0 else None)
            ax.scatter([t["c"]], fit.predict_loss(t["n"], t["d"]), marker="x", color="k", s=30,
                       label="target, predicted" if _ == 0 else None)
        ax.set_xscale("log")
        _label(ax, names.get(task, task), "training compute C (FLOP)", "task loss (bits per byte)")
    axes[0].legend(fontsize=6, loc="upper right")
    fig.tight_layout()
    return fig


def accuracy_vs_loss(fits, step2: pd.DataFrame, targets: pd.DataFrame, names: dict[str, str]):
    """Per task: the ladder's checkpoints (accuracy against task loss), the fitted sigmoid from 0 to the
    ladder's largest loss, and the targets at their actual loss (o) and at the predicted one (x)."""
    fig, axes = _axes(len(fits))
    for ax, (task, fit) in zip(axes, fits.items()):
        ax.scatter(step2[f"{task}_loss"], 100 * step2[f"{task}_acc"], s=2, color="0.6", alpha=0.5,
                   label="ladder checkpoints", rasterized=True)
        x = np.linspace(0.0, fit.loss_range[1] * 1.05, 200)
        ax.plot(x, 100 * fit.accuracy_at(x), color="C0", lw=1.2, label="fitted sigmoid")
        ax.axvline(fit.loss_range[0], color="C0", lw=0.6, ls=":", label="ladder's lowest loss")
        ax.scatter(targets[f"{task}_loss"], 100 * targets[f"{task}_acc"], marker="o", facecolor="none",
                   edgecolor="k", s=30, label="targets, actual")
        pl = fit.predict_loss(targets["n"], targets["d"])
        ax.scatter(pl, 100 * fit.accuracy_at(pl), marker="x", color="C3", s=30, label="targets, chained")
        _label(ax, names.get(task, task), "task loss (bits per byte)", "accuracy (%)")
    axes[0].legend(fontsize=6, loc="upper right")
    fig.tight_layout()
    return fig


def predicted_vs_actual(table: pd.DataFrame, level: float):
    """Each task × target: the chained prediction with its two intervals (thin: parameter-only, runs resampled;
    thick: calibrated on ladder runs left out, where the table has it) against the actual accuracy, beside the
    answer-probability chain's prediction."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.2, 4.8))
    lo = min(table["actual"].min(), table["lower"].min()) - 3
    hi = max(table["actual"].max(), table["upper"].max()) + 3
    ax.plot([lo, hi], [lo, hi], color="0.5", lw=0.8, label="prediction = actual")
    for k, (target, marker) in enumerate((("7B", "o"), ("13B", "s"))):
        t = table[table["target"] == target]
        ax.errorbar(t["actual"], t["ours"], yerr=[t["ours"] - t["lower"], t["upper"] - t["ours"]], fmt=marker,
                    ms=5, color="C0", elinewidth=0.8, capsize=2,
                    label=f"{target}, bits-per-byte chain, {level:.0%} parameter-only")
        if "cal_lower" in t:
            ax.errorbar(t["actual"], t["ours"], yerr=[t["ours"] - t["cal_lower"], t["cal_upper"] - t["ours"]],
                        fmt="none", color="C1", elinewidth=2.5, alpha=0.8,
                        label=f"both targets, {level:.0%} calibrated (ladder runs left out)" if k == 0 else None)
        ax.scatter(t["actual"], t["prob_chain"], marker=marker, facecolor="none", edgecolor="C3", s=30,
                   label=f"{target}, answer-probability chain")
        for r in t.itertuples():
            if k == 0:
                ax.annotate(r.display, (r.actual, r.ours), fontsize=6, xytext=(4, -8), textcoords="offset points")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("actual accuracy (%)")
    ax.set_ylabel("predicted accuracy (%)")
    ax.legend(fontsize=6, loc="upper left")
    fig.tight_layout()
    return fig


def plot_report(report, path) -> None:
    """`scalinglab chain --plot`: accuracy against task loss per task, with the sigmoid and the targets."""
    import matplotlib

    matplotlib.use("Agg")
    fig, axes = _axes(len(report.fits))
    o = report.options
    for ax, (task, fit) in zip(axes, report.fits.items()):
        x = np.linspace(0.0, fit.loss_range[1] * 1.05, 200)
        ax.plot(x, 100 * fit.accuracy_at(x), color="C0", label="fitted step 2")
        ax.axvspan(*fit.loss_range, color="C0", alpha=0.1, label="ladder's losses")
        t = report.targets
        ax.scatter(t[f"{task}_pred_loss"], 100 * t[f"{task}_pred"], marker="x", color="C3", label="targets")
        ax.set_title(task, fontsize=9)
        ax.set_xlabel(f"task loss ({task}{o.loss_suffix})", fontsize=8)
        ax.set_ylabel("accuracy (%)", fontsize=8)
    axes[0].legend(fontsize=6)
    fig.tight_layout()
    from scalinglab.files import atomic_write

    with atomic_write(path, "--plot") as tmp:
        fig.savefig(tmp, format="png", dpi=120)


def _label(ax, title: str, xlabel: str, ylabel: str) -> None:
    """One task's panel: its title and axis labels, in the small type a grid of eight panels needs."""
    ax.set_title(title, fontsize=9)
    ax.set_xlabel(xlabel, fontsize=8)
    ax.set_ylabel(ylabel, fontsize=8)
    ax.tick_params(labelsize=7)
