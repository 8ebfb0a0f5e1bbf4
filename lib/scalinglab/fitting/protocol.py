"""The protocol every fit result answers, whatever estimator made it.

statsmodels' Results are the anchor: ``params`` (name -> estimate), ``bse`` (standard errors in each parameter's
own units), ``bse_log`` (the SE of the logarithm for positive scale parameters, a relative error; NaN for the
others), ``conf_int(level)`` (name -> (low, high)), ``predict(...)``, ``status`` (one of ``STATUSES``),
``summary()``, ``to_dict()`` (JSON-ready) and a one-line repr. ``LawFit`` implements it directly; the other
results (isoFLOP, envelope, varpro, curve, overtraining, warmup-penalty, loss-to-loss and chain fits) inherit
``FitResult`` and supply only what differs: their replicate draws (``_draws``), or their own standard errors and
intervals where they come from a formula rather than resamples. ``tests/test_result_protocol.py`` holds every
type to it.

A result with neither draws nor a formula has NaN standard errors and NaN intervals: it says "not known", never
a width of zero. Why a status is not ``converged`` is in the result's ``reason`` (or the field its type names).
"""

from __future__ import annotations

import numpy as np

# The one status vocabulary of fit results: the solver reached its optimum inside the bounds (converged); it did,
# with a parameter on a bound (at_bound); the data cannot pin the estimate, e.g. too few budgets or sizes, or an
# optimum outside the physical range (unidentified); the solver stopped short of its tolerances (failed).
STATUSES = ("converged", "at_bound", "unidentified", "failed")

_NAN_PAIR = (float("nan"), float("nan"))


class FitResult:
    """Mixin: the shared protocol from a few hooks. A subclass defines ``params``, ``status``, ``predict``,
    ``summary`` and ``to_dict``, and may override ``_draws`` (name -> replicate values, for bootstrap SEs and
    percentile intervals), ``_scale`` (the positive scale parameters, for ``bse_log``), ``_se`` and
    ``_interval`` (formula-based errors, e.g. a Wald or t interval)."""

    _scale: tuple[str, ...] = ()
    level: float = 0.95

    def _draws(self) -> dict[str, np.ndarray]:
        return {}

    def _se(self, name: str) -> float:
        col = self._draws().get(name)
        if col is None:
            return float("nan")
        col = np.asarray(col, float)
        col = col[np.isfinite(col)]
        return float(np.std(col, ddof=1)) if len(col) > 1 else float("nan")

    def _interval(self, name: str, level: float) -> tuple[float, float]:
        col = self._draws().get(name)
        if col is None:
            return _NAN_PAIR
        col = np.asarray(col, float)
        col = col[np.isfinite(col)]
        if len(col) < 2:
            return _NAN_PAIR
        lo, hi = np.quantile(col, [(1 - level) / 2, (1 + level) / 2])
        return float(lo), float(hi)

    @property
    def bse(self) -> dict[str, float]:
        """Standard errors in each parameter's own units (NaN where the fit has none)."""
        return {k: self._se(k) for k in self.params}

    @property
    def bse_log(self) -> dict[str, float]:
        """SE of the logarithm of each scale parameter (a relative error); NaN for the others. From the draws
        where there are some, else by the delta method, SE / value."""
        draws = self._draws()
        out = {}
        for k, v in self.params.items():
            out[k] = float("nan")
            if k not in self._scale:
                continue
            col = np.asarray(draws.get(k, ()), float)
            col = col[np.isfinite(col)]
            if len(col) > 1 and np.all(col > 0):
                out[k] = float(np.std(np.log(col), ddof=1))
            elif not draws and v > 0:
                out[k] = self._se(k) / v
        return out

    def conf_int(self, level: float | None = None) -> dict[str, tuple[float, float]]:
        """Each parameter's interval at ``level`` (default the fit's), NaN where the fit has none."""
        level = self.level if level is None else float(level)
        return {k: self._interval(k, level) for k in self.params}

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v:.4g}" for k, v in list(self.params.items())[:8])
        return f"{type(self).__name__}({shown}; status={self.status})"
