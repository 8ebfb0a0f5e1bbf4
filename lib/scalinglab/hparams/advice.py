"""What ``scalinglab hparams`` answers for a new (N, D): the learning rate and batch size the fitted law predicts,
with intervals over resamples of whole (N, D) groups; how far the query lies from the fitted groups; and the
loss penalty predicted for the usual alternatives (a fixed learning rate; Kaplan et al.'s and DeepSeek's rules).

The penalty comes from the loss surfaces of the fitted groups (``surface``): the median over groups of each
quadratic's curvature in (ln lr, ln batch), relative to the optimum's loss. A query has no surface of its own,
so the penalty assumes the surface's shape in the logs carries over; a move beyond the lr or batch range the
groups' quadratics were fitted on is flagged as an extrapolation of the quadratic itself. numpy only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scalinglab.errors import OptionError, UserError
from scalinglab.fitting.prediction.domain import Domain
from scalinglab.hparams.optima import AUTHORS_THRESHOLD, HparamRuns, fit_hparam_law
from scalinglab.hparams.surface import fit_surface, penalty, pooled_curvature
from scalinglab.serialization import to_jsonable

# Kaplan et al. 2020, eq. D.1: lr(N) = 0.003239 - 0.0001395 ln N (N non-embedding; positive below ~1.2e10).
KAPLAN_LR = (0.003239, 0.0001395)
# DeepSeek LLM (2024), eq. 1: eta_opt = 0.3118 C^-0.1250, B_opt = 0.2920 C^0.3271 tokens, with C = M D in FLOPs
# (M non-embedding FLOPs per token); here C is taken as 6 N D, which omits attention's share of M.
DEEPSEEK = (0.3118, -0.1250, 0.2920, 0.3271)
DEFAULT_FIXED_LR = 3e-4


def kaplan_lr(n: float) -> float:
    a, b = KAPLAN_LR
    return a - b * np.log(n)


def deepseek(n: float, d: float) -> tuple[float, float]:
    c = 6.0 * n * d
    return DEEPSEEK[0] * c ** DEEPSEEK[1], DEEPSEEK[2] * c ** DEEPSEEK[3]


@dataclass(frozen=True)
class HparamAdvice:
    """The predicted optimum at (n, d) with intervals, the query's distance from the fitted groups, and the
    alternatives' predicted penalties."""

    n: float
    d: float
    label: str
    law: object                 # HparamLaw
    lr: float
    lr_interval: tuple
    batch: float
    batch_interval: tuple
    distance: dict
    alternatives: list
    n_surfaces: int
    level: float

    def to_dict(self) -> dict:
        return to_jsonable(dict(n=self.n, d=self.d, runs=self.label, lr=self.lr, lr_interval=self.lr_interval,
                                batch_tokens=self.batch, batch_interval=self.batch_interval, level=self.level,
                                interval_unit=self.law.unit, law=self.law.to_dict(), distance=self.distance,
                                alternatives=self.alternatives, surfaces=self.n_surfaces))

    def summary(self) -> str:
        pct = f"{100 * self.level:g}%"
        dist = self.distance
        lines = [f"{self.label}: at N = {self.n:.3g}, D = {self.d:.3g} tokens",
                 f"  learning rate {self.lr:.3g}  [{self.lr_interval[0]:.3g}, {self.lr_interval[1]:.3g}]",
                 f"  batch size    {self.batch:.3g} tokens  [{self.batch_interval[0]:.3g}, "
                 f"{self.batch_interval[1]:.3g}]",
                 f"  ({pct} intervals over {self.law.boot.shape[0]} resamples of the {self.law.n_groups} "
                 f"(N, D) groups)",
                 f"  distance from the fitted groups: {dist['decades_n']:+.2f} decades in N, "
                 f"{dist['decades_d']:+.2f} in D (0: inside their range);",
                 f"  nearest group N = {dist['nearest_n']:.3g}, D = {dist['nearest_d']:.3g}, "
                 f"{dist['nearest_decades']:.2f} decades away"]
        if dist["outside"]:
            lines.append("WARNING: the query lies outside the fitted groups: the law extrapolates there")
        lines.append(f"  predicted loss penalty of the alternatives (median curvature of {self.n_surfaces} "
                     "groups' loss surfaces):")
        for a in self.alternatives:
            if a["penalty_pct"] is None:
                lines.append(f"    {a['name']:<26} not applicable: {a['note']}")
                continue
            lines.append(f"    {a['name']:<26} lr {a['lr']:.3g}, batch {a['batch']:.3g}: +{a['penalty_pct']:.3f}% "
                         f"[{a['penalty_lo']:.3f}, {a['penalty_hi']:.3f}]")
            if a["beyond_surface"]:
                lines.append(f"    {'':<26} (beyond the surfaces' range: the quadratic extrapolates)")
        return "\n".join(lines)


