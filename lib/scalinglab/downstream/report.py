"""What `scalinglab chain` and `scalinglab translate` report: chains fitted on a table of ladder evaluations and
their predictions at targets; a saved loss law carried to another dataset through a loss-to-loss fit.

The chain's input is one row per evaluation of a ladder run: a run label, N, D (tokens so far) and per task a
loss column and an accuracy column (fractions). Step 1 takes each run's mean of its last ``last`` evaluations
at its final D; step 2 every evaluation after the first ``skip`` share, smoothed by a ``smooth``-point trailing
mean (Bhagia et al.'s procedure; ``last = 1, skip = 0, smooth = 1`` uses the rows as given).

Each prediction gets the interval notebook 07 gives (``downstream.intervals``): calibrated on ladder runs left
out in turn (always), and with ``n_boot`` the parameter-only bootstrap over runs beside it; both add the
target's checkpoint noise: its ``<task>_acc_sd`` column where the targets give one (the SD of the actual
accuracy), else the ladder's own (``ladder_noise``).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from scalinglab.downstream.chain import ChainFit, check_accuracy, fit_chain, warn_if_outside
from scalinglab.downstream.intervals import ChainInterval, chain_calibration, chain_interval
from scalinglab.downstream.ladder import trailing_mean
from scalinglab.errors import OptionError, UserError, printable, row_name, shown
from scalinglab.serialization import to_jsonable


@dataclass(frozen=True)
class ChainOptions:
    loss_suffix: str = "_loss"
    acc_suffix: str = "_acc"
    run_col: str = "run"
    last: int = 5
    skip: float = 0.1
    smooth: int = 5
    step1_law: str = "chinchilla"
    step2_law: str = "sigmoid"
    anchor: bool = True
    n_boot: int = 0
    seed: int = 0
    level: float = 0.95
    noise_suffix: str = "_acc_sd"


@dataclass(frozen=True)
class ChainReport:
    """Each task's chain and its predictions (fractions) at each target, with intervals when bootstrapped."""

    fits: dict[str, ChainFit]
    targets: pd.DataFrame                     # n, d, a label, and per task its prediction (and actual)
    intervals: dict[str, list[ChainInterval]] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    options: ChainOptions = ChainOptions()
    calibrations: dict[str, Any] = field(default_factory=dict)   # task -> UnitCalibration
    noise_source: dict[str, str] = field(default_factory=dict)   # task -> where the target noise came from

    def to_dict(self) -> dict[str, Any]:
        return to_jsonable({"fits": {t: f.to_dict() for t, f in self.fits.items()},
                            "predictions": self.targets.to_dict("records"),
                            "intervals": {t: [i.to_dict() for i in ivs] for t, ivs in self.intervals.items()},
                            "calibration": {t: c.to_dict() for t, c in self.calibrations.items()},
                            "noise_source": self.noise_source,
                            "warnings": list(self.warnings), "options": self.options.__dict__})

    def summary(self) -> str:
        lines = []
        for task, fit in self.fits.items():
            lines.append(fit.summary())
            if task in self.calibrations:
                cal = self.calibrations[task]
                lines.append(f"  intervals add the target's checkpoint noise ({self.noise_source.get(task, '')}); "
                             + (f"calibrated on {cal.n_units} ladder runs left out in turn: their final accuracy "
                                f"missed by {100 * cal.mu:+.2f} points on average, sd {100 * cal.scale:.2f} (the "
                                "chain's error among the ladder's runs; far beyond them it can be larger)"
                                if cal.ok else cal.reason))
            for i, row in self.targets.iterrows():
                pred = row[f"{task}_pred"]
                txt = (f"  {printable(row['target'], 60)}: N = {row['n']:.3g}, D = {row['d']:.3g}: "
                       f"accuracy {100 * pred:.2f}")
                if task in self.intervals:
                    iv = self.intervals[task][i]
                    txt += (f" [{100 * iv.cal_lower:.2f}, {100 * iv.cal_upper:.2f}] ({iv.level:.0%} calibrated, "
                            "ladder runs left out)")
                    if iv.n_boot:
                        txt += f", parameter-only [{100 * iv.lower:.2f}, {100 * iv.upper:.2f}] (runs resampled)"
                act = f"{task}{self.options.acc_suffix}"
                if act in row and pd.notna(row[act]):
                    txt += f"; actual {100 * row[act]:.2f}"
                lines.append(txt)
        lines += [f"warning: {w}" for w in self.warnings]
        return "\n".join(lines)


