"""The benchmark's protocol: every dataset as one table of runs, split by scale into runs to fit and runs to
predict.

A split holds out the runs a law is meant to extrapolate to: the largest compute budget (isoFLOP sets), the
largest model sizes (sets of runs at several N), or the dataset's own published split (SLDBench's tasks).
Each split also names its *independent unit*, what shares one misfit and so counts once: the budget on isoFLOP
data (every run of one budget shares its misfit, so a one-budget hold-out is one unit), the model size where one
size is read at several token counts (its runs, checkpoints or cooldown branches share it), the model on
Gemstones. ``scale`` names the column that orders the units (compute for budgets, N for sizes): the calibration
predicts each unit from those below it. ``group`` names the independent *dataset*: two digitisations of one
figure (Epoch's and apple's of Hoffmann et al.'s) or two readings of one set of runs (Llama 3's losses and
their exponential) share a group and count once wherever datasets are counted.

The standard table has columns ``n`` (parameters), ``d`` (tokens), ``c`` (compute: the nominal isoFLOP budget,
else 6ND), ``loss``, ``u`` (unique tokens, where the data are repeated), ``unit`` and ``held`` (True: held out).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from scalinglab.errors import OptionError, UserError

HOLDOUTS = ("largest-budget", "largest-n")
OPEN_ATHENA = "isoflops-harmonized"
# Datasets that are one set of runs read twice: (dataset, group they count as).
TWINS = {"epochai_chinchilla__massivetext__chinchilla": "chinchilla figure (Epoch's and apple's readings)",
         "ml_scalefit__massivetext__chinchilla": "chinchilla figure (Epoch's and apple's readings)",
         "llama_3__exp_loss": "llama 3 (two readings)", "llama_3__raw_loss": "llama 3 (two readings)"}
# Gemstones' largest models held out: the top fifth of its 20 sizes, so that the paired bootstrap over model
# sizes has more than one unit to draw.
LARGEST_SHARE = 0.2


@dataclass(frozen=True)
class Split:
    """One dataset under the protocol: ``kind`` "isoflop" (runs on fixed budgets) or "runs"; ``how`` says
    which runs are held out; ``unit`` the independent unit (the table's ``unit`` column labels each row's);
    ``scale`` the column whose largest value in a unit orders the units; ``group`` the independent dataset it
    belongs to (its own name unless it is a twin, ``TWINS``)."""

    dataset: str
    table: pd.DataFrame
    how: str
    unit: str
    kind: str = "runs"
    source: str = ""
    curves: pd.DataFrame | None = None   # training curves of the same models (run, n, tokens, flops, loss), if any
    scale: str = "c"
    group: str = ""

    @property
    def independent(self) -> str:
        return self.group or self.dataset

    @property
    def n_units_heldout(self) -> int:
        return int(self.test["unit"].nunique())

    @property
    def train(self) -> pd.DataFrame:
        return self.table[~self.table["held"]]

    @property
    def test(self) -> pd.DataFrame:
        return self.table[self.table["held"]]

    def describe(self) -> str:
        twin = f"; counted once with its twin as {self.group!r}" if self.group else ""
        return (f"{self.dataset}: {len(self.train)} runs fitted, {len(self.test)} held out ({self.how}); "
                f"independent unit: {self.unit}, {self.n_units_heldout} held out{twin}")


def holdout_mask(table: pd.DataFrame, how, *, n_col: str = "n", c_col: str = "c",
                 share: float = LARGEST_SHARE) -> np.ndarray:
    """Which rows ``how`` holds out: ``largest-budget`` (every run at the largest value of ``c_col``),
    ``largest-n`` (the runs at the largest ``share`` of the distinct sizes, at least one size), or row
    conditions ``COL OP VALUE`` (a list: their union, as repeated ``--holdout`` flags read them)."""
    if how == "largest-budget":
        if c_col not in table:
            raise OptionError("{holdout} largest-budget needs the runs' budgets (a compute column, {c_col})",
                              "holdout", "c_col")
        c = table[c_col].to_numpy(float)
        return np.isclose(c, np.nanmax(c), rtol=1e-6)
    if how == "largest-n":
        n = table[n_col].to_numpy(float)
        sizes = np.unique(n)
        k = max(1, int(round(share * len(sizes))))
        return n >= sizes[-k]
    from scalinglab.fitting.conditions import any_of

    return any_of(table, [how] if isinstance(how, str) else list(how))


def how_label(how) -> str:
    return how if isinstance(how, str) else " or ".join(how)


def make_split(dataset: str, table: pd.DataFrame, how, *, unit_col: str | None = None, unit: str = "run",
               kind: str = "runs", source: str = "", scale: str = "c") -> Split:
    """A Split of a standard table (columns n, d, c, loss), held out by ``how``, its units the values of
    ``unit_col`` (each row its own without); refuses splits that leave nothing on either side."""
    t = table.reset_index(drop=True).copy()
    t["held"] = holdout_mask(t, how)
    how = how_label(how)
    t["unit"] = t[unit_col].astype(str) if unit_col else np.arange(len(t)).astype(str)
    n_held = int(t["held"].sum())
    if n_held == 0 or n_held == len(t):
        raise UserError(f"{dataset}: holdout {how!r} leaves {len(t) - n_held} runs to fit and {n_held} to predict; "
                        "it must leave some of each")
    return Split(dataset, t, how, unit, kind, source, scale=scale, group=TWINS.get(dataset, ""))


def _standard(df: pd.DataFrame, n: str, d: str | None, loss: str, *, c: str | None = None,
              u: str | None = None) -> pd.DataFrame:
    out = pd.DataFrame({"n": df[n].to_numpy(float), "loss": df[loss].to_numpy(float)})
    out["d"] = df[d].to_numpy(float) if d else df[c].to_numpy(float) / (6 * out["n"])
    out["c"] = df[c].to_numpy(float) if c else 6 * out["n"] * out["d"]
    if u:
        out["u"] = df[u].to_numpy(float)
    return out


def open_athena(experiment: str, frame: pd.DataFrame | None = None) -> Split:
    """One Open-Athena isoFLOP experiment without the rows the authors' QC flagged, its largest budget held
    out; the runs of one budget share its misfit (unit: budget), so the hold-out is one unit."""
    from scalinglab import data

    df = data.load(OPEN_ATHENA) if frame is None else frame
    rows = df[(df["experiment"] == experiment) & ~df["outlier"].astype(bool)]
    if rows.empty:
        raise UserError(f"no Open-Athena experiment {experiment!r}")
    t = _standard(rows, "params", "tokens", "loss", c="budget")
    t["budget"] = t["c"].map("{:.4g}".format)
    return make_split(experiment, t, "largest-budget", unit_col="budget", unit="budget", kind="isoflop",
                      source=OPEN_ATHENA)


def open_athena_experiments() -> list[str]:
    from scalinglab import data

    return sorted(data.load(OPEN_ATHENA)["experiment"].unique())


def gadre(dataset: str, frame: pd.DataFrame | None = None) -> Split:
    """Gadre et al. 2024's runs trained on ``dataset`` (c4_original, rpj, rw_original), loss on C4 validation;
    their own protocol: fit the models up to 411M parameters, predict the 1.4B and 6.9B runs. A model size's
    runs share its misfit, so the unit is the model size."""
    from scalinglab import data

    df = data.load("gadre2024-final-losses") if frame is None else frame
    rows = df[(df["dataset"] == dataset) & df["val_data"].str.contains("c4_val")]
    t = _standard(rows, "params", "tokens", "loss")
    t["size"] = t["n"]
    return make_split(f"gadre-{dataset}", t, "n>1e9", unit_col="size", unit="model size",
                      source="gadre2024-final-losses", scale="n")


def gemstones(name: str = "gemstones-cool-end") -> Split:
    """Gemstones' cooldown ends (each model's loss after cooling down at several token counts), the largest
    fifth of the models held out; a model's branches share it, so the unit is the model. The models' constant-
    rate training curves (``gemstones-hot``) come with it, for Approach 1."""
    from dataclasses import replace

    from scalinglab import data
    from scalinglab.papers.gemstones import curves

    df = data.load(name)
    t = _standard(df, "params_active_precise", "tokens", "final_loss")
    t["model"] = df["run_name"].to_numpy()
    split = make_split("gemstones", t, "largest-n", unit_col="model", unit="model", source=name, scale="n")
    return replace(split, curves=curves("gemstones-hot"))


def porian(step: str, points: pd.DataFrame | None = None) -> Split:
    """Porian et al. 2024's isoFLOP runs on RefinedWeb at one of their correction steps (from the reproduction of
    Kaplan et al.'s setup to tuned hyperparameters), the largest budget held out; unit: budget (one held out)."""
    from scalinglab.papers import porian as PO

    pts = PO.step_points(PO.isoflop_points(("porian-summary-rw",)) if points is None else points, "rw", step)
    t = _standard(pts, "n", "tokens", "loss", c="flops")
    t["budget"] = t["c"].map("{:.4g}".format)
    return make_split(f"porian-rw-{step}", t, "largest-budget", unit_col="budget", unit="budget", kind="isoflop",
                      source="porian-summary-rw")


