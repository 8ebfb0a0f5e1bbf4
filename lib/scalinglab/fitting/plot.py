"""The figure `scalinglab fit --plot` draws: the runs against the fitted law, and what it misses.

Top: loss against training compute C = 6ND, one point per run coloured by N,
the fitted law L(N, C/(6N)) for a few model sizes spanning the runs, and the
compute-optimal frontier. Bottom: each run's relative error (fitted − actual)/
actual, the sign convention of ``holdout``. Runs the law was not fitted to
(``--holdout``, ``--predict``) are hollow diamonds in both panels.

matplotlib is imported inside ``fit_figure`` only, so this module costs
nothing on the CLI's path until a figure is asked for.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from scalinglab.errors import OptionError

PLOT_FORMATS = (".png", ".pdf", ".svg")
N_CURVES = 6  # fitted curves drawn at most: more turn the panel into a smear


def check_plot_path(path) -> Path:
    """The path --plot will write, or a UserError (unknown extension, no such folder) before any fitting."""
    p = Path(path)
    if p.suffix.lower() not in PLOT_FORMATS:
        raise OptionError(f"{{plot}} {path}: the file must end in {', '.join(PLOT_FORMATS)} (the format "
                          f"follows the extension), not {p.suffix or 'nothing'!r}", "plot")
    if not p.parent.is_dir():
        raise OptionError(f"{{plot}} {path}: no folder {str(p.parent)!r} to write it in", "plot")
    return p


def curve_sizes(N, k: int = N_CURVES) -> np.ndarray:
    """Up to ``k`` of the runs' model sizes, evenly spread in log N (all of them when there are few)."""
    sizes = np.unique(np.asarray(N, float))
    if sizes.size <= k:
        return sizes
    targets = np.quantile(np.log(sizes), np.linspace(0, 1, k))
    return np.unique(sizes[[int(np.argmin(np.abs(np.log(sizes) - t))) for t in targets]])


def plotted_sizes(N, other_N=(), k: int = N_CURVES) -> np.ndarray:
    """The sizes that get a curve: up to 3 of the runs the law was not fitted to, the rest from the fitted runs."""
    other_N = np.asarray(other_N, float)
    n_other = min(3, np.unique(other_N).size)
    return np.unique(np.concatenate([curve_sizes(N, k - n_other), curve_sizes(other_N, n_other)]))


def _constraint_note(result) -> str:
    notes = [f"{k} fixed" for k in result.fixed]
    if result.tied:
        notes.append("β = α")
    return f" ({', '.join(notes)})" if notes else ""


def fit_figure(result, N, D, L, *, others=None, others_label: str = "held out", title: str | None = None):
    """A matplotlib Figure of ``result`` against the runs it was fitted to (N, D, L) and, if given,
    ``others``: (N, D, L) of runs it was not fitted to."""
    from matplotlib.colors import LogNorm
    from matplotlib.figure import Figure

    N, D, L = (np.asarray(x, float).ravel() for x in (N, D, L))
    oN, oD, oL = (np.asarray(x, float).ravel() for x in others) if others is not None else (np.empty(0),) * 3
    allN, allD, allL = np.concatenate([N, oN]), np.concatenate([D, oD]), np.concatenate([L, oL])
    norm = LogNorm(allN.min(), allN.max() if allN.max() > allN.min() else allN.min() * 10)
    cmap = "viridis"

    fig = Figure(figsize=(8.0, 7.0), layout="constrained")
    ax, res_ax = fig.subplots(2, 1, sharex=True, height_ratios=(3, 1.3))

    # The law for a few sizes, each over the D of the runs nearest that size (so that a curve shows
    # the law where there are runs to compare it with), and the law's compute-optimal frontier. Sizes
    # the law was not fitted to get curves of their own (up to 3): otherwise their runs would stretch
    # the nearest fitted size's curve over their D range, and the eye would compare them with the wrong N.
    sizes = plotted_sizes(N, oN)
    edges = np.concatenate([[-np.inf], (np.log(sizes[1:]) + np.log(sizes[:-1])) / 2, [np.inf]])
    for n, lo_edge, hi_edge in zip(sizes, edges[:-1], edges[1:]):
        near = (np.log(allN) >= lo_edge) & (np.log(allN) < hi_edge)
        d_grid = np.geomspace(allD[near].min() / 1.5, allD[near].max() * 1.5, 100)
        ax.plot(6 * n * d_grid, result.loss(n, d_grid), color=_colour(cmap, norm, n), lw=1.2, alpha=0.9, zorder=1)
    c_grid = np.geomspace((6 * allN * allD).min(), (6 * allN * allD).max(), 200)
    n_opt = result.n_opt(c_grid)
    ax.plot(c_grid, result.loss(n_opt, c_grid / (6 * n_opt)), "k--", lw=1.2, label="compute-optimal frontier",
            zorder=1)

    fitted_rel = result.loss(N, D) / L - 1
    sc = ax.scatter(6 * N * D, L, c=N, cmap=cmap, norm=norm, s=22, edgecolors="k", linewidths=0.3,
                    label=f"fitted runs ({N.size})", zorder=3)
    res_ax.scatter(6 * N * D, 100 * fitted_rel, c=N, cmap=cmap, norm=norm, s=18, edgecolors="k",
                   linewidths=0.3, zorder=3)
    if oN.size:
        other_rel = result.loss(oN, oD) / oL - 1
        colours = [_colour(cmap, norm, n) for n in oN]
        ax.scatter(6 * oN * oD, oL, facecolors="none", edgecolors=colours, marker="D", s=40, linewidths=1.2,
                   label=f"{others_label} ({oN.size})", zorder=4)
        res_ax.scatter(6 * oN * oD, 100 * other_rel, facecolors="none", edgecolors=colours, marker="D", s=34,
                       linewidths=1.2, zorder=4)

    pad = 0.04 * (allL.max() - allL.min() or allL.max())
    ax.set(xscale="log", ylim=(allL.min() - pad, allL.max() + pad), ylabel="loss")
    ax.legend(fontsize=8, loc="upper right")
    law = (f"L = {result.E:.3g} + {result.A:.4g}/N^{result.alpha:.3f} + {result.B:.4g}/D^{result.beta:.3f}"
           f"{_constraint_note(result)}")
    ax.set_title(f"{title}\n{law}" if title else law, fontsize=10)
    res_ax.axhline(0, color="k", lw=0.8)
    lo, hi = res_ax.get_ylim()
    res_ax.set_ylim(min(lo, -0.5), max(hi, 0.5))  # noiseless runs would otherwise show rounding at 1e-14
    res_ax.set(xlabel="training compute C = 6ND (FLOP)", ylabel="(fitted − actual)/actual, %")
    fig.colorbar(sc, ax=[ax, res_ax], label="N (parameters)")
    return fig