def _need(df: pd.DataFrame, cols, label: str) -> None:
    for c in cols:
        if c not in df.columns:
            raise UserError(f"{label}: no column {c!r}")


# No loss here is anywhere near 100 (nats or bits per token or byte: a uniform guess over 50,000 tokens is 10.8
# nats): a "loss" column that holds N, D or C is a column mix-up, refused rather than fitted.
MAX_LOSS = 100.0


def _numbers(df: pd.DataFrame, col: str, label: str, *, positive: bool = True, loss: bool = False) -> np.ndarray:
    """A column as finite numbers (> 0 with ``positive``, >= 0 and below MAX_LOSS with ``loss``), or a one-line
    UserError naming the file, column, line and value."""
    raw = df[col]
    v = pd.to_numeric(raw, errors="coerce").to_numpy(float)
    bad = ~np.isfinite(v)
    if positive:
        bad |= v <= 0
    if loss:
        bad |= (v < 0) | (v >= MAX_LOSS)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        what = (f"a loss (>= 0 and below {MAX_LOSS:g})" if loss else "a positive number" if positive
                else "a finite number")
        cell = raw.iloc[i]
        cell = f"{cell:g}" if isinstance(cell, (int, float, np.number)) else shown(cell)
        raise UserError(f"{label}: column {col!r}, {row_name(df.index, i)}: {cell} is not {what}")
    return v


def check_chain_options(o: ChainOptions, tasks) -> None:
    """The chain's options in range, each a one-line UserError: ``--last 0`` read every evaluation (a slice
    from -0), ``--skip nan`` and ``--smooth 0`` ended in tracebacks, a task named twice in a KeyError."""
    def whole(name, v, lo):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
            raise UserError(f"--{name} {v!r}: must be a whole number >= {lo}")

    whole("last", o.last, 1)
    whole("smooth", o.smooth, 1)
    whole("bootstrap", o.n_boot, 0)
    whole("seed", o.seed, 0)
    if not (isinstance(o.skip, (int, float)) and math.isfinite(o.skip) and 0 <= o.skip < 1):
        raise OptionError(f"{{skip}} {o.skip!r}: the share of each run's first evaluations dropped, in [0, 1)", "skip")
    if not (isinstance(o.level, (int, float)) and 0 < o.level < 1):
        raise OptionError(f"{{level}} {o.level!r}: must lie between 0 and 1", "level")
    seen = set()
    for t in tasks:
        if t in seen:
            raise OptionError(f"{{tasks}}: {t!r} is named twice", "tasks")
        seen.add(t)


