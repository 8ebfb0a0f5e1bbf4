"""Predictions from a fitted law with two named intervals, and allocations that say how far they extrapolate.

- The **mean** interval is for the law itself, L(N, D): the percentiles of the bootstrap replicates'
  predictions (parameter uncertainty only).
- The **new-run** interval is for the loss one more run at (N, D) would reach: each bootstrap replicate's
  prediction times exp(σ·z), z standard normal, where σ is the spread of the fit's residuals in log loss
  (``residual_sd``). It adds run-to-run noise (seed, data order), so it is always the wider; a held-out run
  should fall inside it at about the stated rate when the law's form holds.

Without a bootstrap the mean interval is absent and the new-run interval is the noise alone,
L̂·exp(±z_q σ). Draws are seeded (the bootstrap's seed), so a saved fit predicts the same digits every time.
Every prediction and allocation carries ``fitting.prediction.domain``'s distance from the fitted runs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from scalinglab.fitting.allocation import allocation_summary
from scalinglab.fitting.prediction.domain import Domain, describe
from scalinglab.fitting.results import LawFit


def residual_sd(result: LawFit, N, D, L) -> float:
    """σ of the log-loss residuals, sqrt(Σ r² / (n − free parameters)), r = log L − log L̂
    (``predictions.residual_sd`` for Chinchilla's inputs)."""
    from scalinglab.fitting.prediction.held_out import residual_sd as sd

    return sd(result, {"n": N, "d": D}, L)


def loss_intervals(result: LawFit, N, D, sigma: float | None, level: float | None = None,
                   seed: int | None = None) -> dict[str, np.ndarray]:
    """``predictions.intervals`` at points (N, D): predicted loss, mean interval, new-run interval, draws."""
    from scalinglab.fitting.prediction.held_out import intervals

    N, D = np.broadcast_arrays(np.asarray(N, float).ravel(), np.asarray(D, float).ravel())
    return intervals(result, {"n": N, "d": D}, sigma, level, seed)


def allocations(result: LawFit, C, N, D, L) -> list[dict[str, Any]]:
    """``LawFit.allocate``'s rows for budgets C, each with the new-run interval of the loss there
    (``loss_new_run``), σ, and its distance from the fitted runs (N, D, L) (``extrapolation``)."""
    rows = result.allocate(C)
    sigma = residual_sd(result, N, D, L)
    domain = Domain.from_runs(N, D)
    for row, dist in zip(rows, domain.rows([r["n_opt"] for r in rows], [r["d_opt"] for r in rows])):
        iv = loss_intervals(result, row["n_opt"], row["d_opt"], sigma, row.get("level"))
        row["loss_new_run"] = (float(iv["new_lo"][0]), float(iv["new_hi"][0]))
        row["residual_sd"] = sigma
        row["extrapolation"] = dist
    return rows


def allocation_text(rows: list[dict[str, Any]]) -> str:
    """``allocation.allocation_summary``, plus the new-run interval of the loss and each row's distance from the
    fitted runs, with a warning when the allocation lies outside them."""
    blocks = allocation_summary(rows).split("\n\n")
    out = []
    for block, row in zip(blocks, rows):
        lines = block.split("\n")
        if "ci" in row:  # the table's intervals are the mean law's: say so next to the loss
            lines = [ln + "   mean law" if ln.lstrip().startswith("loss there") else ln for ln in lines]
        lo, hi = row["loss_new_run"]
        what = "+ residual noise" if "ci" in row else "residual noise only (no bootstrap: the law taken as exact)"
        lines.append(f"  {'new run':<14}{'':>12}   [{lo:.4f}, {hi:.4f}]   a new run there: {what} "
                     f"(sd {row['residual_sd']:.3g} in log loss)")
        ext = row["extrapolation"]
        lines.append(f"  domain: {describe(ext)}")
        if ext["outside"]:
            lines.append("  WARNING: this allocation lies outside the fitted runs: it extrapolates the law's form, "
                         "which the runs cannot check there")
        out.append("\n".join(lines))
    return "\n\n".join(out)


def prediction_rows(result: LawFit, N, D, domain: Domain, sigma: float, level: float | None = None,
                    actual=None) -> list[dict[str, Any]]:
    """One dict per point: N, D, C, predicted, ``mean_interval``, ``new_run_interval``, ``extrapolation``
    (and ``actual``, ``rel_error`` when given)."""
    N, D = np.broadcast_arrays(np.asarray(N, float).ravel(), np.asarray(D, float).ravel())
    iv = loss_intervals(result, N, D, sigma, level)
    rows = []
    for i, ext in enumerate(domain.rows(N, D)):
        row = {"N": float(N[i]), "D": float(D[i]), "C": float(6 * N[i] * D[i]), "predicted": float(iv["predicted"][i]),
               "mean_interval": [float(iv["mean_lo"][i]), float(iv["mean_hi"][i])],
               "new_run_interval": [float(iv["new_lo"][i]), float(iv["new_hi"][i])], "extrapolation": ext}
        if actual is not None:
            a = float(np.asarray(actual, float).ravel()[i])
            row.update(actual=a, rel_error=(row["predicted"] - a) / a)
        rows.append(row)
    return rows


def with_domain(predictions, N, D):
    """``holdout.Predictions`` with each row's distance from the fitted runs (N, D)."""
    from dataclasses import replace

    return replace(predictions, extrapolation=tuple(Domain.from_runs(N, D).rows(predictions.N, predictions.D)))
