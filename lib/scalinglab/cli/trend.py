"""`scalinglab trend`: classify scaling trends (positive, inverse, U-shaped, inverted-U, flat) in a CSV."""

from __future__ import annotations

import json


def register(sub) -> None:
    p = sub.add_parser(
        "trend",
        help="classify each group's accuracy-vs-scale trend by a binomial GLM test",
        description="Binomial GLMs (logit) of accuracy against log10(x): constant, linear, quadratic. Flat unless "
                    "the quadratic beats the constant (LR test, 2 df); then U-shaped / inverted-U if the "
                    "quadratic term is significant with its vertex inside the observed x range, else positive "
                    "or inverse by the slope's sign.",
    )
    p.add_argument("csv", help="a CSV with one row per model")
    p.add_argument("--x-col", required=True, help="scale column: compute or parameters (positive)")
    p.add_argument("--y-col", required=True, help="accuracy column, in [0, 1]")
    p.add_argument("--n-col", required=True, help="number of examples behind each accuracy")
    p.add_argument("--group-col", default=None, help="classify each value of this column separately")
    p.add_argument("--alpha", type=float, default=0.05, help="significance level (default 0.05)")
    p.add_argument("--overdispersion", action="store_true",
                   help="quasi-binomial: inflate the binomial variance by the Pearson scale (needs >= 4 points)")
    p.add_argument("--json", action="store_true", help="print a JSON array, one object per group")
    p.set_defaults(func=_trend)


def _trend(args) -> int:
    from pathlib import Path

    import pandas as pd

    from scalinglab.errors import UserError
    from scalinglab.trend import TrendOptions, classify_groups

    path = Path(args.csv)
    if not path.is_file():
        raise UserError(f"{path}: no such file")
    if not 0 < args.alpha < 1:
        raise UserError(f"--alpha must lie in (0, 1), got {args.alpha}")
    try:
        df = pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: not a readable CSV ({str(exc).splitlines()[0]})") from None
    try:
        results = classify_groups(df, args.x_col, args.y_col, args.n_col, args.group_col,
                                  TrendOptions(alpha=args.alpha, overdispersion=args.overdispersion), source=str(path))
    except UserError as exc:  # name the file the bad value came from
        msg = str(exc)
        raise UserError(msg if msg.startswith(str(path)) else f"{path}: {msg}") from None
    if not results:  # every row lacked a group value (or there were no rows)
        raise UserError(f"{path}: no rows with a value in column {args.group_col!r}")
    rows = [r.as_dict() for r in results]
    if args.json:
        from scalinglab.workbook import _jsonable

        print(json.dumps(_jsonable(rows), indent=2, allow_nan=False))  # NaN (untestable groups) -> null
        return 0
    width = max(len(r["group"]) for r in rows)
    print(f"{'group':<{width}}  {'trend':<12} {'points':>6} {'p_trend':>9} {'p_linear':>9} {'p_quad':>9}")
    for r in rows:
        print(f"{r['group']:<{width}}  {r['trend']:<12} {r['n_points']:>6} {r['p_trend']:>9.3g} "
              f"{r['p_linear']:>9.3g} {r['p_quadratic']:>9.3g}")
    return 0
