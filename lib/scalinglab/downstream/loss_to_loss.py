"""Loss-to-loss laws (Brandfonbrener et al. 2024): L1 = K·(L0 − E0)^κ + E1 between two losses of paired models.

Two models trained on different sets but with the same N and D (train-to-train), or one model's training loss
and its loss on a test set (train-to-test), lie on a shifted power law whose shifts E0, E1 are the irreducible
losses of the two curves' scaling laws. With E0 and E1 fixed, κ and K are the slope and intercept of the line
log(L1 − E1) on log(L0 − E0) (the authors' ``fit_power_law``, a least-squares line); with E1 free, the
``SHIFTED_POWER`` law is fitted by least squares on L1 (their ``curve_fit``). ``translate`` carries a
Kaplan-style scaling law ``KAPLAN_E`` fitted on one set to another through a train-to-train fit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from scalinglab.errors import UserError
from scalinglab.fitting.laws import Law, Param, fit_law
from scalinglab.fitting.protocol import FitResult
from scalinglab.fitting.rows import unit_picks
from scalinglab.serialization import to_jsonable


def _kaplan_e(inputs, p):
    # ((A/N)^(alpha/beta) + B/D)^beta + E, in logs: A/N reaches 1e-2 and B/D 1e-1 on these sweeps, fine, but
    # a translated law's A can be 1e30.
    a = p["alpha"] / p["beta"] * (np.log(p["A"]) - np.log(inputs["n"]))
    b = np.log(p["B"]) - np.log(inputs["d"])
    return np.exp(p["beta"] * np.logaddexp(a, b)) + p["E"]


KAPLAN_E = Law(
    name="kaplan_e", title="Kaplan et al.'s L(N, D) with an irreducible loss",
    formula="L = ((A/N)^(alpha/beta) + B/D)^beta + E",
    citation="Brandfonbrener et al. 2024, Loss-to-Loss Prediction: Scaling Laws for All Datasets "
             "(arXiv:2411.12925), their kaplan_curve; after Kaplan et al. 2020, eq. 1.5",
    inputs=("n", "d"), target="loss",
    params=(Param("A", "parameters at which the N term alone is 1 nat above E", 1.0, 1e30, (1e6, 1e8, 1e10),
                  log=True),
            Param("B", "tokens at which the D term alone is 1 nat above E", 1.0, 1e30, (1e8, 1e9, 1e10), log=True),
            Param("E", "irreducible loss", 0.0, 20.0, (0.5, 1.5, 2.0)),
            Param("alpha", "exponent of N", 0.01, 3.0, (0.3, 0.5)),
            Param("beta", "exponent of D", 0.01, 3.0, (0.3, 0.5))),
    predict=_kaplan_e, note="log-Huber, delta = 1e-3, as their curve_fitting.py")


def _shifted(inputs, p):
    return p["K"] * np.maximum(inputs["x"] - p["E0"], 1e-12) ** p["kappa"] + p["E1"]


SHIFTED_POWER = Law(
    name="shifted_power", title="loss-to-loss: a power law between two losses, each shifted by its floor",
    formula="L1 = K (L0 - E0)^kappa + E1",
    citation="Brandfonbrener et al. 2024, Loss-to-Loss Prediction (arXiv:2411.12925), eq. 3",
    inputs=("x",), target="loss", space="linear", objective="squares",
    params=(Param("kappa", "exponent", 0.0, 20.0, (1.0, 0.5, 2.0)),
            Param("K", "scale", 0.0, 1e6, (1.0, 0.5, 2.0)),
            Param("E0", "irreducible loss of L0 (fix it: the scaling law's E)", 0.0, 20.0, (0.0,)),
            Param("E1", "irreducible loss of L1", 0.0, 20.0, (0.0, 1.0))),
    predict=_shifted)


@dataclass(frozen=True, repr=False)
class LossToLoss(FitResult):
    """A fitted loss-to-loss law with the pairs it was fitted on. A point fit: the floors E0 (and E1, unless
    fitted) are given, and no resampling is stored, so its standard errors and intervals are NaN: not known,
    never zero."""

    source: str
    target: str
    kappa: float
    K: float
    E0: float
    E1: float
    r2: float
    n_pairs: int
    e1_fitted: bool = False
    x: np.ndarray = field(default_factory=lambda: np.empty(0), repr=False)
    y: np.ndarray = field(default_factory=lambda: np.empty(0), repr=False)

    _scale = ("K",)

    @property
    def params(self) -> dict[str, float]:
        return {"kappa": self.kappa, "K": self.K, "E0": self.E0, "E1": self.E1}

    @property
    def status(self) -> str:
        # The fit raises when it fails; a finite line is a converged one.
        return "converged" if np.isfinite(self.kappa) and np.isfinite(self.K) else "failed"

    def predict(self, L0) -> np.ndarray:
        return self.K * np.maximum(np.asarray(L0, float) - self.E0, 1e-12) ** self.kappa + self.E1

    def to_dict(self) -> dict[str, Any]:
        return to_jsonable({k: getattr(self, k) for k in ("source", "target", "kappa", "K", "E0", "E1", "r2",
                                                          "n_pairs", "e1_fitted")})

    def summary(self) -> str:
        return (f"{self.target} from {self.source}: L1 = {self.K:.3f}·(L0 − {self.E0:.3f})^{self.kappa:.3f} + "
                f"{self.E1:.3f}{' (E1 fitted)' if self.e1_fitted else ''}; R² {self.r2:.4f} on {self.n_pairs} pairs")


def _line(x, y, E0, E1) -> tuple[float, float]:
    """κ, K: the least-squares line of log(y − E1) on log(x − E0)."""
    with np.errstate(all="ignore"):
        u, v = np.log(x - E0), np.log(y - E1)
    ok = np.isfinite(u) & np.isfinite(v)
    if ok.sum() < 3:
        raise UserError(f"loss-to-loss: {int(ok.sum())} pairs lie above both floors (E0 = {E0:.3f}, E1 = {E1:.3f});"
                        " at least 3 are needed")
    kappa, logk = np.polyfit(u[ok], v[ok], 1)
    return float(kappa), float(np.exp(logk))


def fit_loss_to_loss(x, y, E0: float, E1: float | None = None, *, source: str = "L0",
                     target: str = "L1") -> LossToLoss:
    """Fit L1 = K (L0 − E0)^κ + E1 to paired losses; E1 None fits it (least squares on L1)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if E1 is None:
        fit = fit_law(SHIFTED_POWER, {"x": x}, y, fixed={"E0": E0})
        if fit.status == "failed":
            raise UserError(f"loss-to-loss {source} → {target}: the fit failed")
        p = fit.params
        kappa, K, E1, fitted = p["kappa"], p["K"], p["E1"], True
    else:
        (kappa, K), fitted = _line(x, y, E0, E1), False
    pred = K * np.maximum(x - E0, 1e-12) ** kappa + E1
    r2 = 1 - np.sum((y - pred) ** 2) / np.sum((y - y.mean()) ** 2)
    return LossToLoss(source, target, kappa, K, E0, float(E1), float(r2), len(x), fitted, x, y)


