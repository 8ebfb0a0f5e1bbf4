"""Warmup and learning-rate-schedule evidence: what a too-long warmup costs, on real runs.

Porian et al. 2024 (``scalinglab.papers.porian``) attribute part of the gap between
Kaplan's exponent and Hoffmann's to warmup. Kaplan et al. 2020 warmed up for
3000 steps of 2^19 tokens whatever the model; read at a small budget, a run
has spent much of its tokens warming up, and at a fixed budget the larger
models, which see fewer tokens, have spent the larger share. If that costs
loss, it pulls each small budget's optimal N down, and a fit of N* ∝ C^a
through budgets where it matters (small) and where it does not (large)
comes out too steep.

Gadre et al. 2024 released, beside their 104 models, the grid behind their
hyperparameter search (``exp_data/grid.json``, registered as
``gadre2024-grid``): 435 OpenLM runs of 130 shapes, each trained to 20 tokens
per parameter with a cosine schedule, learning rate 3e-3 and weight decay
0.033, under warmups of 100, 200, 400 and 2000 steps, mapped to the final
loss. That is independent evidence on the mechanism: how the loss penalty of
a warmup grows with the share of training it takes.

- :func:`parse_key` / :func:`grid_frame` turn the authors' config strings into
  a tidy table (``grid_loader`` is the registry's hook);
- :func:`openlm_params` counts parameters as the authors did;
- :func:`penalties` measures each run against the best warmup of its config
  and flags divergences;
- :func:`fit_penalty` fits penalty = slope · max(0, fraction − knot) for one
  warmup (``form="hinge"``), or slope · max(0, fraction − knot)² (``form="quadratic"``,
  an onset without a corner), with a bootstrap over model shapes; :func:`around_knot`
  gives the penalties actually measured below a fit's knot and the shapes on either
  side of it, and :func:`fraction_to_params` turns a warmup fraction into the model
  size it is at 20 tokens per parameter;
- :func:`run_length_vs_size` shows how far the grid can tell run length from
  model size (not far: at batch 64 they are the same axis);
- :func:`optimum_shift` puts Porian et al.'s own long- and short-warmup optima
  side by side, with the warmup fraction at each long-warmup optimum.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from scalinglab.accounting.conventions import OPENLM_SEQ_LEN, openlm_params
from scalinglab.errors import DataError, UserError
from scalinglab.fitting.protocol import FitResult
from scalinglab.fitting.rows import unit_picks
from scalinglab.serialization import to_jsonable

# Kaplan et al. 2020 (Section 2): 3000 warmup steps of 512 sequences × 1024 tokens; Porian et al.'s "long" warmup.
KAPLAN_WARMUP_TOKENS = 3000 * 2**19
# A run whose loss is this far above its config's best is flagged as diverged. In the grid the penalties run
# continuously up to 0.25 nats; the next is 0.57 (worse than models half its size), then 2.1-2.4 (a final
# loss of 4.7-4.9). Penalties are ranked in the notebook so the gap stays visible.
DIVERGENCE_GAP = 0.4

# The authors' key: shape-?-lr-wd-batch-tokens-warmup-cooldown. Numbers may be in exponent form ("3e-05"),
# whose minus sign is also the separator, so the key is matched field by field rather than split on '-'.
# The unnamed second field repeats the batch in all 435 keys; parse_key insists on it, so a file where it
# means something else fails loudly instead of being misread.
_NUM = r"[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?"
_KEY = re.compile(rf"^d=(\d+)_l=(\d+)_h=(\d+)-(\d+)-({_NUM})-({_NUM})-(\d+)-(\d+)-(\d+)-({_NUM})$")

GRID_COLUMNS = ("key", "shape", "d_model", "n_layers", "n_heads", "batch", "lr", "wd", "tokens", "warmup",
                "lr_cooldown_end", "loss", "params", "params_no_embed", "steps", "warmup_tokens",
                "warmup_fraction")
# What one warmup is compared across: everything in the key but the warmup.
CONFIG_COLUMNS = ("shape", "batch", "lr", "wd", "tokens", "lr_cooldown_end")


def parse_key(key: str) -> dict:
    """One config string, e.g. ``d=1024_l=12_h=16-64-0.003-0.033-64-5149020160-100-3e-05``, as fields."""
    m = _KEY.match(key)
    if m is None:
        raise UserError(f"grid key {key!r} is not shape-batch-lr-wd-batch-tokens-warmup-cooldown "
                        "(e.g. d=96_l=8_h=4-8-0.003-0.033-8-211386240-100-3e-05)")
    d, l, h, batch_repeat, lr, wd, batch, tokens, warmup, cooldown = m.groups()
    if batch_repeat != batch:
        raise DataError(f"grid key {key!r}: second field {batch_repeat} differs from the batch {batch}; "
                        "every key of the released grid repeats it")
    return dict(shape=f"d={d}_l={l}_h={h}", d_model=int(d), n_layers=int(l), n_heads=int(h), batch=int(batch),
                lr=float(lr), wd=float(wd), tokens=int(tokens), warmup=int(warmup),
                lr_cooldown_end=float(cooldown))


def grid_frame(losses: dict[str, float]) -> pd.DataFrame:
    """The grid ({config string: final loss}) as one row per run, with parameters, steps and warmup fraction."""
    if not losses:
        raise UserError("the grid is empty: expected {config string: final loss}")
    rows = [dict(key=k, **parse_key(k), loss=float(v)) for k, v in losses.items()]
    df = pd.DataFrame(rows)
    df["params"], df["params_no_embed"] = openlm_params(df["d_model"], df["n_layers"], df["n_heads"])
    tokens_per_step = df["batch"] * OPENLM_SEQ_LEN
    # Not whole numbers: the authors set tokens = 20·params, not a count of steps.
    df["steps"] = df["tokens"] / tokens_per_step
    df["warmup_tokens"] = df["warmup"] * tokens_per_step
    df["warmup_fraction"] = df["warmup"] / df["steps"]
    return df[list(GRID_COLUMNS)].sort_values(["d_model", "n_layers", "n_heads", "batch", "warmup"],
                                              ignore_index=True)


def grid_loader(path: Path, dataset) -> pd.DataFrame:
    """The registry's loader hook: a verified ``grid.json`` → :func:`grid_frame`."""
    try:
        losses = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise DataError(f"{path}: not a JSON grid ({exc})") from None
    if not isinstance(losses, dict):
        raise DataError(f"{path}: expected a JSON object of config string to loss, got {type(losses).__name__}")
    return grid_frame(losses)


