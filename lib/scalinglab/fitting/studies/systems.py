"""Which system (or recipe) scales better: the same Approach-3 law fitted to two tables of runs, and the
differences that matter with paired-bootstrap intervals.

Reported, system a minus system b: the exponents α, β and a = β/(α+β) (N_opt ∝ C^a); at each budget C, the
ratio N_opt,a / N_opt,b and the difference of the losses each system reaches at its own compute-optimal
allocation, with P(a better than b) = the share of paired replicates where a's loss there is the lower.

How replicates are paired:

- **paired** (shared design): when both tables hold the same set of (N, D) design points (and no
  ``groups``), each replicate resamples the design points with the *same* indices in both tables (a cluster
  bootstrap over design points, identical draws from the same seed). A design point that happened to be
  lucky or unlucky (a noisy size, an edge of the grid) then counts equally in a and b, and the interval of a
  difference holds only what differs between the systems.
- **independent**: otherwise (different grids, or ``groups`` that resample whole runs in each table), each
  table is resampled on its own (seeds ``seed`` and ``seed + 1``) and replicate i of a is set against
  replicate i of b: for independent samples any pairing gives the same distribution of differences.

A replicate counts when both fits converged. Losses are comparable only when both systems are evaluated in
the same units (tokenizer, validation set); exponents are comparable regardless.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scalinglab.errors import OptionError, UserError
from scalinglab.fitting.allocation import check_budgets
from scalinglab.fitting.chinchilla import approach3 as F
from scalinglab.fitting.chinchilla.law import ScalingLaw
from scalinglab.fitting.laws.base import fit_law
from scalinglab.fitting.options import FitOptions
from scalinglab.fitting.prediction.domain import Domain
from scalinglab.fitting.results import LawFit
from scalinglab.serialization import to_jsonable

EXPONENTS = ("alpha", "beta", "a")


def design_keys(N, D) -> np.ndarray:
    """One label per run naming its design point (N, D), to 6 significant digits."""
    return np.array([f"{n:.6g}|{d:.6g}" for n, d in zip(np.asarray(N, float), np.asarray(D, float))])


@dataclass(frozen=True)
class Comparison:
    """Two fits and their paired differences (a − b); see the module for the pairing."""

    labels: tuple[str, str]
    fits: tuple[LawFit, LawFit]
    pairing: str                      # "paired" or "independent"
    why: str                          # the reason, in words
    n_pairs: int                      # replicates where both fits converged
    level: float
    differences: dict[str, dict[str, Any]]         # name -> estimate, ci
    budgets: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return to_jsonable({"a": {"source": self.labels[0], **self.fits[0].to_dict()},
                            "b": {"source": self.labels[1], **self.fits[1].to_dict()},
                            "pairing": self.pairing, "pairing_reason": self.why, "n_pairs": self.n_pairs,
                            "level": self.level, "differences": self.differences, "budgets": self.budgets})

    def summary(self) -> str:
        pct = f"{round(self.level * 100):d}%"
        a, b = self.fits
        lines = [f"a = {self.labels[0]} ({a.n_rows} runs, {a.status}); b = {self.labels[1]} ({b.n_rows} runs, "
                 f"{b.status})",
                 f"bootstrap: {self.pairing}, {self.why}; {self.n_pairs} replicates where both fits converged", "",
                 f"{'':<14}{'a':>10}{'b':>10}{'a - b':>10}   {pct} interval of a - b"]
        for k in EXPONENTS:
            d = self.differences[k]
            name = "a (N_opt∝C^a)" if k == "a" else k
            lines.append(f"{name:<14}{getattr(a, k):>10.4g}{getattr(b, k):>10.4g}{d['estimate']:>+10.3g}   "
                         f"[{d['ci'][0]:+.3g}, {d['ci'][1]:+.3g}]" + ("   excludes 0" if _excludes(d['ci'], 0) else ""))
        for r in self.budgets:
            lines += ["", f"at C = {r['C']:.3g} FLOP, each system at its own compute-optimal allocation (losses "
                          "compare only in the same units: tokenizer, validation set):"]
            ratio, dl = r["n_opt_ratio"], r["loss_difference"]
            lines.append(f"  N_opt  a {r['n_opt'][0]:.4g}, b {r['n_opt'][1]:.4g}; a/b {ratio['estimate']:.3g}   "
                         f"[{ratio['ci'][0]:.3g}, {ratio['ci'][1]:.3g}]")
            lines.append(f"  loss   a {r['loss'][0]:.4f}, b {r['loss'][1]:.4f}; a - b {dl['estimate']:+.4f}   "
                         f"[{dl['ci'][0]:+.4f}, {dl['ci'][1]:+.4f}]")
            lines.append(f"  P(a better than b: lower loss there) = {r['p_a_better']:.3f}")
            far = [lab for lab, out in zip("ab", r["outside"]) if out]
            if far:
                lines.append(f"  WARNING: outside the fitted runs of {' and '.join(far)}: the comparison extrapolates")
        return "\n".join(lines)


def _excludes(ci, value) -> bool:
    return bool(np.isfinite(ci).all() and (ci[0] > value or ci[1] < value))


def compare(a, b, *, labels=("a", "b"), budgets=(), n_boot: int = 1000, seed: int = 0, level: float = 0.95,
            options: FitOptions | None = None, groups=(None, None), unit: str = "groups",
            progress: bool = False) -> Comparison:
    """Fit the law to ``a`` and ``b`` (each (N, D, L)) and return their paired differences.

    ``groups``: one label array per table (or None) to resample whole groups of rows (e.g. a run's
    checkpoints); with groups the resampling is independent. ``budgets``: compute budgets C (FLOP)."""
    if n_boot < 2:
        raise OptionError(f"a comparison needs a bootstrap ({{n_boot}} K with K >= 2), not {n_boot}", "n_boot")
    budgets = check_budgets(budgets) if len(budgets) else np.array([])
    (Na, Da, La), (Nb, Db, Lb) = [tuple(np.asarray(x, float) for x in t) for t in (a, b)]
    ka, kb = design_keys(Na, Da), design_keys(Nb, Db)
    shared = set(ka) & set(kb)
    if groups[0] is None and groups[1] is None and set(ka) == set(kb):
        pairing = "paired"
        why = (f"both tables hold the same {len(shared)} (N, D) design points, so each replicate resamples the "
               "design points with the same indices in both")
        kw = [dict(groups=ka, unit="design points", seed=seed), dict(groups=kb, unit="design points", seed=seed)]
    else:
        pairing = "independent"
        if groups[0] is not None or groups[1] is not None:
            why = f"each table resampled by its own {unit}, which the two do not share"
        else:
            why = (f"the tables' (N, D) designs differ ({len(set(ka))} and {len(set(kb))} points, {len(shared)} "
                   "shared), so each is resampled on its own")
        kw = [dict(groups=groups[0], unit=unit, seed=seed), dict(groups=groups[1], unit=unit, seed=seed + 1)]
    fits = []
    for (N, D, L), label, k in zip(((Na, Da, La), (Nb, Db, Lb)), labels, kw):
        opts = (options or FitOptions()).with_resampling(n_boot, level=level, seed=k.pop("seed"))
        try:
            fits.append(fit_law(F.CHINCHILLA, {"n": N, "d": D}, L, opts, progress=progress, **k))
        except UserError as exc:
            raise UserError(f"{label}: {exc}") from None
    fa, fb = fits
    for fit, label in zip(fits, labels):   # a fit at a bound gave N_opt inf and "P(a better) = 1.000"
        if fit.status != "converged":
            bound = f": {', '.join(fit.at_bound)} at a bound" if fit.at_bound else ""
            raise UserError(f"{label}: the fit did not converge (status {fit.status}{bound}), so its exponents and "
                            "allocations are no estimates to compare")
    both = fa.bootstrap.converged & fb.bootstrap.converged
    sa = fa.bootstrap.samples[both[fa.bootstrap.converged]]
    sb = fb.bootstrap.samples[both[fb.bootstrap.converged]]
    if len(sa) < 2:
        raise UserError(f"only {len(sa)} of {n_boot} replicates converged in both fits: no intervals")
    la, lb = ScalingLaw(*sa.T), ScalingLaw(*sb.T)
    q = [(1 - level) / 2 * 100, (1 + level) / 2 * 100]

    def interval(x) -> list[float]:
        return [float(v) for v in np.percentile(x, q)]

    diffs = {k: {"estimate": float(getattr(fa, k) - getattr(fb, k)),
                 "ci": interval(getattr(la, k) - getattr(lb, k))} for k in EXPONENTS}
    dom = (Domain.from_runs(Na, Da), Domain.from_runs(Nb, Db))
    rows = []
    for c in budgets:
        na, nb = float(fa.n_opt(c)), float(fb.n_opt(c))
        loss_a, loss_b = float(fa.loss(na, c / (6 * na))), float(fb.loss(nb, c / (6 * nb)))
        ra, rb = la.n_opt(c), lb.n_opt(c)
        da, db = la.loss(ra, c / (6 * ra)), lb.loss(rb, c / (6 * rb))
        outside = [bool(d.distance(n, c / (6 * n))["outside"][0]) for d, n in zip(dom, (na, nb))]
        rows.append({"C": float(c), "n_opt": [na, nb], "loss": [loss_a, loss_b],
                     "n_opt_ratio": {"estimate": na / nb, "ci": interval(ra / rb)},
                     "loss_difference": {"estimate": loss_a - loss_b, "ci": interval(da - db)},
                     "p_a_better": float(np.mean(da < db)), "outside": outside})
    return Comparison(labels=tuple(labels), fits=(fa, fb), pairing=pairing, why=why, n_pairs=int(both.sum()),
                      level=level, differences=diffs, budgets=rows)
