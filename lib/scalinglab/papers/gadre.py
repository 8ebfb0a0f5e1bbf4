"""Gadre et al. 2024's over-training law, fitted the way their released code fits it.

"Language models scale reliably with over-training and on downstream tasks"
(arXiv:2403.08540) write Chinchilla's law with one shared exponent, α = β,
in compute C = 6ND and token multiplier M = D/N:

    L(C, M) = E + (a·M^η + b·M^−η)·C^−η,   η = α/2,

which is L(N, D) = E + A/N^α + B/D^α with a = A·6^η and b = B·6^η. Tying the
exponents fixes N_opt ∝ C^0.5 (``a`` below, Hoffmann's a = β/(α+β)), so the
law extrapolates in M from how loss falls with N.

Their repository (github.com/mlfoundations/scaling@79adc263,
``scaling/laws.py:curve_fit_powlaw_ours`` and ``scaling/shared.py:fit_ds``)
fits four numbers (k_N, k_D, p, E) of

    L = k_N·N^p + k_D·6^(p/2)·(M·N)^p + E

so k_N = A, k_D = b (the paper's coefficient), p = −α. The fit is
``scipy.optimize.curve_fit`` on the raw loss (plain least squares, no log, no
Huber, no bounds, so Levenberg–Marquardt) with ``maxfev=10000``, run from a
4 × 4 × 2 × 4 grid of starts, keeping the start with the smallest residual.
``fit_overtraining_law`` does the same; ``OvertrainingOptions`` holds their
grid. Two harmless departures: it uses D where they compute M·N (equal to
rounding), and the table's row order where theirs is sorted by compute (which
moves the optimum only within the solver's tolerance). Their Table 2 default fits 5 runs on C4 eval: the four small
sizes at M = 20 (the CSV's ``chinchilla_multiplier`` 1) and the 11M model at
M = 320 (multiplier 16); ``PAPER_TRAINING_RUNS`` selects them. Their
reported error is |predicted − actual| / actual; ``PAPER_TARGETS`` and
``PAPER_RELATIVE_ERRORS`` hold the two runs it is reported for and the values
their notebook prints.

Row selection uses ``holdout``'s condition grammar (``COL OP VALUE``).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scalinglab.errors import UserError
from scalinglab.fitting.chinchilla import approach3 as F
from scalinglab.fitting.chinchilla.law import ScalingLaw
from scalinglab.fitting.laws.base import fit_law
from scalinglab.fitting.options import FitOptions
from scalinglab.fitting.prediction.held_out import Predictions
from scalinglab.fitting.prediction.held_out import predict as predict_runs
from scalinglab.fitting.protocol import FitResult
from scalinglab.fitting.studies import holdout as H
from scalinglab.serialization import to_jsonable

PARAMS = ("E", "A", "B", "alpha")
N_PARAMS = len(PARAMS)

# fit_ds: the four sizes below 1e9 parameters at M = 20, and the 11M model (d=96_l=8_h=4) at M = 320.
# Each inner tuple is ANDed, the groups ORed (``matching_any_group``). Add the dataset and eval-set
# conditions separately.
PAPER_TRAINING_RUNS = (("chinchilla_multiplier==1", "params<1e9"),
                       ("chinchilla_multiplier==16", "arch==d=96_l=8_h=4"))

# The two runs their Figure 1 predicts (RedPajama, C4 eval), as conditions (ANDed) on the table, and the
# relative errors |predicted − actual| / actual their fit reaches on them, as printed (to four decimals of a
# percent) by the "reproduce figure 1" cell of scaling_explorer.ipynb, github.com/mlfoundations/scaling@79adc263.
# Targets to compare with, not inputs: nothing here is fitted to them.
PAPER_TARGETS = {"1.4B, M=32": ("arch==open_lm_1b", "chinchilla_multiplier==32"),
                 "6.9B, M=1": ("arch==open_lm_7b",)}
PAPER_RELATIVE_ERRORS = {"1.4B, M=32": 0.007103, "6.9B, M=1": 0.007320}


@dataclass(frozen=True)
class OvertrainingOptions:
    """The start grid and iteration cap of ``curve_fit_powlaw_ours``, in its coordinates (k_N, k_D, p, E)."""

    k_N: tuple[float, ...] = (1e2, 3e2, 1e3, 3e3)
    k_D: tuple[float, ...] = (1e2, 3e2, 1e3, 3e3)
    p: tuple[float, ...] = (-0.1, -0.3)   # the exponent of N, i.e. −α
    E: tuple[float, ...] = (0.0, 1.0, 2.0, 10.0)
    maxfev: int = 10000

    def starts(self) -> np.ndarray:
        """(K, 4) starts in their loop order (k_N outermost), so ties go to the start they would keep."""
        grid = np.meshgrid(self.k_N, self.k_D, self.p, self.E, indexing="ij")
        return np.stack([g.ravel() for g in grid], axis=1)


@dataclass(frozen=True)
class OvertrainingLaw:
    """L(N, D) = E + A/N^α + B/D^α: Chinchilla's law with β = α (Gadre et al. 2024)."""

    E: float
    A: float
    B: float
    alpha: float

    @property
    def beta(self) -> float:
        return self.alpha

    @property
    def eta(self) -> float:
        """The compute exponent of L(C, M): η = α/2 (the paper's α_C)."""
        return self.alpha / 2.0

    @property
    def a(self) -> float:
        """N_opt ∝ C^a; with β = α this is 0.5 whatever the data say."""
        return self.law.a

    @property
    def law(self) -> ScalingLaw:
        """The same law as a five-parameter ``fit.ScalingLaw`` (for n_opt, d_opt and comparisons)."""
        return ScalingLaw(self.E, self.A, self.B, self.alpha, self.alpha)

    @property
    def params(self) -> dict[str, float]:
        return {k: float(getattr(self, k)) for k in PARAMS}

    def paper_params(self) -> dict[str, float]:
        """(E, a, b, η) of L(C, M) = E + (a·M^η + b·M^−η)·C^−η."""
        s = 6.0 ** self.eta
        return {"E": float(self.E), "a": float(self.A * s), "b": float(self.B * s), "eta": float(self.eta)}

    def loss(self, N, D):
        N, D = np.asarray(N, float), np.asarray(D, float)
        return self.E + self.A / N**self.alpha + self.B / D**self.alpha

    def loss_cm(self, C, M):
        """Loss at compute C = 6ND and token multiplier M = D/N (the paper's M: 20 × ``chinchilla_multiplier``)."""
        C, M = np.asarray(C, float), np.asarray(M, float)
        p = self.paper_params()
        return p["E"] + (p["a"] * M**self.eta + p["b"] * M**-self.eta) * C**-self.eta


