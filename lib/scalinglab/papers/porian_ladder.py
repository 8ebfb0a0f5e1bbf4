"""Porian et al.'s ladder on our own runs: a of N* ∝ C^a per step, each step's shift, and theirs.

The steps (``STEPS``) go from Kaplan's setup to Hoffmann's one change at a time, each a sweep database
(``scalinglab sweep --preset ladder<k>``); step 1 trains nothing: it re-reads step 0's runs with the
head counted in N and C, at the points where 6·N_standard·D meets step 2's budgets (``standard_budgets``
in each run's spec).

Before fitting, each step's points are averaged over seeds and those near the uniform-prediction loss
are dropped (``UNIFORM_SHARE``: a model that has barely left ln V says nothing about its size); a budget
is used when at least ``MIN_SIZES`` sizes remain. Each a has a block-bootstrap interval (whole shapes
resampled: in steps 0-2 one run gives points at several budgets), and each shift Δa an interval from
the two steps' draws, paired by shape for step 1, which re-reads step 0's runs, independent otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from scalinglab.accounting.decoder import step_at
from scalinglab.errors import UserError, printable
from scalinglab.fitting.frontier.block_bootstrap import BlockBootstrap, block_bootstrap, difference
from scalinglab.serialization import to_jsonable
from scalinglab.sweeps import NON_EMBEDDING_PRESETS, SweepStore

# step, database (preset), Porian et al.'s step (papers.porian.STEPS), what changes
STEPS = (
    (0, "ladder0", "kaplan_reproduction", "Kaplan's setup: non-embedding N, long warmup, constant LR"),
    (1, "ladder0", "plus_head", "+ head in N and C (step 0's runs, standard count)"),
    (2, "ladder2", "plus_short_warmup", "+ short warmup (≈ N tokens)"),
    (3, "ladder3", "plus_cosine", "+ cosine decay matched to each budget"),
    (4, "ladder4", "tuned_constant_lr", "+ per-size lr, batch, β2 (cosine kept)"),
)
UNIFORM_SHARE = 0.95   # drop points with loss ≥ 95% of ln V, the loss of predicting every token uniformly
MIN_SIZES = 5          # a budget needs this many sizes left after the drop
N_BOOT = 1000


def _read(db: Path, standard: bool) -> tuple[pd.DataFrame, int]:
    """Seed-mean isoFLOP points (shape, n, flops, loss, seeds) of a finished-run database, and its vocabulary.
    ``standard``: step 1's reading of a ladder0 database (standard N, its standard budgets)."""
    store = SweepStore(db)
    meta = store.meta()
    vocab = meta.get("vocab_size")
    if vocab is None:
        raise UserError(f"{db}: not a sweep database (its sweep table has no vocab_size)")
    if meta.get("preset") != db.stem:   # another sweep renamed ladder2.db printed a full table, exit 0
        raise UserError(f"{db}: holds the {printable(meta.get('preset'), 40)} sweep, not {db.stem}; the ladder "
                        f"reads each step from its own preset's database")
    runs = [(r["run_id"], r["width"], r["depth"], r["n_non_embedding"], r["n_standard"], r["spec"])
            for r in store.runs(finished_only=True)]
    curves = store.dense_curves()[["run_id", "step", "tokens", "budget", "loss"]]
    rows = []
    for run_id, width, depth, n_ne, n_std, spec in runs:
        curve = curves[curves["run_id"] == run_id]
        shape = f"w{width}-d{depth}"
        if standard:
            per_step = spec["train"]["batch_size"] * spec["model"]["seq_len"]
            for c in spec.get("standard_budgets", ()):
                at = curve[curve["step"] == step_at(math.ceil(c / (6 * n_std)), per_step)]
                if len(at):
                    rows.append((shape, run_id, float(n_std), float(c), float(at["loss"].iloc[0])))
        else:
            n = n_ne if spec["preset"] in NON_EMBEDDING_PRESETS else n_std
            for c, loss in curve.loc[curve["budget"].notna(), ["budget", "loss"]].itertuples(index=False):
                rows.append((shape, run_id, float(n), float(c), float(loss)))
    pts = pd.DataFrame(rows, columns=["shape", "run_id", "n", "flops", "loss"])
    pts = (pts.groupby(["shape", "n", "flops"], as_index=False)
           .agg(loss=("loss", "mean"), seeds=("run_id", "nunique")))
    return pts, int(vocab)


