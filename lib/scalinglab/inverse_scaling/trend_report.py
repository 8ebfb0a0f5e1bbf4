"""What `scalinglab trend` reports for a table of accuracies: every group's trend call (``inverse_scaling.trend``)
with the dispersion scheme and, over many groups, adjusted p-values, as one result with ``summary()`` and
``to_dict()``."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from scalinglab.errors import UserError
from scalinglab.inverse_scaling.trend import (
    ADJUSTMENTS,
    DISPERSIONS,
    Dispersion,
    TrendOptions,
    _check_dispersion,
    adjust_trends,
    classify_groups,
    frame,
    pooled_dispersion,
)
from scalinglab.serialization import to_jsonable


@dataclass(frozen=True)
class TrendReport:
    """Every group's TrendResult as `scalinglab trend` reports them: the table (``frame``, with
    ``p_trend_adj`` and ``trend_adj`` when adjusted), the dispersion scheme and the adjustment."""

    table: Any                        # DataFrame, one row per group
    alpha: float = 0.05
    adjust: str = "fdr_bh"            # one of ADJUSTMENTS, or "none"
    dispersion: str = "binomial"      # the scheme asked for (DISPERSIONS)
    pooled: Dispersion | None = None  # the pooled scale, with dispersion "pooled"

    def records(self) -> list[dict]:
        """One JSON-ready dict per group (what `scalinglab trend --json` prints)."""
        return to_jsonable(self.table.to_dict(orient="records"))

    def to_dict(self) -> dict:
        return to_jsonable({"alpha": self.alpha, "adjust": self.adjust, "dispersion": self.dispersion,
                            "pooled": None if self.pooled is None else asdict(self.pooled),
                            "groups": self.records()})

    def summary(self) -> str:
        """The table `scalinglab trend` prints, then what the dispersion and the adjustment did."""
        rows = self.table.to_dict(orient="records")
        width = max(len(str(r["group"])) for r in rows)
        adj = self.adjust != "none"
        lines = [f"{'group':<{width}}  {'trend':<12} {'points':>6} {'scale':>7} {'p_trend':>9} "
                 + (f"{'p_adj':>9} {'trend_adj':<12} " if adj else "") + f"{'p_linear':>9} {'p_quad':>9}"]
        for r in rows:
            lines.append(f"{r['group']!s:<{width}}  {r['trend']:<12} {r['n_points']:>6} {r['scale']:>7.3g} "
                         f"{r['p_trend']:>9.3g} "
                         + (f"{r['p_trend_adj']:>9.3g} {r['trend_adj']:<12} " if adj else "")
                         + f"{r['p_linear']:>9.3g} {r['p_quadratic']:>9.3g}")
        if self.dispersion == "pooled" and self.pooled is not None:
            d = self.pooled
            lines.append(f"pooled dispersion: Pearson chi2 / df = {d.raw:.3g} on {d.df:g} residual df from "
                         f"{d.n_groups} groups' quadratic fits; "
                         + ("below 1, so the scale is floored at 1 (the binomial variance, known) and the tests "
                            "are the binomial chi2 tests" if d.floored
                            else f"scale {d.scale:.3g}, F(2, {d.df:g}) and F(1, {d.df:g}) tests"))
        elif self.dispersion == "group":
            floored = [r["group"] for r in rows if str(r["dispersion"]).endswith("(floored: binomial tests)")]
            if floored:
                lines.append(f"group dispersion: {len(floored)} group(s) with an own scale below 1, floored at 1 "
                             f"and tested as binomial (chi2 tests): {', '.join(map(str, floored))}")
        if adj:
            lines.append(f"p_adj: {self.adjust} over {int(self.table.p_trend.notna().sum())} tests; trend_adj is "
                         f"flat where p_adj >= {self.alpha}")
        return "\n".join(lines)


def trend_report(df, x_col: str, y_col: str, count_col: str, group_col: str | None = None,
                 opts: TrendOptions | None = None, source: str = "table", dispersion: str = "binomial",
                 adjust: str = "fdr_bh") -> TrendReport:
    """``classify_groups`` on a table, with ``adjust_trends`` across its groups (``adjust="none"``: not
    adjusted): what `scalinglab trend` prints. ``count_col``: the examples behind each accuracy."""
    opts = opts or TrendOptions()
    _check_dispersion(dispersion, DISPERSIONS)
    if adjust != "none" and adjust not in ADJUSTMENTS:
        raise UserError(f"unknown p-value adjustment {adjust!r}; choose from {', '.join(ADJUSTMENTS)} or none")
    pooled = pooled_dispersion(df, x_col, y_col, count_col, group_col, source=source) if dispersion == "pooled" \
        else None
    results = classify_groups(df, x_col, y_col, count_col, group_col, opts, source=source,
                              dispersion=pooled or dispersion)
    if not results:  # every row lacked a group value (or there were no rows)
        raise UserError(f"{source}: no rows with a value in column {group_col!r}")
    table = frame(results)
    if adjust != "none":
        table = adjust_trends(table, alpha=opts.alpha, method=adjust)
    return TrendReport(table=table, alpha=opts.alpha, adjust=adjust, dispersion=dispersion, pooled=pooled)
