"""Prediction intervals for a chained accuracy: ladder runs resampled, refitted, and the target's noise added.

One replicate draws the ladder's runs with replacement (the unit whose draws are independent: a run's
checkpoints share its initialisation, data order and schedule, so resampling checkpoints would treat 70
correlated points as 70 independent ones), refits step 1 on the drawn runs' points and step 2 on the drawn
runs' checkpoints, and predicts the target. The target's own checkpoint-to-checkpoint noise (its accuracy SD
between neighbouring checkpoints) is added as a normal draw: the actual is one such checkpoint, or a short
average of them. The interval is the replicates' central quantiles.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from scalinglab.downstream.chain import ChainFit
from scalinglab.errors import UserError
from scalinglab.fitting.laws import Law, LawFit, fit_law
from scalinglab.serialization import to_jsonable


def run_draws(runs: Sequence[str], n_boot: int, seed: int):
    """Yield the run labels of each resample: as many runs as there are, drawn with replacement."""
    rng = np.random.default_rng(seed)
    labels = list(dict.fromkeys(runs))
    for _ in range(n_boot):
        yield [labels[i] for i in rng.integers(0, len(labels), len(labels))]


def rows_of(df: pd.DataFrame, picked: Sequence[str], col: str = "run") -> pd.DataFrame:
    """The rows of each picked run, a run drawn twice appearing twice."""
    index = _members(df, col)
    return df.iloc[np.concatenate([index[k] for k in picked])].reset_index(drop=True)


def _members(df: pd.DataFrame, col: str) -> dict[str, np.ndarray]:
    labels = df[col].astype(str).to_numpy()
    return {k: np.flatnonzero(labels == k) for k in dict.fromkeys(labels.tolist())}


def bootstrap_by_run(tables: Sequence[pd.DataFrame], fit_predict: Callable[..., np.ndarray], n_boot: int,
                     seed: int, col: str = "run") -> np.ndarray:
    """``fit_predict(*resampled_tables)`` on ``n_boot`` resamples of whole runs (the same runs drawn in every
    table): an array (n_boot, …) of what it returns, NaN where a refit failed."""
    members = [_members(t, col) for t in tables]
    out = []
    for picked in run_draws(tables[0][col].astype(str).tolist(), n_boot, seed):
        subs = [t.iloc[np.concatenate([m[k] for k in picked])] for t, m in zip(tables, members)]
        try:
            out.append(np.asarray(fit_predict(*subs), float))
        except (ValueError, UserError, np.linalg.LinAlgError, FloatingPointError):
            out.append(None)
    shape = next((np.shape(o) for o in out if o is not None), ())
    return np.array([o if o is not None else np.full(shape, np.nan) for o in out], float)


def _warm(law: Law, fit: LawFit) -> Law:
    """The law with the full-data estimate as its one start and the registry's generic solver: a bootstrap
    replicate moves the optimum a little, so the 4,500-start grid is not needed to find it again."""
    params = tuple(replace(p, starts=(float(np.clip(fit.params[p.name], p.lower, p.upper)),)) for p in law.params)
    return replace(law, params=params, fitter=None)


@dataclass(frozen=True)
class ChainInterval:
    """A target's chained accuracy with its interval (accuracies as fractions)."""

    task: str
    target: str
    point: float
    lower: float
    upper: float
    level: float
    actual: float | None
    noise_sd: float
    n_boot: int
    n_failed: int
    unit: str = "run"

    @property
    def inside(self) -> bool | None:
        return None if self.actual is None else bool(self.lower <= self.actual <= self.upper)

    def to_dict(self) -> dict[str, Any]:
        return to_jsonable({**self.__dict__, "inside": self.inside})

    def summary(self) -> str:
        where = "inside" if self.inside else "outside"
        act = "" if self.actual is None else f"; actual {100 * self.actual:.2f} ({where})"
        return (f"{self.task} at {self.target}: {100 * self.point:.2f} [{100 * self.lower:.2f}, {100 * self.upper:.2f}]"
                f" ({self.level:.0%} over ladder runs, {self.n_boot - self.n_failed} of {self.n_boot} refits){act}")


def chain_interval(fit: ChainFit, step1: pd.DataFrame, step2: pd.DataFrame, loss: str, acc: str,
                   targets: pd.DataFrame, *, noise_sd: Sequence[float] | float = 0.0, n_boot: int = 200,
                   seed: int = 0, level: float = 0.95, actual: str | None = None) -> list[ChainInterval]:
    """Intervals for the chained accuracy at each row of ``targets`` (columns n, d; ``actual``: its accuracy
    column if known). Runs are resampled in both steps together; ``noise_sd`` (one per target, or one for all)
    is the target's checkpoint-to-checkpoint accuracy SD, added to each replicate."""
    law1, law2 = _warm(fit.step1.law, fit.step1), _warm(fit.step2.law, fit.step2)
    n, d = targets["n"].to_numpy(float), targets["d"].to_numpy(float)

    def fit_predict(s1: pd.DataFrame, s2: pd.DataFrame) -> np.ndarray:
        f1 = fit_law(law1, {"n": s1["n"].to_numpy(float), "d": s1["d"].to_numpy(float)}, s1[loss].to_numpy(float))
        x, y = s2[loss].to_numpy(float), s2[acc].to_numpy(float)
        if fit.anchor:
            x, y = np.r_[x, 0.0], np.r_[y, 1.0]
        if law2.name == "logit":
            y = np.clip(y, 1e-6, 1 - 1e-6)
        f2 = fit_law(law2, {"loss": x, "x": x}, y)
        if f1.status == "failed" or f2.status == "failed":
            raise ValueError("refit failed")
        L = f1.predict({"n": n, "d": d})
        return f2.predict({"loss": L, "x": L})

    reps = bootstrap_by_run([step1, step2], fit_predict, n_boot, seed)
    ok = np.all(np.isfinite(reps), axis=1)
    reps = reps[ok]
    sd = np.broadcast_to(np.asarray(noise_sd, float), n.shape)
    rng = np.random.default_rng(seed + 1)
    reps = reps + rng.normal(size=reps.shape) * sd
    q = (1 - level) / 2
    lo, hi = np.quantile(reps, [q, 1 - q], axis=0)
    point = fit.predict(n, d)
    names = targets["run"].astype(str).tolist() if "run" in targets.columns else [f"row {i + 1}" for i in range(len(n))]
    acts = targets[actual].to_numpy(float) if actual else [None] * len(n)
    return [ChainInterval(fit.task, names[i], float(point[i]), float(lo[i]), float(hi[i]), level,
                          None if acts[i] is None else float(acts[i]), float(sd[i]), n_boot, int((~ok).sum()))
            for i in range(len(n))]
