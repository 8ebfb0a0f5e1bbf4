"""How to fit, for every law: ``FitOptions`` (the Huber δ, the resampling, parameters held or tied, the solver and
its settings), ``Resampling`` (how many refits, of what unit, seed, level), and the most resamples any bootstrap
(Approaches 1, 2 and 3) takes. A solver's own settings and rules live with it (Chinchilla's Newton solver's in
``fitting.chinchilla.settings``); these options name no law's parameters.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from scalinglab.errors import UserError
from scalinglab.files import MAX_COUNT
from scalinglab.fitting.huber import HUBER_DELTA
from scalinglab.fitting.rows import check_fraction


def min_rows(n_free: int) -> int:
    """Runs needed to fit ``n_free`` parameters: twice as many. A robust loss on few runs can fit
    almost anything, so keep at least as many residual degrees of freedom as free parameters."""
    return 2 * n_free


# The most resamples a bootstrap takes. Intervals stop moving long before (the Monte Carlo error of a
# 95% percentile at 100,000 draws is under 0.1% of the interval), and beyond it the replicates alone
# outgrow memory (100,000,000 resamples x 5 parameters is 4 GB) and the time runs to days.
MAX_RESAMPLES = MAX_COUNT   # the cap every count flag shares (scalinglab.files)


MIN_GROUPS = 5   # fewest groups a cluster bootstrap resamples (5 give 126 distinct resamples)


def check_resample_count(n_boot: int, flag: str = "--bootstrap") -> None:
    """A UserError stating the limit when ``n_boot`` resamples is more than ``MAX_RESAMPLES``."""
    if n_boot > MAX_RESAMPLES:
        raise UserError(f"{flag} {n_boot}: at most {MAX_RESAMPLES:,} resamples (intervals stop changing long "
                        "before; more would outgrow memory and take days)")


def check_level(level, name: str = "level") -> float:
    """An interval's level: a number strictly between 0 and 1, or a one-line UserError."""
    if isinstance(level, bool) or not isinstance(level, (int, float, np.floating)) or not 0 < level < 1:
        raise UserError(f"{name} {level!r}: an interval's level lies strictly between 0 and 1")
    return float(level)


# Above this the Huber loss is least squares on every residual a loss can have (a log ratio of 100 is a loss
# e^100 times another), and delta^2/2 in its linear branch overflows near 1e154: numpy printed warnings.
MAX_DELTA = 100.0


def check_delta(delta, name: str = "delta") -> float:
    """The Huber threshold: a positive finite number at most MAX_DELTA, or a one-line UserError."""
    if isinstance(delta, bool) or not isinstance(delta, (int, float, np.floating)) or not 0 < delta <= MAX_DELTA:
        shown = f"{delta:g}" if isinstance(delta, (int, float, np.floating)) else repr(delta)
        raise UserError(f"{name} must be a positive finite number at most {MAX_DELTA:g} (least squares already), "
                        f"not {shown}")
    return float(delta)


@dataclass(frozen=True)
class Resampling:
    """How a fit's uncertainty is estimated: ``n`` refits (0: none) on resamples of the runs drawn with
    replacement, or of whole groups of runs sharing a value of the column ``by`` (one model's checkpoints, one
    seed: the unit whose draws are independent); the draws' ``seed``; the ``level`` of percentile intervals.
    ``fraction``: instead of the bootstrap, refits on that share of the units drawn without replacement
    (subsampling, as Hoffmann et al. refit on 80% of their runs); its spread is not a sampling interval."""

    n: int = 0
    by: str | None = None
    seed: int = 0
    level: float = 0.95
    fraction: float | None = None

    def __post_init__(self):
        if isinstance(self.n, bool) or not isinstance(self.n, (int, np.integer, float)) or int(self.n) != self.n \
                or self.n < 0:
            raise UserError(f"the number of bootstrap resamples must be a whole number >= 0, not {self.n!r}")
        if self.n == 1:   # one resample has no spread: its "interval" would be a point
            raise UserError("bootstrap 1: one resample gives no interval; use 0 (none) or at least 2 (1000 is usual)")
        check_resample_count(int(self.n))
        if isinstance(self.seed, bool) or not isinstance(self.seed, (int, np.integer)) or self.seed < 0:
            raise UserError(f"seed {self.seed!r}: a resampling seed is a whole number >= 0")
        check_level(self.level)
        if self.by is not None and not isinstance(self.by, str):
            raise UserError(f"bootstrap_by {self.by!r}: the name of a column")
        if self.by is not None and not self.n:
            raise UserError(f"resampling groups of {self.by!r} needs a number of resamples")
        if self.fraction is not None:
            check_fraction(self.fraction)
            if not self.n:
                raise UserError(f"subsample fraction {self.fraction:g} needs a number of refits")


