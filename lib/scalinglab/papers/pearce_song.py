"""Pearce & Song 2024's account of Kaplan's exponent, simulated.

"Reconciling Kaplan and Chinchilla Scaling Laws" (arXiv:2406.12907): take a
Chinchilla law written in *total* parameters N_T, note that at Kaplan's small
scales embeddings are a large share of N_T, and look at the law the way Kaplan
did: non-embedding parameters N_E and compute C_E = 6·N_E·D, over Kaplan's
range of model sizes and budgets. The compute-optimal frontier, fitted as one
power law over that range, is much steeper than β/(α+β).

N_T = N_E + 47491·N_E^(1/3) is their fit to Chinchilla's model shapes
(32k vocabulary, width ∝ N_E^(1/3) at a fixed aspect ratio). Like their
script, we sweep a grid of model sizes, pick at each budget the size with the
lowest loss (D = C/(6N) in the convention being simulated) and fit log N*
against log C by least squares.

The second half measures the same thing on real runs: fit them under total N and
under Kaplan's counting (:func:`envelope_shift` for Approach 1, :func:`law_shift`
for Approach 3), with a paired bootstrap interval on the shift, and
:func:`on_law` puts the Chinchilla law's losses on the same design, so that the
simulation and the measurement share sizes, checkpoints and procedure. Fitted
with the same resamples, the simulated shift is a statistic of the same runs
too: :func:`shift_difference` gives measured − simulated (or any two shifts'
difference) an interval paired resample by resample. :func:`with_kaplan_params`
adds Kaplan's non-embedding N to Gadre et al.'s final-loss table.

In Kaplan's N the Chinchilla form is misspecified (A/N^α with the vocabulary
taken out of N), and on some runs its irreducible loss E runs to its floor at 0
while the total-N fit puts it near 1.7. The objective is nearly flat along E, and
a moves with it. :func:`e_profile` fits the law at a series of fixed E, and
``law_shift(..., kaplan_e="total")`` holds the Kaplan-count fit's E at the total-N
fit's (the asymptote of the two countings is the same loss, since N_ne/N → 1), on
the same resamples, so the free-E and the held-E shift can be compared.
``CountingShift.floor_share`` says how often each fit's bootstrap put E at 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from scalinglab.accounting.conventions import OPENLM_VOCAB, kaplan_total_params, openlm_shape
from scalinglab.errors import DataError, UserError
from scalinglab.fitting.chinchilla.approach3 import NATURAL_FLOOR, natural_floor_shares
from scalinglab.fitting.chinchilla.law import ScalingLaw
from scalinglab.fitting.frontier.block_bootstrap import detectable
from scalinglab.serialization import to_jsonable

# Kaplan's sweep: "768 to 1.5 billion non-embedding parameters", and budgets
# from 10^12.95 FLOP to 10^20.7 in non-embedding compute (Pearce & Song §4);
# in total compute they start at 10^13.4.
N_E_RANGE = (10**2.9, 10**9.2)
C_E_RANGE = (10**12.95, 10**20.7)
C_T_RANGE = (10**13.4, 10**20.7)


@dataclass(frozen=True)
class PearceSongResult:
    exponent_nonembedding: float   # local slope of N_E* vs C_E over Kaplan's range
    exponent_total: float          # slope of N_T* vs C_T = 6·N_T·D (→ β/(α+β))
    asymptotic: float              # β/(α+β)
    frontier: pd.DataFrame         # convention, flops, n_opt

    def to_dict(self) -> dict:
        return to_jsonable({"exponent_nonembedding": self.exponent_nonembedding,
                            "exponent_total": self.exponent_total, "asymptotic": self.asymptotic,
                            "frontier": self.frontier.to_dict("records")})

    def summary(self) -> str:
        return (f"N_opt ∝ C^a over Kaplan's range: a = {self.exponent_nonembedding:.3f} in non-embedding N and "
                f"C = 6·N_E·D, {self.exponent_total:.3f} in total N (the law's own β/(α+β) = {self.asymptotic:.3f})")


def _frontier(law: ScalingLaw, n_e: np.ndarray, flops: np.ndarray, total: bool) -> np.ndarray:
    n_t = kaplan_total_params(n_e)
    n_counted = n_t if total else n_e
    tokens = flops[:, None] / (6 * n_counted[None, :])
    loss = law.loss(n_t[None, :], tokens)
    return n_counted[np.argmin(loss, axis=1)]


def simulate(law: ScalingLaw, n_sizes: int = 20, n_budgets: int = 100) -> PearceSongResult:
    """The frontier in Kaplan's conventions and in total terms, and each one's fitted slope."""
    n_e = np.geomspace(*N_E_RANGE, n_sizes)
    rows, slopes = [], {}
    for conv, c_range, total in (("non_embedding", C_E_RANGE, False), ("total", C_T_RANGE, True)):
        flops = np.geomspace(*c_range, n_budgets)
        best = _frontier(law, n_e, flops, total)
        slopes[conv] = float(np.polyfit(np.log(flops), np.log(best), 1)[0])
        rows.append(pd.DataFrame(dict(convention=conv, flops=flops, n_opt=best)))
    return PearceSongResult(exponent_nonembedding=slopes["non_embedding"],
                            exponent_total=slopes["total"], asymptotic=law.a,
                            frontier=pd.concat(rows, ignore_index=True))


# --- the same question on real runs -------------------------------------------------------------
#
# Pearce & Song simulate; with training runs one can measure. Fit the same runs twice, once with
# total N (and the compute the study counted) and once Kaplan's way (non-embedding N, C = 6·N·D),
# and take the difference of the exponents. Both fits are bootstrapped over the same resamples, so
# the shift gets a paired interval: most of what moves one exponent (which sizes happened to be
# trained) moves the other with it, and the shift is much better determined than either exponent.


@dataclass(frozen=True)
class CountingShift:
    """N_opt ∝ C^a fitted under total and Kaplan's counting, and the shift a_kaplan − a_total."""

    total: float
    total_ci: tuple[float, float]
    kaplan: float
    kaplan_ci: tuple[float, float]
    shift: float
    shift_ci: tuple[float, float]    # paired bootstrap: resample i of one fit against resample i of the other
    status: str = "ok"               # ok, or the first failing fit's status
    n_paired: int = 0                # resamples that succeeded under both countings
    level: float = 0.95
    # 1 − N_ne/N at the two ends of what was fitted (envelope: the total fit's first and last
    # optimum; law: the smallest and largest model). Relabelling N alone moves the slope by
    # the fall of log(1 − share) over the range of log C, which is Pearce & Song's mechanism.
    embedding_share: tuple[float, float] = (np.nan, np.nan)
    fits: tuple = field(default=(), repr=False, compare=False)   # (total fit, Kaplan fit)
    # The shift in each resample both fits succeeded on, and that resample's index. Resample i is
    # fixed by ``resampling`` = (unit, seed, n_boot, units), so two shifts with equal ``resampling``
    # on the same design can be compared resample by resample (shift_difference).
    shift_draws: np.ndarray = field(default_factory=lambda: np.empty(0), repr=False, compare=False)
    draws: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=int), repr=False, compare=False)
    resampling: tuple = ()
    # Approach 3 only: the E the Kaplan-count fit was held at (None: fitted freely), and the share of
    # each fit's counted bootstrap replicates (total, Kaplan) with E on its natural floor, E = 0.
    kaplan_e: float | None = None
    floor_share: tuple[float, float] = (np.nan, np.nan)

    @property
    def shift_percentile(self) -> float:
        """Share of the paired resamples whose shift is below the point shift (0.5 for a centred bootstrap)."""
        return float(np.mean(self.shift_draws < self.shift)) if len(self.shift_draws) else np.nan

    def to_dict(self) -> dict:
        return to_jsonable({"a total": self.total, "total lo": self.total_ci[0], "total hi": self.total_ci[1],
                "a Kaplan": self.kaplan, "Kaplan lo": self.kaplan_ci[0], "Kaplan hi": self.kaplan_ci[1],
                "shift": self.shift, "shift lo": self.shift_ci[0], "shift hi": self.shift_ci[1],
                "paired": self.n_paired, "share first": self.embedding_share[0],
                "share last": self.embedding_share[1], "status": self.status})


