"""N*(C) as a power law: the exponent a of N* ∝ C^a fitted to the budgets' optima (``fitting.frontier.isoflop``), with
its interval, and the difference of two such exponents.

``fit_exponent`` is weighted least squares on the usable budgets (edge optima dropped and listed);
``fit_exponent_scatter`` generalised least squares with the budgets' covariance from replicates plus a scatter
term; ``exponents_of_optima`` one slope per resampled column; ``exponent_difference`` (Welch) and
``bootstrap_difference`` compare two fits on independent sweeps.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from scalinglab.errors import UserError
from scalinglab.fitting.frontier.wls import t_quantile, wls_line
from scalinglab.fitting.protocol import FitResult
from scalinglab.serialization import to_jsonable


def exponents_of_optima(flops, log_n_opt: np.ndarray) -> np.ndarray:
    """Least-squares slope of log N* on log C for each column of ``log_n_opt`` (budgets, B), skipping NaN
    (edge) optima; NaN where fewer than two budgets are left."""
    log_c = np.log(np.asarray(flops, float))
    out = np.full(log_n_opt.shape[1], np.nan)
    for b in range(log_n_opt.shape[1]):
        ok = np.isfinite(log_n_opt[:, b])
        if ok.sum() >= 2:
            out[b] = np.polyfit(log_c[ok], log_n_opt[ok, b], 1)[0]
    return out


def fit_exponent_scatter(flops, log_n_opt, cov, level: float = 0.95) -> IsoflopFit:
    """log N* = log coef + a · log C by generalised least squares with V = cov + τ²·I.

    ``cov`` is the covariance of the budgets' log N* from their replicates (e.g. a seed bootstrap: it
    carries the correlation of budgets that share runs); τ² is the budgets' scatter about the line
    beyond it (lack of fit, the size grid's granularity), estimated by restricted maximum likelihood, as
    in a random-effects meta-regression. The interval is a t interval on budgets − 2 df: with τ²
    estimated from a handful of budgets, a normal quantile would be too narrow. ``tau`` is √τ².
    """
    from scipy import optimize, stats

    x = np.log(np.asarray(flops, float))
    y = np.asarray(log_n_opt, float)
    cov = np.asarray(cov, float)
    m = len(y)
    if m < 3:
        return IsoflopFit(np.nan, (np.nan, np.nan), np.nan, m, status="unidentified", flops=tuple(flops),
                          reason=f"{m} budgets: a line with a scatter term needs 3", level=level)
    X = np.column_stack([np.ones(m), x - x.mean()])  # centred: the slope's normal equations stay well conditioned

    def gls(tau2):
        vinv = np.linalg.inv(cov + tau2 * np.eye(m))
        info = X.T @ vinv @ X
        beta = np.linalg.solve(info, X.T @ vinv @ y)
        r = y - X @ beta
        reml = np.linalg.slogdet(cov + tau2 * np.eye(m))[1] + np.linalg.slogdet(info)[1] + r @ vinv @ r
        return beta, np.linalg.inv(info), reml

    # The search's upper end: ten times the residual variance of a plain line plus the noise (the REML
    # optimum is near rss/(m−2) − noise), so that a weak trend with large scatter never hits the bound.
    rss = float(np.sum((y - X @ np.linalg.lstsq(X, y, rcond=None)[0]) ** 2))
    scale = 10 * (rss / (m - 2) + float(np.trace(cov)) / m) + 1e-12
    best = optimize.minimize_scalar(lambda t: gls(t)[2], bounds=(0.0, scale), method="bounded",
                                    options=dict(xatol=1e-10 * scale))
    tau2 = best.x if gls(best.x)[2] < gls(0.0)[2] else 0.0  # the bound itself, when no scatter is needed
    beta, vbeta, _ = gls(tau2)
    se = float(np.sqrt(vbeta[1, 1]))
    half = float(stats.t.ppf((1 + level) / 2, m - 2)) * se
    a = float(beta[1])
    return IsoflopFit(exponent=a, ci=(a - half, a + half), coef=float(np.exp(beta[0] - a * x.mean())), n_budgets=m,
                      weighted=True, flops=tuple(float(c) for c in flops), se=se, df_resid=float(m - 2),
                      tau=float(np.sqrt(tau2)), level=level)


@dataclass(frozen=True, repr=False)
class IsoflopFit(FitResult):
    """N*(C) = coef · C^exponent, fitted in log space by weighted least squares."""

    exponent: float
    ci: tuple[float, float]          # the exponent's interval at ``level`` (WLS t interval, `wls_line`)
    coef: float
    n_budgets: int                   # budgets used in the fit
    dropped: tuple[tuple[float, str], ...] = ()   # (budget, reason) for each budget left out
    status: str = "converged"        # converged | unidentified (fewer budgets than the line needs: ``reason``)
    weighted: bool = False
    r2: float = float("nan")
    flops: tuple[float, ...] = field(default=(), repr=False)
    se: float = float("nan")         # standard error of the exponent (NaN with two budgets)
    df_resid: float = float("nan")   # residual degrees of freedom behind ``ci``: budgets − 2
    tau: float = float("nan")        # fit_exponent_scatter: the budgets' scatter beyond their replicates' noise
    reason: str = ""
    level: float = 0.95

    @property
    def params(self) -> dict[str, float]:
        return {"a": self.exponent, "coef": self.coef}

    def _se(self, name: str) -> float:
        # The coefficient's SE depends on where log C is centred; only the slope's is reported.
        return self.se if name == "a" else float("nan")

    def _interval(self, name: str, level: float) -> tuple[float, float]:
        if name != "a" or not np.isfinite(self.se) or not self.df_resid >= 1:
            return (float("nan"), float("nan"))
        if abs(level - self.level) < 1e-12:
            return tuple(self.ci)
        half = t_quantile((1 + level) / 2, int(self.df_resid)) * self.se
        return (self.exponent - half, self.exponent + half)

    def predict(self, flops):
        """N*(C) for compute ``flops`` (scalar or array)."""
        return self.coef * np.asarray(flops, dtype=float) ** self.exponent

    def to_dict(self) -> dict:
        """The exponent as every report shapes it: a, ci, coef, n_budgets, status, weighted, r2 (NaN: None)."""
        return to_jsonable(dict(a=self.exponent, ci=list(self.ci), coef=self.coef, n_budgets=self.n_budgets,
                                status=self.status, weighted=self.weighted, r2=self.r2))

    def summary(self) -> str:
        """One line: a with its interval, the coefficient, how many budgets, and how it was fitted."""
        if self.status != "converged":
            return f"a: not fitted ({self.reason or f'{self.n_budgets} usable budgets'}); status {self.status}"
        ci = (f"{self.level:.0%} interval [{self.ci[0]:.3f}, {self.ci[1]:.3f}]" if np.isfinite(self.ci[0])
              else "no interval from 2 budgets")
        kind = "WLS, weights 1/var(log N_opt)" if self.weighted else "unweighted least squares"
        return f"a = {self.exponent:.3f}, {ci}; N_opt = {self.coef:.3g}·C^a; {self.n_budgets} budgets, {kind}"


def fit_exponent(optima: pd.DataFrame, weighted: bool = True, level: float = 0.95) -> IsoflopFit:
    """Fit log n_opt = log coef + exponent · log flops over the usable budgets.

    Weights are 1/var of log n_opt (``log_n_opt_sd``) when ``weighted`` and the
    optima were bootstrapped, else equal. Edge budgets and budgets without an
    optimum are dropped and listed with their reason in ``dropped``. The line is closed-form weighted
    least squares (``wls_line``), the numbers statsmodels' WLS gives, without importing it.
    """
    for col in ("flops", "n_opt", "edge"):
        if col not in optima.columns:
            raise UserError(f"isoFLOP optima lack column {col!r}: pass the table budget_optima returned")
    dropped = []
    keep = np.ones(len(optima), dtype=bool)
    for i, r in enumerate(optima.itertuples(index=False)):
        if bool(r.edge) or not np.isfinite(r.n_opt):
            keep[i] = False
            dropped.append((float(r.flops), getattr(r, "note", "") or ("edge optimum" if r.edge else "no optimum")))
    used = optima[keep]
    sd = used["log_n_opt_sd"].to_numpy(float) if "log_n_opt_sd" in used else np.full(len(used), np.nan)
    use_weights = bool(weighted and len(used) and np.all(np.isfinite(sd)) and np.all(sd > 0))
    if len(used) < 2:
        return IsoflopFit(np.nan, (np.nan, np.nan), np.nan, len(used), tuple(dropped), "unidentified",
                          use_weights, flops=tuple(used["flops"]), level=level,
                          reason=f"{len(used)} usable budgets, a line needs 2")
    x = np.log(used["flops"].to_numpy(float))
    y = np.log(used["n_opt"].to_numpy(float))
    line = wls_line(x, y, 1 / sd**2 if use_weights else None, level)
    return IsoflopFit(
        exponent=line.slope, ci=line.ci, coef=float(np.exp(line.intercept)),
        n_budgets=len(used), dropped=tuple(dropped), status="converged", weighted=use_weights,
        r2=line.r2, flops=tuple(used["flops"]), se=line.se, df_resid=float(len(used) - 2), level=level,
    )


@dataclass(frozen=True)
class ExponentDifference:
    """a − a' of two fits on independent data, with an interval at ``level``."""

    difference: float
    ci: tuple[float, float]
    method: str                      # welch_t (two WLS fits) or bootstrap (independent resamples)
    df: float = float("nan")         # Welch–Satterthwaite degrees of freedom (welch_t)
    level: float = 0.95
    # welch_t: the interval with the smaller fit's df instead of Welch's (a conservative check: Welch's df
    # can reach the sum of the two, and it treats each fit's variance as known to that many df)
    ci_min_df: tuple[float, float] = (float("nan"), float("nan"))

    def to_dict(self) -> dict:
        out = dict(difference=float(self.difference), ci=[float(v) for v in self.ci], method=self.method,
                   df=None if not np.isfinite(self.df) else self.df, level=self.level)
        if self.method == "welch_t" and np.isfinite(self.ci_min_df[0]):
            out["ci_min_df"] = [float(v) for v in self.ci_min_df]
        return to_jsonable(out)

    def summary(self) -> str:
        """One line: the difference and its interval, and how it was found."""
        iv = (f"{self.level:.0%} interval [{self.ci[0]:.3f}, {self.ci[1]:.3f}]" if np.isfinite(self.ci[0])
              else "no interval")
        df = f", {self.df:.1f} df" if np.isfinite(self.df) else ""
        return f"a - a' = {self.difference:.3f}, {iv} ({self.method}{df})"


def exponent_difference(first: IsoflopFit, second: IsoflopFit, level: float = 0.95) -> ExponentDifference:
    """first.exponent − second.exponent for fits to independent sweeps, with a t interval.

    Each fit's interval is a WLS t-interval on few budgets (3 or 4 degrees of freedom is usual), so
    the standard errors add in quadrature and the t quantile takes Welch–Satterthwaite's degrees of
    freedom; a normal quantile would make the interval too narrow at these df.
    """
    from scipy import stats

    diff = float(first.exponent - second.exponent)
    v1, v2 = first.se**2, second.se**2
    if not (np.isfinite(v1) and np.isfinite(v2)) or first.df_resid < 1 or second.df_resid < 1:
        return ExponentDifference(diff, (np.nan, np.nan), "welch_t", np.nan, level)
    df = (v1 + v2) ** 2 / (v1**2 / first.df_resid + v2**2 / second.df_resid)
    half = float(stats.t.ppf((1 + level) / 2, df)) * np.sqrt(v1 + v2)
    wide = float(stats.t.ppf((1 + level) / 2, min(first.df_resid, second.df_resid))) * np.sqrt(v1 + v2)
    return ExponentDifference(diff, (diff - half, diff + half), "welch_t", float(df), level,
                              ci_min_df=(diff - wide, diff + wide))


def bootstrap_difference(first: np.ndarray, second: np.ndarray, estimate: float,
                         level: float = 0.95) -> ExponentDifference:
    """An interval for a − a' from two independent bootstraps' exponents: every pair's difference.

    The resamples of two independent sweeps are independent, so each pair (i, j) is a draw of the
    difference; using all pairs avoids an arbitrary pairing. Percentile intervals keep the skew a
    normal combination of the two intervals would lose.
    """
    first, second = (np.asarray(v, float) for v in (first, second))
    first, second = first[np.isfinite(first)], second[np.isfinite(second)]
    if not len(first) or not len(second):
        return ExponentDifference(float(estimate), (np.nan, np.nan), "bootstrap", level=level)
    d = np.subtract.outer(first, second).ravel()
    lo, hi = np.quantile(d, [(1 - level) / 2, (1 + level) / 2])
    return ExponentDifference(float(estimate), (float(lo), float(hi)), "bootstrap", level=level)
