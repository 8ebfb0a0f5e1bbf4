"""The checks a careful reader asks of a Chinchilla replication (notebook 01), each a function a test reaches.

- :func:`variants` and :func:`sensitivity`: E, α, β, a and tokens per parameter at a budget, refitted under
  each Huber δ (and least squares), each number of highest losses dropped, each released extraction of
  Hoffmann's Figure 4, and each reading of the parameter counts the data allow;
- :func:`two_modes` and :func:`mode_table`: a two-component normal mixture on a bootstrap column (is it
  bimodal, which replicate belongs to which mode) and a, N_opt within each mode;
- :func:`runs_needed` and :func:`narrow_intervals`: Hoffmann's interval procedure
  (refits on 80% of the runs, 10th-90th percentiles, drawn by `fitting.rows.subsample_counts` or a fit's
  `Resampling(fraction=0.8)`) and how many runs intervals as narrow as his would need;
- :func:`approach_rows`: Approaches 1, 2 and 3 side by side with Hoffmann's Table 2, and :func:`held_values`:
  which of Hoffmann's exponents each of our intervals holds;
- :func:`decades_beyond`: how far a budget lies beyond the largest run of a suite, in decades of 6ND.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from scalinglab.errors import UserError
from scalinglab.fitting.chinchilla import approach3 as F
from scalinglab.fitting.chinchilla.law import ScalingLaw
from scalinglab.fitting.frontier import isoflop
from scalinglab.fitting.options import FitOptions
from scalinglab.fitting.results import LawFit
from scalinglab.fitting.solvers import solve
from scalinglab.serialization import to_jsonable

# The Huber thresholds the sensitivity check sweeps (Hoffmann used 1e-3).
HUBER_DELTAS = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1)
# Least squares as a Huber loss: with δ above every |log residual| the loss is ½r² at every run, exactly.
# The log residuals of any sensible fit to these losses are below 0.1, so 10 leaves a wide margin, and
# :func:`sensitivity` reports the largest residual so the claim is checked, not assumed.
LEAST_SQUARES_DELTA = 10.0
DROPS = (0, 5, 10)
EXTRACTIONS = {
    "epoch-chinchilla": "Epoch's SVG extraction (their fit's input)",
    "epoch-chinchilla-corrected": "the same points, y-axis ticks corrected (N lower by up to 10%)",
    "chinchilla-manual-digitization": "an earlier manual digitisation (229 points)",
}


@dataclass(frozen=True)
class Variant:
    """One refit of the sensitivity table: which check, which setting, its runs and fit options."""

    check: str
    setting: str
    N: np.ndarray
    D: np.ndarray
    L: np.ndarray
    options: FitOptions = FitOptions()


def manual_digitization_runs(table: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(N, C, L) of `chinchilla-manual-digitization`, whose model sizes are strings with thousands separators."""
    try:
        N = table["model size"].astype(str).str.replace(",", "", regex=False).astype(float).to_numpy()
    except ValueError as err:
        raise UserError(f"chinchilla-manual-digitization: column 'model size' holds a non-number ({err})") from None
    return N, table["training FLOP"].to_numpy(float), table["loss"].to_numpy(float)


def reported_sizes(table: pd.DataFrame) -> np.ndarray:
    """The model sizes of Hoffmann's Table A9 that appear in Figure 4, in parameters.

    Read from the manual digitisation's ``closest model size from chinchilla paper`` column (millions): the
    digitiser matched each point to Table A9's reported size. Only the sizes present there (42), not the
    table's architectures: those are in no registered dataset."""
    return np.unique(table["closest model size from chinchilla paper"].to_numpy(float)) * 1e6


def snap(N, sizes) -> np.ndarray:
    """Each N replaced by the nearest of ``sizes`` (nearest in log N)."""
    N, sizes = np.asarray(N, float), np.asarray(sizes, float)
    return sizes[np.abs(np.log(N)[:, None] - np.log(sizes)[None, :]).argmin(axis=1)]