def _paired(x: np.ndarray, x_draw: np.ndarray, y: np.ndarray, y_draw: np.ndarray,
            level: float) -> tuple[tuple[float, float], np.ndarray, np.ndarray]:
    """Interval of y − x over the resamples both succeeded on (matched by resample index), the
    differences and those resamples' indices."""
    common, ix, iy = np.intersect1d(x_draw, y_draw, return_indices=True)
    if len(common) == 0:
        return (np.nan, np.nan), np.empty(0), common
    d = y[iy] - x[ix]
    lo, hi = np.quantile(d, [(1 - level) / 2, (1 + level) / 2])
    return (float(lo), float(hi)), d, common


def envelope_shift(curves: pd.DataFrame, options, n_kaplan: str = "n_ne") -> CountingShift:
    """Approach 1 (:func:`scalinglab.fitting.frontier.envelope.fit_envelope`) on the same curves counted two ways.

    ``curves`` has the columns run, n (total N), tokens, flops (the compute the study
    counted) and loss, plus ``n_kaplan``, each run's non-embedding N. The total fit uses n
    and flops; the Kaplan fit uses ``n_kaplan`` and C = 6·N_ne·D. One table for both
    keeps every checkpoint's loss the same in the two fits. Resample i draws the same
    runs in both (same run names, same seed), which is what pairs the shift's interval.
    """
    from scalinglab.errors import UserError
    from scalinglab.fitting.frontier import envelope

    if n_kaplan not in curves.columns:
        raise UserError(f"counting shift: the curves have no non-embedding N column {n_kaplan!r} "
                        f"(columns: {', '.join(map(str, curves.columns))})")
    kaplan = curves.drop(columns="flops").assign(n=curves[n_kaplan])
    ft = envelope.fit_envelope(curves, options)
    fk = envelope.fit_envelope(kaplan, options, flops_col=None)
    ci, d, draws = _paired(ft.boot[:, 0], ft.boot_draw, fk.boot[:, 0], fk.boot_draw, options.level)
    status = next((f.status for f in (ft, fk) if f.status != "converged"), "ok")
    by_run = curves.assign(run=curves["run"].astype(str)).groupby("run")   # fit points carry str run ids
    share = (1 - by_run[n_kaplan].first() / by_run["n"].first()).to_dict()
    used = ft.points[ft.points["used"]].sort_values("flops")
    ends = tuple(float(share[r]) for r in used["run"].iloc[[0, -1]]) if len(used) else (np.nan, np.nan)
    return CountingShift(total=ft.exponent, total_ci=ft.ci, kaplan=fk.exponent, kaplan_ci=fk.ci,
                         shift=fk.exponent - ft.exponent, shift_ci=ci, status=status, n_paired=len(draws),
                         level=options.level, embedding_share=ends, fits=(ft, fk), shift_draws=d, draws=draws,
                         resampling=("runs", options.seed, options.n_boot, ft.n_runs))


