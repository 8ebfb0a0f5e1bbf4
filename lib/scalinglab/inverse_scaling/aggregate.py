"""From per-example results to per-model tables, and from model-family tables to trend tests.

What notebook 03 computes between the data and ``scalinglab.inverse_scaling.trend``:

* ``accuracy_table``: per-example rows (``correct``, ``loss``) into one row per model, with the binomial
  standard error and a Wilson interval (``binomial_se``, ``wilson_interval``);
* ``matches_table``: whether our numbers, rounded as a table prints them, equal that table's;
* ``whole_count_share``: how often a reported fraction times its n is a whole number, which tells a
  count (k of n answered right) from a bounded score averaged over n items (TruthfulQA's MC2);
* ``family_tests``: every family on every benchmark of a table under four versions of the trend test
  (binomial, each family's own scale, a pooled scale, a pooled scale with one family left out of it),
  Benjamini-Hochberg adjusted per version; bounded scores get an estimated scale that is never floored;
* ``trend_counts``: groups per trend call, in ``trend.TRENDS`` order;
* ``evaluate_family``: a list of language models scored on tasks with the prize's scoring.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scalinglab.errors import UserError
from scalinglab.inverse_scaling import trend
from scalinglab.serialization import to_jsonable

SCHEMES = ("binomial", "group", "pooled", "pooled_without")
NOT_CALLED = ("flat", "insufficient")


def binomial_se(p, n):
    """sqrt(p(1 - p)/n): the standard error of a fraction p of n independent trials."""
    p, n = np.asarray(p, dtype=float), np.asarray(n, dtype=float)
    return np.sqrt(p * (1 - p) / n)


def wilson_interval(p, n, level: float = 0.95):
    """(low, high) of the Wilson score interval for a fraction p of n trials (Wilson 1927): unlike
    p ± z·se it stays inside [0, 1] and does not shrink to a point at p = 0 or 1."""
    from scipy import stats

    p, n = np.asarray(p, dtype=float), np.asarray(n, dtype=float)
    z = stats.norm.isf((1 - level) / 2)
    centre = (p + z**2 / (2 * n)) / (1 + z**2 / n)
    half = z * np.sqrt(p * (1 - p) / n + z**2 / (4 * n**2)) / (1 + z**2 / n)
    # At p = 0 or 1 one end is p itself; rounding leaves it ~1e-17 off, which would put p outside its interval.
    return np.minimum(centre - half, p), np.maximum(centre + half, p)


def accuracy_table(per_example, by, correct: str = "correct", loss: str | None = "loss", level: float = 0.95):
    """One row per group of ``by`` (in order of first appearance): accuracy (mean of ``correct``, 0/1),
    mean loss, n, the binomial standard error and the Wilson interval (``ci_low``, ``ci_high``)."""
    by = [by] if isinstance(by, str) else list(by)
    missing = [c for c in [*by, correct, *([loss] if loss else [])] if c not in per_example.columns]
    if missing:
        raise UserError(f"per-example table has no column {missing[0]!r}")
    values = per_example[correct]
    if not values.isin([0, 1]).all():
        raise UserError(f"column {correct!r} must hold 0/1 outcomes, got {values[~values.isin([0, 1])].iloc[0]!r}")
    agg = dict(accuracy=(correct, "mean"), n=(correct, "size"))
    if loss:
        agg["mean_loss"] = (loss, "mean")
    out = per_example.groupby(by, sort=False).agg(**agg).reset_index()
    out["accuracy_se"] = binomial_se(out.accuracy, out.n)
    out["ci_low"], out["ci_high"] = wilson_interval(out.accuracy, out.n, level)
    return out


def matches_table(values, reference, decimals: int) -> bool:
    """True when every value, rounded to ``decimals``, equals its reference (a table printed to that many
    decimals); a missing reference is a mismatch."""
    v, r = np.asarray(values, dtype=float), np.asarray(reference, dtype=float)
    if v.shape != r.shape or v.size == 0:
        return False
    return bool(np.all(np.isfinite(r)) and np.all(np.round(v, decimals) == r))


def whole_count_share(df, value: str, n: str, by: str, tol: float = 1e-6):
    """Per group of ``by``: the share of rows whose ``value`` times ``n`` is within ``tol`` of a whole number.
    A count k of n gives 1 (up to the table's float precision); an average of per-item scores almost never does."""
    k = df[value].to_numpy(dtype=float) * df[n].to_numpy(dtype=float)
    return df.assign(_whole=np.abs(k - np.round(k)) < tol).groupby(by)["_whole"].mean().rename("whole_count_share")


def trend_counts(table, by: str, col: str = "trend"):
    """Rows per (``by``, call) as a table with one column per call of ``trend.TRENDS``, zeros kept."""
    import pandas as pd

    return pd.crosstab(table[by], table[col]).reindex(columns=list(trend.TRENDS), fill_value=0)


@dataclass(frozen=True)
class FamilyTests:
    """A model-family table tested four ways (``SCHEMES``): ``tests[scheme]`` has one row per (benchmark,
    family) tested, indexed so, with ``p_trend_adj`` and ``trend_adj`` (Benjamini-Hochberg over the whole
    scheme); ``dispersion`` has one row per benchmark: the pooled scale, what it was estimated from, its
    largest contributor, the left-out family's share and the scale without it."""

    tests: dict[str, Any]
    dispersion: Any
    left_out: str | None
    scores: tuple = field(default=())

    def to_dict(self) -> dict:
        """Per scheme, one record per (benchmark, family) tested; the dispersion table; the family left out."""
        return to_jsonable({"tests": {k: t.reset_index().to_dict("records") for k, t in self.tests.items()},
                            "dispersion": self.dispersion.reset_index().to_dict("records"),
                            "left_out": self.left_out, "scores": list(self.scores)})

    def summary(self) -> str:
        """Per scheme and benchmark: how many families it calls a trend."""
        lines = [f"families called a trend (not flat or insufficient), per benchmark; {len(self.tests)} schemes"
                 + (f", {self.left_out} left out of the pooled scale in pooled_without" if self.left_out else "")]
        for scheme in self.tests:
            calls = self.called(scheme)
            lines.append(f"  {scheme:<15}" + ", ".join(f"{b} {int(n)}" for b, n in calls.items()))
        return "\n".join(lines)

    def called(self, scheme: str, col: str = "trend"):
        """Per benchmark: how many families the scheme calls neither flat nor insufficient."""
        t = self.tests[scheme]
        return (~t[col].isin(NOT_CALLED)).groupby(level=0).sum()


def family_tests(df, x: str = "flops", y: str = "accuracy", n: str = "n", group: str = "family",
                 by: str = "benchmark", scores=(), left_out: str | None = None,
                 opts: trend.TrendOptions | None = None) -> FamilyTests:
    """Every ``group`` on every ``by`` (e.g. benchmark) classified four ways:

    * ``binomial``: the binomial GLM's chi-squared tests (known variance; wrong for a bounded score,
      kept for comparison);
    * ``group``: each family's own quasi-binomial scale (no power with 4 models; for comparison);
    * ``pooled``: one scale per benchmark, pooled over its families (``trend.pooled_dispersion``);
    * ``pooled_without``: the same with ``left_out`` excluded from the scale (and still tested).

    A benchmark in ``scores`` holds bounded scores, not counts: its estimated scales are not floored at 1.
    The families compared are those the binomial scheme can test (3 distinct x), the same in every scheme.
    """
    import pandas as pd

    opts = opts or trend.TrendOptions()
    scores = tuple(scores)
    rows, disp_rows = [], []
    for bench, g in df.groupby(by, sort=True):
        floor = bench not in scores
        pooled = trend.pooled_dispersion(g, x, y, n, group, source=str(bench), floor=floor)
        top, share = pooled.largest()
        without = (trend.pooled_dispersion(g[g[group] != left_out], x, y, n, group, source=str(bench), floor=floor)
                   if left_out else pooled)
        for name, how in (("binomial", "binomial"), ("group", "group"), ("pooled", pooled),
                          ("pooled_without", without)):
            res = trend.classify_groups(g, x, y, n, group, opts, source=str(bench), dispersion=how,
                                        floor=floor if name != "binomial" else True)
            rows += trend.frame(res, **{by: bench}, scheme=name).to_dict("records")
        left_chi2 = dict((c[0], c[1]) for c in pooled.contributions).get(left_out, 0.0)
        disp_rows.append({by: bench, "n": int(g[n].iloc[0]), "scale": pooled.scale, "raw": pooled.raw,
                          "df": pooled.df, "floored": pooled.floored, "score": not floor, "largest": top,
                          "share": share, "left_out_share": left_chi2 / pooled.pearson_chi2,
                          "scale_without": without.scale, "floored_without": without.floored})
    table = pd.DataFrame(rows)
    keys = table[(table.scheme == "binomial") & (table.trend != "insufficient")][[by, "group"]]
    tests = {name: trend.adjust_trends(g.merge(keys, on=[by, "group"]), alpha=opts.alpha).set_index([by, "group"])
             for name, g in table.groupby("scheme")}
    return FamilyTests(tests=tests, dispersion=pd.DataFrame(disp_rows).set_index(by), left_out=left_out,
                       scores=scores)


def evaluate_family(models, tasks: dict, opts=None):
    """Each model (a ``scalinglab.inverse_scaling.adapters`` LM) scored on each task's validated rows with the
    prize's scoring: one row per (model, task) with ``scoring.evaluate_rows``'s summary and the Wilson
    interval of the accuracy (``ci_low``, ``ci_high``)."""
    import pandas as pd

    from scalinglab.inverse_scaling import scoring

    opts = opts or scoring.ScoreOptions()
    rows = []
    for lm in models:
        for name, task_rows in tasks.items():
            _, s = scoring.evaluate_rows(lm, task_rows, opts)
            rows.append(dict(model=lm.name, params=lm.params, task=name, **s))
    out = pd.DataFrame(rows)
    if len(out) and "accuracy" in out:
        out["ci_low"], out["ci_high"] = wilson_interval(out.accuracy, out.n)
    return out