def _runs(N, C, L, drop: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    N, D, L, _ = F.runs_from_table({"N": N, "C": C, "loss": L}, "N", c_col="C", drop_highest=drop)
    return N, D, L


def variants(tables: Mapping[str, pd.DataFrame], *, deltas: Sequence[float] = HUBER_DELTAS,
             drops: Sequence[int] = DROPS, drop: int = 5, scales: Sequence[float] = (0.85, 1.15)) -> list[Variant]:
    """Every refit of the sensitivity table, from the three extractions in ``tables`` (registry name -> table).

    The baseline is Epoch's protocol (``epoch-chinchilla``, the ``drop`` highest losses dropped, δ = 1e-3); each
    check changes one thing. Readings of N: Epoch's N as read off the figure; snapped to the nearest reported
    Table A9 size (:func:`reported_sizes`); and every N times each of ``scales``, a uniform change of
    convention as large as Schaeffer et al. 2025 find between readings (15%). D is C/(6N) throughout, so
    a reading changes D too, as it would have for Hoffmann's FLOP counts.
    """
    epoch = tables["epoch-chinchilla"]
    N0, C0, L0 = (epoch[c].to_numpy(float) for c in ("Model Size", "Training FLOP", "loss"))
    out = []
    for d in deltas:
        out.append(Variant("Huber δ", f"{d:g}", *_runs(N0, C0, L0, drop), FitOptions(delta=d)))
    out.append(Variant("Huber δ", "least squares", *_runs(N0, C0, L0, drop), FitOptions(delta=LEAST_SQUARES_DELTA)))
    for k in drops:
        out.append(Variant("highest losses dropped", str(k), *_runs(N0, C0, L0, k)))
    for name in EXTRACTIONS:
        if name == "chinchilla-manual-digitization":
            N, C, L = manual_digitization_runs(tables[name])
        else:
            N, C, L = (tables[name][c].to_numpy(float) for c in ("Model Size", "Training FLOP", "loss"))
        out.append(Variant("extraction", name, *_runs(N, C, L, drop)))
    out.append(Variant("reading of N", "as read off the figure", *_runs(N0, C0, L0, drop)))
    sizes = reported_sizes(tables["chinchilla-manual-digitization"])
    out.append(Variant("reading of N", "nearest Table A9 size", *_runs(snap(N0, sizes), C0, L0, drop)))
    for s in scales:
        out.append(Variant("reading of N", f"every N × {s:g}", *_runs(N0 * s, C0, L0, drop)))
    return out


def sensitivity(items: Sequence[Variant], C: float, reference: LawFit | None = None,
                starts: np.ndarray | None = None) -> pd.DataFrame:
    """One row per variant: n_rows, status, E, alpha, beta, a, tokens_per_param at ``C`` and the largest
    |log residual| (below δ at every run means the Huber fit is least squares); with a ``reference`` fit
    that has a bootstrap, the shift of a in its bootstrap SEs and of tokens per parameter in percent.

    ``starts`` defaults to Hoffmann's 4,500-start grid; a quick run can pass the reference's θ (one start,
    ~40 times faster), which lands on the same optimum when the variant moves it little. Variants with the
    same runs and options are fitted once."""
    rows, done = [], {}
    for v in items:
        key = (v.N.tobytes(), v.D.tobytes(), v.L.tobytes(), v.options)
        if key not in done:
            done[key] = solve("chinchilla-newton", F.CHINCHILLA, {"n": v.N, "d": v.D}, v.L, options=v.options,
                              starts=starts)
        fit = done[key]
        row = {"check": v.check, "setting": v.setting, "n_rows": len(v.L), "status": fit.status,
               "E": fit.E, "alpha": fit.alpha, "beta": fit.beta, "a": fit.a,
               "tokens_per_param": fit.tokens_per_param(C),
               "max_abs_log_residual": float(np.max(np.abs(np.log(fit.loss(v.N, v.D) / v.L))))}
        if reference is not None and reference.bootstrap is not None:
            row["a_shift_in_se"] = (fit.a - reference.a) / reference.bootstrap.se["a"]
            row["tokens_per_param_change"] = fit.tokens_per_param(C) / reference.tokens_per_param(C) - 1
        rows.append(row)
    return pd.DataFrame(rows)


# --- the bootstrap's two modes --------------------------------------------------------------------------

@dataclass(frozen=True)
class TwoModes:
    """A two-component normal mixture fitted to one bootstrap column (components ordered by their mean)."""

    shares: tuple[float, float]
    means: tuple[float, float]
    sds: tuple[float, float]
    labels: np.ndarray            # 0 or 1 per value: the component with the larger posterior
    bic_one: float                # BIC of one normal
    bic_two: float                # BIC of the mixture (5 parameters)
    n_peaks: int                  # local maxima of the mixture density (1 or 2)
    peak: float                   # where the mixture density is highest
    antimode: float               # where the density dips between the two means (NaN with one peak)

    @property
    def bimodal(self) -> bool:
        """Two peaks in the fitted density, and BIC prefers the mixture over one normal."""
        return self.n_peaks == 2 and self.bic_two < self.bic_one

    def to_dict(self) -> dict:
        return to_jsonable({"shares": self.shares, "means": self.means, "sds": self.sds, "bic_one": self.bic_one,
                            "bic_two": self.bic_two, "n_peaks": self.n_peaks, "peak": self.peak,
                            "antimode": self.antimode, "bimodal": self.bimodal})

    def summary(self) -> str:
        comps = "; ".join(f"{s:.0%} at {m:.4g} (sd {sd:.2g})" for s, m, sd in zip(self.shares, self.means, self.sds))
        verdict = (f"bimodal: two peaks, antimode {self.antimode:.4g}" if self.bimodal else
                   f"one mode at {self.peak:.4g}")
        return (f"two-normal mixture: {comps}; BIC one {self.bic_one:.1f}, two {self.bic_two:.1f}; {verdict}")


def _normal_pdf(x, mu, sd):
    return np.exp(-0.5 * ((x - mu) / sd) ** 2) / (sd * np.sqrt(2 * np.pi))


def two_modes(x, *, iters: int = 500, tol: float = 1e-10) -> TwoModes:
    """Fit a two-normal mixture to ``x`` by EM, started from the lower and upper thirds of the data.

    Deterministic (no random starts). A skewed unimodal sample also splits into two components, so the
    answer carries ``n_peaks`` (of the fitted density, on a fine grid) and both BICs: call it bimodal only
    when the density has two peaks and BIC prefers two components."""
    x = np.asarray(x, float)
    x = x[np.isfinite(x)]
    n = len(x)
    if n < 10:
        raise UserError(f"two_modes needs at least 10 values, got {n}")
    lo, hi = np.quantile(x, [1 / 3, 2 / 3])
    w = np.array([0.5, 0.5])
    mu = np.array([x[x <= lo].mean(), x[x >= hi].mean()])
    sd = np.full(2, x.std() / 2)
    floor = 1e-6 * x.std() + 1e-300
    ll_old = -np.inf
    for _ in range(iters):
        dens = w[None, :] * _normal_pdf(x[:, None], mu[None, :], sd[None, :])
        tot = dens.sum(axis=1, keepdims=True)
        ll = float(np.log(tot).sum())
        r = dens / tot
        nk = r.sum(axis=0)
        w = nk / n
        mu = (r * x[:, None]).sum(axis=0) / nk
        sd = np.maximum(np.sqrt((r * (x[:, None] - mu[None, :]) ** 2).sum(axis=0) / nk), floor)
        if abs(ll - ll_old) < tol * abs(ll):
            break
        ll_old = ll
    order = np.argsort(mu)
    w, mu, sd = w[order], mu[order], sd[order]
    dens = w[None, :] * _normal_pdf(x[:, None], mu[None, :], sd[None, :])
    ll_two = float(np.log(dens.sum(axis=1)).sum())
    ll_one = float(np.sum(np.log(_normal_pdf(x, x.mean(), x.std()))))
    grid = np.linspace(mu[0], mu[1], 2001)
    f = (w[None, :] * _normal_pdf(grid[:, None], mu[None, :], sd[None, :])).sum(axis=1)
    inner = np.flatnonzero((f[1:-1] < f[:-2]) & (f[1:-1] < f[2:])) + 1
    n_peaks = 2 if len(inner) else 1
    wide = np.linspace(x.min(), x.max(), 4001)
    peak = float(wide[(w[None, :] * _normal_pdf(wide[:, None], mu[None, :], sd[None, :])).sum(axis=1).argmax()])
    return TwoModes(shares=(float(w[0]), float(w[1])), means=(float(mu[0]), float(mu[1])),
                    sds=(float(sd[0]), float(sd[1])), labels=dens.argmax(axis=1),
                    bic_one=-2 * ll_one + 2 * np.log(n), bic_two=-2 * ll_two + 5 * np.log(n),
                    n_peaks=n_peaks, peak=peak, antimode=float(grid[inner[0]]) if len(inner) else float("nan"))


def mode_table(samples: np.ndarray, labels: np.ndarray, C: float, level: float = 0.95) -> pd.DataFrame:
    """Per mode of a bootstrap (``samples``: (n, 5) columns E, A, B, alpha, beta; ``labels`` 0/1): its share,
    the median of alpha, beta and a, and a and N_opt(C) with percentile intervals at ``level``."""
    samples, labels = np.asarray(samples, float), np.asarray(labels)
    q = [(1 - level) / 2, (1 + level) / 2]
    rows = {}
    for k, name in ((0, "lower alpha"), (1, "higher alpha"), (None, "all")):
        s = samples if k is None else samples[labels == k]
        law = ScalingLaw(*s.T)
        a, n_opt = law.a, law.n_opt(C)
        rows[name] = {"share": len(s) / len(samples), "alpha": float(np.median(s[:, 3])),
                      "beta": float(np.median(s[:, 4])), "a": float(np.median(a)),
                      "a_lo": float(np.quantile(a, q[0])), "a_hi": float(np.quantile(a, q[1])),
                      "n_opt": float(np.median(n_opt)), "n_opt_lo": float(np.quantile(n_opt, q[0])),
                      "n_opt_hi": float(np.quantile(n_opt, q[1])),
                      "tokens_per_param": float(np.median(law.tokens_per_param(C)))}
    return pd.DataFrame(rows).T


# --- Hoffmann's narrow intervals ------------------------------------------------------------------------

def percentile_width(x, level: float = 0.8) -> float:
    """Width of the central percentile interval at ``level`` (0.8: Hoffmann's 10th to 90th)."""
    lo, hi = np.quantile(np.asarray(x, float), [(1 - level) / 2, (1 + level) / 2])
    return float(hi - lo)


def runs_needed(n_runs: float, width: float, target_width: float) -> float:
    """Runs a fit would need for its interval to shrink from ``width`` (with ``n_runs``) to ``target_width``,
    if the width scales as 1/√n: n · (width / target_width)²."""
    if target_width <= 0 or width <= 0:
        raise UserError(f"interval widths must be positive, not {width} and {target_width}")
    return float(n_runs * (width / target_width) ** 2)


def narrow_intervals(bootstrap_columns: Mapping[str, np.ndarray], subsample_columns: Mapping[str, np.ndarray],
                     n_runs: int, published: Mapping[str, tuple[float, tuple[float, float]]],
                     level: float = 0.8, rounding: float = 1e-3) -> pd.DataFrame:
    """Per exponent (a, b): Hoffmann's printed interval width, ours at ``level`` from the bootstrap and from
    his subsample procedure, and the runs each of ours says his width would need.

    ``published``: name -> (value, (lo, hi)), e.g. ``published.HOFFMANN_A["approach3"]`` under "a". His
    endpoints are printed to ``rounding``, so the true width can be up to one ``rounding`` wider than
    printed; the ``*_at_widest`` columns use that widest width: lower bounds on the runs needed."""
    rows = {}
    for name, (_, (lo, hi)) in published.items():
        w_pub = hi - lo
        w_boot = percentile_width(bootstrap_columns[name], level)
        w_sub = percentile_width(subsample_columns[name], level)
        rows[name] = {"hoffmann_width": w_pub, "bootstrap_width": w_boot, "subsample_width": w_sub,
                      "runs_needed_bootstrap": runs_needed(n_runs, w_boot, w_pub),
                      "runs_needed_subsample": runs_needed(n_runs, w_sub, w_pub),
                      "runs_needed_bootstrap_at_widest": runs_needed(n_runs, w_boot, w_pub + rounding),
                      "runs_needed_subsample_at_widest": runs_needed(n_runs, w_sub, w_pub + rounding)}
    return pd.DataFrame(rows).T


# --- Approaches 1-3 side by side ------------------------------------------------------------------------

def loglinear_at(flops, n_opt, sd, C: float, level: float = 0.8) -> tuple[float, float, tuple[float, float]]:
    """(a, N_opt(C), interval of N_opt(C)) from log N_opt = k + a·log C fitted by WLS (weights 1/sd², as
    ``isoflop.fit_exponent``), with the t interval of the fitted line's mean at C."""
    import statsmodels.api as sm

    x = sm.add_constant(np.log(np.asarray(flops, float)))
    res = sm.WLS(np.log(np.asarray(n_opt, float)), x, weights=1 / np.asarray(sd, float) ** 2).fit()
    pred = res.get_prediction(np.array([[1.0, np.log(C)]]))
    lo, hi = pred.conf_int(alpha=1 - level)[0]
    return float(res.params[1]), float(np.exp(pred.predicted_mean[0])), (float(np.exp(lo)), float(np.exp(hi)))


def _row(approach: str, source: str, data: str, a, a_ci, b, b_ci, tpp, tpp_ci, interval: str,
         note: str = "") -> dict:
    return {"approach": approach, "source": source, "data": data, "a": a, "a_lo": a_ci[0], "a_hi": a_ci[1],
            "b": b, "b_lo": b_ci[0], "b_hi": b_ci[1], "tokens_per_param": tpp, "tpp_lo": tpp_ci[0],
            "tpp_hi": tpp_ci[1], "interval": interval, "note": note}


def approach_rows(*, approach1, approach1_data: str, optima: pd.DataFrame, approach3: LawFit, C: float,
                  hoffmann_a: Mapping, hoffmann_b: Mapping, hoffmann_law: ScalingLaw,
                  level: float = 0.8, approach1_note: str = "") -> pd.DataFrame:
    """a, b and tokens per parameter at ``C`` with intervals at ``level``, per approach: Hoffmann's Table 2
    (10th-90th percentiles of refits on 80% subsamples) beside ours.

    Ours: Approach 1 an ``envelope.EnvelopeFit`` (bootstrap over runs); Approach 2 the isoFLOP ``optima`` of
    ``isoflop.budget_optima`` (WLS on the non-edge budgets, t intervals; b = 1 − a and C/(6N²) because
    these points have D = C/(6N)); Approach 3 a fit with a bootstrap (percentile intervals). Hoffmann's
    tokens per parameter at C exist only for Approach 3 (from his printed law); Table 2 gives exponents.
    ``approach1_note`` goes in our Approach-1 row's ``note`` column: what its exponent measures when it is not
    comparable with Hoffmann's (another suite, curves that start elsewhere)."""
    nan2 = (np.nan, np.nan)
    pct = f"{level:.0%}"
    rows = []
    for k, name in (("approach1", "Approach 1"), ("approach2", "Approach 2"), ("approach3", "Approach 3")):
        (a, a_ci), (b, b_ci) = hoffmann_a[k], hoffmann_b[k]
        tpp = hoffmann_law.tokens_per_param(C) if k == "approach3" else np.nan
        rows.append(_row(name, "Hoffmann Table 2", "Hoffmann's runs", a, a_ci, b, b_ci, tpp, nan2,
                         "10th-90th, 80% subsamples"))
        if k == "approach1":
            f = approach1
            tpp, tpp_ci = f.tokens_per_param(C, level)
            rows.append(_row(name, "ours", approach1_data, f.exponent, f.interval(level, "a"), f.d_exponent,
                             f.interval(level, "b"), tpp, tpp_ci, f"{pct} bootstrap over runs", approach1_note))
        elif k == "approach2":
            used = optima[~optima["edge"].astype(bool) & np.isfinite(optima["n_opt"])]
            fit = isoflop.fit_exponent(optima, weighted=True, level=level)
            _, n_c, (n_lo, n_hi) = loglinear_at(used["flops"], used["n_opt"], used["log_n_opt_sd"], C, level)
            # D = C/(6N) on these points, so tokens per parameter is C/(6N²): the larger N, the fewer.
            tpp = [C / (6 * n * n) for n in (n_c, n_hi, n_lo)]
            rows.append(_row(name, "ours", "chinchilla-isoflops", fit.exponent, fit.ci, 1 - fit.exponent,
                             (1 - fit.ci[1], 1 - fit.ci[0]), tpp[0], (tpp[1], tpp[2]),
                             f"{pct} WLS t interval over budget optima"))
        else:
            bs = approach3.bootstrap
            q = [(1 - level) / 2, (1 + level) / 2]
            tpp_s = ScalingLaw(*bs.samples.T).tokens_per_param(C)
            rows.append(_row(name, "ours", "epoch-chinchilla", approach3.a, tuple(np.quantile(bs.column("a"), q)),
                             approach3.b, tuple(np.quantile(bs.column("b"), q)), approach3.tokens_per_param(C),
                             tuple(np.quantile(tpp_s, q)), f"{pct} bootstrap over runs"))
    return pd.DataFrame(rows)


def held_values(rows: pd.DataFrame, ours: Sequence[str] = ("Approach 2", "Approach 3"),
                col: str = "a") -> pd.DataFrame:
    """Which of Hoffmann's Table 2 values of ``col`` each of our intervals holds.

    ``rows``: :func:`approach_rows`. One row per (our approach, Hoffmann's approach): our interval, his value,
    and ``held`` (his value inside our closed interval)."""
    lo, hi = {"a": ("a_lo", "a_hi"), "b": ("b_lo", "b_hi")}[col]
    theirs = rows[rows["source"] == "Hoffmann Table 2"]
    out = []
    for r in rows[(rows["source"] == "ours") & rows["approach"].isin(ours)].itertuples():
        for h in theirs.itertuples():
            v = getattr(h, col)
            out.append({"ours": r.approach, "lo": getattr(r, lo), "hi": getattr(r, hi), "hoffmann": h.approach,
                        "value": v, "held": bool(getattr(r, lo) <= v <= getattr(r, hi))})
    return pd.DataFrame(out)


def decades_beyond(C: float, n, tokens) -> tuple[float, float]:
    """(largest 6·N·D among the runs, log10 of ``C`` over it): how far ``C`` extrapolates past a suite."""
    largest = float(np.max(6 * np.asarray(n, float) * np.asarray(tokens, float)))
    return largest, float(np.log10(C / largest))


def with_intervals(df: pd.DataFrame, cols=("a", "b", "tokens_per_param"), lo_hi=None, digits=(3, 3, 1)) -> pd.DataFrame:
    """``df`` with each of ``cols`` as text 'value (lo, hi)' (or the value alone without an interval)."""
    lo_hi = lo_hi or {"a": ("a_lo", "a_hi"), "b": ("b_lo", "b_hi"), "tokens_per_param": ("tpp_lo", "tpp_hi")}
    out = df.copy()
    for col, d in zip(cols, digits):
        lo, hi = lo_hi[col]

        def text(r, col=col, lo=lo, hi=hi, d=d):
            if not np.isfinite(r[col]):
                return "n/a"
            v = f"{r[col]:.{d}f}"
            return v if not np.isfinite(r[lo]) else f"{v} ({r[lo]:.{d}f}, {r[hi]:.{d}f})"
        out[col] = df.apply(text, axis=1)
    return out.drop(columns=[c for pair in lo_hi.values() for c in pair if c in out])