def pair(sweep: pd.DataFrame, source: str, target: str, key0: str = "val_loss", key1: str = "val_loss",
         by: str = "tokens") -> pd.DataFrame:
    """Models trained on ``source`` and on ``target`` paired by equal ``by`` (tokens: equal N and D on these
    isoFLOP sweeps), as columns x (``key0`` of the source model) and y (``key1`` of the target model)."""
    a = sweep[sweep["data"] == source][[by, "params", key0]].rename(columns={key0: "x"})
    b = sweep[sweep["data"] == target][[by, key1]].rename(columns={key1: "y"})
    return a.merge(b, on=by, how="inner")


def translate(params: dict[str, float], l2l: LossToLoss) -> dict[str, float]:
    """A Kaplan-style law for the source set carried to the target set (the authors' ``translate``):
    L1 − E1 = K·((A/N)^(α/β) + B/D)^(βκ), so α, β scale by κ and A, B absorb K."""
    k, K = l2l.kappa, l2l.K
    return {"A": params["A"] * K ** (1 / (k * params["alpha"])), "B": params["B"] * K ** (1 / (k * params["beta"])),
            "E": l2l.E1, "alpha": params["alpha"] * k, "beta": params["beta"] * k}


def r_squared(params: dict[str, float], n, d, loss) -> float:
    loss = np.asarray(loss, float)
    pred = _kaplan_e({"n": np.asarray(n, float), "d": np.asarray(d, float)}, params)
    return float(1 - np.sum((pred - loss) ** 2) / np.sum((loss - loss.mean()) ** 2))


def extrapolation_interval(l2l: LossToLoss, x_new: float, *, n_boot: int = 500, seed: int = 0,
                           level: float = 0.95) -> tuple[float, float, float]:
    """(point, lower, upper) for the target loss of a new model whose source loss is ``x_new``: the model pairs
    resampled (each pair is two independent training runs) and κ, K refitted with E0, E1 fixed, plus one
    resampled residual of log(L1 − E1) (the scatter of a single new pair about the line)."""
    rng = np.random.default_rng(seed)
    x, y = l2l.x, l2l.y
    with np.errstate(all="ignore"):
        resid = np.log(y - l2l.E1) - np.log(l2l.predict(x) - l2l.E1)
    resid = resid[np.isfinite(resid)]
    out = []
    for _ in range(n_boot):
        i = unit_picks(len(x), 1, rng)[0]   # one pass of the shared stream: the residual draw follows it
        try:
            kappa, K = _line(x[i], y[i], l2l.E0, l2l.E1)
        except UserError:
            continue
        core = K * max(x_new - l2l.E0, 1e-12) ** kappa
        out.append(core * np.exp(rng.choice(resid)) + l2l.E1)
    q = (1 - level) / 2
    lo, hi = np.quantile(out, [q, 1 - q])
    return float(l2l.predict(x_new)), float(lo), float(hi)
