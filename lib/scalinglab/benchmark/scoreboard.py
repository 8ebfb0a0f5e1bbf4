"""The scoreboard: every applicable entry fitted to a split's training runs and scored on the runs it held out
(``benchmark.protocol``), with verdicts only where the data can carry them.

Entries (``benchmark.entries``): Chinchilla's law by Approach 3 and by variable projection; Kaplan's, Gadre
et al.'s and (where runs carry unique tokens) the data-constrained form by the law engine; Approach 2 (parabola,
spline) on isoFLOP sets, which predicts N_opt only; Approach 1 where curves exist, scored by its exponent; and
the naive baselines (a power law in C; on isoFLOP sets also the last budget's optimum carried forward).

Scores per entry: held-out RMSLE; each interval's coverage of the held-out *units* (``benchmark.calibrated``:
calibrated forward on the training units, parameter-only from the bootstrap, noise-only); on isoFLOP sets the
held-out budget's N_opt and L_min against its reference optimum (a cubic through its runs, which no entry uses),
each with its own calibrated interval; and the exponent a fitted without and with the held-out runs.

Verdicts count independent units, never runs: on one split an entry is ranked only where the held-out runs
hold at least ``MIN_UNITS`` units (a paired bootstrap over units: the best, those tied with it, the worse), else
"not ranked". A one-budget hold-out is one unit, so no isoFLOP split ranks anything alone; rankings across
datasets (``benchmark.ranking``) count independent datasets, at least ``ranking.MIN_DATASETS`` of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

import numpy as np

from scalinglab.benchmark.calibrated import entry_intervals
from scalinglab.benchmark.entries import (
    A1_ENTRY,
    A2_ENTRIES,
    BASELINES,
    LAST_OPTIMUM,
    LOSS_ENTRIES,
    POWER_LAW,
    budget_reference,
    exponent,
    fit_entry,
)
from scalinglab.benchmark.entries import key as entry_name
from scalinglab.benchmark.protocol import Split
from scalinglab.errors import UserError
from scalinglab.serialization import to_jsonable

# A paired bootstrap over fewer units is a coin flip: its 2.5% and 97.5% points are single-unit differences.
MIN_UNITS = 5


def entry_key(row: dict[str, Any]) -> str:
    return entry_name(row["law"], row["estimator"])


def entries_for(split: Split) -> list[tuple[str, str]]:
    out = [e for e in LOSS_ENTRIES if e[0] != "data_constrained" or "u" in split.table]
    out += list(A2_ENTRIES) if split.kind == "isoflop" else []
    out += [A1_ENTRY] if split.curves is not None else []
    return out + (list(BASELINES) if split.kind == "isoflop" else [POWER_LAW])


def _nan_row() -> dict[str, Any]:
    return {"rmsle": np.nan, "coverage_noise": np.nan, "n_inside": 0, "coverage_calibrated": np.nan,
            "coverage_param_only": np.nan, "nopt_error": np.nan, "lmin_error": np.nan, "nopt_inside": None,
            "lmin_inside": None, "a_train": np.nan, "a_full": np.nan, "intervals": {}}


def _envelope_row(split: Split) -> dict[str, Any]:
    """Approach 1's exponent from the training curves of the models the split keeps, and of all of them."""
    from scalinglab.fitting.frontier.envelope import EnvelopeOptions, fit_envelope

    held = split.curves["n"].to_numpy(float) >= float(split.test["n"].min())
    opts = EnvelopeOptions(n_boot=0)
    fit, full = fit_envelope(split.curves[~held], opts), fit_envelope(split.curves, opts)
    return {"status": fit.status, "a_train": fit.exponent, "a_full": full.exponent}


def reference_n_opt(split: Split) -> float:
    """The held-out budget's reference optimum (``entries.budget_reference``: a cubic in log N; NaN at an edge)."""
    return float(budget_reference(split.test).iloc[-1]["n_ref"])