@dataclass(frozen=True, repr=False)
class OvertrainingFit(OvertrainingLaw, FitResult):
    """A fitted ``OvertrainingLaw`` with how it was found.

    ``status``: ``converged`` (the best start's solver reported success and
    the parameters are physical), ``unidentified`` (it converged, but to E < 0,
    A or B ≤ 0 or α ≤ 0: their fit has no bounds, so the least-squares optimum
    can sit there; ``unphysical`` names which, and the law still predicts),
    or ``failed`` (no start converged within ``maxfev``; parameters are NaN).
    A point fit, as theirs: its standard errors and intervals are NaN (the
    scoreboard's calibration resamples model sizes for intervals).
    ``sse`` is the sum of squared loss residuals over the ``n_rows`` fitted runs.
    """

    status: str = "converged"
    unphysical: tuple[str, ...] = ()
    n_rows: int = 0
    sse: float = float("nan")
    n_starts: int = 0
    n_failed_starts: int = 0
    options: OvertrainingOptions = field(default_factory=OvertrainingOptions)

    _scale = ("A", "B")
    __repr__ = FitResult.__repr__

    @property
    def reason(self) -> str:
        if self.status == "unidentified":
            return "the optimum is unphysical in " + ", ".join(self.unphysical)
        return "no start converged" if self.status == "failed" else ""

    def predict(self, inputs) -> np.ndarray:
        """The loss at ``{"n": N, "d": D}``, as ``LawFit.predict`` takes them."""
        return self.loss(inputs["n"], inputs["d"])

    def summary(self) -> str:
        p = self.paper_params()
        return (f"Gadre et al.'s law on {self.n_rows} runs: E = {self.E:.4g}, A = {self.A:.4g}, B = {self.B:.4g}, "
                f"alpha = beta = {self.alpha:.4f} (L(C, M): a = {p['a']:.4g}, b = {p['b']:.4g}, "
                f"eta = {p['eta']:.4f}); status {self.status}" + (f" ({self.reason})" if self.reason else ""))

    def to_dict(self) -> dict[str, Any]:
        return to_jsonable({**self.params, "paper": self.paper_params(), "a": float(self.a), "status": self.status,
                            "unphysical": list(self.unphysical), "n_rows": self.n_rows, "sse": float(self.sse),
                            "n_starts": self.n_starts, "n_failed_starts": self.n_failed_starts})


def _their_form(x, k_N, k_D, p, E):
    N, D = x
    return k_N * N**p + k_D * 6.0 ** (p / 2.0) * D**p + E


def matching_any_group(table, groups) -> np.ndarray:
    """Rows matching every condition of at least one group: (c1 AND c2) OR (c3 AND c4) ..."""
    mask = ~H.rows_mask(table, None)
    for group in groups:
        mask |= H.where(table, group)
    return mask


