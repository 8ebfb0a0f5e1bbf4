"""Our own ladder of trained GPTs on inverse-scaling tasks: load the family, score it per example, split, test trends.

The ladder is a sweep of preset ``optimal`` (each shape trained once at ~20 tokens per parameter), exported by
``scalinglab sweep --export`` into a folder of float16 checkpoints with a manifest (``training.sweep.export``).
Every example is scored with the prize's method (``scoring.evaluate_rows``: summed class log-probabilities, argmax,
prize loss, acc_norm), and kept per example, so the same scores can be split afterwards: NeQA by plain and negated
question, the corpus probes by how often the phrase occurs in the training text.

The x of every trend test is the model's training compute C = 6·N·D (standard count, with the head);
for a compute-optimal family it orders the models exactly as N does.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from scalinglab.errors import UserError

# Task-row columns that are the example itself, not a label to split by.
_EXAMPLE_COLUMNS = {"prompt", "classes", "answer_index", "completion"}


def load_family(folder: Path | str) -> list:
    """The exported ladder's models, smallest first, each a ``GPTCheckpointLM`` with ``compute`` (FLOPs),
    ``n_standard``, ``tokens`` and ``val_loss`` from the manifest (files checked against their sha256)."""
    from scalinglab.inverse_scaling.adapters import load_checkpoint_lm
    from scalinglab.training.sweep.export import read_manifest

    folder = Path(folder)
    manifest = read_manifest(folder)
    family = []
    for m in sorted(manifest["models"], key=lambda m: m["compute"]):
        lm = load_checkpoint_lm(folder / m["file"], name=f"{m['width']}x{m['depth']}")
        for key in ("compute", "n_standard", "n_non_embedding", "tokens", "val_loss"):
            setattr(lm, key, m[key])
        family.append(lm)
    return family


def score_family(models, tasks: dict, opts=None):
    """Per-example scores: one row per (model, task, example) with the model's name, compute, N (non-embedding and
    standard) and the task row's own labels (e.g. ``variant``, ``qid``, ``bin``, ``count``), then ``correct``,
    ``loss``, ``correct_norm`` and the class log-probabilities' summary from ``scoring.classification_metrics``."""
    import pandas as pd

    from scalinglab.inverse_scaling import scoring

    opts = opts or scoring.ScoreOptions()
    parts = []
    for lm in models:
        for name, rows in tasks.items():
            if not len(rows):
                raise UserError(f"task {name!r} has no rows to score")
            per, summary = scoring.evaluate_rows(lm, rows, opts)
            labels = rows.drop(columns=[c for c in rows.columns if c in _EXAMPLE_COLUMNS]).reset_index(drop=True)
            per = pd.concat([labels, per.reset_index(drop=True)], axis=1)
            per.insert(0, "task", name)
            per.insert(0, "n_standard", float(getattr(lm, "n_standard", np.nan)))
            per.insert(0, "params", float(lm.params))
            per.insert(0, "compute", float(getattr(lm, "compute", np.nan)))
            per.insert(0, "model", lm.name)
            per["truncated_prompts"] = summary["truncated_prompts"]
            parts.append(per)
    return pd.concat(parts, ignore_index=True)


def accuracy_by(per_example, by: list[str], level: float = 0.95):
    """Accuracy (with its Wilson interval), prize loss and acc_norm per model and per value of ``by``, in compute
    order: one row per (model, *by)."""
    from scalinglab.inverse_scaling.aggregate import accuracy_table

    keys = ["model", "compute", "params", *by]
    table = accuracy_table(per_example, keys, level=level)
    if "correct_norm" in per_example:
        norm = per_example.groupby(keys, sort=False)["correct_norm"].mean().rename("acc_norm")
        table = table.merge(norm.reset_index(), on=keys)
    return table.sort_values([*by, "compute"], kind="stable").reset_index(drop=True)