def points(evals: pd.DataFrame, tasks, o: ChainOptions, label: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(step-1 rows, one per run; step-2 rows, the checkpoints kept) from a table of evaluations."""
    cols = [f"{t}{s}" for t in tasks for s in (o.loss_suffix, o.acc_suffix)]
    _need(evals, [o.run_col, "n", "d", *cols], label)
    for c in ("n", "d"):
        _numbers(evals, c, label)
    for t in tasks:
        _numbers(evals, f"{t}{o.loss_suffix}", label, positive=False, loss=True)
        check_accuracy(evals[f"{t}{o.acc_suffix}"], f"{label}, column {t + o.acc_suffix!r}")
    ev = evals.rename(columns={o.run_col: "run"}).reset_index(drop=True)
    ev["run"] = ev["run"].astype(str)
    s1, s2 = [], []
    for _, g in ev.groupby("run", sort=False):
        g = g.sort_values("d")
        tail = g.iloc[-o.last:]
        s1.append({"run": g["run"].iloc[0], "n": g["n"].iloc[-1], "d": g["d"].iloc[-1], **tail[cols].mean()})
        g = g.iloc[int(np.ceil(o.skip * len(g))):].copy()
        for c in cols:
            g[c] = trailing_mean(g[c].to_numpy(float), o.smooth)
        s2.append(g)
    return pd.DataFrame(s1), pd.concat(s2, ignore_index=True)


def ladder_noise(evals: pd.DataFrame, acc: str, o: ChainOptions, *, last: int = 10) -> float:
    """A checkpoint's accuracy noise at the end of the ladder's runs, for targets that do not give their own:
    per run, the SD of successive differences of its last ``last`` evaluations over √2 (a slow trend cancels),
    the median over runs (as ``ladder.checkpoint_noise`` does for a target)."""
    sds = []
    for _, g in evals.groupby(o.run_col, sort=False):
        a = g.sort_values("d")[acc].to_numpy(float)[-last:]
        if len(a) >= 3:
            sds.append(float(np.std(np.diff(a), ddof=1) / np.sqrt(2)))
    return float(np.median(sds)) if sds else 0.0


def chain_report(evals: pd.DataFrame, targets: pd.DataFrame, tasks, options: ChainOptions = ChainOptions(), *,
                 label: str = "runs", target_label: str = "targets", score: bool = False) -> ChainReport:
    """Fit a chain per task on ``evals`` and predict each row of ``targets`` (columns n, d). ``score``: the
    targets must carry each task's accuracy column, compared with the prediction."""
    o = options
    tasks = list(tasks)
    if not tasks:
        raise OptionError("name at least one task ({tasks})", "tasks")
    check_chain_options(o, tasks)
    _need(targets, ["n", "d"], target_label)
    if targets.empty:
        raise UserError(f"{target_label}: no targets (a header only)")
    for c in ("n", "d"):   # N = -1e9 or nan gave accuracy nan, D = 0 an accuracy of 35.37
        _numbers(targets, c, target_label)
    if score:
        _need(targets, [f"{t}{o.acc_suffix}" for t in tasks], target_label)
    for t in tasks:   # percentages printed as "actual 8455.39"
        act = f"{t}{o.acc_suffix}"
        if act in targets:
            known = pd.to_numeric(targets[act], errors="coerce")
            if score or known.notna().any():
                check_accuracy(known.dropna() if not score else known, f"{target_label}, column {act!r}")
    s1, s2 = points(evals, tasks, o, label)
    out = targets.copy().reset_index(drop=True)
    out["target"] = out[o.run_col].astype(str) if o.run_col in out else [f"row {i + 1}" for i in range(len(out))]
    fits, ivs, cals, sources, warned = {}, {}, {}, {}, []
    for t in tasks:
        loss, acc = f"{t}{o.loss_suffix}", f"{t}{o.acc_suffix}"
        fit = fit_chain(s1, s2, loss, acc, task=t, step1_law=o.step1_law, step2_law_name=o.step2_law,
                        anchor=o.anchor, where=label)
        fits[t] = fit
        out[f"{t}_pred"] = fit.predict(out["n"], out["d"])
        out[f"{t}_pred_loss"] = fit.predict_loss(out["n"], out["d"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            warned += warn_if_outside(fit, out["n"], out["d"], labels=[printable(x, 40) for x in out["target"]])
        if t == tasks[0]:
            warned += _below_ladder(s1, out)
        sd_col = f"{t}{o.noise_suffix}"
        if sd_col in out:
            sd = out[sd_col].to_numpy(float)
            bad = ~np.isfinite(sd) | (sd < 0) | (sd > 1)
            if bad.any():
                raise UserError(f"{target_label}, column {sd_col!r}: the actual's accuracy SD must lie in [0, 1]; "
                                f"row {int(np.flatnonzero(bad)[0]) + 1} has {sd[bad][0]:g}")
            sources[t] = f"the targets' {sd_col}"
        else:
            sd = ladder_noise(evals.rename(columns={o.run_col: "run"}) if o.run_col != "run" else evals, acc,
                              replace(o, run_col="run"))
            sources[t] = f"no {sd_col} column: the ladder runs' median, {100 * sd:.2f} points"
        cals[t] = chain_calibration(fit, s1, s2, loss, acc, level=o.level)
        ivs[t] = chain_interval(fit, s1, s2, loss, acc, out, noise_sd=sd, n_boot=o.n_boot, seed=o.seed,
                                level=o.level, actual=acc if acc in out else None, calibration=cals[t])
    return ChainReport(fits, out, ivs, tuple(warned), o, cals, sources)


def _below_ladder(s1: pd.DataFrame, out: pd.DataFrame) -> list[str]:
    """A warning for each target smaller than every ladder run in N or D, with the distance in decades: step 1
    is read below the runs it was fitted on (N = D = 10 gave an accuracy of 35.37 without a word)."""
    lines = []
    for col, name in (("n", "N"), ("d", "D")):
        lo = float(np.min(s1[col]))
        for label, v in zip(out["target"], out[col].to_numpy(float)):
            if v < lo:
                lines.append(f"{printable(label, 40)}: {name} = {v:.3g} lies {np.log10(lo / v):.2f} decades below "
                             f"the ladder's smallest ({lo:.3g}): step 1 extrapolates to a smaller model")
    return lines


@dataclass(frozen=True)
class Translation:
    """A saved loss law carried to a target dataset: L1(N, D) = K·(L0(N, D) − E0)^κ + E1."""

    source: str
    kappa: float
    K: float
    E0: float
    E1: float
    r2_pairs: float
    n_pairs: int
    predictions: pd.DataFrame

    def to_dict(self) -> dict[str, Any]:
        return to_jsonable({k: getattr(self, k) for k in ("source", "kappa", "K", "E0", "E1", "r2_pairs",
                                                          "n_pairs")} | {"predictions":
                                                                         self.predictions.to_dict("records")})

    def summary(self) -> str:
        lines = [f"{self.source} translated: L1 = {self.K:.4g}·(L0 − {self.E0:.4g})^{self.kappa:.4g} + "
                 f"{self.E1:.4g} (R² {self.r2_pairs:.4f} on {self.n_pairs} pairs)"]
        for _, r in self.predictions.iterrows():
            act = f", actual {r['actual']:.4f}" if "actual" in r and pd.notna(r["actual"]) else ""
            lines.append(f"  N = {r['n']:.3g}, D = {r['d']:.3g}: source {r['source_loss']:.4f} → target "
                         f"{r['target_loss']:.4f}{act}")
        return "\n".join(lines)


def translate_saved(saved_law: dict[str, float], source: str, pairs: pd.DataFrame, x_col: str, y_col: str,
                    at: pd.DataFrame, *, e1: float | None = None, actual: str | None = None,
                    label: str = "pairs") -> Translation:
    """``saved_law``: Chinchilla's E, A, B, alpha, beta for the source dataset; ``pairs``: models trained on the
    source (``x_col``) and on the target (``y_col``) with equal N and D. E0 is the saved law's E; E1 is fitted
    unless given."""
    from scalinglab.downstream.loss_to_loss import fit_loss_to_loss

    _need(pairs, [x_col, y_col], label)
    _need(at, ["n", "d"], "targets")
    if x_col == y_col:
        raise OptionError(f"{{x_col}} and {{y_col}} are both {x_col!r}: give the source and the target loss columns",
                          "x_col", "y_col")
    x = _numbers(pairs, x_col, label, loss=True)   # NaN, negative, or N, D or C where a loss belongs
    y = _numbers(pairs, y_col, label, loss=True)
    E0 = saved_law["E"]
    if (x <= E0).any():   # below E0 the law has no (L0 - E0)^kappa: a target loss of 29,504 came out
        i = int(np.argmax(x <= E0))
        raise UserError(f"{label}: column {x_col!r}, {row_name(pairs.index, i)}: source loss {x[i]:g} is not above "
                        f"the saved law's E0 = {E0:.4g}; a loss-to-loss fit needs source losses above it")
    if e1 is not None and not (math.isfinite(e1) and 0 <= e1 < MAX_LOSS):
        raise OptionError(f"{{e1}} {e1!r}: the target dataset's irreducible loss, a finite loss >= 0", "e1")
    l2l = fit_loss_to_loss(x, y, E0, e1)
    p = saved_law
    n, d = _numbers(at, "n", "targets"), _numbers(at, "d", "targets")
    L0 = p["E"] + p["A"] / n ** p["alpha"] + p["B"] / d ** p["beta"]
    pred = pd.DataFrame({"n": n, "d": d, "source_loss": L0, "target_loss": l2l.predict(L0)})
    if actual:
        _need(at, [actual], "targets")
        pred["actual"] = _numbers(at, actual, "targets", positive=False, loss=True)
    return Translation(source, l2l.kappa, l2l.K, l2l.E0, l2l.E1, l2l.r2, l2l.n_pairs, pred)

