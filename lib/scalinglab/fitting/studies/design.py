"""Which runs to train next: the k runs, within the compute left, that most shrink the interval of N_opt at a
target budget, chosen by simulation from the current fit's bootstrap.

The question a design answers is "after these runs, how wide will the N_opt(C_target) interval be?". For a
set X of new runs it is estimated by simulation, in S simulated worlds:

1. world s takes a parameter set θ_s drawn from the current fit's bootstrap replicates (a plausible truth)
   and simulates every run's loss, today's runs and X alike: L = L_θs(N, D) · exp(σ z), σ the residual sd of
   the fit in log loss, z standard normal;
2. a bootstrap of M resamples is refitted in that world (warm-started from θ_s, batched), once on today's
   design alone and once on today's design plus X;
3. log10 N_opt(C_target) of each resample, centred on its world's median, is pooled over the worlds, and
   the width of its percentile interval measured, with and without X (pooling S·M values keeps the
   percentiles steady with few of each).

The expected shrinkage is 1 − (width with X)/(width without), the two compared in the same worlds
with the same noise, so the ratio isolates what X adds; the expected width is today's (from the current
bootstrap) times that ratio. The same θ_s, z and resample counts serve every candidate (common random
numbers), so candidates differ by their design, not by the luck of the simulation.

Candidates: at per-run compute c ∈ {B/k, B/(4k)} (B the compute left, so any k of them fit in B), models of
N = N_opt(c) × {1/3, 1, 3} under the current fit (six candidates), D = c/(6N). The k runs are chosen greedily: each
step adds the candidate that most shrinks the expected width given those already chosen. A user's grid
(``score``) is measured the same way. Everything rests on the law's form holding out to the target: the
simulation cannot show a form that fails there (notebook 04).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from scalinglab.errors import OptionError, UserError
from scalinglab.fitting.allocation import check_budgets
from scalinglab.fitting.chinchilla import approach3 as F
from scalinglab.fitting.chinchilla.law import ScalingLaw
from scalinglab.fitting.prediction.domain import Domain
from scalinglab.fitting.prediction.forecast import residual_sd
from scalinglab.fitting.results import LawFit
from scalinglab.fitting.rows import progress_bar
from scalinglab.fitting.solvers import get as get_solver
from scalinglab.serialization import to_jsonable

SIZES = (1 / 3, 1.0, 3.0)               # candidate N as multiples of N_opt at the run's compute
SHARES = (1.0, 0.25)                    # candidate compute per run, as shares of budget_left / k
# Newton iterations per simulated resample, warm-started from the world's own law. A design measures a
# spread, not digits: every resample counts after these iterations, converged to the fit's tolerance or
# not (near E = 0, a natural floor, Newton crawls, and dropping the slow ones would bias the widths);
# only those on an artificial bound are left out, as in the bootstrap.
DESIGN_ITERS = 40


@dataclass
class Simulator:
    """The fixed ingredients of every candidate's score (common random numbers)."""

    result: LawFit
    N: np.ndarray
    D: np.ndarray
    target: float
    truths: np.ndarray    # (S, 5) parameter sets from the bootstrap
    noise_old: np.ndarray  # (S, runs so far) standard normals
    noise_new: np.ndarray  # (S, max new runs) standard normals
    sigma: float
    n_resamples: int
    level: float
    seed: int
    _weights: np.ndarray | None = None
    _base: float | None = None

    def counts(self, n: int) -> np.ndarray:
        """(M, n) resample weights: a Poisson bootstrap (each run counts Poisson(1) times, independently),
        so adding runs leaves today's runs' weights as they were and a design's effect is not masked by
        fresh resampling luck. The first n columns are the same for every n."""
        have = 0 if self._weights is None else self._weights.shape[1]
        if n > have:
            rng = np.random.default_rng([self.seed, have])
            more = rng.poisson(1.0, size=(self.n_resamples, n - have)).astype(float)
            self._weights = more if self._weights is None else np.hstack([self._weights, more])
        return self._weights[:, :n]

    def spread(self, newN=(), newD=()) -> tuple[np.ndarray, float]:
        """log10 N_opt(target) of every converged simulated resample, each centred on its world's median,
        pooled over the worlds (today's design plus runs (newN, newD)); and the share that converged."""
        newN, newD = np.asarray(newN, float), np.asarray(newD, float)
        m = len(newN)
        if m > self.noise_new.shape[1]:
            raise UserError(f"{m} proposed runs; the simulation was set up for at most {self.noise_new.shape[1]}")
        N, D = np.concatenate([self.N, newN]), np.concatenate([self.D, newD])
        opts = self.result.options
        newton = get_solver("chinchilla-newton")
        W = self.counts(len(N))
        z = np.hstack([self.noise_old, self.noise_new[:, :m]])
        pooled, n_ok = [], 0
        for s, theta in enumerate(self.truths):  # one batched solve per world (stacking them costs more)
            law = ScalingLaw(*theta)
            logL = np.log(law.loss(N, D)) + self.sigma * z[s]   # the noise is in log loss
            th, _ = newton.refit(np.repeat(law.theta[None, :], len(W), axis=0), {"n": N, "d": D}, None, W, opts,
                                 max_iter=DESIGN_ITERS, log_y=logL)
            ok = ~F.artificial_bound_flags(th, opts).any(axis=1)
            if ok.sum() >= 3:
                reps = ScalingLaw(*np.exp(th[ok, :3]).T, th[ok, 3], th[ok, 4])
                x = np.log10(reps.n_opt(self.target))
                pooled.append(x - np.median(x))
                n_ok += int(ok.sum())
        return (np.concatenate(pooled) if pooled else np.array([])), n_ok / (len(W) * len(self.truths))

    def width(self, newN=(), newD=()) -> float:
        """The ``level`` percentile width of ``spread``'s pooled values (decades); NaN when under 10 converged."""
        x, _ = self.spread(newN, newD)
        if len(x) < 10:
            return float("nan")
        lo, hi = np.percentile(x, [(1 - self.level) / 2 * 100, (1 + self.level) / 2 * 100])
        return float(hi - lo)

    def ratio(self, newN=(), newD=()) -> float:
        """Width with the new runs over width without, in the same simulated worlds."""
        if self._base is None:
            self._base = self.width()
        return self.width(newN, newD) / self._base