def olmo_ladder(task: str = "hellaswag") -> Split:
    """Bhagia et al. 2024's OLMo ladder (4 sizes × 4 token multiples) on one task's loss, bits per byte of the
    correct answer at each run's end (their step 1's target, averaged over the last 5 evaluations), D the tokens
    seen and C their FLOPs (not 6ND); the largest size held out. Its runs share the size's misfit, so the unit
    is the model size: one held out, so nothing is ranked on it."""
    from scalinglab.downstream.ladder import evaluations, step1_points

    pts = step1_points(evaluations(), [task])
    t = _standard(pts, "n", "d", f"{task}_loss", c="c")
    t["size"] = t["n"]
    return make_split(f"olmo-ladder-{task}", t, "largest-n", unit_col="size", unit="model size",
                      source="olmo-ladder", scale="n")


def sldbench_data_constrained() -> Split:
    """SLDBench's data-constrained task with its columns put right, on its published split (test: the runs at
    the two largest token counts or the two largest sizes, by the published columns). Muennighoff et al.'s runs of
    one size share its misfit, so the unit is the model size."""
    from scalinglab import data
    from scalinglab.benchmark.sldbench import data_constrained_test

    df = data.load("sldbench-data-constrained")
    t = _standard(df, "params", "tokens", "loss", u="unique_tokens")
    t["published_test"] = data_constrained_test(df["unique_tokens_as_published"], df["params"]).astype(int)
    t["size"] = t["n"].map("{:.4g}".format)
    return make_split("sldbench-data-constrained", t, "published_test==1", unit_col="size", unit="model size",
                      kind="runs", source="sldbench-data-constrained", scale="n")


