"""`scalinglab design runs.csv --target C --budget-left B`: the next runs that most shrink N_opt's interval."""

from __future__ import annotations

from scalinglab.cli.flags import said


def register(sub) -> None:
    from scalinglab.cli import flags

    p = sub.add_parser(
        "design", help="propose the next k runs (6ND within the compute left) that most shrink N_opt's interval",
        description="Fit the runs done so far (with a bootstrap), then propose the next --k runs, each with "
                    "6ND <= budget-left/k, that most shrink the interval of N_opt at the --target budget, by "
                    "simulation: new losses drawn from bootstrap laws plus residual noise, the augmented table "
                    "refitted, the interval measured. --proposal scores your own grid the same way.")
    flags.add_source(p, "the runs done so far, one row per run")
    flags.add_columns(p, "n", "d", "c", "loss")
    flags.add_where(p)
    p.add_argument("--target", type=float, required=True, metavar="C", help="the budget (FLOP) N_opt is wanted at")
    p.add_argument("--budget-left", type=float, required=True, metavar="B", help="compute left to spend (FLOP)")
    p.add_argument("--k", type=int, default=3, help="how many runs to propose (default 3)")
    p.add_argument("--proposal", metavar="CSV", help="also score these runs (columns N and D, or --c-col)")
    p.add_argument("--sims", type=int, default=8, metavar="S", help="simulated worlds per candidate (default 8)")
    p.add_argument("--resamples", type=int, default=48, metavar="M",
                   help="bootstrap resamples per simulated world (default 48)")
    flags.add_resampling(p, flags.BOOTSTRAP_FOR_INTERVALS, "of the runs so far, the current fit's replicates the "
                         "simulated laws are drawn from; --level is that of the N_opt interval whose width is the "
                         "criterion (0.8 is steadier than 0.95 with few --resamples)")
    flags.add_delta(p)
    flags.add_json(p)
    p.set_defaults(func=_run)


def _proposal(path: str, args):

    from scalinglab.cli.tables import named_row
    from scalinglab.errors import UserError
    from scalinglab.fitting.chinchilla.approach3 import chinchilla_arrays
    from scalinglab.runs import read_table

    table = read_table(path)
    try:   # runs not trained yet: N and D (or C) only
        N, D, _, _ = chinchilla_arrays(table, None, args.n_col or "N", args.d_col or "D", None, c_col=args.c_col)
    except UserError as exc:
        raise UserError(f"{path}: {named_row(exc, table)}") from None
    return N, D


def _run(args) -> int:
    import sys

    from scalinglab.cli.compare import read_runs
    from scalinglab.cli.tables import check_delta, check_level, check_resampling
    from scalinglab.errors import UserError
    from scalinglab.fitting.chinchilla import approach3 as F
    from scalinglab.fitting.laws.base import fit_law
    from scalinglab.fitting.options import FitOptions
    from scalinglab.fitting.studies.design import check_proposal, design
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
    N, D, L, _ = read_runs(args.csv or args.dataset, args, dataset=not args.csv)
    progress = sys.stderr.isatty()
    try:
        res = fit_law(F.CHINCHILLA, {"n": N, "d": D}, L, FitOptions(delta=check_delta(args.delta)).with_resampling(
                      args.bootstrap, seed=args.seed), progress=progress)
    except UserError as exc:
        raise UserError(f"{args.csv or args.dataset}: {said(exc)}") from None
    out = design(res, N, D, L, target=args.target, budget_left=args.budget_left, k=args.k, proposal=proposal,
                 proposal_source=args.proposal or "", n_sims=args.sims, n_resamples=args.resamples, level=args.level,
                 seed=args.seed, progress=progress)
    print(dumps(out.to_dict()) if args.json else out.summary())
    return 0
