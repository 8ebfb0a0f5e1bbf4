"""What every fit returns: ``LawFit``, one class for every law in the registry, and its ``Bootstrap``.

statsmodels' Results are the model: ``params``, ``bse`` (standard errors in each parameter's own units),
``bse_log`` (of the logarithm, for positive scale parameters; NaN for the others), ``conf_int()``, ``predict()``,
``status`` (one of ``STATUSES``), ``summary()`` (the table `scalinglab fit` prints) and ``to_dict()`` (its JSON).
A law with a closed-form compute-optimal allocation (Chinchilla's) also answers ``allocate(C)`` and the closed
form's own questions (``n_opt``, ``loss``, ``a``, ``theta`` ...) through ``scaling_law``, built once per fit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from scalinglab.errors import OptionError, UserError
from scalinglab.fitting.form import Law
from scalinglab.fitting.huber import HUBER_DELTA
from scalinglab.fitting.options import FitOptions, min_rows
from scalinglab.fitting.protocol import STATUSES  # noqa: F401  (re-exported: the one status vocabulary)
from scalinglab.serialization import to_jsonable

# Below this share of the predicted loss at every run, a term moves no residual: its parameters have no
# gradient, stay where the start put them, and a bootstrap shows them with zero spread, as if known.
NEGLIGIBLE_TERM = 1e-6
# A parameter the runs do not pin: one bootstrap SE of its log above 1 (the runs cannot tell it within a factor e),
# or, for an exponent, an SE above half its value (its interval reaches 0). A and B are often such on a narrow
# grid while a, b and the allocation are well determined; the summary says so beside the number.
WEAK_SE_LOG = 1.0
WEAK_REL_SE = 0.5


class ReplicateSpread:
    """Standard errors, percentile intervals and a summary table's header of replicate fits, for any result
    holding ``samples``, ``names``, ``column(name)``, ``constant``, ``level``, ``n_boot``, ``unit`` and ``n_units``
    (``Bootstrap`` here, and the isoFLOP bootstraps)."""

    @property
    def se(self) -> dict[str, float]:
        """Standard deviations across replicates; NaN with fewer than two (e.g. every one at a bound)."""
        if len(self.samples) < 2:
            return {k: float("nan") for k in self.names}
        # Constant by construction: exactly 0, where np.std of equal values can leave a last-digit residue.
        return {k: 0.0 if k in self.constant else float(np.std(self.column(k), ddof=1)) for k in self.names}

    @property
    def ci(self) -> dict[str, tuple[float, float]]:
        """Percentile intervals at ``level``; NaN when no replicate converged."""
        return self.intervals(self.level)

    def intervals(self, level: float) -> dict[str, tuple[float, float]]:
        if not len(self.samples):
            return {k: (float("nan"), float("nan")) for k in self.names}
        q = [(1 - level) / 2 * 100, (1 + level) / 2 * 100]
        return {k: tuple(float(v) for v in np.percentile(self.column(k), q)) for k in self.names}

    def table_head(self) -> str:
        """The SE and interval columns' header in a summary table, with the replicates counted and, for a
        cluster bootstrap, what it resampled."""
        unit = "" if self.unit == "runs" else f" of {self.unit}, {self.n_units} groups"
        fraction = getattr(self, "fraction", None)
        what = "resamples" if fraction is None else f"refits on {fraction:.0%} subsamples"
        return (f"{'SE':>12}   {round(self.level * 100):d}% interval ({len(self.samples)} of {self.n_boot} "
                f"{what}{unit})")


@dataclass(frozen=True)
class Bootstrap(ReplicateSpread):
    """Resampling bootstrap (rows, or whole groups of rows): the converged replicates' parameters (``samples``,
    columns ``params``), and what follows from them (``derived``: the law's derived quantities)."""

    samples: np.ndarray                     # (n_ok, P): converged replicates only, columns ``params``
    params: tuple[str, ...]
    n_boot: int
    n_failed: int                           # replicates that failed or ended on an artificial bound (excluded)
    level: float
    seed: int
    constant: tuple[str, ...] = ()          # names the constraints hold constant (fixed; a and b when tied)
    # What was resampled: "runs" (rows), or the name of what groups them (e.g. a model column), with how many.
    unit: str = "runs"
    n_units: int | None = None
    converged: np.ndarray | None = None     # (n_boot,) bool, when the solver reports it per resample
    free: tuple[str, ...] | None = None     # the fit's free parameters (alpha stands for a tied pair)
    derived: Mapping[str, Callable[[Mapping[str, Any]], Any]] = field(default_factory=dict, compare=False)
    scale: tuple[str, ...] = ()             # positive scale parameters: their SE is also given on the log scale
    fraction: float | None = None           # subsampling: each refit kept this share of the units, no replacement

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.params) + tuple(self.derived)

    def column(self, name: str) -> np.ndarray:
        if name in self.params:
            return self.samples[:, self.params.index(name)]
        if name in self.derived:
            with np.errstate(all="ignore"):   # a replicate at its bound (both exponents 0): NaN, said elsewhere
                return np.asarray(self.derived[name]({k: self.column(k) for k in self.params}), float)
        raise KeyError(name)

    @property
    def se_log(self) -> dict[str, float]:
        """SE of the logarithm of each scale parameter (NaN with fewer than two replicates; 0 when held)."""
        if len(self.samples) < 2:
            return {k: float("nan") for k in self.scale}
        out = {}
        for k in self.scale:
            col = self.column(k)
            out[k] = 0.0 if k in self.constant else (
                float(np.std(np.log(col), ddof=1)) if np.all(col > 0) else float("inf"))
        return out

    def weakly_identified(self, estimate: Mapping[str, float], exponents: tuple[str, ...] = ()) -> tuple[str, ...]:
        """The parameters the replicates leave unpinned (see WEAK_SE_LOG, WEAK_REL_SE), in parameter order."""
        if len(self.samples) < 2:
            return ()
        se, se_log = self.se, self.se_log
        weak = {k for k in self.scale if k not in self.constant and se_log[k] > WEAK_SE_LOG}
        weak |= {k for k in exponents if k not in self.constant and estimate.get(k, 0) > 0
                 and se[k] > WEAK_REL_SE * estimate[k]}
        return tuple(k for k in self.params if k in weak)

    @property
    def cov(self) -> np.ndarray:
        """Covariance of the parameters across replicates."""
        return np.cov(self.samples, rowvar=False)

    @property
    def cov_log(self) -> np.ndarray:
        """Covariance with the scale parameters as logs (closer to normal than A and B themselves)."""
        logged = self.samples.copy()
        for k in self.scale:
            i = self.params.index(k)
            logged[:, i] = np.log(logged[:, i])
        return np.cov(logged, rowvar=False)

    def wald_test(self, estimate, law) -> tuple[float, float]:
        """χ² of ``law`` against ``estimate`` (each with ``theta``: the parameters, scale ones as logs) with the
        bootstrap covariance in that space; (χ², p). Over the free parameters only: fixed and tied ones have no
        spread, so the constraints are taken as given and ``law`` is judged on the rest."""
        from scipy import stats

        idx = [self.params.index(k) for k in (self.free or self.params)]
        diff = (np.asarray(estimate.theta) - np.asarray(law.theta))[idx]
        chi2 = float(diff @ np.linalg.solve(self.cov_log[np.ix_(idx, idx)], diff))
        return chi2, float(stats.chi2.sf(chi2, df=len(diff)))

    def to_dict(self) -> dict[str, Any]:
        """n_boot, n_failed, level, seed, unit, n_units, se and ci per parameter and derived quantity, and
        se_log (the SE of each scale parameter's logarithm)."""
        out = {"n_boot": self.n_boot, "n_failed": self.n_failed, "level": self.level, "seed": self.seed,
               "unit": self.unit, "n_units": self.n_units, "se": self.se}
        if self.scale:
            out["se_log"] = self.se_log
        out["ci"] = {k: list(v) for k, v in self.ci.items()}
        if self.fraction is not None:
            out["fraction"] = self.fraction
        return to_jsonable(out)

    def summary(self) -> str:
        """One line: how many resamples of what, and how many converged."""
        unit = "" if self.unit == "runs" else f" of {self.unit}, {self.n_units} groups"
        if self.fraction is not None:
            return (f"{round(self.level * 100):d}% subsampling: {len(self.samples)} of {self.n_boot} refits on "
                    f"{self.fraction:.0%} of the {'runs' if not unit else self.unit}, drawn without replacement, "
                    f"converged (seed {self.seed})")
        return (f"{round(self.level * 100):d}% bootstrap: {len(self.samples)} of {self.n_boot} resamples{unit} "
                f"converged (seed {self.seed})")


