"""Bhagia et al. 2024's two-step chain: (N, D) → task loss → accuracy, fitted by the law registry's engine.

Step 1 fits any registered loss law (``chinchilla`` by default: L = E + A/N^α + B/D^β under Hoffmann's
log-Huber objective, δ = 1e-3, one point per ladder run). Step 2 fits ``SIGMOID`` below (Bhagia et al.'s
Acc(L) = a/(1 + e^{−k(L − x0)}) + b by least squares on every checkpoint kept, with their extra point
(L = 0, Acc = 1): a model that predicts the correct answer with certainty gets it right) or the registry's
``logit`` law. ``ChainFit.predict(n, d)`` composes the two.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from scalinglab.errors import UserError
from scalinglab.fitting import laws as registry
from scalinglab.fitting.laws import Law, LawFit, Param, fit_law
from scalinglab.fitting.protocol import FitResult
from scalinglab.serialization import to_jsonable


def _sigmoid(inputs, p):
    return p["a"] / (1.0 + np.exp(-p["k"] * (inputs["loss"] - p["x0"]))) + p["b"]


def _a_starts(inputs, y):
    # Their p0: a = chance − 1 (the drop from a perfect score to chance as the loss grows); chance ≈ the lowest
    # accuracy a ladder shows, and two other depths besides.
    return (float(np.min(y)) - 1.0, -0.75, -0.5)


SIGMOID = Law(
    name="sigmoid", title="accuracy from task loss, a sigmoid falling from b to a + b",
    formula="Acc = a / (1 + exp(-k (L - x0))) + b",
    citation="Bhagia et al. 2024, Establishing Task Scaling Laws via Compute-Efficient Model Ladders, eq. 2 "
             "(arXiv:2412.04403)",
    inputs=("loss",), target="metric", space="linear", objective="squares",
    params=(Param("a", "the accuracy lost as the loss grows without bound (chance − b)", -1.0, 0.0, _a_starts),
            Param("x0", "the loss at the sigmoid's midpoint", 0.0, 1e3, (0.9, 1.5)),
            Param("k", "steepness: how fast accuracy falls with the loss", 0.0, 1e3, (3.0, 10.0)),
            Param("b", "the accuracy as the loss goes to 0", 0.0, 1.0, (1.0,))),
    predict=_sigmoid,
    note="fitted as the authors do: least squares on accuracy, bounds a in [-1, 0], x0, k >= 0, b in [0, 1]")

STEP2_LAWS = {"sigmoid": SIGMOID, "logit": registry.get("logit")}


def step2_law(name: str) -> Law:
    try:
        return STEP2_LAWS[name]
    except KeyError:
        raise UserError(f"step 2 law {name!r}: expected one of {', '.join(STEP2_LAWS)}") from None


def check_accuracy(acc, where: str) -> np.ndarray:
    """Accuracies as fractions in [0, 1], or a one-line UserError naming the first that is not."""
    acc = np.asarray(acc, float)
    bad = ~np.isfinite(acc) | (acc < 0) | (acc > 1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise UserError(f"{where}: accuracy must lie in [0, 1] (a fraction, not percent); row {i + 1} has "
                        f"{acc[i]:g}")
    return acc


@dataclass(frozen=True, repr=False)
class ChainFit(FitResult):
    """A fitted chain for one task: step 1 (N, D) → loss, step 2 loss → accuracy, and the ladder's loss range.
    Its parameters are both steps', prefixed ``loss.`` and ``acc.``, with each step's own standard errors and
    intervals; its status is the worse of the two steps'."""

    task: str
    step1: LawFit
    step2: LawFit
    anchor: bool
    loss_range: tuple[float, float]        # the step-2 losses the ladder covers (min, max)
    n_runs: int
    n_checkpoints: int
    runs: tuple[str, ...] = field(default=())

    @property
    def params(self) -> dict[str, float]:
        return {**{f"loss.{k}": v for k, v in self.step1.params.items()},
                **{f"acc.{k}": v for k, v in self.step2.params.items()}}

    @property
    def status(self) -> str:
        order = ("failed", "unidentified", "at_bound", "converged")
        return min((self.step1.status, self.step2.status), key=order.index)

    def _step(self, name: str):
        prefix, key = name.split(".", 1)
        return (self.step1 if prefix == "loss" else self.step2), key

    def _se(self, name: str) -> float:
        step, key = self._step(name)
        return float(step.bse.get(key, float("nan")))

    def _interval(self, name: str, level: float) -> tuple[float, float]:
        step, key = self._step(name)
        if step.bootstrap is None:
            return (float("nan"), float("nan"))
        return tuple(step.conf_int(level).get(key, (float("nan"), float("nan"))))

    @property
    def bse_log(self) -> dict[str, float]:
        logs = {f"loss.{k}": v for k, v in self.step1.bse_log.items()}
        logs.update({f"acc.{k}": v for k, v in self.step2.bse_log.items()})
        return {k: float(logs.get(k, float("nan"))) for k in self.params}

    def predict_loss(self, n, d) -> np.ndarray:
        return self.step1.predict({"n": np.atleast_1d(np.asarray(n, float)), "d": np.atleast_1d(np.asarray(d, float))})

    def accuracy_at(self, loss) -> np.ndarray:
        return self.step2.predict({"loss": np.atleast_1d(np.asarray(loss, float)),
                                   "x": np.atleast_1d(np.asarray(loss, float))})

    def predict(self, n, d) -> np.ndarray:
        """The chained accuracy (a fraction) at each (n, d)."""
        return self.accuracy_at(self.predict_loss(n, d))

    def loss_outside(self, loss) -> np.ndarray:
        """How far each loss lies below the ladder's lowest step-2 loss, as a share of the ladder's loss span
        (0 inside or above: above is the loss of a smaller model than the ladder's, not an extrapolation)."""
        lo, hi = self.loss_range
        return np.maximum(0.0, (lo - np.asarray(loss, float)) / (hi - lo))

    def to_dict(self) -> dict[str, Any]:
        return to_jsonable({"task": self.task, "step1": self.step1.to_dict(), "step2": self.step2.to_dict(),
                            "anchor": self.anchor, "loss_range": list(self.loss_range), "n_runs": self.n_runs,
                            "n_checkpoints": self.n_checkpoints, "runs": list(self.runs)})

    def summary(self) -> str:
        p1, p2 = self.step1.params, self.step2.params
        if self.step1.law.name == "chinchilla":
            s1 = (f"L = {p1['E']:.3f} + {p1['A']:.4g}/N^{p1['alpha']:.3f} + {p1['B']:.4g}/D^{p1['beta']:.3f}")
        else:
            s1 = f"{self.step1.law.name}: " + ", ".join(f"{k} = {v:.4g}" for k, v in p1.items())
        if self.step2.law.name == "sigmoid":
            s2 = (f"Acc = {p2['a']:.3f}/(1 + exp(-{p2['k']:.2f}(L - {p2['x0']:.3f}))) + {p2['b']:.3f}")
        else:
            s2 = f"{self.step2.law.name}: " + ", ".join(f"{k} = {v:.4g}" for k, v in p2.items())
        lo, hi = self.loss_range
        return "\n".join([
            f"chain for {self.task}: {self.n_runs} runs (step 1), {self.n_checkpoints} checkpoints (step 2)"
            + (", with the (L = 0, Acc = 1) point" if self.anchor else ""),
            f"  step 1 [{self.step1.status}]: {s1}",
            f"  step 2 [{self.step2.status}]: {s2}",
            f"  the ladder's task losses span {lo:.3f} to {hi:.3f}"])


