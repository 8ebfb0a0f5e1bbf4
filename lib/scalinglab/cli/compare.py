"""`scalinglab compare a.csv b.csv`: fit the same law to two systems' runs; paired-bootstrap differences."""

from __future__ import annotations


def read_runs(source: str, args, groups: str | None = None, dataset: bool = False):
    """(N, D, L, group labels or None) of the rows ``--where`` keeps, from a CSV (or a registered dataset),
    errors naming the file and line. Columns: the flags, else the dataset's roles, else N, D (or C), loss."""
    import numpy as np

    from scalinglab.cli.tables import named_row
    from scalinglab.errors import UserError
    from scalinglab.fitting.laws.table import Columns
    from scalinglab.fitting.studies import holdout as H
    from scalinglab.runs import load_runs

    runs = load_runs(None, dataset=source) if dataset else load_runs(source)
    table, roles = runs.table, runs.roles
    c = Columns.from_roles(roles, {"n": args.n_col, "d": args.d_col, "c": args.c_col, "loss": args.loss_col})
    cols = dict(n_col=c.n, d_col=None if c.c else c.d, loss_col=c.loss, c_col=c.c)
    try:
        rows = runs.select(args.where).rows
        N, D, L, _ = H.runs_at(table, rows, **cols)
        labels = None
        if groups:
            if groups not in table:
                raise UserError(f"--bootstrap-by: no column {groups!r}; the table has {', '.join(table)}")
            labels = np.asarray(table[groups])[rows]
    except UserError as exc:
        raise UserError(f"{runs.label}: {named_row(exc, table)}") from None
    return N, D, L, labels


def register(sub) -> None:
    p = sub.add_parser(
        "compare", help="which system scales better: one law fitted to two tables, paired-bootstrap differences",
        description="Fit L(N, D) = E + A/N^alpha + B/D^beta to two systems' (or recipes') runs and print the "
                    "differences a - b in alpha, beta and a (N_opt ∝ C^a), and at each --compute budget the N_opt "
                    "ratio, the loss difference and P(a better than b), with bootstrap intervals. When both "
                    "tables hold the same (N, D) design, replicates resample the same design points in both "
                    "(paired); otherwise each table is resampled on its own (independent). The output says which.")
    from scalinglab.cli import flags

    p.add_argument("csv", nargs="*", metavar="CSV", help="systems a and b: two CSVs with one row per run and the same "
                                                          "columns (or --dataset twice, or one of each)")
    flags.add_dataset(p, "a registered dataset as one of the two systems (`scalinglab data list`); repeatable",
                      repeatable=True)
    flags.add_columns(p, "n", "d", "c", "loss")
    flags.add_where(p)
    p.add_argument("--compute", action="append", type=float, metavar="C",
                   help="a budget (FLOP) to compare N_opt and the loss at; repeat for several")
    flags.add_resampling(p, flags.BOOTSTRAP_FOR_INTERVALS, "paired or independent resamples of the two tables' "
                         "runs (with --bootstrap-by, of whole groups, independently)", by=True)
    flags.add_delta(p)
    flags.add_json(p)
    p.set_defaults(func=_run)


def _run(args) -> int:
    import sys

    import numpy as np

    from scalinglab.cli.tables import check_delta, check_level, check_resampling
    from scalinglab.errors import UserError
    from scalinglab.fitting.options import FitOptions
    from scalinglab.fitting.studies.systems import compare
    from scalinglab.serialization import dumps

    check_resampling(args)
    check_level(args.level)
    if args.compute:
        from scalinglab.fitting.allocation import check_budgets

        check_budgets(args.compute)
    sources = [(s, False) for s in args.csv] + [(s, True) for s in args.dataset or []]
    if len(sources) != 2:
        raise UserError(f"compare needs two systems (two CSVs, --dataset twice, or one of each), got {len(sources)}")
    options = FitOptions(delta=check_delta(args.delta))
    a, b = (read_runs(src, args, args.bootstrap_by, dataset=ds) for src, ds in sources)
    (la, _), (lb, _) = sources
    if all(np.array_equal(np.asarray(x, float), np.asarray(y, float)) for x, y in zip(a[:3], b[:3])):
        # The same runs twice: every difference is exactly 0 and "P(a better than b) = 0.000" would read as a verdict.
        raise UserError(f"{la} and {lb} hold the same runs (N, D and loss equal row by row): there is "
                        "nothing to compare")
    res = compare(a[:3], b[:3], labels=(la, lb), budgets=args.compute or (), n_boot=args.bootstrap,
                  seed=args.seed, level=args.level, groups=(a[3], b[3]), unit=args.bootstrap_by or "groups",
                  options=options, progress=sys.stderr.isatty())
    print(dumps(res.to_dict()) if args.json else res.summary())
    return 0
