"""`scalinglab compare a.csv b.csv`: fit the same law to two systems' runs; paired-bootstrap differences."""

from __future__ import annotations


def add_table_flags(p) -> None:
    """The column flags `compare` and `design` share with `fit`."""
    p.add_argument("--n-col", metavar="COL", default="N", help="parameters N (default N)")
    cols = p.add_mutually_exclusive_group()
    cols.add_argument("--d-col", metavar="COL", help="training tokens D (default D)")
    cols.add_argument("--c-col", metavar="COL", help="training compute C in FLOP; D = C/(6N)")
    p.add_argument("--loss-col", metavar="COL", default="loss", help="final loss (default loss)")


def read_runs(path: str, args, groups: str | None = None):
    """(N, D, L, group labels or None) from a CSV, errors naming the file."""
    import numpy as np

    from scalinglab.cli.tables import named_row
    from scalinglab.errors import UserError
    from scalinglab.fitting import approach3 as F
    from scalinglab.runs import read_table

    table = read_table(path)
    try:
        N, D, L, _ = F.runs_from_table(table, args.n_col, None if args.c_col else (args.d_col or "D"),
                                       args.loss_col, c_col=args.c_col)
        labels = None
        if groups:
            if groups not in table:
                raise UserError(f"--bootstrap-by: no column {groups!r}; the table has {', '.join(table)}")
            labels = np.asarray(table[groups])
    except UserError as exc:
        raise UserError(f"{path}: {named_row(exc, table)}") from None
    return N, D, L, labels


def register(sub) -> None:
    p = sub.add_parser(
        "compare", help="which system scales better: one law fitted to two tables, paired-bootstrap differences",
        description="Fit L(N, D) = E + A/N^alpha + B/D^beta to two systems' (or recipes') runs and print the "
                    "differences a - b in alpha, beta and a (N_opt ∝ C^a), and at each --compute budget the N_opt "
                    "ratio, the loss difference and P(a better than b), with bootstrap intervals. When both "
                    "tables hold the same (N, D) design, replicates resample the same design points in both "
                    "(paired); otherwise each table is resampled on its own (independent). The output says which.")
    p.add_argument("a", help="system a: a CSV with one row per run")
    p.add_argument("b", help="system b: a CSV with the same columns")
    add_table_flags(p)
    p.add_argument("--compute", action="append", type=float, metavar="C",
                   help="a budget (FLOP) to compare N_opt and the loss at; repeat for several")
    p.add_argument("--bootstrap", type=int, default=1000, metavar="K", help="bootstrap replicates (default 1000)")
    p.add_argument("--bootstrap-by", metavar="COL",
                   help="resample whole groups of rows named by COL in each table (e.g. a run's checkpoints); "
                        "the tables are then resampled independently")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    p.add_argument("--level", type=float, default=0.95, metavar="L", help="interval level (default 0.95)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_run)


def _run(args) -> int:
    import sys

    import numpy as np

    from scalinglab.cli.tables import check_level, check_resampling
    from scalinglab.errors import UserError
    from scalinglab.fitting.compare import compare
    from scalinglab.serialization import dumps

    check_resampling(args)
    check_level(args.level)
    if args.compute:
        from scalinglab.fitting.allocation import check_budgets

        check_budgets(args.compute)
    a, b = (read_runs(path, args, args.bootstrap_by) for path in (args.a, args.b))
    if all(np.array_equal(np.asarray(x, float), np.asarray(y, float)) for x, y in zip(a[:3], b[:3])):
        # The same runs twice: every difference is exactly 0 and "P(a better than b) = 0.000" would read as a verdict.
        raise UserError(f"{args.a} and {args.b} hold the same runs (N, D and loss equal row by row): there is "
                        "nothing to compare")
    res = compare(a[:3], b[:3], labels=(args.a, args.b), budgets=args.compute or (), n_boot=args.bootstrap,
                  seed=args.seed, level=args.level, groups=(a[3], b[3]), unit=args.bootstrap_by or "groups",
                  progress=sys.stderr.isatty())
    print(dumps(res.to_dict()) if args.json else res.summary())
    return 0