def from_table(table: pd.DataFrame, how, *, n: str = "N", d: str | None = "D", c: str | None = None,
               loss: str = "loss", u: str | None = None, unit: str | None = None, where=None,
               name: str = "runs") -> Split:
    """A user's runs under the protocol (``scalinglab scoreboard``): rows matching every ``where`` condition,
    named columns to the standard table, held out by ``how``; isoFLOP kind when ``c`` holds shared budgets
    (``is_isoflop``; D from ``d`` if given, else C/6N). The unit: the values of the column ``unit`` names; else
    on isoFLOP runs the budget (its runs share its misfit); else each run. A bad cell is a UserError naming its
    line (header = line 1)."""
    from scalinglab.fitting.conditions import chosen

    table = table.reset_index(drop=True)
    for col in (n, d, c, loss, u, unit):
        if col and col not in table:
            raise UserError(f"no column {col!r}; the table has {', '.join(map(str, table))}")
    lines = np.arange(len(table)) + 2
    keep = chosen(table, where) if where else np.ones(len(table), bool)
    table, lines = table[keep].reset_index(drop=True), lines[keep]
    for col in (n, d, c, loss, u):
        if not col:
            continue
        v = pd.to_numeric(table[col], errors="coerce").to_numpy(float)
        bad = ~(np.isfinite(v) & (v > 0))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise UserError(f"column {col!r}, line {lines[i]}: {table[col].iloc[i]!r} is not a positive number")
        table[col] = v
    t = _standard(table, n, d, loss, c=c, u=u)
    extra = [col for col in table.columns if col not in t]
    t = pd.concat([t, table[extra]], axis=1)
    iso = bool(c) and is_isoflop(t["c"])
    if unit:
        t["unit_label"] = table[unit].astype(str).to_numpy()
    elif iso:
        t["unit_label"] = t["c"].map("{:.6g}".format)
    by_n = bool(unit) and unit == n
    return make_split(name, t, how, unit_col="unit_label" if unit or iso else None,
                      unit=unit or ("budget" if iso else "run"), kind="isoflop" if iso else "runs", source=name,
                      scale="n" if by_n else "c")


def is_isoflop(c) -> bool:
    """Runs on shared budgets: at least two budgets, each of at least three runs on average (a column of
    per-run compute, 6ND, is not a set of budgets)."""
    values = np.asarray(c, float)
    k = len(np.unique(values))
    return k >= 2 and len(values) >= 3 * k


def benchmark_splits(profile: str = "full") -> list[Split]:
    """Every dataset the benchmark scores: the 8 Open-Athena experiments, Porian et al.'s five RefinedWeb steps,
    Gadre et al.'s three training sets, Gemstones, the OLMo ladder's HellaSwag loss and SLDBench's data-constrained
    task; ``smoke``: three of them (one of each kind). Luo et al.'s loss curves are not here: they are three
    sizes under nine schedules, a law of the curve (notebook 06), not of (N, D)."""
    from scalinglab import data
    from scalinglab.papers import porian as PO

    if profile == "smoke":
        return [open_athena("marin_202603__comma__llama_2"), gadre("rpj"), sldbench_data_constrained()]
    oa = data.load(OPEN_ATHENA)
    gd = data.load("gadre2024-final-losses")
    pts = PO.isoflop_points(("porian-summary-rw",))
    return ([open_athena(e, oa) for e in sorted(oa["experiment"].unique())]
            + [porian(step, pts) for step in PO.STEPS]
            + [gadre(k, gd) for k in ("c4_original", "rpj", "rw_original")]
            + [gemstones(), olmo_ladder(), sldbench_data_constrained()])