def advise(runs: HparamRuns, n: float, d: float, *, fixed_lr: float = DEFAULT_FIXED_LR,
           threshold: float = AUTHORS_THRESHOLD, n_boot: int = 1000, seed: int = 0, level: float = 0.95,
           law=None, surfaces=None) -> HparamAdvice:
    """The advice at (n, d) from ``runs`` (a law fitted there unless ``law`` is given; surfaces likewise)."""
    for name, v in (("N", n), ("D", d), ("the fixed lr", fixed_lr)):
        if not (isinstance(v, (int, float)) and np.isfinite(v) and v > 0):
            raise UserError(f"{name} must be a positive finite number, got {v!r}")
    law = law if law is not None else fit_hparam_law(runs, threshold=threshold, n_boot=n_boot, seed=seed,
                                                     level=level)
    if not law.boot.size:
        raise OptionError("the intervals need resamples: {n_boot} must be at least 1", "n_boot")
    lr, batch = (float(v) for v in law.predict(n, d))
    lr_b, bs_b = law.predict_boot(n, d)
    q = (1 - level) / 2
    iv = lambda v: tuple(float(x) for x in np.quantile(v, [q, 1 - q]))  # noqa: E731
    keys, g = runs.groups
    if surfaces is None:
        surfaces = [fit_surface(runs.lr[g == k], runs.batch[g == k], runs.loss[g == k], n=keys[k, 0],
                                d=keys[k, 1], n_boot=0) for k in range(len(keys))]
    curv = pooled_curvature(surfaces)
    dom = Domain.from_runs(keys[:, 0], keys[:, 1])
    dd = dom.distance(np.array([n]), np.array([d]))
    logs = np.log10(keys)
    sep = np.hypot(logs[:, 0] - np.log10(n), logs[:, 1] - np.log10(d))
    k = int(np.argmin(sep))
    distance = dict(decades_n=float(dd["decades_N"][0]), decades_d=float(dd["decades_D"][0]),
                    decades_c=float(dd["decades_C"][0]),
                    mahalanobis=float(dd["mahalanobis"][0]), outside=bool(dd["outside"][0]),
                    nearest_n=float(keys[k, 0]), nearest_d=float(keys[k, 1]), nearest_decades=float(sep[k]))
    # how far (in ln lr, ln batch) the groups' quadratics reach from their optima: beyond it the penalty is the
    # quadratic extrapolated
    reach = _reach(runs, surfaces)
    alts = []

    def add(name, lr_a, bs_a, note=""):
        if curv is None or not (np.isfinite(lr_a) and lr_a > 0):
            alts.append(dict(name=name, lr=lr_a, batch=bs_a, penalty_pct=None, penalty_lo=None, penalty_hi=None,
                             beyond_surface=None, note=note or "no loss surface with a minimum"))
            return
        p = 100 * penalty(curv, np.log(lr_a / lr), np.log(bs_a / batch))
        pb = 100 * penalty(curv, np.log(lr_a / lr_b), np.log(bs_a / bs_b))
        lo, hi = iv(pb)
        beyond = bool(abs(np.log(lr_a / lr)) > reach[0] or abs(np.log(bs_a / batch)) > reach[1])
        alts.append(dict(name=name, lr=float(lr_a), batch=float(bs_a), penalty_pct=float(p), penalty_lo=lo,
                         penalty_hi=hi, beyond_surface=beyond, note=note))

    add(f"fixed lr {fixed_lr:g}", fixed_lr, batch)
    kap = kaplan_lr(n)
    add("Kaplan et al. lr(N)", kap, batch, note="" if kap > 0 else "Kaplan's lr(N) is negative beyond N ~ 1.2e10")
    ds_lr, ds_bs = deepseek(n, d)
    add("DeepSeek lr(C), B(C)", ds_lr, ds_bs)
    return HparamAdvice(n=float(n), d=float(d), label=runs.label, law=law, lr=lr, lr_interval=iv(lr_b),
                        batch=batch, batch_interval=iv(bs_b), distance=distance, alternatives=alts,
                        n_surfaces=int(sum(s.ok for s in surfaces)), level=level)


def _reach(runs: HparamRuns, surfaces) -> tuple[float, float]:
    """The largest |ln lr - ln lr*| and |ln batch - ln batch*| among the runs the groups' quadratics were fitted to."""
    keys, g = runs.groups
    rx, ry = 0.0, 0.0
    for k, s in enumerate(surfaces):
        if not s.ok:
            continue
        here = g == k
        use = runs.loss[here] / runs.loss[here].min() - 1 <= s.window
        rx = max(rx, float(np.abs(np.log(runs.lr[here][use] / s.lr_opt)).max()))
        ry = max(ry, float(np.abs(np.log(runs.batch[here][use] / s.batch_opt)).max()))
    return rx, ry