def penalties(grid: pd.DataFrame, gap: float = DIVERGENCE_GAP) -> pd.DataFrame:
    """Each run's loss above the best warmup of its config (same shape, batch, tokens, lr, wd, cooldown).

    Adds ``n_warmups`` (runs in the config; with one, the penalty is 0 by construction), ``best_loss``,
    ``best_warmup``, ``penalty`` and ``diverged`` (penalty above ``gap``: see ``DIVERGENCE_GAP``). A
    diverged run is never a config's best unless every run of it diverged, which the grid does not have.
    """
    missing = [c for c in (*CONFIG_COLUMNS, "warmup", "loss") if c not in grid.columns]
    if missing:
        raise UserError(f"grid lacks column(s) {', '.join(map(repr, missing))}")
    out = grid.copy()
    by = out.groupby(list(CONFIG_COLUMNS), sort=False)
    out["n_warmups"] = by["warmup"].transform("size")
    out["best_loss"] = by["loss"].transform("min")
    out["best_warmup"] = out.loc[by["loss"].transform("idxmin"), "warmup"].to_numpy()
    out["penalty"] = out["loss"] - out["best_loss"]
    out["diverged"] = out["penalty"] > gap
    return out


def by_warmup(pen: pd.DataFrame) -> pd.DataFrame:
    """Per warmup length, over runs with another warmup to compare with: how often it is the best,
    the warmup fractions it covers, and its penalty (undiverged runs) and divergences."""
    pen = pen[pen["n_warmups"] > 1]
    rows = []
    for w, g in pen.groupby("warmup"):
        ok = g[~g["diverged"]]
        rows.append(dict(warmup=int(w), runs=len(g), best=int((g["penalty"] == 0).sum()),
                         fraction_min=float(g["warmup_fraction"].min()),
                         fraction_max=float(g["warmup_fraction"].max()),
                         penalty_median=float(ok["penalty"].median()), penalty_max=float(ok["penalty"].max()),
                         diverged=int(g["diverged"].sum())))
    return pd.DataFrame(rows)