def e_at_floor(result) -> float:
    """Share of a fit's counted bootstrap replicates with E on its natural floor (E = e^−20 ≈ 0,
    ``fit.natural_floor_shares``); NaN without replicates, 0 when E was held fixed."""
    return natural_floor_shares(result).get("E", np.nan)


def _fixed_e(value: float) -> float:
    """E = 0 cannot be held exactly (log E is the solver's coordinate): hold it at the natural floor, e^−20."""
    return max(float(value), float(np.exp(NATURAL_FLOOR[0])))


def law_shift(table: pd.DataFrame, n_total: str, n_kaplan: str, d_col: str = "tokens", loss_col: str = "loss", *,
              n_boot: int = 0, seed: int = 0, level: float = 0.95,
              kaplan_e: float | str | None = None) -> CountingShift:
    """Approach 3 (:func:`scalinglab.fitting.chinchilla.approach3.fit_arrays`) on the same runs with N = ``n_total`` and with N = ``n_kaplan``.

    a = β/(α+β) of each fitted law. The row bootstrap draws resample i from the seed and the
    number of rows alone, so resample i is the same rows in both fits and the shift is paired.
    ``status`` is "ok" when both fits converged, else the first other status.

    ``kaplan_e`` holds the Kaplan-count fit's E: ``"total"`` at the total-N fit's point estimate
    (in every resample too, so the interval is conditional on that E), a number at that value
    (0 means the natural floor, e^−20), None (default) fits it freely. The resamples are the same
    either way, so :func:`shift_difference` compares a held-E shift with a free one, or with a
    simulated one held the same way.
    """
    from scalinglab.fitting.chinchilla import approach3 as fit
    from scalinglab.fitting.laws import Columns, fit_table

    resampled = fit.FitOptions().with_resampling(n_boot, seed=seed, level=level)
    total = fit_table(fit.CHINCHILLA, table, Columns(n=n_total, d=d_col, loss=loss_col), None, resampled)
    if kaplan_e is None:
        held, options = None, resampled
    else:
        if isinstance(kaplan_e, str) and kaplan_e != "total":
            raise UserError(f"kaplan_e must be 'total', a number or None, not {kaplan_e!r}")
        held = _fixed_e(total.E if kaplan_e == "total" else kaplan_e)
        options = replace(resampled, fixed=(("E", held),))
    fits = [total, fit_table(fit.CHINCHILLA, table, Columns(n=n_kaplan, d=d_col, loss=loss_col), None, options)]
    nan2 = (np.nan, np.nan)
    cis, draws, samples = [], [], []
    for f in fits:
        bs = f.bootstrap
        cis.append(bs.ci["a"] if bs is not None and len(bs.samples) else nan2)
        draws.append(np.flatnonzero(bs.converged) if bs is not None else np.empty(0, dtype=int))
        samples.append(bs.column("a") if bs is not None else np.empty(0))
    ci, d, common = _paired(samples[0], draws[0], samples[1], draws[1], level)
    status = next((f.status for f in fits if f.status != "converged"), "ok")
    n_t, n_k = (pd.to_numeric(table[c], errors="coerce").to_numpy(float) for c in (n_total, n_kaplan))
    ends = tuple(float(1 - n_k[i] / n_t[i]) for i in (np.argmin(n_t), np.argmax(n_t)))
    return CountingShift(total=fits[0].a, total_ci=cis[0], kaplan=fits[1].a, kaplan_ci=cis[1],
                         shift=fits[1].a - fits[0].a, shift_ci=ci, status=status, n_paired=len(common),
                         level=level, embedding_share=ends, fits=tuple(fits), shift_draws=d, draws=common,
                         resampling=("rows", seed, n_boot, len(table)), kaplan_e=held,
                         floor_share=tuple(e_at_floor(f) for f in fits))


