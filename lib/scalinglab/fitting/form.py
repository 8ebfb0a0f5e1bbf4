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
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from scalinglab.errors import UserError

ROLE_NAMES = {"n": "parameters N", "d": "training tokens D", "u": "unique tokens U", "x": "the variable x",
              "loss": "the loss (as input)"}


@dataclass(frozen=True)
class Param:
    """One parameter: ``log``: fitted as its logarithm (a positive scale); ``starts``: values, or a function of
    (inputs, y) giving values (data-aware starts, e.g. a share of the smallest loss). As lmfit's Parameter, it
    fixes and ties itself: ``vary=False`` holds it at ``value``; ``expr`` gives it as a formula of the others
    (``"alpha"``, ``"2*A"``: ``fitting.expressions``). ``Law.set`` makes a law with them set; the solver is
    the options' (``FitOptions.solver``), else the law's own."""

    name: str
    meaning: str
    lower: float
    upper: float
    starts: tuple[float, ...] | Callable[[Mapping[str, np.ndarray], np.ndarray], tuple[float, ...]]
    log: bool = False
    vary: bool = True
    value: float | None = None
    expr: str | None = None


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
    # The parameters ``set`` changed from the registered form (held, tied, bounded or started): a solver that
    # fits every parameter freely refuses a law with any.
    edited: tuple[str, ...] = ()

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

    @property
    def held(self) -> dict[str, float]:
        """The parameters set not to vary, at their values."""
        return {p.name: float(p.value) for p in self.params if not p.vary}

    @property
    def exprs(self) -> dict[str, str]:
        """The parameters given as a formula of others (lmfit's ``expr``): name -> formula."""
        return {p.name: p.expr for p in self.params if p.expr is not None}

    def set(self, name: str, *, value: float | None = None, vary: bool | None = None, lower: float | None = None,
            upper: float | None = None, expr: str | None = None) -> Law:
        """This law with one parameter set, as lmfit's ``Parameter.set``: ``vary=False`` with a ``value`` holds
        it there; a ``value`` alone is its one start; ``lower``/``upper`` narrow its range; ``expr`` gives it as a
        formula of the other parameters (``"alpha"`` ties it; ``"2*A"``). ``expr=""`` or ``vary=True`` frees it
        again. A UserError names what cannot hold. Chaining sets several: ``law.set("E", ...).set("beta", ...)``."""
        from scalinglab.fitting.expressions import parse

        p = self.param(name)
        lo = p.lower if lower is None else float(lower)
        hi = p.upper if upper is None else float(upper)
        if not (np.isfinite(lo) and np.isfinite(hi)) or lo > hi or (p.log and lo <= 0):
            raise UserError(f"{p.name}: range [{lo:g}, {hi:g}] is empty or not finite" +
                            (" (it is fitted in log, so its lower bound must be positive)" if p.log else ""))
        changes: dict[str, Any] = {"lower": lo, "upper": hi}
        if expr is not None:
            text = str(expr).strip() or None
            if text is not None and p.name in parse(text, self.names, f"{p.name} =").names:
                raise UserError(f"{p.name} = {text}: a parameter cannot be given by itself")
            changes["expr"] = text
        if vary is not None:
            changes["vary"] = bool(vary)
        held = not changes.get("vary", p.vary)
        given = changes.get("expr", p.expr)
        if held and given is not None:
            raise UserError(f"{p.name}: held at a value and given by {given}; give one of them")
        if value is not None:
            v = float(value)
            if not np.isfinite(v) or not lo <= v <= hi:
                raise UserError(f"{p.name} = {value}: law {self.name} allows {p.name} in [{lo:g}, {hi:g}]")
            # Held: the value it is held at. Free: lmfit's initial value, the fit's one start.
            changes.update(value=v, starts=(v,))
        if held and changes.get("value", p.value) is None:
            raise UserError(f"{p.name}: vary=False holds it at a value; give value=")
        if held and not lo <= changes.get("value", p.value) <= hi:
            raise UserError(f"{p.name} held at {changes.get('value', p.value):g}: outside [{lo:g}, {hi:g}]")
        new = replace(p, **changes)
        edited = self.edited + (() if p.name in self.edited else (p.name,))
        return replace(self, params=tuple(new if q.name == p.name else q for q in self.params), edited=edited)

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