def _colour(cmap: str, norm, n: float):
    from matplotlib import colormaps

    return colormaps[cmap](norm(n))


def law_figure(fitted, others=None, *, others_label: str = "held out", target: str = "loss",
               title: str | None = None):
    """A matplotlib Figure for any registry law (``fitting.laws``), whose inputs need not be N and D: each
    run's predicted against actual value (left) and log(predicted/actual) against the actual value (right).
    ``fitted`` and ``others`` are ``predictions.Predictions`` of the runs the law was fitted to and of runs it was not;
    an interval, where a bootstrap gave one, is drawn as a vertical bar."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11.0, 4.6), layout="constrained")
    ax, res_ax = fig.subplots(1, 2)
    groups = [(fitted, f"fitted runs ({len(fitted.rows)})", dict(color="C0", s=22, edgecolors="k", linewidths=0.3))]
    if others is not None and len(others.rows):
        groups.append((others, f"{others_label} ({len(others.rows)})",
                       dict(facecolors="none", edgecolors="C3", marker="D", s=40, linewidths=1.2)))
    for pred, label, style in groups:
        if pred.has_interval:
            ax.vlines(pred.actual, pred.lower, pred.upper, color="0.75", lw=1, zorder=1)
        ax.scatter(pred.actual, pred.predicted, label=label, zorder=3, **style)
        res_ax.scatter(pred.actual, 100 * pred.log_error, zorder=3, **style)
    every = np.concatenate([g[0].actual for g in groups] + [g[0].predicted for g in groups])
    every = every[np.isfinite(every)]
    lim = np.array([every.min(), every.max()])
    ax.plot(lim, lim, "k-", lw=0.8, label="predicted = actual", zorder=2)
    ax.set(xlabel=f"actual {target}", ylabel=f"predicted {target}")
    ax.legend(fontsize=8, loc="upper left")
    res_ax.axhline(0, color="k", lw=0.8)
    lo, hi = res_ax.get_ylim()
    res_ax.set_ylim(min(lo, -0.5), max(hi, 0.5))
    res_ax.set(xlabel=f"actual {target}", ylabel="log(predicted / actual), %")
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


def save_figure(path, fig) -> Path:
    """Write ``fig`` to ``path`` (format from the extension), or a one-line UserError; returns the path."""
    from scalinglab.files import atomic_write

    p = check_plot_path(path)
    with atomic_write(p, f"--plot {path}") as tmp:   # the old figure stays whole if drawing fails
        fig.savefig(tmp, dpi=130)
    return p


def save_fit_figure(path, result, N, D, L, **kwargs) -> Path:
    """Draw ``fit_figure`` and write it to ``path`` (format from the extension); returns the path."""
    return save_figure(path, fit_figure(result, N, D, L, **kwargs))
