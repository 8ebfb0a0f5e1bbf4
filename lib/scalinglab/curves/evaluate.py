"""How well a fitted curve law predicts curves it never saw, with intervals.

Metrics, as Luo et al. 2025 define them (the mirror's PROVENANCE.md, "Published numbers"; checked against their
repository's ``src/evaluation.py``): per curve over every logged point, R² on the raw loss
(1 − SS_res/SS_tot), MAE, RMSE, PredE = mean |L − L̂|/L and WorstE = max |L − L̂|/L; then each averaged over the
curves.

The parameter-only band comes from a moving-block residual bootstrap over steps (the interval for a new
schedule is :mod:`scalinglab.curves.calibration`'s, calibrated on schedules left out). A fitted curve's log
residuals are strongly autocorrelated (the law misses slow bends, not independent points), so resampling single
points would treat a
few hundred correlated points as independent and give intervals too narrow. Each replicate rebuilds every
training curve as fit·exp(r*), r* the curve's own residuals resampled in circular blocks of ``block`` consecutive
logged points, refits the law from the fit's parameters, and predicts. The block length is the first lag at which
the pooled residual autocorrelation falls below 0.2 (the dependence it must carry), at least 2 and at most a
quarter of the shortest training curve. A prediction interval for a new curve adds to each replicate's curve one
log residual drawn from the training residuals (one per replicate, the whole curve shifted: the residuals
are slow bends, not independent points), so the interval holds both the law's uncertainty and the fit's typical misfit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scalinglab.curves.fit import CurveFit, fit_curves
from scalinglab.curves.laws import LAWS, Curve, Prepared, prepare
from scalinglab.fitting.solvers import solve
from scalinglab.serialization import to_jsonable

METRICS = ("r2", "mae", "rmse", "prede", "worste")


def metrics(loss: np.ndarray, pred: np.ndarray) -> dict[str, float]:
    y, p = np.asarray(loss, float), np.asarray(pred, float)
    e = y - p
    spread = ((y - y.mean()) ** 2).sum()   # 0 for equal losses: R² is undefined there, not -inf
    return dict(r2=float(1 - (e ** 2).sum() / spread) if spread > 0 else float("nan"), mae=float(np.abs(e).mean()),
                rmse=float(np.sqrt((e ** 2).mean())), prede=float((np.abs(e) / y).mean()),
                worste=float((np.abs(e) / y).max()))


def average(rows: list[dict[str, float]]) -> dict[str, float]:
    return {k: float(np.mean([r[k] for r in rows])) for k in METRICS}


def block_length(residuals: list[np.ndarray], threshold: float = 0.2) -> int:
    """The first lag at which the residuals' autocorrelation (pooled over curves) falls below ``threshold``;
    at least 2, at most a quarter of the shortest curve."""
    shortest = min(len(r) for r in residuals)
    hi = max(2, shortest // 4)
    centred = [r - r.mean() for r in residuals]
    var = sum((c ** 2).sum() for c in centred)
    for lag in range(1, hi):
        acf = sum((c[:-lag] * c[lag:]).sum() for c in centred) / var
        if acf < threshold:
            return max(2, lag)
    return hi


def block_indices(n: int, block: int, rng: np.random.Generator) -> np.ndarray:
    """n indices made of circular blocks of ``block`` consecutive points at random starts."""
    k = -(-n // block)
    starts = rng.integers(0, n, k)
    return ((starts[:, None] + np.arange(block)[None, :]) % n).ravel()[:n]


@dataclass(frozen=True)
class CurveBootstrap:
    """Refitted parameters (one row per replicate) and the block length used."""

    law: str
    thetas: np.ndarray
    block: int
    level: float
    residuals: tuple          # the fit's log residuals, per training curve
    warmup_in_sum: bool = False

    def predict(self, curve: Curve | Prepared, new_curve: bool = True, seed: int = 0) -> np.ndarray:
        """(replicates, m) predictions; with ``new_curve``, each replicate shifted by one training residual."""
        p = curve if isinstance(curve, Prepared) else prepare(curve, warmup_in_sum=self.warmup_in_sum)
        law = LAWS[self.law]
        preds = np.array([law.predict(t, p) for t in self.thetas])
        if new_curve:
            pool = np.concatenate(self.residuals)
            rng = np.random.default_rng(seed)
            preds = preds * np.exp(rng.choice(pool, len(preds)))[:, None]
        return preds

    def interval(self, curve: Curve | Prepared, new_curve: bool = True, seed: int = 0):
        preds = self.predict(curve, new_curve, seed)
        a = (1 - self.level) / 2
        # A loss is positive: replicates that predict a loss <= 0 leave the band's lower end at 0, its floor, and the
        # upper end stands (a final loss above it is a miss however low the band reaches).
        return np.maximum(np.quantile(preds, a, axis=0), 0.0), np.quantile(preds, 1 - a, axis=0)

    def to_dict(self) -> dict:
        return to_jsonable(dict(law=self.law, replicates=len(self.thetas), block=self.block, level=self.level,
                                band="parameter-only",
                                unit="blocks of consecutive logged points within each training curve"))


def bootstrap(fit: CurveFit, curves: list[Curve], n_boot: int = 200, *, block: int | None = None,
              level: float = 0.95, seed: int = 0, preps: list[Prepared] | None = None) -> CurveBootstrap:
    """Moving-block residual bootstrap of ``fit`` on its training ``curves`` (see the module's docstring);
    ``block=1`` is the naive bootstrap over points."""
    law = LAWS[fit.law]
    preps = preps or [prepare(c, warmup_in_sum=fit.warmup_in_sum) for c in curves]
    fitted = [law.predict(fit.theta, p) for p in preps]
    res = [np.log(c.loss) - np.log(f) for c, f in zip(curves, fitted)]
    block = block or block_length(res)
    rng = np.random.default_rng(seed)
    thetas = []
    for _ in range(n_boot):
        logy = np.concatenate([np.log(f) + r[block_indices(len(r), block, rng)] for f, r in zip(fitted, res)])
        thetas.append(solve("curve-huber", law, {"curves": curves, "prepared": preps}, logy, theta0=fit.theta,
                            delta=fit.delta, warmup_in_sum=fit.warmup_in_sum, only=100).theta)
    return CurveBootstrap(fit.law, np.array(thetas), block, level, tuple(res), fit.warmup_in_sum)


@dataclass(frozen=True)
class Prediction:
    """One unseen curve predicted: metrics, the final loss and its intervals, whether each holds it: the block
    bootstrap's parameter-only band (``final_lo``, ``final_hi``) and the interval calibrated on schedules left
    out (``cal_lo``, ``cal_hi``, :mod:`scalinglab.curves.calibration`)."""

    name: str
    metrics: dict
    final: float
    final_pred: float
    final_lo: float | None = None
    final_hi: float | None = None
    cal_lo: float | None = None
    cal_hi: float | None = None

    @property
    def inside(self) -> bool | None:
        """Whether the parameter-only band holds the final loss."""
        if self.final_lo is None:
            return None
        return bool(self.final_lo <= self.final <= self.final_hi)

    @property
    def cal_inside(self) -> bool | None:
        if self.cal_lo is None or not np.isfinite(self.cal_lo):
            return None
        return bool(self.cal_lo <= self.final <= self.cal_hi)

    def to_dict(self) -> dict:
        return to_jsonable(dict(name=self.name, **self.metrics, final=self.final, final_pred=self.final_pred,
                                param_lo=self.final_lo, param_hi=self.final_hi, param_inside=self.inside,
                                cal_lo=self.cal_lo, cal_hi=self.cal_hi, cal_inside=self.cal_inside))


def predict_curves(fit: CurveFit, curves: list[Curve], boot: CurveBootstrap | None = None,
                   cal=None) -> list[Prediction]:
    """Each curve predicted by ``fit``, with the parameter-only band of ``boot`` and the calibrated interval of
    ``cal`` (a :class:`scalinglab.curves.calibration.CurveCalibration`) at its final loss, when given."""
    out = []
    for c in curves:
        p = prepare(c, warmup_in_sum=fit.warmup_in_sum)
        pred = fit.predict(p)
        lo = hi = clo = chi = None
        if boot is not None:
            lo_a, hi_a = boot.interval(p)
            lo, hi = float(lo_a[-1]), float(hi_a[-1])
        if cal is not None:
            clo_a, chi_a = cal.interval(pred[-1:])
            clo, chi = float(clo_a[0]), float(chi_a[0])
        out.append(Prediction(c.name, metrics(c.loss, pred), float(c.loss[-1]), float(pred[-1]), lo, hi, clo, chi))
    return out


def fit_and_predict(train: list[Curve], test: list[Curve], law: str = "multipower", n_boot: int = 0,
                    seed: int = 0, **kw) -> tuple[CurveFit, list[Prediction], CurveBootstrap | None]:
    """Fit on ``train``, predict ``test``; with ``n_boot``, block-bootstrap intervals for every prediction."""
    fit = fit_curves(train, law, **kw)
    boot = bootstrap(fit, train, n_boot, seed=seed) if n_boot else None
    return fit, predict_curves(fit, test, boot), boot
