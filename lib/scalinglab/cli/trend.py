"""`scalinglab trend`: classify scaling trends in a table (positive, inverse, U-shaped, inverted-U, curved,
unresolved, flat)."""

from __future__ import annotations

from scalinglab.cli.flags import said

# Kept here rather than imported from scalinglab.inverse_scaling.trend, whose import path is heavier than the CLI's
# start allows; tests/test_cli_inverse.py checks that they agree.
DISPERSIONS = ("binomial", "group", "pooled")
ADJUSTMENTS = ("fdr_bh", "holm", "none")
# CLI role -> the registry role that names its column for a --dataset.
ROLES = {"x": "x", "y": "y", "count": "count", "group": "group"}
NAMES = {"x": "scale x", "y": "accuracy", "count": "count of examples"}


def register(sub) -> None:
    from scalinglab.cli import flags

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
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("csv", nargs="?", help="a CSV with one row per model")
    flags.add_dataset(src, "a registered dataset (`scalinglab data list`); its roles x, y, count and group, where "
                          "it has them, name the columns the flags below do not")
    flags.add_columns(p, "x", "y", detail={"x": "the scale, compute or parameters (positive)",
                                           "y": "here an accuracy, in [0, 1]"},
                      default="the dataset's role; needed with a CSV")
    p.add_argument("--count-col", metavar="COL", help="number of examples behind each accuracy")
    flags.add_group_by(p, "classify each value of this column separately", metavar="COL")
    flags.add_where(p)
    p.add_argument("--alpha", type=float, default=0.05, help="significance level (default 0.05)")
    p.add_argument("--dispersion", choices=DISPERSIONS, default="binomial",
                   help="binomial: sampling noise only (default); pooled: one quasi-binomial scale from all "
                        "groups' quadratic fits (Pearson chi2 / sum of n_i - 3), F tests on that df; "
                        "group: each group's own scale (no power with 4 or 5 points). A scale estimated below 1 "
                        "is floored at 1, the binomial variance, and then tested as binomial (chi2 tests)")
    p.add_argument("--adjust", choices=ADJUSTMENTS, default="fdr_bh",
                   help="multiple-testing adjustment of p_trend across groups: Benjamini-Hochberg (default), "
                        "Holm, or none")
    flags.add_json(p, "print a JSON array, one object per group")
    p.set_defaults(func=_trend)


def _source(args):
    """(table, column roles, label): the CSV read by pandas, or a registered dataset."""

    if args.dataset:
        from scalinglab import data

        return data.load(args.dataset), data.get(args.dataset).roles, args.dataset
    from scalinglab.runs import read_frame

    return read_frame(args.csv), {}, args.csv


def _trend(args) -> int:
    from scalinglab.cli.tables import select_rows
    from scalinglab.errors import UserError
    from scalinglab.inverse_scaling.trend import TrendOptions
    from scalinglab.inverse_scaling.trend_report import trend_report
    from scalinglab.serialization import dumps

    df, roles, label = _source(args)
    if not 0 < args.alpha < 1:
        raise UserError(f"--alpha must lie in (0, 1), got {args.alpha}")
    cols = {}
    for role, registry_role in ROLES.items():
        flag = "--group-by" if role == "group" else f"--{role}-col"
        value = getattr(args, "group_by" if role == "group" else f"{role}_col") or roles.get(registry_role)
        if value is None and role != "group":
            raise UserError(f"{flag} is needed: {label} names no {role} column" if args.dataset
                            else f"{flag} is needed (the column of the {role} values)")
        cols[role] = value
    if args.where:
        df, _ = select_rows(df, args.where or [], [], label)
    _check_values(df, cols, label, from_file=not args.dataset)
    try:
        report = trend_report(df, cols["x"], cols["y"], cols["count"], cols["group"], TrendOptions(alpha=args.alpha),
                              source=label, dispersion=args.dispersion, adjust=args.adjust)
    except UserError as exc:  # name the file the bad value came from
        msg = said(exc)
        raise UserError(msg if msg.startswith(label) else f"{label}: {msg}") from None
    print(dumps(report.records()) if args.json else report.summary())  # NaN (untestable groups) -> null
    return 0


# The examples behind one accuracy: the largest benchmark here has thousands; a billion is a column mix-up.
MAX_EXAMPLES = 1e9


def _check_examples(values, what: str, where) -> None:
    """Counts of examples at most MAX_EXAMPLES: a count of 1e300 made every binomial p-value 0."""
    import numpy as np

    from scalinglab.errors import UserError

    huge = np.flatnonzero(values > MAX_EXAMPLES)
    if huge.size:
        pos = huge[0]
        raise UserError(f"{what}, {where(pos)}: {values[pos]:g} examples, at most {MAX_EXAMPLES:,.0f} (no "
                        "evaluation set has more; a count this large makes any slope significant)")


def _check_values(df, cols: dict, label: str, from_file: bool) -> None:
    """Refuse, naming the column and the row, a value the test cannot use: not a number, blank, NaN or
    infinite in x, y or count (the fit would otherwise drop the row unseen, shrinking the group and changing
    its p-values), or a count of examples that is not a whole number. Rows are named by the file's line
    (header = line 1, kept through --where) for a CSV, by position (first row = 1) for a registered dataset."""
    import numpy as np
    import pandas as pd

    from scalinglab.errors import UserError, row_name

    def where(pos: int) -> str:
        label = df.index[pos]  # kept through --where: the row's place in the whole table
        if from_file:
            return row_name(df.index, pos)
        return f"row {label + 1}" if isinstance(label, (int, np.integer)) else f"row {label!r}"

    for role in ("x", "y", "count"):
        col = cols[role]
        if col not in df.columns:
            continue  # trend_report names the missing column
        raw = df[col]
        values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float)
        for pos in np.flatnonzero(~np.isfinite(values)):
            cell = raw.iloc[pos]
            if not pd.isna(cell) and np.isnan(values[pos]):
                raise UserError(f"{label}: column {col!r} is not numeric ({where(pos)}: {str(cell).strip()!r})")
            what = "is blank or NaN" if pd.isna(cell) else f"{cell} is infinite"
            raise UserError(f"{label}: column {col!r}, {where(pos)}: {what}; every row needs a finite "
                            f"{NAMES[role]} (remove the row; none is dropped unseen)")
        if role == "count":
            frac = np.flatnonzero(values != np.round(values))
            if frac.size:
                pos = frac[0]
                raise UserError(f"{label}: column {col!r}, {where(pos)}: {values[pos]:g} is not a whole number; "
                                "the count column is the number of examples behind each accuracy")
            _check_examples(values, f"{label}: column {col!r}", where)
