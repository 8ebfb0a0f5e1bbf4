"""What a scaling law is, apart from any fit: its form, parameters, inputs and residual space.

A ``Law`` names its inputs by role (``n`` parameters, ``d`` tokens, ``u``
unique tokens, ``x`` one free variable, ``loss`` a loss used as input), its
target (``loss`` or ``metric``), its parameters (meaning, bounds, whether
they are fitted in log) and a vectorised ``predict``. ``fitting.laws`` holds
the registered forms and fits them; ``fitting.results.LawFit`` is what a fit
returns. numpy only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scalinglab.errors import UserError

ROLE_NAMES = {"n": "parameters N", "d": "training tokens D", "u": "unique tokens U", "x": "the variable x",
              "loss": "the loss (as input)"}


@dataclass(frozen=True)
class Param:
    """One parameter: ``log``: fitted as its logarithm (a positive scale); ``starts``: values, or a function of
    (inputs, y) giving values (data-aware starts, e.g. a share of the smallest loss)."""

    name: str
    meaning: str
    lower: float
    upper: float
    starts: tuple[float, ...] | Callable[[Mapping[str, np.ndarray], np.ndarray], tuple[float, ...]]
    log: bool = False


@dataclass(frozen=True)
class Law:
    """A functional form: ``predict(inputs, params)`` broadcasts (params may be (K, 1) arrays, inputs (n,))."""

    name: str
    title: str
    formula: str
    citation: str
    inputs: tuple[str, ...]
    target: str                         # "loss" (positive) or "metric" (e.g. an error rate in (0, 1))
    params: tuple[Param, ...]
    predict: Callable[[Mapping[str, np.ndarray], Mapping[str, Any]], np.ndarray]
    space: str = "log"                  # residuals: "log", "linear" or "logit"
    objective: str = "huber"            # default objective: "huber" (δ on the residuals) or "squares"
    note: str = ""
    solver: str = "least-squares"      # the solver's name in ``fitting.solvers.SOLVERS`` (Chinchilla's: its Newton)
    # Quantities that follow from the parameters (Chinchilla's a = β/(α+β), b = α/(α+β)): name -> f(params),
    # vectorised, so each has an estimate and, from the replicates, an interval.
    derived: Mapping[str, Callable[[Mapping[str, Any]], Any]] = field(default_factory=dict)
    # A law with a compute-optimal allocation: params -> an object with n_opt, d_opt, loss (``law.ScalingLaw``).
    closed_form: Callable[[Mapping[str, float]], Any] | None = None
    # Positive scale parameters whose uncertainty is given on the log scale (SE of ln: a relative error), and the
    # exponents whose SE is judged against their value (``results.WEAK_REL_SE``). Default: the ``log`` params.
    log_scale: tuple[str, ...] | None = None
    exponents: tuple[str, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)

    @property
    def scale_params(self) -> tuple[str, ...]:
        return self.log_scale if self.log_scale is not None else tuple(p.name for p in self.params if p.log)

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name.lower() == name.lower():
                return p
        raise UserError(f"law {self.name} has no parameter {name!r}; its parameters are {', '.join(self.names)}")

    def describe(self) -> str:
        """Several lines: the form, its citation and what each parameter means."""
        lines = [f"{self.name}: {self.title}", f"  {self.formula}", f"  {self.citation}"]
        lines += [f"  {p.name}: {p.meaning}" for p in self.params]
        if self.note:
            lines.append(f"  note: {self.note}")
        return "\n".join(lines)


# --- residuals -------------------------------------------------------------------------------------------


def transform(y, space: str) -> np.ndarray:
    y = np.asarray(y, float)
    with np.errstate(all="ignore"):
        if space == "log":
            return np.log(y)
        if space == "logit":
            return np.log(y) - np.log1p(-y)
    return y


def check_target(law: Law, y: np.ndarray, name: str = "target") -> None:
    """UserError unless every target value is finite and lies where the residual space is defined."""
    bad = ~np.isfinite(y)
    if law.space == "log":
        bad |= y <= 0
        need = "positive"
    elif law.space == "logit":
        bad |= (y <= 0) | (y >= 1)
        need = "strictly between 0 and 1"
    else:
        need = "finite"
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise UserError(f"{name} must be {need} for law {law.name}: {int(bad.sum())} of {len(y)} values are not "
                        f"(first at position {i}: {y[i]:g})")