def _selected(table, rows, what: str) -> np.ndarray:
    """Row numbers from a boolean mask, conditions (ANDed, ``holdout.where``) or None (all rows)."""
    try:
        mask = H.rows_mask(table, rows)
    except UserError as exc:
        raise UserError(f"{what}: {exc}") from None
    if not mask.any():
        conds = [rows] if isinstance(rows, (str, H.Condition)) else list(rows)
        chosen = "the mask" if H.is_mask(rows) else " and ".join(repr(str(c)) for c in conds)
        raise UserError(f"{what}: {chosen} matches none of the {mask.size} rows")
    return np.flatnonzero(mask)


def check_identifiable(rows: np.ndarray, N: np.ndarray, D: np.ndarray, names=("N", "D")) -> None:
    """UserError unless the runs can pin E, A, B and the shared α."""
    if len(N) <= N_PARAMS:
        raise UserError(f"need at least {N_PARAMS + 1} runs to fit E, A, B and the shared alpha with a residual "
                        f"left over; got {len(N)} (rows {', '.join(map(str, rows))})")
    if np.unique(np.round(np.log(N), 6)).size < 2:
        raise UserError(f"column {names[0]!r} takes one value ({N[0]:g}) on every fitted row: "
                        "E and A/N^alpha cannot be told apart")
    ratio = np.log(D / N)
    if np.ptp(ratio) < 1e-6:
        raise UserError(f"{names[1]}/{names[0]} is {np.exp(ratio[0]):g} on every fitted row: with one shared "
                        "exponent A/N^alpha and B/D^alpha cannot be told apart; add a run at another D/N "
                        "(Gadre et al. add the 11M model at M = 320)")


def fit_overtraining_law(table, n_col: str = "N", d_col: str | None = "D", loss_col: str = "loss", *,
                         c_col: str | None = None, rows=None,
                         options: OvertrainingOptions | None = None) -> OvertrainingFit:
    """Fit L = E + A/N^α + B/D^α to the chosen rows as ``curve_fit_powlaw_ours`` does.

    ``rows``: a boolean mask, conditions that every fitted row must match
    (``"dataset==rpj"``, ``"val_data~c4_val"``), or None for all rows; for
    OR-of-AND selections such as ``PAPER_TRAINING_RUNS`` pass
    ``matching_any_group(table, groups) & holdout.where(table, [...])``.
    Give D (``d_col``) or compute (``c_col``, D = C/(6N)).
    """
    from scipy.optimize import OptimizeWarning, curve_fit

    opts = options or OvertrainingOptions()
    picked = _selected(table, rows, "rows to fit")
    N, D, L, names = H.runs_at(table, picked, n_col, d_col, loss_col, c_col=c_col)
    check_identifiable(picked, N, D, names[:2])
    x = np.array([N, D])
    starts = opts.starts()
    best, best_sse, failed = None, np.inf, 0
    for p0 in starts:
        try:
            # Starts far from the optimum overflow or leave the covariance undefined on the way; those
            # are the solver's business, and only the residual of where it ends decides.
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore", OptimizeWarning)
                warnings.simplefilter("ignore", RuntimeWarning)
                popt, _ = curve_fit(_their_form, x, L, p0=p0, maxfev=opts.maxfev)
        except RuntimeError:  # curve_fit's "Optimal parameters not found": maxfev spent
            failed += 1
            continue
        with np.errstate(all="ignore"):
            sse = float(np.sum((L - _their_form(x, *popt)) ** 2))
        # Strictly smaller, as theirs: ties keep the earlier start. (They rank by sqrt(SSE/(n-2)), same order.)
        if np.isfinite(sse) and sse < best_sse:
            best, best_sse = popt, sse
    common = dict(n_rows=len(L), n_starts=len(starts), n_failed_starts=failed, options=opts)
    if best is None:
        return OvertrainingFit(*([float("nan")] * N_PARAMS), status="failed", **common)
    k_N, k_D, p, E = (float(v) for v in best)
    alpha = -p
    law = dict(E=E, A=k_N, B=k_D * 6.0 ** (p / 2.0), alpha=alpha)
    bad = tuple(k for k, v in law.items() if (v < 0 if k == "E" else v <= 0))
    return OvertrainingFit(**law, status="unidentified" if bad else "converged", unphysical=bad, sse=best_sse,
                           **common)


def predict(law: OvertrainingLaw, table, rows=None, n_col: str = "N", d_col: str | None = "D",
            loss_col: str = "loss", *, c_col: str | None = None) -> Predictions:
    """The law's predictions for the chosen rows (mask, ANDed conditions or None), with actual losses.

    ``rel_error`` is signed, (predicted − actual)/actual; Gadre et al. report its absolute value.
    There is no interval: their fit has no bootstrap.
    """
    picked = _selected(table, rows, "rows to predict")
    N, D, L, _ = H.runs_at(table, picked, n_col, d_col, loss_col, c_col=c_col)
    nan = np.full(len(N), np.nan)
    return Predictions(rows=picked, actual=L, predicted=np.asarray(law.loss(N, D), float), lower=nan, upper=nan,
                       level=float("nan"), inputs={"n": N, "d": D})