def e_profile(table: pd.DataFrame, n_col: str, values=(0.0, 0.5, 1.0, 1.5), d_col: str = "tokens",
              loss_col: str = "loss") -> pd.DataFrame:
    """The law fitted with E held at each of ``values`` (0: the natural floor), then with E free.

    One row per fit: E (as held, or as fitted), held (bool), a, alpha, beta, objective (the summed
    Huber objective, comparable across rows: same runs, same δ), d_objective (above the lowest of
    the rows) and status. Where the objective barely moves while a does, the runs do not pin a
    without pinning E.
    """
    from scalinglab.fitting.chinchilla import approach3 as fit
    from scalinglab.fitting.laws import Columns, fit_table

    rows = []
    for v in (*values, None):
        options = None if v is None else fit.FitOptions(fixed={"E": _fixed_e(v)})
        f = fit_table(fit.CHINCHILLA, table, Columns(n=n_col, d=d_col, loss=loss_col), None, options)
        rows.append(dict(E=float(v) if v is not None else f.E, held=v is not None, a=f.a, alpha=f.alpha,
                         beta=f.beta, objective=f.objective, status=f.status))
    out = pd.DataFrame(rows)
    out["d_objective"] = out["objective"] - out["objective"].min()
    return out


def on_law(law: ScalingLaw, table: pd.DataFrame, n_col: str = "n", d_col: str = "tokens",
           loss_col: str = "loss") -> pd.DataFrame:
    """The table with its losses replaced by the law's, L(N_total, D): Pearce & Song's premise on a real design.

    Fitting the result under both countings, with the same procedure as the real losses,
    gives the shift Pearce & Song's account predicts for these very sizes, checkpoints and
    embedding shares.
    """
    return table.assign(**{loss_col: law.loss(table[n_col].to_numpy(float), table[d_col].to_numpy(float))})