def simulator(result: LawFit, N, D, L, target: float, *, max_runs: int, n_sims: int = 8, n_resamples: int = 48,
              level: float = 0.8, seed: int = 0) -> Simulator:
    bs = result.bootstrap
    if bs is None or len(bs.samples) < 2:
        raise OptionError("a design needs the current fit's bootstrap ({bootstrap} K, K >= 2, with converged "
                          "replicates)",
                          "bootstrap")
    rng = np.random.default_rng(seed)
    truths = bs.samples[rng.choice(len(bs.samples), size=n_sims, replace=len(bs.samples) < n_sims)]
    return Simulator(result=result, N=np.asarray(N, float), D=np.asarray(D, float), target=float(target),
                     truths=truths, noise_old=rng.standard_normal((n_sims, len(np.asarray(N)))),
                     noise_new=rng.standard_normal((n_sims, max_runs)), sigma=residual_sd(result, N, D, L),
                     n_resamples=n_resamples, level=level, seed=seed)


def candidates(result: LawFit, budget_left: float, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(N, D) of the candidate runs (see the module): each uses at most budget_left / k."""
    Ns, Ds = [], []
    for share in SHARES:
        c = budget_left / k * share
        n0 = float(result.n_opt(c))
        for f in SIZES:
            Ns.append(n0 * f)
            Ds.append(c / (6 * n0 * f))
    return np.array(Ns), np.array(Ds)


@dataclass(frozen=True)
class DesignResult:
    target: float
    budget_left: float
    n_runs: int
    level: float
    width_now: float                     # log10 decades, from the current fit's bootstrap
    n_opt: float
    n_opt_ci: tuple[float, float] | None
    proposed: list[dict[str, Any]]       # N, D, C, width after adding it (greedy order), beyond
    proposal: dict[str, Any] | None      # the user's grid: runs, compute, width, shrinkage
    n_sims: int
    n_resamples: int
    n_candidates: int
    target_beyond: float = 0.0           # decades of compute the target lies above the largest fitted run

    @property
    def width(self) -> float:
        return self.proposed[-1]["width_after"] if self.proposed else self.width_now

    def to_dict(self) -> dict[str, Any]:
        return to_jsonable({"target": self.target, "budget_left": self.budget_left, "runs_so_far": self.n_runs,
                            "level": self.level, "n_opt": self.n_opt, "n_opt_ci": self.n_opt_ci,
                            "width_now_decades": self.width_now, "proposed": self.proposed,
                            "expected_width_decades": self.width,
                            "expected_shrinkage": 1 - self.width / self.width_now,
                            "proposal": self.proposal, "n_sims": self.n_sims, "n_resamples": self.n_resamples,
                            "n_candidates": self.n_candidates, "target_decades_beyond_runs": self.target_beyond})

    def summary(self) -> str:
        pct = f"{round(self.level * 100):d}%"
        ci = "" if self.n_opt_ci is None else f", interval [{self.n_opt_ci[0]:.3g}, {self.n_opt_ci[1]:.3g}]"
        lines = [f"target C = {self.target:.3g} FLOP: N_opt {self.n_opt:.3g}{ci} from {self.n_runs} runs",
                 f"design criterion: width of the {pct} interval of log10 N_opt at the target, now "
                 f"{self.width_now:.3f} decades (x{10 ** self.width_now:.2f} from end to end)",
                 f"simulated: {self.n_sims} worlds from the bootstrap x {self.n_resamples} resamples each, with and "
                 f"without the new runs; {self.n_candidates} candidates; compute left {self.budget_left:.3g} FLOP", ""]
        if self.proposed:
            used = sum(r["C"] for r in self.proposed)
            lines.append(f"next {len(self.proposed)} runs (greedy, best first; {used:.3g} of {self.budget_left:.3g} "
                         "FLOP):")
            lines.append(f"{'':>3}{'N':>11}{'D':>11}{'C = 6ND':>11}{'D/N':>8}{'width after':>13}  beyond today's runs")
            for i, r in enumerate(self.proposed):
                lines.append(f"{i + 1:>3}{r['N']:>11.4g}{r['D']:>11.4g}{r['C']:>11.3g}{r['D'] / r['N']:>8.1f}"
                             f"{r['width_after']:>13.3f}  {'yes' if r['extrapolation']['outside'] else 'no'}")
            lines.append(f"expected width {self.width:.3f} decades: shrinks the interval by "
                         f"{1 - self.width / self.width_now:.0%}")
        if self.proposal:
            p = self.proposal
            lines += ["", f"your proposal ({p['source']}): {p['n']} runs, {p['C']:.3g} of {self.budget_left:.3g} FLOP; "
                          f"expected width {p['width']:.3f} decades: shrinks the interval by {p['shrinkage']:.0%}"]
        lines += ["", "by simulation under the fitted law's form (new losses = a bootstrap law + residual noise)"]
        if self.target_beyond > 0:
            lines.append(f"WARNING: the target lies {self.target_beyond:.2f} decades of compute above the largest "
                         "fitted run: N_opt there, and how much new runs narrow it, extrapolate the law's form, which "
                         "the runs cannot check there")
        return "\n".join(lines)


def check_proposal(N, D, budget_left: float, source: str = "proposal") -> float:
    """The compute a proposed grid needs (6ND summed), or a UserError when it is over ``budget_left``."""
    used = float(np.sum(6 * np.asarray(N, float) * np.asarray(D, float)))
    if used > budget_left * (1 + 1e-9):
        raise UserError(f"{source}: its runs need {used:.3g} FLOP (6ND summed), over the {budget_left:.3g} left")
    return used


def design(result: LawFit, N, D, L, *, target: float, budget_left: float, k: int = 3, proposal=None,
           proposal_source: str = "proposal", n_sims: int = 8, n_resamples: int = 48, level: float = 0.8,
           seed: int = 0, progress: bool = False) -> DesignResult:
    """Propose ``k`` runs within ``budget_left`` (FLOP) that most shrink the N_opt(``target``) interval; score
    ``proposal`` ((N, D) arrays), if given, the same way."""
    from scalinglab.fitting.prediction.domain import short

    target, budget_left = (float(x) for x in check_budgets([target, budget_left]))
    if k < 1:
        raise OptionError(f"{{k}} must be at least 1, not {k}", "k")
    if proposal is not None:
        pN, pD = (np.asarray(x, float) for x in proposal)
        used = check_proposal(pN, pD, budget_left, proposal_source)
    if result.status != "converged":   # the simulation draws its worlds from this fit: one at a bound is no law
        bound = f": {', '.join(result.at_bound)} at a bound" if result.at_bound else ""
        raise UserError(f"the fit did not converge (status {result.status}{bound}), so there is no law to simulate "
                        "new runs from; more or more varied runs first")
    m_max = max(k, 0 if proposal is None else len(pN))
    sim = simulator(result, N, D, L, target, max_runs=m_max, n_sims=n_sims, n_resamples=n_resamples, level=level,
                    seed=seed)
    bs = result.bootstrap
    reps = np.log10(ScalingLaw(*bs.samples.T).n_opt(target))
    now_lo, now_hi = np.percentile(reps, [(1 - level) / 2 * 100, (1 + level) / 2 * 100])
    width_now = float(now_hi - now_lo)
    domain = Domain.from_runs(N, D)
    cN, cD = candidates(result, budget_left, k)
    if (cN < 1).any() or (cD < 1).any():   # e.g. --budget-left 1: runs of 0.01 parameters on 1.4 tokens
        i = int(np.argmin(np.minimum(cN, cD)))
        raise OptionError(f"{{budget_left}} {budget_left:.3g} over {{k}} {k} leaves {budget_left / k:.3g} FLOP per "
                          f"run: a candidate would have N {cN[i]:.3g} and D {cD[i]:.3g}, under one parameter or "
                          f"token (the fitted runs use "
                          f"{float(np.min(6 * np.asarray(N, float) * np.asarray(D, float))):.3g} FLOP and more)",
                          "budget_left", "k")
    if k > len(cN):   # the greedy loop would stop at the candidates it has, silently proposing fewer runs
        raise OptionError(f"{{k}} {k}: the design chooses among {len(cN)} candidate runs (sizes around N_opt at shares "
                          f"of the budget per run), so it can propose at most {len(cN)}", "k")
    steps = 1 + k * len(cN) - k * (k - 1) // 2 + (proposal is not None)
    ticks = iter(progress_bar(range(steps), "design: designs simulated", progress))
    sim.ratio()  # today's design alone, in every world
    next(ticks, None)
    chosen: list[int] = []
    proposed = []
    for _ in range(k):
        best, best_r = None, np.inf
        for j in range(len(cN)):
            if j in chosen:
                continue
            r = sim.ratio(cN[chosen + [j]], cD[chosen + [j]])
            next(ticks, None)
            if r < best_r:
                best, best_r = j, r
        if best is None:
            break
        chosen.append(best)
        ext = domain.rows([cN[best]], [cD[best]])[0]
        proposed.append({"N": float(cN[best]), "D": float(cD[best]), "C": float(6 * cN[best] * cD[best]),
                         "width_after": width_now * float(best_r), "beyond": short(ext), "extrapolation": ext})
    prop = None
    if proposal is not None:
        r = sim.ratio(pN, pD)
        next(ticks, None)
        prop = {"source": proposal_source, "n": len(pN), "C": used, "width": width_now * r, "shrinkage": 1 - r}
    for _ in ticks:  # close the bar
        pass
    ci = tuple(float(x) for x in np.percentile(10 ** reps, [(1 - bs.level) / 2 * 100, (1 + bs.level) / 2 * 100]))
    return DesignResult(target=target, budget_left=budget_left, n_runs=len(np.asarray(N)), level=level,
                        width_now=width_now, n_opt=float(result.n_opt(target)), n_opt_ci=ci, proposed=proposed,
                        proposal=prop, n_sims=n_sims, n_resamples=n_resamples, n_candidates=len(cN),
                        target_beyond=max(0.0, float(np.log10(target) - domain.hi[2])))