def score_entry(split: Split, law: str, estimator: str, level: float = 0.95, fit_boot: int = 0,
                seed: int = 0) -> tuple[dict[str, Any], np.ndarray]:
    """One entry's row and its held-out log errors (empty where it predicts no loss); ``fit_boot``: the row
    bootstrap behind the parameter-only interval (Approach 3 and the law engine)."""
    tr, te = split.train, split.test
    row = {"dataset": split.dataset, "group": split.independent, "law": law, "estimator": estimator,
           "n_train": len(tr), "n_heldout": len(te), "n_units": split.n_units_heldout, "holdout": split.how,
           "unit": split.unit} | _nan_row()
    if law == "approach1":
        return row | _envelope_row(split), np.array([])
    iso = split.kind == "isoflop"
    n_range = (float(split.table["n"].min()), float(split.table["n"].max()))
    try:
        held = fit_entry(law, estimator, tr, iso=iso, n_range=n_range, n_boot=fit_boot, seed=seed)
    except UserError as exc:
        return row | {"status": f"refused: {exc}"}, np.array([])
    row["status"] = held.status
    if held.loss is None and held.n_opt is None:   # Approach 2 without a usable line
        return row, np.array([])
    err = np.array([])
    sigma = None
    if held.loss is not None:
        with np.errstate(all="ignore"):
            r_train = np.log(held.loss(tr)) - np.log(tr["loss"].to_numpy(float))
            err = np.log(held.loss(te)) - np.log(te["loss"].to_numpy(float))
        sigma = float(np.sqrt(np.sum(r_train ** 2) / max(len(tr) - held.k, 1)))
        z = NormalDist().inv_cdf((1 + level) / 2)
        inside = np.abs(err) <= z * sigma
        row.update(rmsle=float(np.sqrt(np.mean(err ** 2))), coverage_noise=float(np.mean(inside)),
                   n_inside=int(inside.sum()), sigma=sigma)
    iv = entry_intervals(split, law, estimator, held, level, sigma)
    row["intervals"] = iv
    for k, name in (("calibrated", "coverage_calibrated"), ("parameter_only", "coverage_param_only")):
        if iv.get(k):
            row[name] = iv[k]["coverage"]
    for what, name in (("n_opt", "nopt"), ("l_min", "lmin")):
        if what in iv:
            row[f"{name}_error"] = float(np.log(iv[what]["predicted"] / iv[what]["reference"]))
            row[f"{name}_inside"] = iv[what]["inside"]
    if held.n_opt is not None and law != "baseline":
        full = fit_entry(law, estimator, split.table, iso=iso, n_range=n_range)
        row.update(a_train=exponent(held, tr["c"]), a_full=exponent(full, split.table["c"]))
    return row, err


@dataclass(frozen=True)
class DatasetBoard:
    """One dataset's rows and, where its held-out runs hold ``MIN_UNITS`` units or more, the best entry by
    held-out RMSLE and each other entry's paired difference from it."""

    split: Split
    rows: tuple[dict[str, Any], ...]
    best: str | None
    differences: dict[str, dict[str, Any]]

    @property
    def ranked(self) -> bool:
        return self.split.n_units_heldout >= MIN_UNITS

    def tied_with_best(self) -> list[str]:
        """The best entry and every entry whose paired interval on the difference holds 0."""
        if self.best is None:
            return []
        return [self.best] + [k for k, d in self.differences.items() if d["ci"][0] <= 0]

    def verdict(self, k: str) -> str:
        if not self.ranked:
            return f"not ranked ({self.split.n_units_heldout} {self.split.unit} held out, {MIN_UNITS} needed)"
        tied = self.tied_with_best()
        if k == self.best:
            return "best" if len(tied) == 1 else "tied for best"
        if k in tied:
            return "tied for best"
        return "worse" if k in self.differences else "not ranked (no held-out loss)"


def score_split(split: Split, *, entries=None, n_boot: int = 2000, seed: int = 0, level: float = 0.95,
                fit_boot: int = 0) -> DatasetBoard:
    """Every applicable entry on one split, and the paired verdict on its RMSLEs where the held-out runs hold
    at least MIN_UNITS independent units."""
    from scalinglab.fitting.laws.compare import paired_rmsle_differences

    rows, errors = [], {}
    for law, est in entries or entries_for(split):
        # refits on the smallest units can be degenerate (0/0 in a solver): they are scored or counted as failed,
        # and numpy's warnings about them say nothing the row does not
        with np.errstate(all="ignore"):
            row, err = score_entry(split, law, est, level, fit_boot, seed)
        rows.append(row)
        if err.size and np.all(np.isfinite(err)):
            errors[entry_key(row)] = err
    if split.n_units_heldout < MIN_UNITS:
        errors = {}
    best = min(errors, key=lambda k: float(np.mean(errors[k] ** 2))) if errors else None
    diffs = {}
    if best is not None and len(errors) > 1:
        diffs = paired_rmsle_differences(errors, split.test["unit"].to_numpy(), best, n_boot, seed, level)
    return DatasetBoard(split, tuple(rows), best, diffs)


