"""The scoreboard: every applicable law × estimator fitted to a split's training runs and scored on the runs it
held out (``benchmark.protocol``).

Entries (law, estimator):

- (chinchilla, approach3): Hoffmann's Huber fit from his 4,500-start grid (``fitting.approach3``, batched);
- (chinchilla, varpro): least squares in relative residuals by variable projection (``fitting.varpro``);
- (kaplan | gadre | data_constrained, law engine): the registry's one multi-start fit (``fitting.laws``);
  data_constrained only where the runs carry unique tokens;
- (approach2, parabola | spline): isoFLOP sets only; per-budget optima and a power law N_opt ∝ C^a
  (``fitting.isoflop``). It predicts N_opt, not the loss, so it has no RMSLE or loss coverage.
- (approach1, envelope): where the split carries the models' training curves; the lower envelope of the curves
  and N_opt ∝ C^a through it (``fitting.envelope``), fitted without and with the held-out models: scored by
  its exponent only.

Scores per entry: RMSLE on the held-out runs; *coverage*, the share of held-out runs inside the new-run interval
L̂·exp(±z σ̂) (σ̂ the training residual sd in log loss, as ``fitting.forecast`` gives without a bootstrap: it
leaves out the parameters' own uncertainty, so it is the narrowest honest new-run interval); for Approach 3
with ``fit_boot`` resamples also ``coverage_boot``, the same share for ``fitting.forecast``'s full new-run
interval (each row-bootstrap replicate's prediction times exp(σ̂z)); on isoFLOP sets the
held-out budget's N_opt against the optimum of a parabola through that budget's own runs (``nopt_error``, log
ratio); and everywhere the exponent a of N_opt ∝ C^a, fitted without the held-out runs, against the same
entry's full-data a (for a law, the slope of its numerical N_opt(C) over the runs' range of C).

Which entry wins a dataset is settled by a paired bootstrap of the held-out log errors, resampling the split's
independent unit (``paired_rmsle_differences``): entries whose interval on RMSLE − best RMSLE holds 0 tie with
the best and are reported as tied, never ranked. The fits are held fixed in that resampling, so the interval is
about which runs happened to be held out, not about the fits' own spread: two estimators of one correctly
specified law can differ beyond it on one draw of the data.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

import numpy as np
import pandas as pd

from scalinglab.benchmark.protocol import Split
from scalinglab.errors import UserError
from scalinglab.serialization import to_jsonable

LOSS_ENTRIES = (("chinchilla", "approach3"), ("chinchilla", "varpro"), ("kaplan", "law engine"),
                ("gadre", "law engine"), ("data_constrained", "law engine"))
A2_ENTRIES = (("approach2", "parabola"), ("approach2", "spline"))
A1_ENTRY = ("approach1", "envelope")
N_GRID = 801
# A paired bootstrap over one held-out unit has no spread: below this many units no entry is ranked.
MIN_UNITS = 2


def _fit_loss(law: str, estimator: str, t: pd.DataFrame, n_boot: int = 0,
              seed: int = 0) -> tuple[Callable, int, str, Any]:
    """(predict(table) → loss, free parameters, status, Approach 3's LawFit or None) of one loss entry
    fitted to the rows ``t``; ``n_boot``: Approach 3's row bootstrap."""
    n, d, y = (t[k].to_numpy(float) for k in ("n", "d", "loss"))
    if estimator == "approach3":
        from scalinglab.fitting.approach3 import CHINCHILLA
        from scalinglab.fitting.laws.base import fit_law

        res = fit_law(CHINCHILLA, {"n": n, "d": d}, y, n_boot=n_boot, seed=seed)
        return (lambda q: res.loss(q["n"].to_numpy(float), q["d"].to_numpy(float))), res.n_free, res.status, res
    if estimator == "varpro":
        from scalinglab.fitting.varpro import fit_varpro

        f = fit_varpro(n, d, y, tol=1e-7)
        return (lambda q: f.law.loss(q["n"].to_numpy(float), q["d"].to_numpy(float))), 5, "converged", None
    from scalinglab.fitting import laws

    lw = laws.get(law)
    fit = laws.fit_law(lw, {r: t[r].to_numpy(float) for r in lw.inputs}, y)
    return (lambda q: fit.predict({r: q[r].to_numpy(float) for r in lw.inputs})), len(fit.free), fit.status, None


def _n_opt(predict: Callable, c: float, n_lo: float, n_hi: float) -> float:
    """The N minimising the predicted loss at compute c (D = c/6N), on a log grid two decades past the runs."""
    grid = np.exp(np.linspace(np.log(n_lo) - np.log(100), np.log(n_hi) + np.log(100), N_GRID))
    with np.errstate(all="ignore"):
        loss = predict(pd.DataFrame({"n": grid, "d": c / (6 * grid)}))
    loss = np.where(np.isfinite(loss), loss, np.inf)
    i = int(np.argmin(loss))
    return float(grid[i]) if 0 < i < N_GRID - 1 else float("nan")   # at the grid's edge: no interior optimum


def _exponent(predict: Callable, budgets: np.ndarray, n_lo: float, n_hi: float) -> float:
    """a = d log N_opt / d log C between the smallest and largest of ``budgets``."""
    c0, c1 = float(np.min(budgets)), float(np.max(budgets))
    n0, n1 = _n_opt(predict, c0, n_lo, n_hi), _n_opt(predict, c1, n_lo, n_hi)
    return float(np.log(n1 / n0) / np.log(c1 / c0))


def _optima(t: pd.DataFrame, method: str):
    from scalinglab.fitting import isoflop

    frame = t.rename(columns={"c": "flops"})[["n", "flops", "loss"]]
    with np.errstate(all="ignore"):
        return isoflop.fit_exponent(isoflop.budget_optima(frame, method=method), weighted=False)


def reference_n_opt(split: Split) -> float:
    """The held-out budget's own optimum: the vertex of a parabola in log N through its runs (NaN at an edge)."""
    from scalinglab.fitting import isoflop

    frame = split.test.rename(columns={"c": "flops"})[["n", "flops", "loss"]]
    with np.errstate(all="ignore"):
        opt = isoflop.budget_optima(frame, method="parabola")
    row = opt.iloc[-1]
    return float(row["n_opt"]) if not bool(row["edge"]) else float("nan")


def entries_for(split: Split) -> list[tuple[str, str]]:
    out = [e for e in LOSS_ENTRIES if e[0] != "data_constrained" or "u" in split.table]
    return out + (list(A2_ENTRIES) if split.kind == "isoflop" else []) + ([A1_ENTRY] if split.curves is not None
                                                                         else [])


def _nan_row() -> dict[str, Any]:
    return {"rmsle": np.nan, "coverage": np.nan, "n_inside": 0, "coverage_boot": np.nan, "nopt_error": np.nan,
            "a_train": np.nan, "a_full": np.nan}


def _envelope_row(split: Split) -> dict[str, Any]:
    """Approach 1's exponent from the training curves of the models the split keeps, and of all of them."""
    from scalinglab.fitting.envelope import EnvelopeOptions, fit_envelope

    held = split.curves["n"].to_numpy(float) >= float(split.test["n"].min())
    opts = EnvelopeOptions(n_boot=0)
    fit, full = fit_envelope(split.curves[~held], opts), fit_envelope(split.curves, opts)
    return {"status": fit.status, "a_train": fit.exponent, "a_full": full.exponent}


def score_entry(split: Split, law: str, estimator: str, level: float = 0.95, fit_boot: int = 0,
                seed: int = 0) -> tuple[dict[str, Any], np.ndarray]:
    """One entry's row and its held-out log errors (empty for Approaches 1 and 2); ``fit_boot``: Approach 3's
    row-bootstrap resamples behind ``coverage_boot``."""
    tr, te = split.train, split.test
    row = {"dataset": split.dataset, "law": law, "estimator": estimator, "n_train": len(tr), "n_heldout": len(te),
           "holdout": split.how, "unit": split.unit} | _nan_row()
    iso = split.kind == "isoflop"
    c_held = float(te["c"].max()) if iso else np.nan
    if law == "approach1":
        return row | _envelope_row(split), np.array([])
    if law == "approach2":
        fit, full = _optima(tr, estimator), _optima(split.table, estimator)
        row.update(status=fit.status, a_train=fit.exponent, a_full=full.exponent,
                   nopt_error=float(np.log(fit.predict(c_held) / reference_n_opt(split))) if fit.status == "ok"
                   else np.nan)
        return row, np.array([])
    try:
        predict, k, status, res = _fit_loss(law, estimator, tr, fit_boot, seed)
    except UserError as exc:
        return row | {"status": f"refused: {exc}"}, np.array([])
    with np.errstate(all="ignore"):
        r_train = np.log(predict(tr)) - np.log(tr["loss"].to_numpy(float))
        err = np.log(predict(te)) - np.log(te["loss"].to_numpy(float))
    sigma = float(np.sqrt(np.sum(r_train ** 2) / max(len(tr) - k, 1)))
    inside = np.abs(err) <= NormalDist().inv_cdf((1 + level) / 2) * sigma
    row.update(status=status, rmsle=float(np.sqrt(np.mean(err ** 2))), coverage=float(np.mean(inside)),
               n_inside=int(inside.sum()), sigma=sigma)
    if res is not None and res.bootstrap is not None:
        from scalinglab.fitting.forecast import loss_intervals

        iv = loss_intervals(res, te["n"].to_numpy(float), te["d"].to_numpy(float), sigma, level)
        y = te["loss"].to_numpy(float)
        row["coverage_boot"] = float(np.mean((iv["new_lo"] <= y) & (y <= iv["new_hi"])))
    if "u" in split.table:   # N_opt(C) of a law with unique tokens needs U too: no exponent
        return row, err
    n_lo, n_hi = float(split.table["n"].min()), float(split.table["n"].max())
    full_predict = _fit_loss(law, estimator, split.table)[0]
    row.update(a_train=_exponent(predict, tr["c"], n_lo, n_hi), a_full=_exponent(full_predict, split.table["c"],
                                                                                  n_lo, n_hi))
    if iso:
        row["nopt_error"] = float(np.log(_n_opt(predict, c_held, n_lo, n_hi) / reference_n_opt(split)))
    return row, err


@dataclass(frozen=True)
class DatasetBoard:
    """One dataset's rows, the best entry by held-out RMSLE and each other entry's paired difference from it."""

    split: Split
    rows: tuple[dict[str, Any], ...]
    best: str | None
    differences: dict[str, dict[str, Any]]

    def tied_with_best(self) -> list[str]:
        """The best entry and every entry whose paired interval on the difference holds 0."""
        if self.best is None:
            return []
        return [self.best] + [k for k, d in self.differences.items() if d["ci"][0] <= 0]


def entry_key(row: dict[str, Any]) -> str:
    return f"{row['law']} / {row['estimator']}"


def score_split(split: Split, *, entries=None, n_boot: int = 2000, seed: int = 0, level: float = 0.95,
                fit_boot: int = 0) -> DatasetBoard:
    """Every applicable entry on one split, and the paired verdict on its RMSLEs (none when the held-out runs
    hold fewer than MIN_UNITS independent units)."""
    from scalinglab.fitting.laws.compare import paired_rmsle_differences

    rows, errors = [], {}
    for law, est in entries or entries_for(split):
        row, err = score_entry(split, law, est, level, fit_boot, seed)
        rows.append(row)
        if err.size and np.all(np.isfinite(err)):
            errors[entry_key(row)] = err
    units = split.test["unit"].to_numpy()
    if len(np.unique(units)) < MIN_UNITS:
        errors = {}
    best = min(errors, key=lambda k: float(np.mean(errors[k] ** 2))) if errors else None
    diffs = {}
    if best is not None and len(errors) > 1:
        diffs = paired_rmsle_differences(errors, units, best, n_boot, seed, level)
    return DatasetBoard(split, tuple(rows), best, diffs)


@dataclass(frozen=True)
class Scoreboard:
    """Every dataset's board, and the summary: for each entry, on how many datasets it is alone best, tied
    for best, and its median RMSLE relative to each dataset's best."""

    boards: tuple[DatasetBoard, ...]
    level: float = 0.95
    extra: dict[str, Any] = field(default_factory=dict)

    def rows(self) -> list[dict[str, Any]]:
        out = []
        for b in self.boards:
            tied = b.tied_with_best()
            for r in b.rows:
                k = entry_key(r)
                d = b.differences.get(k)
                out.append(r | {"vs_best": None if d is None else {"diff": d["diff"], "ci": d["ci"]},
                                "verdict": ("best" if k == b.best and len(tied) == 1 else
                                            "tied for best" if k in tied else
                                            "worse" if d is not None else "not ranked")})
        return out

    def wins(self) -> list[dict[str, Any]]:
        """Per entry: datasets scored, alone best, tied for best, median RMSLE ratio to the dataset's best."""
        stats: dict[str, dict[str, Any]] = {}
        for b in self.boards:
            tied = b.tied_with_best()
            # The ratio's reference: the best entry, or with no verdict (one held-out unit) the lowest RMSLE.
            finite = [r["rmsle"] for r in b.rows if np.isfinite(r["rmsle"])]
            best = {entry_key(r): r["rmsle"] for r in b.rows}.get(b.best, min(finite, default=np.nan))
            for r in b.rows:
                k = entry_key(r)
                s = stats.setdefault(k, {"entry": k, "datasets": 0, "alone_best": 0, "tied_best": 0, "ratios": []})
                if not np.isfinite(r["rmsle"]):
                    continue
                s["datasets"] += 1
                s["alone_best"] += int(k == b.best and len(tied) == 1)
                s["tied_best"] += int(k in tied and len(tied) > 1)
                s["ratios"].append(r["rmsle"] / best)
        return [{k: v for k, v in s.items() if k != "ratios"}
                | {"median_ratio_to_best": float(np.median(s["ratios"])) if s["ratios"] else np.nan}
                for s in stats.values() if s["datasets"]]

    def to_dict(self) -> dict[str, Any]:
        return to_jsonable({"level": self.level, "rows": self.rows(), "wins": self.wins(),
                            "datasets": [{"dataset": b.split.dataset, "holdout": b.split.how, "unit": b.split.unit,
                                          "n_train": len(b.split.train), "n_heldout": len(b.split.test),
                                          "best": b.best, "tied_with_best": b.tied_with_best()}
                                         for b in self.boards]})

    def summary(self) -> str:
        pct = round(self.level * 100)
        lines = []
        for b in self.boards:
            lines += ["", b.split.describe(),
                      f"  {'law / estimator':<30}{'RMSLE':>8}{'cover':>7}{'N_opt err':>10}{'a (fit)':>9}{'a (all)':>9}"
                      f"   vs best ({pct}% paired interval)"]
            for r in self.rows():
                if r["dataset"] != b.split.dataset:
                    continue
                vs = r["vs_best"]
                text = r["verdict"] if vs is None else (f"{vs['diff']:+.4f} [{vs['ci'][0]:+.4f}, {vs['ci'][1]:+.4f}] "
                                                         f"{r['verdict']}")
                lines.append(f"  {entry_key(r):<30}{_f(r['rmsle'], 4):>8}{_f(r['coverage'], 2):>7}"
                             f"{_f(r['nopt_error'], 3, True):>10}{_f(r['a_train'], 3):>9}{_f(r['a_full'], 3):>9}"
                             f"   {text}")
        lines += ["", "coverage: share of held-out runs inside the new-run interval L*exp(+-z sigma) "
                      "(residual noise only); N_opt err: log(predicted / the held-out budget's own optimum)",
                  "", f"{'law / estimator':<30}{'datasets':>9}{'best':>6}{'tied':>6}{'RMSLE / best (median)':>23}"]
        for w in self.wins():
            lines.append(f"{w['entry']:<30}{w['datasets']:>9}{w['alone_best']:>6}{w['tied_best']:>6}"
                         f"{_f(w['median_ratio_to_best'], 2):>23}")
        return "\n".join(lines[1:])


def _f(x, digits: int, sign: bool = False) -> str:
    if x is None or not np.isfinite(x):
        return "-"
    return f"{x:+.{digits}f}" if sign else f"{x:.{digits}f}"


def run(splits, *, n_boot: int = 2000, seed: int = 0, level: float = 0.95, fit_boot: int = 0,
        progress: bool = False) -> Scoreboard:
    """Every split's board (``splits``: protocol.Split objects); ``fit_boot``: Approach 3's row bootstrap."""
    it = list(splits)
    if progress:
        from tqdm.auto import tqdm

        it = tqdm(it, desc="datasets", leave=False)
    return Scoreboard(tuple(score_split(s, n_boot=n_boot, seed=seed, level=level, fit_boot=fit_boot) for s in it),
                      level)


def score_runs(table, holdout, *, n: str = "N", d: str | None = "D", c: str | None = None, loss: str = "loss",
               u: str | None = None, unit: str | None = None, where=None, n_boot: int = 2000, seed: int = 0,
               level: float = 0.95, name: str = "runs") -> Scoreboard:
    """A user's runs on the scoreboard (``scalinglab scoreboard``): ``protocol.from_table``'s split, every
    applicable entry, the paired verdict."""
    from scalinglab.benchmark.protocol import from_table

    split = from_table(table, holdout, n=n, d=d, c=c, loss=loss, u=u, unit=unit, where=where, name=name)
    return Scoreboard((score_split(split, n_boot=n_boot, seed=seed, level=level),), level)


def figure(board: Scoreboard):
    """What ``scalinglab scoreboard --plot`` draws: each dataset's held-out RMSLE per law × estimator, log scale,
    with the best and the entries tied with it filled, the others hollow (matplotlib imported here only)."""
    from matplotlib.figure import Figure

    rows = [r for r in board.rows() if np.isfinite(r["rmsle"])]
    entries = list(dict.fromkeys(entry_key(r) for r in rows))
    names = [b.split.dataset for b in board.boards]
    legend_in = 0.3 + 0.18 * len(entries)    # two labels per entry, two columns: one row of legend each
    height = 2.0 + legend_in + 0.15 * len(names) * max(1, len(entries))
    fig = Figure(figsize=(9, height))
    ax = fig.add_subplot()
    for k, e in enumerate(entries):
        mine = [r for r in rows if entry_key(r) == e]
        y = np.array([names.index(r["dataset"]) for r in mine]) + 0.8 * (k / max(len(entries) - 1, 1) - 0.5)
        x = np.array([r["rmsle"] for r in mine])
        top = np.array([r["verdict"] in ("best", "tied for best") for r in mine])
        colour = f"C{k}"
        ax.scatter(x[top], y[top], color=colour, label=f"{e}: best or tied")
        ax.scatter(x[~top], y[~top], facecolor="white", edgecolor=colour, label=f"{e}: worse or not ranked")
    ax.set_xscale("log")
    ax.set_yticks(range(len(names)), names)
    ax.invert_yaxis()
    ax.set_xlabel("held-out RMSLE (log scale)")
    fig.legend(*ax.get_legend_handles_labels(), fontsize=7, loc="lower center", ncol=2, frameon=False)
    ax.set_title(f"filled: best, or tied with it (paired {board.level:.0%} interval holds 0)", fontsize=9)
    fig.tight_layout(rect=(0, legend_in / height, 1, 1))
    return fig