@dataclass(frozen=True)
class FitData:
    """The runs a fit saw, as it saw them: ``inputs`` (role -> array), the target ``y``, the table ``rows`` they
    came from (after the selection and any dropped highest losses), and each row's resampling group (``groups``,
    or None)."""

    inputs: dict[str, np.ndarray]
    y: np.ndarray
    rows: np.ndarray
    groups: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.y)

    def __repr__(self) -> str:
        return f"FitData({len(self)} runs from table rows {_span(self.rows)}; inputs {', '.join(self.inputs)})"


def _span(rows) -> str:
    rows = np.asarray(rows)
    return "none" if not rows.size else f"{int(rows.min())}..{int(rows.max())}"


@dataclass(frozen=True)
class LawFit:
    """A fitted law. ``status``: converged, at_bound (a parameter on an artificial bound, named in ``at_bound``),
    unidentified (parameters that barely move the fit, named in ``unidentified``: the runs cannot pin them),
    or failed (the solver stopped short of its tolerance). ``objective`` is the fit's loss in its residual space
    (``law.space``): the summed Huber loss (δ = ``delta``) or half the sum of squares.
    ``options``: the solver's settings where the law has its own solver (Chinchilla's: constraints, tied
    exponents, starts)."""

    law: Law
    params: dict[str, float]
    status: str
    objective: float
    objective_kind: str = "huber"
    delta: float = HUBER_DELTA
    n_rows: int = 0
    n_starts: int = 0
    rss: float = float("nan")          # sum of squared residuals in the residual space
    at_bound: tuple[str, ...] = ()
    fixed: dict[str, float] = field(default_factory=dict)
    bootstrap: Bootstrap | None = None
    unidentified: tuple[str, ...] = ()
    grad_norm: float = float("nan")
    options: FitOptions | None = None
    ties: dict[str, str] = field(default_factory=dict)   # name -> the free parameter it equals (the engine's ties)
    # The runs it was fitted to, where it was fitted from a table (``sl.fit``, ``fit_rows``): kept with the fit.
    data: FitData | None = field(default=None, repr=False, compare=False)
    solver: str | None = None   # the solver that fitted it, where the options chose one (else the law's own)
    reason: str = ""            # why the status is not converged, where no other field says (a search stopped early)

    # --- the closed form's questions (Chinchilla: n_opt, d_opt, loss, a, b, theta, E ... beta) ----------------

    @property
    def scaling_law(self):
        """The law's closed form at these parameters (``fitting.chinchilla.law.ScalingLaw`` for Chinchilla), or a
        UserError for a law without one."""
        if self.law.closed_form is None:
            raise UserError(f"law {self.law.name} has no closed-form compute-optimal allocation")
        return self.law.closed_form(self.params)

    @property
    def replicate_laws(self):
        """The closed form with each parameter a column of the bootstrap's converged replicates, so that one call
        answers for every replicate (``fit.replicate_laws.n_opt(C)``); a UserError without a bootstrap."""
        bs = self.bootstrap
        if bs is None or not len(bs.samples):
            raise OptionError("no bootstrap replicates: fit with a resample count ({bootstrap} K)", "bootstrap")
        self.scaling_law  # noqa: B018  (a law without a closed form says so here)
        return self.law.closed_form(dict(zip(bs.params, bs.samples.T)))

    @cached_property
    def _closed(self):
        """The closed form at these parameters, built once (None for a law without one)."""
        return None if self.law.closed_form is None else self.law.closed_form(self.params)

    def __getattr__(self, name: str):
        # Only reached when normal lookup fails: a parameter by name (fit.alpha), or a question of the closed form.
        if name.startswith("_"):
            raise AttributeError(name)
        d = self.__dict__
        if name in d.get("params", {}):
            return d["params"][name]
        law = d.get("law")
        if law is not None and law.closed_form is not None:
            form = self._closed
            if hasattr(form, name):
                return getattr(form, name)
        raise AttributeError(f"a fit of law {getattr(law, 'name', '?')} has no {name!r}")

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v:.4g}" for k, v in self.params.items())
        boot = f", bootstrap={self.bootstrap.n_boot}" if self.bootstrap is not None else ""
        return f"LawFit({self.law.name}: {shown}; status={self.status}, n_rows={self.n_rows}{boot})"

    # --- estimates, errors, intervals -----------------------------------------------------------------------

    @cached_property
    def derived(self) -> dict[str, float]:
        """The law's derived quantities (Chinchilla's a and b) at these parameters, computed once."""
        with np.errstate(all="ignore"):
            return {k: float(f(self.params)) for k, f in self.law.derived.items()}

    @property
    def free(self) -> tuple[str, ...]:
        """The parameters the fit estimated (alpha stands for a tied pair)."""
        if self.options is not None:   # a fit of a law's own solver, its one tie in the options (beta = alpha)
            dropped = {k for k, _ in self.options.tied} if self.tied else set()
            return tuple(k for k in self.law.names if k not in self.fixed and k not in dropped)
        return tuple(k for k in self.law.names if k not in self.fixed and k not in self.ties)

    @property
    def n_free(self) -> int:
        return len(self.free)

    @property
    def tied(self) -> bool:
        """Whether beta was tied to alpha (and not fixed with it): the tie of Chinchilla's solver, in its options."""
        return (self.options is not None and bool(self.options.tied)
                and not {v for kv in self.options.tied for v in kv} <= self.fixed.keys())

    @property
    def start(self) -> str:
        """Where the solver started: Hoffmann's "grid" unless its settings say otherwise ("varpro")."""
        return getattr(self.options.settings if self.options is not None else None, "start", "grid")

    @cached_property
    def bse(self) -> dict[str, float]:
        """Bootstrap standard errors, each in its parameter's own units (A's in A's units), NaN without a
        bootstrap. For the positive, skewed scale parameters the log scale is the honest one: ``bse_log``."""
        bs = self.bootstrap
        if bs is None:
            return {k: float("nan") for k in (*self.law.names, *self.law.derived)}
        se = bs.se
        return {k: se[k] for k in bs.names}

    @cached_property
    def bse_log(self) -> dict[str, float]:
        """Bootstrap SE of the logarithm of each scale parameter (a relative error); NaN for the others."""
        bs = self.bootstrap
        se_log = bs.se_log if bs is not None else {}
        return {k: float(se_log.get(k, float("nan"))) for k in self.law.names}

    def conf_int(self, level: float | None = None) -> dict[str, tuple[float, float]]:
        """Percentile intervals over the bootstrap replicates (at the bootstrap's level unless given)."""
        bs = self.bootstrap
        if bs is None:
            raise OptionError("no bootstrap: fit with a resample count ({bootstrap} K) for intervals", "bootstrap")
        if level is not None:
            from scalinglab.fitting.options import check_level

            check_level(level)   # level=2 raised numpy's IndexError-free ValueError from inside percentile
        return bs.ci if level is None else bs.intervals(level)

    @property
    def weakly_identified(self) -> tuple[str, ...]:
        """Parameters the bootstrap shows the runs do not pin (empty without a bootstrap)."""
        bs = self.bootstrap
        return bs.weakly_identified(self.params, self.law.exponents) if bs is not None else ()

    def predict(self, inputs: Mapping[str, Any]) -> np.ndarray:
        arrays = {k: np.asarray(v, float) for k, v in inputs.items()}
        with np.errstate(all="ignore"):
            return np.asarray(self.law.predict(arrays, self.params), float)

    def residuals(self) -> np.ndarray:
        """The fitted runs' residuals in the law's residual space (``law.space``: log, logit or linear), actual
        minus predicted; a UserError for a fit that kept no data (one fitted from arrays)."""
        from scalinglab.fitting.form import transform

        if self.data is None:
            raise UserError("this fit kept no runs (fitted from arrays): its residuals need the runs it saw")
        with np.errstate(all="ignore"):
            return transform(self.data.y, self.law.space) - transform(self.predict(self.data.inputs), self.law.space)

    def draws(self, inputs: Mapping[str, Any]) -> np.ndarray | None:
        """(replicates, rows): each bootstrap replicate's predictions, or None without a bootstrap."""
        bs = self.bootstrap
        if bs is None or not len(bs.samples):
            return None
        arrays = {k: np.asarray(v, float)[None, :] for k, v in inputs.items()}
        params = {k: bs.samples[:, i, None] for i, k in enumerate(bs.params)}
        with np.errstate(all="ignore"):
            return np.asarray(self.law.predict(arrays, params), float)

    def allocate(self, C, level: float | None = None) -> list[dict[str, Any]]:
        """The compute-optimal N, D, tokens per parameter and loss at each budget C (FLOP), with intervals over
        the bootstrap's replicates (``allocation.compute_optimal``)."""
        from scalinglab.fitting.allocation import compute_optimal

        self.scaling_law  # noqa: B018  (a law without a closed form says so here)
        return compute_optimal(self, C, level)

    def information_criteria(self) -> dict[str, float] | None:
        """AIC and BIC with Gaussian residuals (in ``law.space``), k = free parameters + the noise scale;
        None under the Huber objective, which has no likelihood."""
        if self.objective_kind != "squares" or not np.isfinite(self.rss) or self.rss <= 0:
            return None
        n, k = self.n_rows, self.n_free + 1
        ll = -0.5 * n * (np.log(2 * np.pi * self.rss / n) + 1)
        return {"log_likelihood": float(ll), "aic": float(2 * k - 2 * ll), "bic": float(k * np.log(n) - 2 * ll),
                "k": k}

    # --- printing and saving --------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"law": self.law.name, "formula": self.law.formula, "citation": self.law.citation,
                               "params": dict(self.params), **self.derived, "status": self.status,
                               "at_bound": list(self.at_bound), "unidentified": list(self.unidentified),
                               "weakly_identified": list(self.weakly_identified),
                               "objective": self.objective, "objective_kind": self.objective_kind,
                               "residual_space": self.law.space, "n_rows": self.n_rows, "n_starts": self.n_starts,
                               "fixed": dict(self.fixed), "n_free": self.n_free}
        if self.objective_kind == "huber":
            out["delta"] = self.delta
        if self.ties:
            out["tied"] = dict(self.ties)
        out["solver"] = self.solver or self.law.solver   # the estimator, by its name in fitting.solvers
        if self.reason:
            out["reason"] = self.reason
        if self.options is not None:
            out["tie_exponents"] = self.tied
            out["start"] = self.start
        ic = self.information_criteria()
        if ic:
            out["information_criteria"] = ic
        if self.bootstrap is not None:
            out["bootstrap"] = self.bootstrap.to_dict()
        return to_jsonable(out)

    def summary(self, source: str = "fit", n_dropped: int = 0) -> str:
        """The table `scalinglab fit` prints: the runs, the form, constraints and status, then each parameter's
        estimate (with SE and interval when bootstrapped). ``source`` names the data; ``n_dropped``: highest
        losses dropped before the fit."""
        law, bs = self.law, self.bootstrap
        how = (f"Huber delta {self.delta:g} on {law.space} residuals" if self.objective_kind == "huber"
               else f"least squares on {law.space} residuals")
        start = self.start
        lines = [f"{source}: {self.n_rows} runs" + (f" ({n_dropped} highest losses dropped)" if n_dropped else "")
                 + f"; law {law.name}: {law.formula}", law.citation,
                 how + (f", {self.n_starts} starts" if start == "grid" else ", one start, the least-squares law "
                        f"by variable projection (start {start})")
                 + (f"; solver {self.solver}" if self.solver and self.solver != law.solver else "")]
        held = ([f"{k} fixed at {v:g}" for k, v in self.fixed.items()] + (["beta tied to alpha"] if self.tied else [])
                + [f"{k} tied to {v}" if v in law.names else f"{k} = {v}" for k, v in self.ties.items()])
        if held:
            lines.append(f"constraints: {', '.join(held)}; {self.n_free} free parameters "
                         f"(at least {min_rows(self.n_free)} runs needed)")
        lines.append(f"status: {self.status}" + (f" ({', '.join(self.at_bound)} at a bound)" if self.at_bound else "")
                     + (f" ({', '.join(self.unidentified)} not identified: moving them barely changes the fit)"
                        if self.unidentified else "") + (f" ({self.reason})" if self.reason else "")
                     + f"; objective {self.objective:.6g}")
        ic = self.information_criteria()
        if ic:
            lines.append(f"AIC {ic['aic']:.2f}, BIC {ic['bic']:.2f} (Gaussian {law.space} residuals, k = {ic['k']})")
        if bs and not len(bs.samples):
            lines.append(f"bootstrap: all {bs.n_boot} replicates failed (no convergence, or an artificial bound): "
                         "no standard errors or intervals")
        lines += ["", *self._table()]
        scale = [k for k in law.scale_params if k not in self.fixed and k not in self.ties]
        weak = self.weakly_identified
        if bs and len(bs.samples) and scale:
            lines += ["", f"SE of {', '.join(scale)}: the SE of their logarithm (ln), a relative error: they are "
                          "positive and skewed"]
        if weak:
            lines.append(f"not pinned: {', '.join(weak)} (SE of ln above {WEAK_SE_LOG:g}, or an exponent's SE above "
                         f"{WEAK_REL_SE:g} of it)" + ("; a, b and the allocation, which depend on them jointly, can "
                                                      "still be" if law.closed_form else ""))
        if law.note:  # the parameters' meanings are in `law.describe()`
            lines += ["", law.note]
        return "\n".join(lines)

    def _table(self) -> list[str]:
        """The estimate rows: every parameter, then the derived quantities, each with SE and interval or what
        holds it."""
        bs, law = self.bootstrap, self.law
        width = max(7, max(len(k) for k in (*law.names, *law.derived)) + 2)
        rows = [f"{'':<{width}}{'estimate':>12}" + (bs.table_head() if bs else "")]
        marks = ({k: "fixed" for k in self.fixed} | {k: f"= {v} (tied)" for k, v in self.ties.items()}
                 | {k: "not identified" for k in self.unidentified})
        if self.tied:
            marks.update(beta="= alpha (tied)", a="= 0.5 as beta = alpha", b="= 0.5 as beta = alpha")
        elif law.derived and {"alpha", "beta"} <= self.fixed.keys():
            marks.update(a="from the fixed exponents", b="from the fixed exponents")
        weak, se_log = self.weakly_identified, (bs.se_log if bs else {})
        for name, v in {**self.params, **self.derived}.items():
            row = f"{name:<{width}}{v:>12.5g}"
            if name in marks:
                row += f"   {marks[name]}"
            elif bs:
                lo, hi = bs.ci[name]
                se = f"{se_log[name]:.3g} ln" if name in se_log else f"{bs.se[name]:.3g}"
                row += f"{se:>12}   [{lo:.5g}, {hi:.5g}]" + ("   not pinned by these runs" if name in weak else "")
            rows.append(row)
        return rows