def _column(df: pd.DataFrame, col: str, where: str) -> np.ndarray:
    if col not in df.columns:
        raise UserError(f"{where}: no column {col!r} (columns: {', '.join(map(str, df.columns[:12]))}"
                        + (", …" if len(df.columns) > 12 else "") + ")")
    return df[col].to_numpy(float)


def fit_chain(step1: pd.DataFrame, step2: pd.DataFrame, loss: str, acc: str, *, task: str | None = None,
              step1_law: str = "chinchilla", step2_law_name: str = "sigmoid", anchor: bool = True,
              where: str = "runs") -> ChainFit:
    """Fit the chain for one task.

    ``step1``: one row per run with columns ``n``, ``d`` and ``loss``; ``step2``: one row per checkpoint kept,
    with ``loss`` and ``acc`` (accuracy as a fraction). ``anchor`` appends Bhagia et al.'s (L = 0, Acc = 1)
    point to step 2 (the sigmoid only: the logit law's residuals are undefined at 1).
    """
    law1 = registry.get(step1_law)
    if law1.inputs != ("n", "d"):
        raise UserError(f"step 1 law {step1_law!r} takes {', '.join(law1.inputs)}: the chain needs a law of N and D")
    law2 = step2_law(step2_law_name)
    n, d, y1 = (_column(step1, c, where) for c in ("n", "d", loss))
    x2 = _column(step2, loss, where)
    y2 = check_accuracy(_column(step2, acc, where), f"{where}, column {acc!r}")
    fit1 = fit_law(law1, {"n": n, "d": d}, y1)
    add = anchor and law2.name == "sigmoid"
    xs, ys = (np.r_[x2, 0.0], np.r_[y2, 1.0]) if add else (x2, y2)
    if law2.name == "logit":
        ys = np.clip(ys, 1e-6, 1 - 1e-6)
    fit2 = fit_law(law2, {"loss": xs, "x": xs}, ys)
    runs = tuple(step1["run"].astype(str)) if "run" in step1.columns else ()
    return ChainFit(task or loss, fit1, fit2, add, (float(np.min(x2)), float(np.max(x2))), len(y1), len(y2), runs)


def warn_if_outside(fit: ChainFit, n, d, labels=None) -> list[str]:
    """A warning line for each (n, d) whose predicted loss lies below the ladder's losses: the sigmoid is read
    where no ladder checkpoint constrains it."""
    lines = []
    loss = fit.predict_loss(n, d)
    far = fit.loss_outside(loss)
    lo = fit.loss_range[0]
    for i, (L, f) in enumerate(zip(loss, far)):
        if f > 0:
            name = labels[i] if labels is not None else f"row {i + 1}"
            lines.append(f"{fit.task}, {name}: predicted task loss {L:.3f} lies {lo - L:.3f} below the ladder's "
                         f"lowest ({lo:.3f}), {f:.0%} of the ladder's span: step 2 extrapolates")
    for line in lines:
        warnings.warn(line, stacklevel=2)
    return lines