def trends_by(table, by: list[str]):
    """One trend test per group of ``by`` (``trend.classify_groups``: binomial GLMs against log10 compute), as a
    frame with the group's label and the call."""
    from scalinglab.inverse_scaling import trend

    table = table.assign(group=table[by].astype(str).agg(" / ".join, axis=1))
    return trend.frame(trend.classify_groups(table, "compute", "accuracy", "n", "group"))


def paired_difference(per_example, by: str, a: str, b: str, pair: str, level: float = 0.95):
    """Per model, the accuracy on ``by == a`` minus that on ``by == b`` over the pairs (``pair``, e.g. NeQA's
    ``qid``) present in both, with a normal interval from the per-pair differences (their sd / √pairs: the pairing
    removes the questions' own difficulty from the variance). One row per model, in compute order."""
    import pandas as pd
    from scipy import stats

    z = stats.norm.isf((1 - level) / 2)
    rows = []
    for (model, compute), g in per_example.groupby(["model", "compute"], sort=False):
        wide = g.pivot_table(index=pair, columns=by, values="correct", aggfunc="mean")
        if a not in wide or b not in wide:
            raise UserError(f"{model}: no rows with {by} = {a!r} and {b!r} to pair")
        d = (wide[a] - wide[b]).dropna().to_numpy(dtype=float)
        if len(d) < 2:
            raise UserError(f"{model}: {len(d)} pair(s) of {by} {a!r}/{b!r}; a paired difference needs at least 2")
        half = z * d.std(ddof=1) / np.sqrt(len(d))
        rows.append(dict(model=model, compute=compute, pairs=len(d), **{f"accuracy_{a}": wide[a].mean(),
                         f"accuracy_{b}": wide[b].mean()}, difference=d.mean(), ci_low=d.mean() - half,
                         ci_high=d.mean() + half))
    return pd.DataFrame(rows).sort_values("compute", kind="stable").reset_index(drop=True)


def frequency_interaction(per_example, item: str = "id", level: float = 0.95) -> dict:
    """Does accuracy fall with compute more where the phrase is more frequent? One binomial GLM over every
    (model, item) of the corpus probes:

        logit P(correct) = b0 + b1·x + b2·f + b3·x·f + b4·r

    with x = log10 compute (centred), f = log10(count + 1) (centred), r = ln(bigram_ending / bigram_distractor),
    the local word statistics that favour the memorised ending whatever the phrase (a covariate, so b3 is not
    that bias scaling with size). b3 < 0: larger models lose more on frequent phrases than on rare ones.
    Standard errors are clustered by item: every model answers the same items, so the rows are not independent.
    Returns the coefficients with intervals and p-values."""
    import statsmodels.api as sm
    from scipy import stats

    df = per_example
    need = ["compute", "count", "bigram_ending", "bigram_distractor", "correct", item]
    missing = [c for c in need if c not in df]
    if missing:
        raise UserError(f"the probes' per-example table has no column {missing[0]!r}")
    if df["compute"].nunique() < 2:
        raise UserError("the interaction needs at least 2 models")
    x = np.log10(df["compute"].to_numpy(float))
    f = np.log10(df["count"].to_numpy(float) + 1)
    r = np.log((df["bigram_ending"].to_numpy(float) + 0.5) / (df["bigram_distractor"].to_numpy(float) + 0.5))
    x, f = x - x.mean(), f - f.mean()
    design = np.column_stack([np.ones_like(x), x, f, x * f, r])
    groups = np.unique(df[item].astype(str).to_numpy(), return_inverse=True)[1]
    fit = sm.GLM(df["correct"].to_numpy(float), design, family=sm.families.Binomial()).fit(
        cov_type="cluster", cov_kwds=dict(groups=groups))
    z = stats.norm.isf((1 - level) / 2)
    names = ["intercept", "log10_compute", "log10_count", "interaction", "log_bigram_ratio"]
    return {n: dict(coef=float(b), se=float(s), ci=(float(b - z * s), float(b + z * s)), p=float(p))
            for n, b, s, p in zip(names, fit.params, fit.bse, fit.pvalues)} | dict(
        rows=int(len(df)), items=int(groups.max() + 1), models=int(df["compute"].nunique()))