FORMS = {"hinge": 1, "quadratic": 2}   # the power of max(0, x − knot) in each onset form
WEIGHTS = ("rows", "shapes")


@dataclass(frozen=True, repr=False)
class PenaltyFit(FitResult):
    """penalty = slope · max(0, x − knot)^p for one warmup: p = 1 (``form="hinge"``, zero below ``knot``,
    then linear in x) or p = 2 (``form="quadratic"``, zero below ``knot``, then rising smoothly).

    x is a share of training (``warmup_fraction`` by default), so for the hinge ``slope``/100 is nats per
    percentage point. ``knot_ci``, ``slope_ci`` and :meth:`interval` come from a bootstrap over model shapes
    (``groups``); ``status`` is ``converged`` or ``unidentified`` (fewer than 3 groups or 3 distinct x: no onset
    to fit).
    ``weight`` is ``rows`` (every run counts once) or ``shapes`` (each run 1/(runs of its shape), so every
    shape counts once whatever its number of head-count variants); ``rmse`` is weighted the same way.
    """

    warmup: int
    x: str
    knot: float
    slope: float
    rmse: float
    n_rows: int
    n_groups: int
    x_range: tuple[float, float]
    knot_ci: tuple[float, float] = (np.nan, np.nan)
    slope_ci: tuple[float, float] = (np.nan, np.nan)
    level: float = 0.95
    n_boot: int = 0
    status: str = "converged"
    form: str = "hinge"
    weight: str = "rows"
    boot: np.ndarray = field(default_factory=lambda: np.empty((0, 2)), repr=False, compare=False)

    @property
    def power(self) -> int:
        return FORMS[self.form]

    @property
    def params(self) -> dict[str, float]:
        return {"knot": self.knot, "slope": self.slope}

    def _draws(self) -> dict[str, np.ndarray]:
        return {"knot": self.boot[:, 0], "slope": self.boot[:, 1]} if len(self.boot) else {}

    def summary(self) -> str:
        if self.status != "converged":
            return (f"warmup {self.warmup}: no onset fitted ({self.n_groups} shapes on {self.n_rows} runs; "
                    f"needs 3 shapes and 3 distinct {self.x}); status {self.status}")
        def iv(ci):
            return f" [{ci[0]:.4g}, {ci[1]:.4g}]" if np.isfinite(ci[0]) else ""

        return (f"warmup {self.warmup}: penalty = {self.slope:.4g}{iv(self.slope_ci)} · max(0, {self.x} − "
                f"{self.knot:.4g}{iv(self.knot_ci)})^{self.power} ({self.form}, {self.weight} weighted; "
                f"{self.n_groups} shapes, {self.n_rows} runs, rmse {self.rmse:.3g}; {self.level:.0%} intervals "
                f"over shapes)")

    def predict(self, x):
        return self.slope * np.maximum(0.0, np.asarray(x, float) - self.knot) ** self.power

    def interval(self, x, level: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Bootstrap interval of the predicted penalty at x (NaN without a bootstrap)."""
        x = np.atleast_1d(np.asarray(x, float))
        if len(self.boot) == 0:
            return np.full(x.shape, np.nan), np.full(x.shape, np.nan)
        level = self.level if level is None else level
        pred = self.boot[:, 1:2] * np.maximum(0.0, x[None, :] - self.boot[:, 0:1]) ** self.power
        lo, hi = np.quantile(pred, [(1 - level) / 2, (1 + level) / 2], axis=0)
        return lo, hi

    def to_dict(self) -> dict:
        return to_jsonable({
                "warmup": self.warmup, "x": self.x, "form": self.form, "weight": self.weight, "knot": self.knot,
                "knot_ci": list(self.knot_ci), "slope": self.slope, "slope_ci": list(self.slope_ci),
                "rmse": self.rmse, "n_rows": self.n_rows, "n_groups": self.n_groups, "x_range": list(self.x_range),
                "level": self.level, "n_boot": self.n_boot, "status": self.status})


def _onset_best(knots: np.ndarray, x: np.ndarray, y: np.ndarray, w: np.ndarray, power: int = 1):
    """(knot, slope, weighted sse) per row of weights w (B, n): least squares over the knot grid, slope in
    closed form."""
    z = np.maximum(0.0, x[:, None] - knots[None, :]) ** power   # (n, K)
    szy = w @ (z * y[:, None])
    szz = w @ (z * z)
    syy = w @ (y * y)
    with np.errstate(invalid="ignore", divide="ignore"):
        slope = np.where(szz > 0, szy / szz, 0.0)
    sse = syy[:, None] - slope * szy
    best = np.argmin(sse, axis=1)
    rows = np.arange(len(w))
    return knots[best], slope[rows, best], sse[rows, best]


def _fitted_rows(pen: pd.DataFrame, warmup: int, x: str, groups) -> pd.DataFrame:
    """The rows :func:`fit_penalty` fits: this warmup, undiverged, in a config with another warmup."""
    for col in (x, "penalty", "warmup", "diverged", "n_warmups", *groups):
        if col not in pen.columns:
            raise UserError(f"penalty table lacks column {col!r} (make it with warmup.penalties)")
    rows = pen[(pen["warmup"] == warmup) & ~pen["diverged"] & (pen["n_warmups"] > 1)]
    if rows.empty:
        raise UserError(f"no undiverged run with warmup {warmup} and another warmup to compare it with; "
                        f"warmups present: {', '.join(map(str, sorted(pen['warmup'].unique())))}")
    return rows


def fit_penalty(pen: pd.DataFrame, warmup: int = 2000, x: str = "warmup_fraction",
                groups=("d_model", "n_layers"), knot: float | None = None, n_knots: int = 400,
                n_boot: int = 1000, seed: int = 0, level: float = 0.95, form: str = "hinge",
                weight: str = "rows") -> PenaltyFit:
    """Fit the penalty of one warmup (rows of :func:`penalties`, diverged runs left out) against ``x``.

    ``form`` is the onset: ``hinge``, slope·max(0, x − knot), or ``quadratic``, slope·max(0, x − knot)².
    The knot is profiled over ``n_knots`` values from 0 to the second-largest x (an onset beyond every
    point but one fits that point alone), or fixed with ``knot=``. Between two neighbouring x the
    data cannot place the knot except through the form, so a knot interval that spans one gap between
    shapes measures the design, not the onset. ``weight="shapes"`` gives each run weight 1/(runs of its
    group), so a shape with four head counts weighs as much as one with a single run. The bootstrap
    resamples ``groups`` with replacement: the grid's head counts at one width and depth share N and
    steps, so they are repeated looks at one point on the x axis, not independent ones. Same seed, same
    resamples, whatever the form and weight.
    """
    if form not in FORMS:
        raise UserError(f"penalty form must be one of {', '.join(FORMS)}, not {form!r}")
    if weight not in WEIGHTS:
        raise UserError(f"penalty weight must be one of {', '.join(WEIGHTS)}, not {weight!r}")
    rows = _fitted_rows(pen, warmup, x, groups)
    xv = rows[x].to_numpy(float)
    yv = rows["penalty"].to_numpy(float)
    gid = rows.groupby(list(groups), sort=True).ngroup().to_numpy()
    n_groups = int(gid.max()) + 1
    per_row = 1.0 / np.bincount(gid)[gid] if weight == "shapes" else np.ones(len(xv))
    x_range = (float(xv.min()), float(xv.max()))
    common = dict(warmup=int(warmup), x=x, n_rows=len(rows), n_groups=n_groups, x_range=x_range, level=level,
                  form=form, weight=weight)
    if n_groups < 3 or np.unique(xv).size < 3:
        return PenaltyFit(knot=np.nan, slope=np.nan, rmse=np.nan, status="unidentified", **common)
    if knot is None:
        knots = np.linspace(0.0, np.sort(np.unique(xv))[-2], n_knots)
    else:
        knots = np.array([float(knot)])
    power = FORMS[form]
    k, s, sse = _onset_best(knots, xv, yv, per_row[None, :], power)
    boot = np.empty((0, 2))
    knot_ci = slope_ci = (np.nan, np.nan)
    if n_boot > 0:
        # Each resample as per-row weights: how often its group was drawn.
        counts = np.stack([np.bincount(p, minlength=n_groups) for p in unit_picks(n_groups, n_boot, seed)])
        bk, bs, _ = _onset_best(knots, xv, yv, counts[:, gid] * per_row[None, :], power)
        boot = np.column_stack([bk, bs])
        q = [(1 - level) / 2, (1 + level) / 2]
        knot_ci = tuple(float(v) for v in np.quantile(bk, q))
        slope_ci = tuple(float(v) for v in np.quantile(bs, q))
    return PenaltyFit(knot=float(k[0]), slope=float(s[0]), rmse=float(np.sqrt(max(sse[0], 0.0) / per_row.sum())),
                      knot_ci=knot_ci, slope_ci=slope_ci, n_boot=int(n_boot), boot=boot, **common)


def around_knot(pen: pd.DataFrame, fit: PenaltyFit, groups=("d_model", "n_layers"),
                from_x: float = 0.0) -> dict:
    """What the runs a fit used say below its knot, and which shapes the knot falls between.

    Over the fitted rows with ``from_x`` <= x < knot: rows, shapes, mean, min and max penalty; and
    ``x_below`` / ``x_above``, the largest x under the knot and the smallest at or over it. A fit whose
    form says the penalty is 0 below the knot can be checked against the mean here.
    """
    rows = _fitted_rows(pen, fit.warmup, fit.x, groups)
    xv = rows[fit.x].to_numpy(float)
    sel = rows[(xv >= from_x) & (xv < fit.knot)]
    below, above = xv[xv < fit.knot], xv[xv >= fit.knot]
    return dict(from_x=float(from_x), knot=fit.knot, n_rows=len(sel),
                n_shapes=int(sel.groupby(list(groups)).ngroups) if len(sel) else 0,
                mean=float(sel["penalty"].mean()) if len(sel) else np.nan,
                min=float(sel["penalty"].min()) if len(sel) else np.nan,
                max=float(sel["penalty"].max()) if len(sel) else np.nan,
                x_below=float(below.max()) if len(below) else np.nan,
                x_above=float(above.min()) if len(above) else np.nan)


def shape_fractions(pen: pd.DataFrame, warmup: int = 2000, x: str = "warmup_fraction",
                    groups=("d_model", "n_layers")) -> pd.DataFrame:
    """One row per shape (``groups``) among the runs :func:`fit_penalty` fits, sorted by x: x, runs
    (head-count variants), mean_penalty and gap_to_next (the next shape's x minus this one's; NaN for the
    last). Head counts share x, so these are the fit's distinct design points; the gaps are where it has
    no runs, and where a knot can sit only because of the form fitted."""
    rows = _fitted_rows(pen, warmup, x, groups)
    by = rows.groupby(list(groups), sort=False)
    out = pd.DataFrame({x: by[x].first(), "x_spread": by[x].max() - by[x].min(), "runs": by.size(),
                        "mean_penalty": by["penalty"].mean()}).reset_index().sort_values(x, ignore_index=True)
    if (out["x_spread"] > 1e-12 * out[x].abs().max()).any():
        raise UserError(f"runs of one shape differ in {x}: group by what fixes it (e.g. add 'batch' to groups)")
    out["gap_to_next"] = out[x].shift(-1) - out[x]
    return out.drop(columns="x_spread")


def fraction_to_params(fraction, warmup: int = 2000, batch: int = 64, tokens_per_param: float = 20.0):
    """The model size (the authors' params) at which ``warmup`` steps are ``fraction`` of a run of
    ``tokens_per_param`` tokens per parameter at ``batch`` sequences of OPENLM_SEQ_LEN: steps = 20·N/(batch·2048),
    so fraction = warmup·batch·2048/(20·N). In the grid's batch-64 runs a warmup fraction *is* a size."""
    fraction = np.asarray(fraction, float)
    return warmup * batch * OPENLM_SEQ_LEN / (tokens_per_param * fraction)


def run_length_vs_size(grid: pd.DataFrame) -> pd.DataFrame:
    """Per batch size: the sizes, run lengths and warmup fractions the grid covers.

    ``corr_log_steps_log_params`` is 1 where every run is 20 tokens per parameter at one batch (steps ∝ N):
    there the penalty of a long warmup on a short run cannot be told from its penalty on a small model.
    ``shapes_at_other_batches`` counts shapes also run at another batch (the clean separation: none).
    """
    batches = {b: set(g["shape"]) for b, g in grid.groupby("batch")}
    rows = []
    for b, g in grid.groupby("batch"):
        others = set().union(*(s for bb, s in batches.items() if bb != b))
        corr = np.corrcoef(np.log(g["steps"]), np.log(g["params"]))[0, 1] if g["params"].nunique() > 1 else np.nan
        rows.append(dict(batch=int(b), runs=len(g), shapes=g["shape"].nunique(),
                         params_min=int(g["params"].min()), params_max=int(g["params"].max()),
                         steps_min=float(g["steps"].min()), steps_max=float(g["steps"].max()),
                         warmups=" ".join(map(str, sorted(g["warmup"].unique()))),
                         max_warmup_fraction=float(g["warmup_fraction"].max()),
                         corr_log_steps_log_params=float(corr),
                         shapes_at_other_batches=len(batches[b] & others)))
    return pd.DataFrame(rows)


def optimum_shift(long_optima: pd.DataFrame, short_optima: pd.DataFrame,
                  warmup_tokens: float = KAPLAN_WARMUP_TOKENS) -> pd.DataFrame:
    """Porian et al.'s per-budget optima with the long and the short warmup, side by side.

    Inputs are ``isoflop.budget_optima`` frames (``flops``, ``n_opt``, ``edge``) of two steps that differ
    only in warmup (``plus_head`` and ``plus_short_warmup``); budgets that are an edge in either are
    dropped. ``ratio`` = N*_short / N*_long; ``warmup_fraction_long`` is the long warmup's share of the
    tokens the long-warmup optimum had seen (D = C/(6N)); above 1, that point was read mid-warmup.
    """
    cols = ["flops", "n_opt", "edge"]
    for name, f in (("long_optima", long_optima), ("short_optima", short_optima)):
        missing = [c for c in cols if c not in f.columns]
        if missing:
            raise UserError(f"{name} lacks column(s) {', '.join(map(repr, missing))} (use isoflop.budget_optima)")
    m = long_optima[cols].merge(short_optima[cols], on="flops", suffixes=("_long", "_short"))
    m = m[~m["edge_long"] & ~m["edge_short"]]
    out = pd.DataFrame({"flops": m["flops"].to_numpy(), "n_long": m["n_opt_long"].to_numpy(),
                        "n_short": m["n_opt_short"].to_numpy()})
    out["ratio"] = out["n_short"] / out["n_long"]
    out["warmup_fraction_long"] = warmup_tokens / (out["flops"] / (6 * out["n_long"]))
    return out
