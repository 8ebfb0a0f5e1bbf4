"""`scalinglab trend`: classify scaling trends in a CSV (positive, inverse, U-shaped, inverted-U, curved, unresolved,
flat)."""

from __future__ import annotations

import json

# Kept here rather than imported from scalinglab.inverse_scaling.trend, whose import path is heavier than the CLI's start allows.
DISPERSIONS = ("binomial", "group", "pooled")
ADJUSTMENTS = ("fdr_bh", "holm", "none")


def register(sub) -> None:
    p = sub.add_parser(
        "trend",
        help="classify each group's accuracy-vs-scale trend by a binomial GLM test",
        description="Binomial GLMs (logit) of accuracy against log10(x): constant, linear, quadratic. Flat unless "
                    "the quadratic beats the constant (LR test, 2 df); then U-shaped / inverted-U if the "
                    "quadratic term is significant with its vertex inside the observed x range and the curve "
                    "turns (two-lines test), else positive or inverse by the slope's sign when the linear slope is "
                    "significant, curved when only the curvature is, and unresolved when neither is (a trend "
                    "of undetermined shape: the joint test passes, neither 1-df test does). With several groups, "
                    "p_trend is also adjusted for multiple testing (trend_adj: the call after adjustment).",
    )
    p.add_argument("csv", help="a CSV with one row per model")
    p.add_argument("--x-col", required=True, help="scale column: compute or parameters (positive)")
    p.add_argument("--y-col", required=True, help="accuracy column, in [0, 1]")
    p.add_argument("--n-col", required=True, help="number of examples behind each accuracy")
    p.add_argument("--group-col", default=None, help="classify each value of this column separately")
    p.add_argument("--alpha", type=float, default=0.05, help="significance level (default 0.05)")
    p.add_argument("--dispersion", choices=DISPERSIONS, default="binomial",
                   help="binomial: sampling noise only (default); pooled: one quasi-binomial scale from all "
                        "groups' quadratic fits (Pearson chi2 / sum of n_i - 3), F tests on that df; "
                        "group: each group's own scale (no power with 4 or 5 points). A scale estimated below 1 "
                        "is floored at 1, the binomial variance, and then tested as binomial (chi2 tests)")
    p.add_argument("--adjust", choices=ADJUSTMENTS, default="fdr_bh",
                   help="multiple-testing adjustment of p_trend across groups: Benjamini-Hochberg (default), "
                        "Holm, or none")
    p.add_argument("--json", action="store_true", help="print a JSON array, one object per group")
    p.set_defaults(func=_trend)


def _trend(args) -> int:
    from pathlib import Path

    import pandas as pd

    from scalinglab.errors import UserError
    from scalinglab.inverse_scaling.trend import TrendOptions, adjust_trends, classify_groups, pooled_dispersion

    path = Path(args.csv)
    if not path.is_file():
        raise UserError(f"{path}: no such file")
    if not 0 < args.alpha < 1:
        raise UserError(f"--alpha must lie in (0, 1), got {args.alpha}")
    try:
        df = pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: not a readable CSV ({str(exc).splitlines()[0]})") from None
    dispersion = args.dispersion
    try:
        if dispersion == "pooled":
            dispersion = pooled_dispersion(df, args.x_col, args.y_col, args.n_col, args.group_col, source=str(path))
        results = classify_groups(df, args.x_col, args.y_col, args.n_col, args.group_col,
                                  TrendOptions(alpha=args.alpha), source=str(path), dispersion=dispersion)
    except UserError as exc:  # name the file the bad value came from
        msg = str(exc)
        raise UserError(msg if msg.startswith(str(path)) else f"{path}: {msg}") from None
    if not results:  # every row lacked a group value (or there were no rows)
        raise UserError(f"{path}: no rows with a value in column {args.group_col!r}")
    table = pd.DataFrame([r.as_dict() for r in results])
    if args.adjust != "none":
        table = adjust_trends(table, alpha=args.alpha, method=args.adjust)
    rows = table.to_dict(orient="records")
    if args.json:
        from scalinglab.harness.workbook import _jsonable

        print(json.dumps(_jsonable(rows), indent=2, allow_nan=False))  # NaN (untestable groups) -> null
        return 0
    width = max(len(str(r["group"])) for r in rows)
    adj = args.adjust != "none"
    print(f"{'group':<{width}}  {'trend':<12} {'points':>6} {'scale':>7} {'p_trend':>9} "
          + (f"{'p_adj':>9} {'trend_adj':<12} " if adj else "") + f"{'p_linear':>9} {'p_quad':>9}")
    for r in rows:
        print(f"{r['group']!s:<{width}}  {r['trend']:<12} {r['n_points']:>6} {r['scale']:>7.3g} {r['p_trend']:>9.3g} "
              + (f"{r['p_trend_adj']:>9.3g} {r['trend_adj']:<12} " if adj else "")
              + f"{r['p_linear']:>9.3g} {r['p_quadratic']:>9.3g}")
    if args.dispersion == "pooled":
        d = dispersion
        print(f"pooled dispersion: Pearson chi2 / df = {d.raw:.3g} on {d.df:g} residual df from {d.n_groups} groups' "
              "quadratic fits; " + ("below 1, so the scale is floored at 1 (the binomial variance, known) and the "
                                    "tests are the binomial chi2 tests" if d.floored
                                    else f"scale {d.scale:.3g}, F(2, {d.df:g}) and F(1, {d.df:g}) tests"))
    elif args.dispersion == "group":
        floored = [r["group"] for r in rows if str(r["dispersion"]).endswith("(floored: binomial tests)")]
        if floored:
            print(f"group dispersion: {len(floored)} group(s) with an own scale below 1, floored at 1 and tested as "
                  f"binomial (chi2 tests): {', '.join(map(str, floored))}")
    if adj:
        print(f"p_adj: {args.adjust} over {int(table.p_trend.notna().sum())} tests; trend_adj is flat where "
              f"p_adj >= {args.alpha}")
    return 0