@dataclass(frozen=True)
class ShiftDifference:
    """``first.shift − second.shift`` for two counting shifts fitted on the same resamples."""

    difference: float
    ci: tuple[float, float]    # resample i's shift minus resample i's shift, over resamples both have
    n_paired: int
    level: float = 0.95

    def to_dict(self) -> dict:
        return to_jsonable({"difference": self.difference, "lo": self.ci[0], "hi": self.ci[1], "paired": self.n_paired})


def shift_difference(first: CountingShift, second: CountingShift) -> ShiftDifference:
    """The difference of two shifts with an interval paired resample by resample.

    Typically ``first`` is measured on real runs and ``second`` is :func:`on_law` on the same
    runs: the simulated shift depends on which runs (rows) a resample holds just as the measured
    one does, so comparing a measured interval with a fixed simulated value understates the
    uncertainty, and differencing the two intervals overstates it. Both must come from the same
    design with the same seed and number of resamples (``resampling``), else a UserError.
    """
    if not first.resampling or first.resampling != second.resampling:
        raise UserError(f"shift difference needs both shifts bootstrapped on the same resamples "
                        f"(unit, seed, n_boot, units): got {first.resampling} and {second.resampling}")
    if first.level != second.level:
        raise UserError(f"shift difference: levels differ ({first.level} and {second.level})")
    ci, d, common = _paired(second.shift_draws, second.draws, first.shift_draws, first.draws, first.level)
    return ShiftDifference(difference=float(first.shift - second.shift), ci=ci, n_paired=len(common), level=first.level)


# --- Gadre et al.'s parameter counts --------------------------------------------------------------
#
# Their final-loss table (``gadre2024-final-losses``) has ``params``, every parameter (the input
# embedding and the untied output head, two 50,432 × d_model matrices, included), and
# ``params_no_embed``, which drops the input embedding only. Kaplan's non-embedding N drops both.

def with_kaplan_params(table: pd.DataFrame, arch_col: str = "arch") -> pd.DataFrame:
    """Gadre et al.'s table with ``d_model`` and ``params_kaplan`` = params − 2·50,432·d_model.

    The width comes from ``arch`` (:func:`openlm_shape`); a row whose params − params_no_embed
    is not 50,432 × that width is a DataError, since then the columns do not count what this
    assumes.
    """
    missing = [c for c in (arch_col, "params", "params_no_embed") if c not in table.columns]
    if missing:
        raise UserError(f"Gadre et al.'s table lacks column(s) {', '.join(map(repr, missing))}")
    width = table[arch_col].map(lambda a: openlm_shape(a)[0]).astype("int64")
    params = table["params"].astype("int64")
    no_embed = table["params_no_embed"].astype("int64")
    bad = params - no_embed != OPENLM_VOCAB * width
    if bad.any():
        row = table[bad].iloc[0]
        gap = int(row["params"] - row["params_no_embed"])
        raise DataError(f"arch {row[arch_col]}: params − params_no_embed = {gap}, "
                        f"not {OPENLM_VOCAB} × its width {int(width[bad].iloc[0])}")
    return table.assign(d_model=width, params_kaplan=no_embed - OPENLM_VOCAB * width)


# --- tables ----------------------------------------------------------------------------------------

def format_ci(x: float, ci, places: int = 2, sign: bool = False) -> str:
    """``x [lo, hi]`` at ``places`` decimals (with a sign if ``sign``): one cell of :func:`shift_table`."""
    f = f"{{:{'+' if sign else ''}.{places}f}}"
    return f"{f.format(x)} [{f.format(ci[0])}, {f.format(ci[1])}]"


