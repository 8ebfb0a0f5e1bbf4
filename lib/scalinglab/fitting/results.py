"""What an Approach-3 fit returns: the fitted law with its status, and its bootstrap; each prints
(``summary()``, the table `scalinglab fit` shows) and saves (``to_dict()``, JSON-ready).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scalinglab.fitting.law import PARAMS, ScalingLaw, to_theta
from scalinglab.fitting.options import FitOptions, min_rows, parametrisation
from scalinglab.serialization import to_jsonable

# Below this share of the predicted loss at every run, a term moves no residual: its parameters have no
# gradient, stay where the start put them, and a bootstrap shows them with zero spread, as if known.
NEGLIGIBLE_TERM = 1e-6
# The positive scale parameters: their spread is skewed and spans decades, so their uncertainty is given on the log
# scale (the SE of ln E, ln A, ln B: a relative error) rather than as an SE in their own units.
SCALE_PARAMS = ("E", "A", "B")
# A parameter the runs do not pin: one bootstrap SE of its log above 1 (the runs cannot tell it within a factor e),
# or, for an exponent, an SE above half its value (its interval reaches 0). A and B are often such on a narrow
# grid while a, b and the allocation are well determined; the summary says so beside the number.
WEAK_SE_LOG = 1.0
WEAK_REL_SE = 0.5


class ReplicateSpread:
    """Standard errors, percentile intervals and a summary table's header of replicate fits, for any result
    holding ``samples``, ``names``, ``column(name)``, ``constant``, ``level``, ``n_boot``, ``unit`` and ``n_units``
    (this module's Bootstrap and the law registry's LawBootstrap)."""

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
        if not len(self.samples):
            return {k: (float("nan"), float("nan")) for k in self.names}
        q = [(1 - self.level) / 2 * 100, (1 + self.level) / 2 * 100]
        return {k: tuple(float(v) for v in np.percentile(self.column(k), q)) for k in self.names}

    def table_head(self) -> str:
        """The SE and interval columns' header in a summary table, with the replicates counted and, for a
        cluster bootstrap, what it resampled."""
        unit = "" if self.unit == "runs" else f" of {self.unit}, {self.n_units} groups"
        return (f"{'SE':>12}   {round(self.level * 100):d}% interval ({len(self.samples)} of {self.n_boot} "
                f"resamples{unit})")


@dataclass(frozen=True)
class Bootstrap(ReplicateSpread):
    """Resampling bootstrap (rows, or whole groups of rows): replicate fits, their spread and intervals."""

    samples: np.ndarray            # (n_ok, 5) columns PARAMS, converged replicates only
    converged: np.ndarray          # (n_boot,) bool: which resamples those are
    n_boot: int
    n_failed: int                  # replicates that hit max_iter or an artificial bound (excluded)
    level: float
    seed: int
    free: tuple[str, ...] = PARAMS  # the fit's free parameters (alpha stands for a tied pair)
    constant: tuple[str, ...] = ()  # names the constraints hold constant (fixed; a and b when tied)
    # What was resampled: "runs" (rows), or the name of what groups them (e.g. a model column), with how many.
    unit: str = "runs"
    n_units: int | None = None

    def column(self, name: str) -> np.ndarray:
        if name in PARAMS:
            return self.samples[:, PARAMS.index(name)]
        al, be = self.column("alpha"), self.column("beta")
        with np.errstate(invalid="ignore"):   # both exponents 0 (a replicate at its bound): NaN, said elsewhere
            if name == "a":
                return be / (al + be)
            if name == "b":
                return al / (al + be)
        raise KeyError(name)

    @property
    def names(self) -> tuple[str, ...]:
        return PARAMS + ("a", "b")

    @property
    def se_log(self) -> dict[str, float]:
        """SE of ln E, ln A, ln B across replicates (NaN with fewer than two; 0 for a held parameter)."""
        if len(self.samples) < 2:
            return {k: float("nan") for k in SCALE_PARAMS}
        out = {}
        for k in SCALE_PARAMS:
            col = self.column(k)
            out[k] = 0.0 if k in self.constant else (
                float(np.std(np.log(col), ddof=1)) if np.all(col > 0) else float("inf"))
        return out

    def weakly_identified(self, estimate: dict[str, float]) -> tuple[str, ...]:
        """The parameters the replicates leave unpinned (see WEAK_SE_LOG, WEAK_REL_SE), in PARAMS order."""
        se, se_log = self.se, self.se_log
        weak = [k for k in SCALE_PARAMS if k not in self.constant and se_log[k] > WEAK_SE_LOG]
        weak += [k for k in ("alpha", "beta") if k not in self.constant and estimate.get(k, 0) > 0
                 and se[k] > WEAK_REL_SE * estimate[k]]
        return tuple(weak)

    @property
    def cov(self) -> np.ndarray:
        """Covariance of (E, A, B, alpha, beta) across replicates."""
        return np.cov(self.samples, rowvar=False)

    @property
    def cov_log(self) -> np.ndarray:
        """Covariance of (log E, log A, log B, alpha, beta): closer to normal than A and B themselves."""
        return np.cov(to_theta(self.samples), rowvar=False)

    def wald_test(self, estimate: ScalingLaw, law: ScalingLaw) -> tuple[float, float]:
        """χ² of ``law`` against ``estimate`` with the bootstrap covariance in log space; (χ², p).

        Over the free parameters only (5 df without constraints): fixed and tied ones have no spread,
        so the constraints are taken as given and ``law`` is judged on the rest."""
        from scipy import stats

        idx = [PARAMS.index(k) for k in self.free]
        diff = (estimate.theta - law.theta)[idx]
        chi2 = float(diff @ np.linalg.solve(self.cov_log[np.ix_(idx, idx)], diff))
        return chi2, float(stats.chi2.sf(chi2, df=len(diff)))

    def tokens_per_param(self, C: float) -> np.ndarray:
        return np.array([ScalingLaw(*row).tokens_per_param(C) for row in self.samples])

    def to_dict(self) -> dict[str, Any]:
        """n_boot, n_failed, level, seed, unit, n_units, se and ci per parameter (E … beta, a, b), and se_log
        (the SE of ln E, ln A, ln B)."""
        return to_jsonable({"n_boot": self.n_boot, "n_failed": self.n_failed, "level": self.level,
                            "seed": self.seed, "unit": self.unit, "n_units": self.n_units,
                            "se": self.se, "se_log": self.se_log, "ci": {k: list(v) for k, v in self.ci.items()}})

    def summary(self) -> str:
        """One line: how many resamples of what, and how many converged."""
        unit = "" if self.unit == "runs" else f" of {self.unit}, {self.n_units} groups"
        return (f"{round(self.level * 100):d}% bootstrap: {len(self.samples)} of {self.n_boot} resamples{unit} "
                f"converged (seed {self.seed})")


@dataclass(frozen=True)
class FitResult(ScalingLaw):
    """A fitted law with how it was found. ``status``: converged, max_iter, at_bound or unidentified
    (a term is negligible at every run, so its free parameters are not estimated: ``unidentified``).

    Data that cannot identify the law never get a result: ``check_identifiable``
    raises a UserError instead.
    """

    objective: float = float("nan")
    status: str = "converged"
    at_bound: tuple[str, ...] = ()
    unidentified: tuple[str, ...] = ()
    n_rows: int = 0
    n_starts: int = 0
    grad_norm: float = float("nan")
    options: FitOptions = field(default_factory=FitOptions)
    bootstrap: Bootstrap | None = None

    @property
    def law(self) -> ScalingLaw:
        return ScalingLaw(*(getattr(self, k) for k in PARAMS))

    @property
    def weakly_identified(self) -> tuple[str, ...]:
        """Parameters the bootstrap shows the runs do not pin (empty without a bootstrap)."""
        bs = self.bootstrap
        return bs.weakly_identified(self.params()) if bs is not None and len(bs.samples) >= 2 else ()

    @property
    def fixed(self) -> dict[str, float]:
        """Parameters held at a value, by name."""
        return dict(self.options.fixed)

    @property
    def tied(self) -> bool:
        """Whether beta was tied to alpha (and not fixed with it)."""
        return bool(parametrisation(self.options).tied)

    @property
    def free(self) -> tuple[str, ...]:
        """The parameters the fit estimated (alpha stands for a tied pair)."""
        return parametrisation(self.options).names

    @property
    def n_free(self) -> int:
        return len(self.free)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {**self.params(), "a": self.a, "b": self.b, "status": self.status,
                               "at_bound": list(self.at_bound), "unidentified": list(self.unidentified),
                               "weakly_identified": list(self.weakly_identified),
                               "objective": self.objective,
                               "n_rows": self.n_rows, "n_starts": self.n_starts,
                               "delta": self.options.delta, "fixed": self.fixed,
                               "tie_exponents": self.tied, "n_free": self.n_free}
        if self.options.solver != "grid":  # only when asked for: the default output keeps its keys
            out["solver"] = self.options.solver
        if self.bootstrap is not None:
            out["bootstrap"] = self.bootstrap.to_dict()
        return to_jsonable(out)

    def summary(self, source: str = "fit", n_dropped: int = 0) -> str:
        """The table `scalinglab fit` prints: the runs, constraints and status, then each parameter's estimate
        (with SE and interval when bootstrapped). ``source`` names the data; ``n_dropped``: highest losses
        dropped before the fit."""
        bs = self.bootstrap
        lines = [f"{source}: {self.n_rows} runs" + (f" ({n_dropped} highest losses dropped)" if n_dropped else "")
                 + f"; Huber delta {self.options.delta:g}, "
                 + (f"{self.n_starts} starts" if self.options.solver == "grid"
                    else f"one start from {self.options.solver} (--solver {self.options.solver})")]
        fixed = self.fixed
        if fixed or self.tied:
            held = [f"{k} fixed at {v:g}" for k, v in fixed.items()] + (["beta tied to alpha"] if self.tied else [])
            lines.append(f"constraints: {', '.join(held)}; {self.n_free} free parameters "
                         f"(at least {min_rows(self.n_free)} runs needed)")
        lines += [f"status: {self.status}" + (f" ({', '.join(self.at_bound)} at a bound)" if self.at_bound else "")
                  + f"; objective {self.objective:.6g}"]
        if self.unidentified:
            lines.append(f"not identified: {', '.join(self.unidentified)} (their term is below "
                         f"{NEGLIGIBLE_TERM:g} of the predicted loss at every run, so the runs say nothing about them)")
        if bs and not len(bs.samples):
            lines.append(f"bootstrap: all {bs.n_boot} replicates failed (no convergence, or an artificial bound): "
                         "no standard errors or intervals")
        lines.append("")
        head = f"{'':<7}{'estimate':>12}" + (bs.table_head() if bs else "")
        lines.append(head)
        values = {**self.params(), "a": self.a, "b": self.b}
        # Why a row has no spread: it was given, or follows from the constraints.
        marks = {k: "fixed" for k in fixed} | {k: "not identified" for k in self.unidentified}
        if self.tied:
            marks.update(beta="= alpha (tied)", a="= 0.5 as beta = alpha", b="= 0.5 as beta = alpha")
        elif {"alpha", "beta"} <= fixed.keys():
            marks.update(a="from the fixed exponents", b="from the fixed exponents")
        weak = self.weakly_identified
        se_log = bs.se_log if bs else {}
        for name, v in values.items():
            row = f"{name:<7}{v:>12.5g}"
            if name in marks:
                row += f"   {marks[name]}"
            elif bs:
                lo, hi = bs.ci[name]
                se = f"{se_log[name]:.3g} ln" if name in SCALE_PARAMS else f"{bs.se[name]:.3g}"
                row += f"{se:>12}   [{lo:.5g}, {hi:.5g}]" + ("   not pinned by these runs" if name in weak else "")
            lines.append(row)
        if bs and len(bs.samples):
            lines.append("")
            lines.append("SE of E, A, B: the SE of their logarithm (ln), a relative error: they are positive and "
                         "skewed")
            if weak:
                lines.append(f"not pinned: {', '.join(weak)} (SE of ln above {WEAK_SE_LOG:g}, or an exponent's SE "
                             f"above {WEAK_REL_SE:g} of it); a, b and the allocation, which depend on them jointly, "
                             "can still be")
        lines.append("")
        lines.append("a = beta/(alpha+beta): N_opt ∝ C^a;  b = alpha/(alpha+beta): D_opt ∝ C^b  (C = 6ND)")
        return "\n".join(lines)