def usable_points(pts: pd.DataFrame, vocab: int) -> tuple[pd.DataFrame, dict]:
    """The points a fit may use, and what was dropped: near-uniform losses, then budgets with too few sizes."""
    ceiling = UNIFORM_SHARE * math.log(vocab)
    near_uniform = pts["loss"] >= ceiling
    kept = pts[~near_uniform]
    sizes = kept.groupby("flops")["shape"].nunique()
    thin = sorted(sizes[sizes < MIN_SIZES].index)
    kept = kept[~kept["flops"].isin(thin)]
    return kept, dict(loss_ceiling=ceiling, near_uniform=int(near_uniform.sum()), budgets_too_few_sizes=thin)


@dataclass(frozen=True)
class LadderStep:
    step: int
    preset: str
    porian_step: str
    change: str
    fit: BlockBootstrap | None
    dropped: dict
    n_points: int
    seeds: int                                 # the fewest seeds behind a point (seed means are fitted)
    delta: float | None = None                 # a − a of the previous step
    delta_ci: tuple[float, float] | None = None
    paired: bool = False
    reason: str | None = None                  # why there is no fit
    seeds_max: int = 0                         # the most seeds behind a point

    @property
    def has_fit(self) -> bool:
        return self.fit is not None and bool(np.isfinite(self.fit.a))

    def to_dict(self) -> dict:
        return to_jsonable(dict(step=self.step, preset=self.preset, porian_step=self.porian_step, change=self.change,
                    a=None if self.fit is None else self.fit.to_dict(), dropped=self.dropped,
                    n_points=self.n_points, seeds=self.seeds, seeds_max=self.seeds_max, reason=self.reason,
                    delta=None if self.delta is None else dict(d=self.delta, ci=list(self.delta_ci),
                                                               paired=self.paired)))


def _ci(ci, sign: bool = False) -> str:
    f = "{:+.3f}" if sign else "{:.3f}"
    return "" if ci is None or not np.all(np.isfinite(ci)) else f"[{f.format(ci[0])}, {f.format(ci[1])}]"