@dataclass(frozen=True)
class FitOptions:
    """How to fit, for every law: the objective and its Huber δ, the resampling, the parameters held or tied, and
    the solver with its settings. The defaults are the law's own objective and solver (for Chinchilla's law,
    Hoffmann's method done to convergence), without a bootstrap."""

    delta: float = HUBER_DELTA     # Huber threshold on log residuals
    resampling: Resampling = Resampling()
    # Constraints, for every law (lmfit's ``vary=False`` and ``expr``): parameters held at a value, as (name, value)
    # pairs, and parameters tied to another or given by a formula, as (name, other) pairs (dicts are accepted):
    # ``tied={"beta": "alpha"}`` is Chinchilla's beta = alpha. The law they are fitted with checks the names and
    # ranges (``fitting.laws.base.constraints``), and its own solver any rule of its own.
    fixed: tuple[tuple[str, float], ...] = ()
    tied: tuple[tuple[str, str], ...] = ()
    # What the fit minimises: "huber" (δ on the residuals in the law's space) or "squares"; None: the law's own
    # (``Law.objective``: Huber for losses, squares for downstream metrics).
    objective: str | None = None
    # The solver, by its name in ``fitting.solvers`` (None: the law's own, ``Law.solver``): "least-squares" fits
    # Chinchilla's form by the generic solver, which takes any tie, start or range its parameters set.
    solver: str | None = None
    # The solver's own settings (None: its defaults), of the type its entry in ``fitting.solvers`` names: a
    # ``NewtonSettings`` for "chinchilla-newton"; the generic solver has none (a law's parameters carry its starts
    # and ranges). ``fit_law`` refuses settings of another solver.
    settings: Any = None

    def settings_for(self, kind: type):
        """The solver settings of type ``kind`` these options give, or its defaults."""
        return self.settings if isinstance(self.settings, kind) else kind()

    def __post_init__(self):
        check_delta(self.delta)
        if self.solver is not None:
            from scalinglab.fitting.solvers import SOLVERS, get

            if get(self.solver).result == "CurveFit":
                fits = [s.name for s in SOLVERS.values() if s.result != "CurveFit"]
                raise UserError(f"solver {self.solver} fits training curves (scalinglab.curves), not a table of "
                                f"runs; the solvers of runs are {', '.join(fits)}")
        if self.objective not in (None, "huber", "squares"):
            raise UserError(f"objective {self.objective!r}: expected huber or squares (or None, the law's own)")
        if not isinstance(self.resampling, Resampling):
            raise UserError(f"resampling must be a Resampling, not {type(self.resampling).__name__}")
        if self.settings is not None:
            from scalinglab.fitting.solvers import settings_types

            kinds = settings_types()
            if not isinstance(self.settings, kinds):
                raise UserError(f"settings must be a solver's settings ({', '.join(k.__name__ for k in kinds)}), "
                                f"not {type(self.settings).__name__}")
            if self.settings == type(self.settings)():   # the defaults, given or not, are one set of options
                object.__setattr__(self, "settings", None)
        object.__setattr__(self, "fixed", normalise_fixed(self.fixed))
        object.__setattr__(self, "tied", normalise_ties(self.tied))

    def with_resampling(self, n: int | None = None, **changes) -> FitOptions:
        """These options with the resampling's count ``n`` and any of ``by``, ``seed`` and ``level`` changed:
        ``fit_law(law, x, y, FitOptions().with_resampling(200, seed=1))``; a count of 0 drops the groups too."""
        if n is not None:
            changes["n"] = n
        if not changes.get("n", self.resampling.n):
            changes.setdefault("by", None)   # no resamples: no groups to resample
        return replace(self, resampling=replace(self.resampling, **changes)) if changes else self



def normalise_fixed(fixed) -> tuple[tuple[str, float], ...]:
    """Fixed parameters as ((name, value), ...): each named once, at a finite number. The law they are fitted with
    checks the names and ranges (``fitting.laws.base.check_fixed``), so ``FitOptions(fixed={"Rstar_N": 5})`` holds
    the data-constrained law's R*_N, and a law's own solver its own rules (Chinchilla's, positive exponents)."""
    pairs = fixed.items() if isinstance(fixed, Mapping) else fixed
    out: dict[str, float] = {}
    for pair in pairs:
        try:
            name, value = pair
        except (TypeError, ValueError):
            raise UserError(f"fixed {pair!r}: a fixed parameter is a pair (name, value)") from None
        key = str(name).strip()
        if not key:
            raise UserError("a fixed parameter needs a name")
        try:
            v = float(value)
        except (TypeError, ValueError):
            raise UserError(f"fixed {key} must be a number, not {value!r}") from None
        if not np.isfinite(v):
            raise UserError(f"fixed {key} must be a finite number, not {v:g}")
        twice = [k for k in out if k.lower() == key.lower()]
        if twice:
            raise UserError(f"{twice[0]} is fixed twice ({out[twice[0]]:g} and {v:g})")
        out[key] = v
    return tuple(out.items())


def normalise_ties(tied) -> tuple[tuple[str, str], ...]:
    """Ties as ((name, other), ...): each a parameter held equal to another, named once and not to itself. The
    law they are fitted with checks that both exist (``fitting.laws.base.check_ties``)."""
    pairs = tied.items() if isinstance(tied, Mapping) else tied
    out: dict[str, str] = {}
    for pair in pairs:
        try:
            name, other = (str(x).strip() for x in pair)
        except (TypeError, ValueError):
            raise UserError(f"tied {pair!r}: a tie is a pair (name, the parameter it equals)") from None
        if not name or not other:
            raise UserError(f"tied {pair!r}: a tie names two parameters")
        if name.lower() == other.lower():
            raise UserError(f"{name} is tied to itself")
        if name in out:
            raise UserError(f"{name} is tied twice ({out[name]} and {other})")
        out[name] = other
    return tuple(out.items())


