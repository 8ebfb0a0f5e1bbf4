"""The solvers, by name: what each one minimises, which laws it fits, and where it lives.

A law names its solver (``Law.solver``), and ``laws.base.fit_law`` hands every fit to it through ``solve``; the
studies that set another estimator beside a law's own (the scoreboard's and the estimator audit's variable
projection, the design study's weighted refits) ask for it here by the same name. So one name is one estimator
everywhere, and a reader follows a fit from ``fit_law`` to this table to the function that solves it.

Each entry is a ``"module:function"`` imported on first use: the engine imports no law's module, and scipy,
which only the generic solver needs, stays unloaded on Chinchilla's path (the CLI's start).

A solver's function takes ``(law, inputs, y, **settings)``; ``inputs`` maps each of the law's roles to an array
(the curve solvers': ``curves`` and their ``prepared`` schedules, ``y`` the log losses).
``refit``, where a solver has one, re-solves many resample weightings of the same runs at once from given starts
(``(theta0 (K, p), inputs, y, weights (K, n), options, max_iter)`` → ``(theta (K, p), converged (K,))``).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from scalinglab.errors import UserError


def _load(entry: str):
    module, name = entry.split(":")
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class Solver:
    """One estimator: ``name`` (what options, results and messages call it), what it ``minimises``, the ``laws`` it
    fits (None: every law of the registry), the function that fits (``entry``) and its result type (``result``),
    ``refit``, the batched re-solve of resample weightings, where it has one, and ``generic``: it fits any law from
    that law's own parameters (their starts, ranges and formulas), where a law's own solver (Chinchilla's Newton)
    has its own starts and box and checks its runs itself."""

    name: str
    minimises: str
    entry: str
    result: str
    laws: tuple[str, ...] | None = None
    refit_entry: str | None = None
    generic: bool = False
    settings: str | None = None   # the type of its settings (``FitOptions.settings``), where it takes any

    def check(self, law) -> None:
        if self.laws is not None and law.name not in self.laws:
            raise UserError(f"solver {self.name} fits {', '.join(self.laws)}, not law {law.name}")

    def check_settings(self, settings) -> None:
        """Settings given in the options are this solver's, or a UserError: another's would be ignored."""
        if settings is None or (self.settings is not None and isinstance(settings, _load(self.settings))):
            return
        takes = f"takes {self.settings.split(':')[1]}" if self.settings else "has no settings"
        raise UserError(f"settings {type(settings).__name__} are not solver {self.name}'s; it {takes}")

    def __call__(self, law, inputs, y, **settings) -> Any:
        self.check(law)
        return _load(self.entry)(law, inputs, y, **settings)

    def refit(self, theta0, inputs, y, weights, options, **settings):
        if self.refit_entry is None:
            raise UserError(f"solver {self.name} has no batched refit of resample weights")
        return _load(self.refit_entry)(theta0, inputs, y, weights, options, **settings)


SOLVERS: dict[str, Solver] = {s.name: s for s in (
    Solver("least-squares",
           "the Huber loss (or half the sum of squares) of the residuals in the law's space, by scipy's "
           "least_squares from a grid of starts in the free coordinates",
           "scalinglab.fitting.laws.base:generic_solver", "LawFit", generic=True),
    Solver("chinchilla-newton",
           "the Huber loss (δ = 1e-3) of log residuals, summed (Hoffmann et al.'s Approach 3), by a batched "
           "Newton/IRLS solver from their 4,500 starts (or one variable-projection start)",
           "scalinglab.fitting.chinchilla.approach3:newton", "LawFit", ("chinchilla",),
           "scalinglab.fitting.chinchilla.approach3:refit",
           settings="scalinglab.fitting.chinchilla.settings:NewtonSettings"),
    Solver("lbfgs-hoffmann",
           "the Huber loss (δ = 1e-3) of log residuals, summed or averaged over the runs, by scipy's L-BFGS-B with "
           "its default tolerances from each of Hoffmann et al.'s 4,500 starts, the lowest kept: their procedure as "
           "written, which stops early on the average (notebook 01's loss-scale trap)",
           "scalinglab.fitting.chinchilla.lbfgs_reference:solve", "LawFit", ("chinchilla",),
           settings="scalinglab.fitting.chinchilla.lbfgs_reference:LbfgsSettings"),
    Solver("varpro",
           "the sum of squared relative residuals (≈ log residuals), E, A, B ≥ 0, by variable projection: "
           "α and β searched, E, A and B solved by non-negative least squares",
           "scalinglab.fitting.frontier.varpro:solve", "VarproFit", ("chinchilla",)),
    Solver("curve-huber",
           "the Huber loss (δ = 1e-3) of log loss summed over every logged point of every training curve (Luo et "
           "al.'s objective), by scipy's bounded least squares with the law's analytic Jacobian from the best "
           "starts of a grid over its nonlinear parameters (the linear ones solved at each)",
           "scalinglab.curves.fit:huber_solver", "CurveFit", ("multipower", "tissue", "baseline")),
    Solver("curve-early-stopped",
           "the same Huber objective, by Luo et al.'s own procedure: AdamW from their surrogate's start, stopped "
           "early, the lowest objective seen kept (not its optimum)",
           "scalinglab.curves.fit:early_stopped_solver", "CurveFit", ("multipower",)),
)}


def settings_types() -> tuple[type, ...]:
    """The settings types of every solver that takes any (``FitOptions.settings`` is one of them)."""
    return tuple(_load(s.settings) for s in SOLVERS.values() if s.settings)


def get(name: str) -> Solver:
    try:
        return SOLVERS[name]
    except KeyError:
        raise UserError(f"no solver {name!r}; solvers: {', '.join(SOLVERS)}") from None


def solve(name: str, law, inputs, y, **settings) -> Any:
    """Fit ``law`` to (``inputs``, ``y``) with the solver called ``name``."""
    return get(name)(law, inputs, y, **settings)