def shift_table(measured: dict, simulated: dict | None = None, gaps: dict | None = None, places: int = 2,
                index: tuple[str, ...] = (), exponents: bool = True) -> pd.DataFrame:
    """Counting shifts as a printable table, one row per key of ``measured`` (a tuple key becomes a
    MultiIndex named ``index``).

    Columns: a under total N and under the counting (unless not ``exponents``), the shift, each with its interval; with
    ``simulated`` (the same keys: :func:`on_law` on the same runs) the simulated shift, and with
    ``gaps`` (:func:`shift_difference` of the two) measured − simulated and "detects", the smallest gap
    that interval would detect at 80% power (``fitting.frontier.block_bootstrap.detectable``); "E = 0" the share of the
    counted fit's resamples with E on its floor, where the shift is an Approach-3 one; and the status.
    """
    rows = []
    for key, s in measured.items():
        row = {"a total N": format_ci(s.total, s.total_ci, places),
               "a counted": format_ci(s.kaplan, s.kaplan_ci, places)} if exponents else {}
        row["shift"] = format_ci(s.shift, s.shift_ci, places, sign=True)
        if simulated is not None:
            row["simulated shift"] = format_ci(simulated[key].shift, simulated[key].shift_ci, places, sign=True)
        if gaps is not None:
            row["measured − sim."] = format_ci(gaps[key].difference, gaps[key].ci, places, sign=True)
            row["detects"] = f"{detectable(gaps[key].ci, gaps[key].level):.{places}f}"
        if not np.isnan(s.floor_share[1]):
            row["E = 0"] = f"{s.floor_share[1]:.0%}"
        row["status"] = s.status
        rows.append(row)
    keys = list(measured)
    if keys and isinstance(keys[0], tuple):
        idx = pd.MultiIndex.from_tuples(keys, names=list(index) or None)
    else:
        idx = pd.Index(keys, name=index[0] if index else None)
    return pd.DataFrame(rows, index=idx)


def e_profile_table(profiles: dict[str, pd.DataFrame], total_a: dict[str, float]) -> pd.DataFrame:
    """:func:`e_profile` results side by side, one column pair per name: a with its shift from
    ``total_a[name]`` (the total-N fit's a), and the objective relative to that profile's lowest.
    Rows are the held E values, then "free"."""
    cols = {}
    for name, p in profiles.items():
        best = p["objective"].min()
        index = pd.Index([f"{e:.1f}" if h else "free" for e, h in zip(p["E"], p["held"])], name="E")
        cols[name] = pd.DataFrame({"a (shift)": [f"{a:.2f} ({a - total_a[name]:+.2f})" for a in p["a"]],
                                   "objective": [f"{o / best - 1:+.0%}" for o in p["objective"]]}, index=index)
    return pd.concat(cols, axis=1)



def shift_summary(s: CountingShift) -> dict:
    """What notebook 02's summary.json keeps of a :class:`CountingShift` (Approach 3 adds the held E and the
    shares of resamples with E at 0)."""
    out = {"total": s.total, "total_ci": list(s.total_ci), "counted": s.kaplan, "counted_ci": list(s.kaplan_ci),
           "shift": s.shift, "shift_ci": list(s.shift_ci), "n_paired": s.n_paired, "status": s.status,
           "embedding_share_first_last": list(s.embedding_share), "shift_percentile": s.shift_percentile}
    if s.resampling and s.resampling[0] == "rows":
        out.update(kaplan_e_held=s.kaplan_e, e_at_zero_share_total_counted=list(s.floor_share),
                   counted_e=float(s.fits[1].E) if len(s.fits) > 1 else None)
    return out


def gap_summary(g: ShiftDifference) -> dict:
    """What notebook 02's summary.json keeps of a :class:`ShiftDifference`, with the interval's width and
    the smallest gap it would detect (80% power, ``fitting.frontier.block_bootstrap.detectable``)."""
    return {"difference": g.difference, "ci": list(g.ci), "n_paired": g.n_paired,
            "width": g.ci[1] - g.ci[0], "detectable": detectable(g.ci, g.level)}