@dataclass(frozen=True)
class LadderReport:
    steps: tuple[LadderStep, ...]
    porian: pd.DataFrame = field(repr=False)   # their a per (dataset, step), papers.porian.published_exponents
    level: float = 0.95

    def porian_delta(self, dataset: str, step: str) -> float | None:
        order = [s for _, _, s, _ in STEPS]
        i = order.index(step)
        if i == 0:
            return None
        a = self.porian.set_index(["dataset", "step"])["a"]
        return float(a[dataset, step] - a[dataset, order[i - 1]])

    def total(self) -> dict:
        """a of the first step minus a of the last (how far the ladder lowers a), with an interval from the
        two fits' draws (independent), and Porian et al.'s fall per dataset; None where an end has no fit."""
        first, last = self.steps[0], self.steps[-1]
        a = self.porian.set_index(["dataset", "step"])["a"]
        out = dict(first=first.step, last=last.step, a_first_minus_last=None, ci=None,
                   porian={ds: float(a[ds, first.porian_step] - a[ds, last.porian_step]) for ds in ("rw", "owt2")})
        if first.has_fit and last.has_fit:
            d, ci = _delta(last.fit, first.fit, self.level)
            out.update(a_first_minus_last=d, ci=list(ci))
        return out

    def largest_shift(self) -> dict:
        """Which change moves a most: the step with the largest |Δa| on our runs (None without shifts), whether
        its interval excludes 0, and Porian et al.'s largest step per dataset."""
        ours = [s for s in self.steps if s.delta is not None and np.isfinite(s.delta)]
        theirs = {}
        for ds in ("rw", "owt2"):
            deltas = [(abs(d), s.step, d) for s in self.steps
                      if (d := self.porian_delta(ds, s.porian_step)) is not None]
            _, step, d = max(deltas)
            theirs[ds] = dict(step=step, delta=d)
        if not ours:
            return dict(step=None, delta=None, ci=None, excludes_zero=None, porian=theirs)
        top = max(ours, key=lambda s: abs(s.delta))
        ci = list(top.delta_ci)
        return dict(step=top.step, delta=top.delta, ci=ci, excludes_zero=not ci[0] <= 0 <= ci[1], porian=theirs,
                    agrees=all(t["step"] == top.step for t in theirs.values()))

    def to_dict(self) -> dict:
        out = []
        a = self.porian.set_index(["dataset", "step"])["a"]
        for s in self.steps:
            d = s.to_dict()
            d["porian"] = {ds: dict(a=float(a[ds, s.porian_step]), delta=self.porian_delta(ds, s.porian_step))
                           for ds in ("rw", "owt2")}
            out.append(d)
        return to_jsonable(dict(steps=out, total=self.total(), largest_shift=self.largest_shift(), level=self.level,
                    rule=dict(uniform_share=UNIFORM_SHARE, min_sizes=MIN_SIZES)))

    def table(self) -> pd.DataFrame:
        """One row per step, as text: a and Δa with their intervals, Porian et al.'s a (Δa) per dataset,
        seeds per point, and the change (or why there is no fit)."""
        pct = f"{self.level:.0%}"
        a = self.porian.set_index(["dataset", "step"])["a"]
        rows = []
        for s in self.steps:
            theirs = {}
            for ds, name in (("rw", "RW"), ("owt2", "OWT2")):
                dp = self.porian_delta(ds, s.porian_step)
                theirs[f"Porian {name} a (Δa)"] = (f"{a[ds, s.porian_step]:.3f}"
                                                   + ("" if dp is None else f" ({dp:+.3f})"))
            fit = s.has_fit
            rows.append({"step": s.step,
                         "a": f"{s.fit.a:.3f}" if fit else "n/a",
                         f"a {pct}": _ci(s.fit.ci) if fit else "",
                         "Δa": "" if s.delta is None else f"{s.delta:+.3f}",
                         f"Δa {pct}": _ci(s.delta_ci, sign=True),
                         **theirs,
                         "seeds": "" if not s.seeds_max else (f"{s.seeds}" if s.seeds == s.seeds_max
                                                              else f"{s.seeds}-{s.seeds_max}"),
                         "dropped": f"{s.fit.n_dropped}/{s.fit.n_boot}" if fit else "",
                         "holds": (f"{s.fit.level_bounds[0]:.1%}-{s.fit.level_bounds[1]:.1%}"
                                   if fit and s.fit.n_dropped else ""),
                         "change": s.change if fit else f"{s.change} [{s.reason or 'no fit'}]"})
        return pd.DataFrame(rows)

    def summary(self) -> str:
        full = self.table()
        t = full.drop(columns="change")     # the changes go below the table, which stays under 120 columns
        widths = {c: max(len(c), *(len(str(v)) for v in t[c])) for c in t.columns}

        def line(values) -> str:
            return "  ".join(str(v).rjust(widths[c]) for c, v in zip(t.columns, values)).rstrip()

        lines = [f"Porian et al.'s ladder on our runs: seed means; points with loss ≥ {UNIFORM_SHARE:.0%} of ln V "
                 f"dropped;", f"budgets with < {MIN_SIZES} sizes left out; {self.level:.0%} block-bootstrap "
                 "intervals over shapes", line(t.columns)]
        lines += [line(r) for r in t.itertuples(index=False)]
        tot = self.total()
        if tot["a_first_minus_last"] is not None:
            lines.append(f"a{tot['first']} − a{tot['last']} = {tot['a_first_minus_last']:+.3f} "
                         f"{_ci(tot['ci'], sign=True)}; Porian et al.: RW {tot['porian']['rw']:+.3f}, "
                         f"OWT2 {tot['porian']['owt2']:+.3f}")
        lines.append("dropped: resamples with < 2 interior budgets, not in the interval; holds: the share of all "
                     "resamples the interval holds")
        lines.append("points dropped per step (near-uniform / budgets with too few sizes): " + ", ".join(
            f"{s.step}: {s.dropped.get('near_uniform', 0)}/{len(s.dropped.get('budgets_too_few_sizes', []))}"
            for s in self.steps))
        lines += [f"  step {s.step}: {c}" for s, c in zip(self.steps, full["change"])]
        return "\n".join(lines)