@dataclass(frozen=True)
class Scoreboard:
    """Every dataset's board, the rankings across independent datasets and the coverage over independent
    held-out units (``benchmark.ranking``)."""

    boards: tuple[DatasetBoard, ...]
    level: float = 0.95
    extra: dict[str, Any] = field(default_factory=dict)

    def rows(self) -> list[dict[str, Any]]:
        out = []
        for b in self.boards:
            for r in b.rows:
                k = entry_key(r)
                d = b.differences.get(k)
                out.append(r | {"vs_best": None if d is None else {"diff": d["diff"], "ci": d["ci"]},
                                "verdict": b.verdict(k)})
        return out

    def ranking(self) -> dict[str, Any]:
        from scalinglab.benchmark.ranking import rankings

        return rankings(self.rows(), self.level)

    def coverage_overall(self) -> dict[str, Any]:
        from scalinglab.benchmark.ranking import coverage_overall

        return coverage_overall(self.rows())

    def calibration(self) -> dict[str, Any]:
        """Per dataset: its independent group, held-out units, and each entry's coverage by each interval."""
        out = {}
        for b in self.boards:
            out[b.split.dataset] = {
                "group": b.split.independent, "unit": b.split.unit, "n_units": b.split.n_units_heldout,
                "entries": {entry_key(r): {k: r["intervals"].get(k) for k in
                                           ("calibrated", "parameter_only", "noise_only", "calibration", "n_opt",
                                            "l_min")}
                            for r in b.rows if r["intervals"]}}
        return to_jsonable(out)

    def to_dict(self) -> dict[str, Any]:
        rows = [{k: v for k, v in r.items() if k != "intervals"} for r in self.rows()]
        return to_jsonable({"level": self.level, "min_units": MIN_UNITS, "rows": rows, "ranking": self.ranking(),
                            "coverage_overall": self.coverage_overall(), "calibration": self.calibration(),
                            "datasets": [{"dataset": b.split.dataset, "group": b.split.independent,
                                          "holdout": b.split.how, "unit": b.split.unit,
                                          "n_units": b.split.n_units_heldout, "n_train": len(b.split.train),
                                          "n_heldout": len(b.split.test), "ranked": b.ranked, "best": b.best,
                                          "tied_with_best": b.tied_with_best()} for b in self.boards]})

    def summary(self) -> str:
        from scalinglab.benchmark.ranking import summary_lines

        pct = round(self.level * 100)
        lines = []
        for b in self.boards:
            lines += ["", b.split.describe(),
                      f"  {'law / estimator':<28}{'RMSLE':>8}{'calib':>7}{'param':>7}{'noise':>7}{'N_opt err':>10}"
                      f"{'L_min err':>10}   verdict (paired {pct}% interval over {b.split.unit}s)"]
            for r in self.rows():
                if r["dataset"] != b.split.dataset:
                    continue
                vs = r["vs_best"]
                text = r["verdict"] if vs is None else (f"{vs['diff']:+.4f} [{vs['ci'][0]:+.4f}, {vs['ci'][1]:+.4f}] "
                                                         f"{r['verdict']}")
                lines.append(f"  {entry_key(r):<28}{_f(r['rmsle'], 4):>8}{_f(r['coverage_calibrated'], 2):>7}"
                             f"{_f(r['coverage_param_only'], 2):>7}{_f(r['coverage_noise'], 2):>7}"
                             f"{_f(r['nopt_error'], 3, True):>10}{_f(r['lmin_error'], 3, True):>10}   {text}")
        lines += ["", f"calib / param / noise: share of held-out {pct}% intervals' units inside (calibrated forward on "
                      "the training units; parameter-only, rows resampled; noise-only, residual sd, share of runs); "
                      "N_opt, L_min err: log(predicted / the held-out budget's reference optimum, a cubic in log N)"]
        lines += summary_lines(self.ranking(), self.coverage_overall(), self.level)
        return "\n".join(lines[1:])


def _f(x, digits: int, sign: bool = False) -> str:
    if x is None or not np.isfinite(x):
        return "-"
    return f"{x:+.{digits}f}" if sign else f"{x:.{digits}f}"


def run(splits, *, n_boot: int = 2000, seed: int = 0, level: float = 0.95, fit_boot: int = 0,
        progress: bool = False) -> Scoreboard:
    """Every split's board (``splits``: protocol.Split objects); ``fit_boot``: the row bootstrap behind the
    parameter-only intervals."""
    it = list(splits)
    if progress:
        from tqdm.auto import tqdm

        it = tqdm(it, desc="datasets", leave=False)
    return Scoreboard(tuple(score_split(s, n_boot=n_boot, seed=seed, level=level, fit_boot=fit_boot) for s in it),
                      level)


def score_runs(table, holdout, *, n: str = "N", d: str | None = "D", c: str | None = None, loss: str = "loss",
               u: str | None = None, unit: str | None = None, where=None, n_boot: int = 2000, seed: int = 0,
               level: float = 0.95, fit_boot: int = 0, name: str = "runs") -> Scoreboard:
    """A user's runs on the scoreboard (``scalinglab scoreboard``): ``protocol.from_table``'s split, every
    applicable entry, the verdicts its units can carry."""
    from scalinglab.benchmark.protocol import from_table

    split = from_table(table, holdout, n=n, d=d, c=c, loss=loss, u=u, unit=unit, where=where, name=name)
    return Scoreboard((score_split(split, n_boot=n_boot, seed=seed, level=level, fit_boot=fit_boot),), level)


def figure(board: Scoreboard):
    """What ``scalinglab scoreboard --plot`` draws: each dataset's held-out RMSLE per entry, log scale, with
    the best and the entries tied with it filled, the others (worse or not ranked) hollow (matplotlib imported
    here only)."""
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
    ax.set_title(f"filled: best, or tied with it (paired {board.level:.0%} interval over >= {MIN_UNITS} units "
                 "holds 0)", fontsize=9)
    fig.tight_layout(rect=(0, legend_in / height, 1, 1))
    return fig


__all__ = ["MIN_UNITS", "LOSS_ENTRIES", "A2_ENTRIES", "A1_ENTRY", "BASELINES", "POWER_LAW", "LAST_OPTIMUM",
           "DatasetBoard", "Scoreboard", "entries_for", "entry_key", "figure", "reference_n_opt", "run",
           "score_entry", "score_runs", "score_split"]