# --- which difference carries the gap: their procedure, their form, their training runs ------------------

GADRE_FIT = "Gadre: curve_fit, α = β"


def compare_procedures(table, training_sets, targets, n_col: str = "N", d_col: str | None = "D",
                       loss_col: str = "loss", *, hoffmann: dict[str, FitOptions] | None = None,
                       n_boot: int = 0, seed: int = 0) -> list[dict[str, Any]]:
    """Each training set fitted by each procedure, and each fit's error on each target run.

    ``training_sets``: name → a boolean mask over the table's rows (the runs to fit); ``targets``:
    name → a mask picking one run each. The fits are Gadre et al.'s (``fit_overtraining_law``, named
    ``GADRE_FIT``, never bootstrapped) and one Hoffmann fit (``fit_arrays``: log-space Huber, Hoffmann's
    grid) per entry of ``hoffmann`` (name → ``FitOptions``), bootstrapped over its training runs with
    ``n_boot`` resamples. One dict per (set, fit), in that order: ``training set``, ``runs``, ``fit``,
    then E, alpha, beta and ``status``, ``"{target} %"`` (the signed error (predicted − actual)/actual,
    in percent) and ``"{target} 95%"`` ([lo, hi] of that error from the bootstrap, NaN without one).
    A fit the set is too small for is a finding, not a crash: its row has status "not fitted" and the
    refusal in ``note``."""
    fits = {GADRE_FIT: None, **(hoffmann or {})}
    for name, t in targets.items():
        if np.asarray(t, bool).sum() != 1:
            raise UserError(f"target {name!r} must pick one run, not {np.asarray(t, bool).sum()}")
    rows = []
    for set_name, train in training_sets.items():
        picked = np.flatnonzero(np.asarray(train, bool))
        for fit_name, options in fits.items():
            row: dict[str, Any] = {"training set": set_name, "runs": len(picked), "fit": fit_name}
            try:
                if options is None:
                    law = fit_overtraining_law(table, n_col, d_col, loss_col, rows=train)
                    preds = {k: predict(law, table, t, n_col, d_col, loss_col) for k, t in targets.items()}
                else:
                    N, D, L, names = H.runs_at(table, picked, n_col, d_col, loss_col)
                    law = fit_law(F.CHINCHILLA, {"n": N, "d": D}, L, options.with_resampling(n_boot, seed=seed),
                                  names=dict(zip(("n", "d", "y"), names)))
                    at = {k: H.runs_at(table, np.flatnonzero(t), n_col, d_col, loss_col) for k, t in targets.items()}
                    preds = {k: predict_runs(law, {"n": r[0], "d": r[1]}, r[2]) for k, r in at.items()}
            except UserError as exc:
                rows.append({**row, "status": "not fitted", "note": str(exc)})
                continue
            row.update(E=float(law.E), alpha=float(law.alpha), beta=float(law.beta), status=law.status)
            for k, p in preds.items():
                lo, hi = p.rel_error_bounds()
                row[f"{k} %"] = 100 * p.rel_error.item()
                row[f"{k} 95%"] = [100 * lo.item(), 100 * hi.item()]
            rows.append(row)
    return rows


def errors_by_kind(N, M, rel_error, *, large: float = 1e9, m_over: float = 1.5) -> dict[str, Any]:
    """Held-out errors split into the two kinds a fit on small runs at M ≤ 1 is asked to predict.

    ``over_trained`` (M > ``m_over``): how many, their mean signed error and whether every one is below
    its actual loss, and the same counted by model size, the unit whose runs share a misfit (``sizes``: the
    sizes that have over-trained runs; ``sizes_all_below``: those whose every over-trained run is below);
    ``large_at_m1`` (N > ``large`` and M ≤ ``m_over``): each such run's error, keyed by its size in billions
    ("1.4B"). M is the token multiplier D/(20N); errors are (predicted − actual)/actual."""
    N, M, err = (np.asarray(x, float).ravel() for x in (N, M, rel_error))
    over, big = M > m_over, (N > large) & (M <= m_over)
    sizes = np.unique(N[over])
    return {"over_trained": {"n": int(over.sum()),
                             "mean_rel_error": float(err[over].mean()) if over.any() else float("nan"),
                             "all_below": bool(over.any() and (err[over] < 0).all()),
                             "sizes": len(sizes),
                             "sizes_all_below": sum(bool((err[over & (N == n)] < 0).all()) for n in sizes)},
            "large_at_m1": {f"{n / 1e9:.1f}B": float(e) for n, e in zip(N[big], err[big])}}