def _delta(prev: BlockBootstrap, cur: BlockBootstrap, level: float) -> tuple[float, tuple[float, float]]:
    """The shift and a percentile interval of the draws' differences, resample by resample (paired when
    both fits drew the same shapes, independent otherwise); resamples dropped by either fit are left out."""
    d = difference(cur, prev, level)
    return d["difference"], tuple(d["ci"])


def ladder_report(folder: Path | str, *, method: str = "spline", n_boot: int = N_BOOT, seed: int = 0,
                  level: float = 0.95, porian: pd.DataFrame | None = None) -> LadderReport:
    """The ladder's table from ``folder/ladder{0,2,3,4}.db``; a missing database gives its steps no fit.

    Step 1 is paired with step 0 (the same runs, resampled by the same shape draws: both fits use ``seed``
    and the same shapes), the other shifts take independent draws."""
    from scalinglab.papers import porian as porian_mod

    folder = Path(folder)
    if not any((folder / f"{preset}.db").is_file() for _, preset, _, _ in STEPS):
        # a folder with no databases printed a full table of "no fit" rows, exit 0
        raise UserError(f"{folder}: holds none of {', '.join(sorted({p for _, p, _, _ in STEPS}))}.db; "
                        "give the folder the ladder sweeps were written to")
    # Every database is read (and refused if it is not a ladder step) before the published table is fetched:
    # a wrong folder is the user's error to hear first, even offline.
    read = {step: _read(folder / f"{preset}.db", standard=(step == 1))
            for step, preset, _, _ in STEPS if (folder / f"{preset}.db").is_file()}
    if porian is None:
        porian = porian_mod.published_exponents()
    out, prev = [], None
    universe0 = None
    for step, preset, p_step, change in STEPS:
        db = folder / f"{preset}.db"
        if step not in read:
            out.append(LadderStep(step, preset, p_step, change, None, {}, 0, 0, reason=f"no {db.name}"))
            prev = None
            continue
        pts, vocab = read[step]
        kept, dropped = usable_points(pts, vocab)
        seeds = int(pts["seeds"].min()) if len(pts) else 0
        seeds_max = int(pts["seeds"].max()) if len(pts) else 0
        if kept["flops"].nunique() < 2:
            out.append(LadderStep(step, preset, p_step, change, None, dropped, len(kept), seeds,
                                  reason="fewer than 2 usable budgets", seeds_max=seeds_max))
            prev = None
            continue
        # step 1 uses step 0's seed so its shape draws pair with step 0's; the others draw independently
        if step == 0:
            universe0 = sorted(pts["shape"].unique())
        fit = block_bootstrap(kept, method=method, n_boot=n_boot, seed=seed if step <= 1 else seed + step,
                              level=level, universe=universe0 if step <= 1 else None)
        delta = delta_ci = None
        if prev is not None and np.isfinite(fit.a) and np.isfinite(prev.a):
            delta, delta_ci = _delta(prev, fit, level)
        out.append(LadderStep(step, preset, p_step, change, fit, dropped, len(kept), seeds, delta, delta_ci,
                              paired=step == 1 and universe0 is not None, seeds_max=seeds_max))
        prev = fit
    return LadderReport(tuple(out), porian, level)


def compute_used(folder: Path | str) -> dict[str, dict]:
    """What each ladder database in ``folder`` cost: {preset: {runs, seconds, largest}}, its finished runs, their
    seconds of training (each ran on one CPU thread, so also core-seconds; data/sweeps/ladder/PROVENANCE.md) and
    the most parameters (all of them) of one model. A missing database is left out."""
    out = {}
    for preset in dict.fromkeys(p for _, p, _, _ in STEPS):
        db = Path(folder) / f"{preset}.db"
        if db.is_file():
            out[preset] = SweepStore(db).usage()
    return out
