"""`scalinglab design runs.csv --target C --budget-left B`: the next runs that most shrink N_opt's interval."""

from __future__ import annotations


def register(sub) -> None:
    from scalinglab.cli.compare import add_table_flags

    p = sub.add_parser(
        "design", help="propose the next k runs (6ND within the compute left) that most shrink N_opt's interval",
        description="Fit the runs done so far (with a bootstrap), then propose the next --k runs, each with "
                    "6ND <= budget-left/k, that most shrink the interval of N_opt at the --target budget, by "
                    "simulation: new losses drawn from bootstrap laws plus residual noise, the augmented table "
                    "refitted, the interval measured. --proposal scores your own grid the same way.")
    p.add_argument("csv", help="the runs done so far, one row per run")
    add_table_flags(p)
    p.add_argument("--target", type=float, required=True, metavar="C", help="the budget (FLOP) N_opt is wanted at")
    p.add_argument("--budget-left", type=float, required=True, metavar="B", help="compute left to spend (FLOP)")
    p.add_argument("--k", type=int, default=3, help="how many runs to propose (default 3)")
    p.add_argument("--proposal", metavar="CSV", help="also score these runs (columns N and D, or --c-col)")
    p.add_argument("--bootstrap", type=int, default=200, metavar="K",
                   help="bootstrap of the current fit the simulated laws are drawn from (default 200)")
    p.add_argument("--sims", type=int, default=8, metavar="S", help="simulated worlds per candidate (default 8)")
    p.add_argument("--resamples", type=int, default=48, metavar="M",
                   help="bootstrap resamples per simulated world (default 48)")
    p.add_argument("--seed", type=int, default=0, help="seed (default 0)")
    p.add_argument("--level", type=float, default=0.8, metavar="L",
                   help="level of the N_opt interval whose width is the criterion (default 0.8: steadier than "
                        "0.95 with few resamples)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_run)


def _proposal(path: str, args):

    from scalinglab.cli.tables import named_row
    from scalinglab.errors import UserError
    from scalinglab.fitting import approach3 as F
    from scalinglab.runs import read_table

    table = read_table(path)
    col = args.c_col or args.d_col or "D"
    try:
        for c in (args.n_col, col):
            if c not in table:
                raise UserError(f"no column {c!r}; the table has {', '.join(table)}")
        N, X = F._column(table, args.n_col), F._column(table, col)
        F.positive_logs(N, args.n_col)
        F.positive_logs(X, col)
    except UserError as exc:
        raise UserError(f"{path}: {named_row(exc, table)}") from None
    return N, X / (6 * N) if args.c_col else X


def _run(args) -> int:
    import sys

    from scalinglab.cli.compare import read_runs
    from scalinglab.cli.tables import check_level, check_resampling
    from scalinglab.errors import UserError
    from scalinglab.fitting import approach3 as F
    from scalinglab.fitting.design import check_proposal, design
    from scalinglab.serialization import dumps

    check_resampling(args)
    check_level(args.level)
    from scalinglab.fitting.allocation import check_budgets

    check_budgets([args.target, args.budget_left])
    for flag, v, lo in (("--k", args.k, 1), ("--sims", args.sims, 1), ("--resamples", args.resamples, 10),
                        ("--bootstrap", args.bootstrap, 2)):
        if v < lo:
            raise UserError(f"{flag} must be at least {lo}, not {v}")
    proposal = _proposal(args.proposal, args) if args.proposal else None
    if proposal is not None:  # before the fit: a bootstrap takes a while
        check_proposal(*proposal, args.budget_left, args.proposal)
    N, D, L, _ = read_runs(args.csv, args)
    progress = sys.stderr.isatty()
    try:
        res = F.fit_arrays(N, D, L, n_boot=args.bootstrap, seed=args.seed, progress=progress)
    except UserError as exc:
        raise UserError(f"{args.csv}: {exc}") from None
    out = design(res, N, D, L, target=args.target, budget_left=args.budget_left, k=args.k, proposal=proposal,
                 proposal_source=args.proposal or "", n_sims=args.sims, n_resamples=args.resamples, level=args.level,
                 seed=args.seed, progress=progress)
    print(dumps(out.to_dict()) if args.json else out.summary())
    return 0
