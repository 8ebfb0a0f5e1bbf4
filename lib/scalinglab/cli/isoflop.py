"""`scalinglab isoflop`: Hoffmann's Approach 2 on a table of runs.

Each budget's optimal N comes from ``scalinglab.fitting.frontier.isoflop.budget_optima`` and the
exponent a of N_opt ∝ C^a from ``isoflop.fit_exponent``; this module only reads
the table, selects rows, splits it into groups and prints. pandas is imported
inside the command (the optima need it), never at the top, and torch never.
"""

from __future__ import annotations

from scalinglab.cli.tables import (
    check_level,
    check_resampling,
    need_column,
    parse_group_by,
    select_rows,
    split_groups,
)
from scalinglab.runs import read_frame

DEFAULT_COLS = {"n": "N", "c": "C", "loss": "loss"}
FLAGS = {"n": "n_col", "c": "budget_col", "loss": "loss_col"}  # role -> the argparse dest naming its column
# Mirrors scalinglab.fitting.frontier.isoflop.METHODS (importing it would load pandas at the CLI's start);
# tests/test_cli_grammar.py checks that they agree.
METHODS = ("parabola", "spline")
# budget_optima's own default, passed explicitly because the check for a wrong
# --budget-col below compares against it.
MIN_POINTS = 3


def register(sub) -> None:
    from scalinglab.cli import flags

    p = sub.add_parser(
        "isoflop", help="each budget's optimal N and the exponent a of N_opt ∝ C^a (Approach 2)",
        description="Hoffmann et al.'s Approach 2: for each compute budget C, the minimum of loss against "
                    "log N (a parabola, or Porian et al.'s Akima spline) is that budget's optimal N; a weighted "
                    "least-squares line through log N_opt against log C gives the exponent a. Budgets whose "
                    "optimum lies at the edge of the sampled sizes, or with fewer than 3 sizes, are dropped and "
                    "listed. Intervals come from a noise bootstrap: every loss is perturbed by Gaussian noise "
                    "(by default of the size of the per-budget parabola residuals) and the optimum re-found. "
                    "Without a dataset's roles the columns default to N, C and loss.")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("csv", nargs="?", help="a CSV file with one row per run")
    flags.add_dataset(src)
    flags.add_columns(p, "n", "loss")
    p.add_argument("--budget-col", metavar="COL",
                   help="the nominal compute budget C each run belongs to (runs of one budget share a value; "
                        "default C, or the dataset's 'c' role)")
    p.add_argument("--method", default="parabola", choices=METHODS,
                   help="parabola in log N (Hoffmann; default) or Akima spline (Porian et al.)")
    flags.add_bootstrap(p, 1000, "noise-bootstrap draws per budget for the intervals and the fit's weights "
                        "(default 1000; 0: point estimates and an unweighted fit)")
    p.add_argument("--noise", type=float, default=None, metavar="SD",
                   help="sd of the loss noise in the bootstrap (default: pooled residual sd of per-budget parabolas)")
    flags.add_seed(p)
    flags.add_level(p, "the budgets' and the exponent's intervals")
    flags.add_group_by(p, "fit each combination of these columns' values separately (e.g. source,experiment)")
    flags.add_where(p)
    p.add_argument("--drop-flagged", action="append", default=[], metavar="COL",
                   help="drop rows whose COL is true (true/yes/1), e.g. a QC outlier flag (repeatable)")
    flags.add_json(p, "print one JSON object")
    p.set_defaults(func=_run)


def _source(args):
    """(table, column roles, label)."""
    if args.csv:
        return read_frame(args.csv), DEFAULT_COLS, args.csv
    from scalinglab import data

    ds = data.get(args.dataset)
    return data.load(args.dataset), ds.roles, args.dataset


def _run(args) -> int:
    import sys
    from dataclasses import replace

    from scalinglab.errors import UserError
    from scalinglab.fitting.frontier.analysis import isoflop_analysis
    from scalinglab.serialization import dumps

    check_resampling(args)
    check_level(args.level)
    if args.noise is not None and not 0 < args.noise < float("inf"):  # also catches nan
        raise UserError(f"--noise must be a positive finite number, not {args.noise}")
    group_by = parse_group_by(args.group_by)

    df, roles, label = _source(args)
    cols = {role: getattr(args, FLAGS[role]) or roles.get(role, DEFAULT_COLS[role]) for role in DEFAULT_COLS}
    for col in group_by:
        need_column(df, col, label, "--group-by")
    df, flagged = select_rows(df, args.where or [], args.drop_flagged, label)
    # (labels, kept rows, number of flagged rows dropped); a group with every row
    # flagged is still listed, with nothing to fit.
    groups = [(labels, g[~flagged[g.index]], int(flagged[g.index].sum())) for labels, g in split_groups(df, group_by)]

    noise = args.noise if args.noise is not None else ("pooled parabola residual sd" if args.bootstrap else None)
    analysis, warnings = isoflop_analysis(
        groups, label, cols, method=args.method, n_boot=args.bootstrap, seed=args.seed, noise=args.noise,
        level=args.level, min_points=MIN_POINTS, progress=sys.stderr.isatty())
    for text in warnings:
        print(text, file=sys.stderr)
    analysis = replace(analysis, noise=noise, where=args.where or [], drop_flagged=args.drop_flagged,
                       group_by=group_by)
    print(dumps(analysis.to_dict()) if args.json else analysis.summary())  # NaN (no interval) -> null
    sys.stdout.flush()
    return 0
