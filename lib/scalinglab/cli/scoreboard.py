"""`scalinglab scoreboard`: a table of runs on the extrapolation benchmark's scoreboard (laws × estimators,
scored on the runs a split holds out)."""

from __future__ import annotations

HOLDOUT_HELP = ("which runs to hold out: largest-budget (every run at the largest --c-col value), largest-n (the "
                "largest fifth of the model sizes), or a condition COL OP VALUE (repeat: any)")


def register(sub) -> None:
    p = sub.add_parser(
        "scoreboard", help="which law, fitted how, predicts your held-out runs: laws x estimators, scored",
        description="Fit every applicable law x estimator (Chinchilla by Approach 3 and by variable projection, "
                    "Kaplan's and Gadre et al.'s forms, the data-constrained form with --u-col, and Approach 2's "
                    "parabola and spline with --c-col) to the runs a --holdout split keeps, and score each on the "
                    "runs it holds out: RMSLE, coverage of the new-run interval, and with budgets N_opt and the "
                    "exponent a. A paired bootstrap of the held-out errors says which entries tie with the best.")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("csv", nargs="?", help="a CSV file with one row per run")
    src.add_argument("--dataset", metavar="NAME", help="a registered dataset (`scalinglab data list`)")
    p.add_argument("--holdout", action="append", required=True, metavar="WAY", help=HOLDOUT_HELP)
    p.add_argument("--n-col", metavar="COL", help="parameters N (default N, or the dataset's role)")
    p.add_argument("--d-col", metavar="COL", help="training tokens D (default D, or the dataset's role)")
    p.add_argument("--c-col", metavar="COL", help="the isoFLOP budget C of each run (D = C/6N without --d-col)")
    p.add_argument("--loss-col", metavar="COL", help="final loss (default loss, or the dataset's role)")
    p.add_argument("--u-col", metavar="COL", help="unique tokens (adds the data-constrained law)")
    p.add_argument("--unit-col", metavar="COL",
                   help="the paired bootstrap draws whole values of COL (e.g. N: a model read at several token "
                        "counts); default: each held-out run on its own")
    p.add_argument("--where", action="append", metavar="COND", help="use only rows matching COND (repeat: all)")
    p.add_argument("--bootstrap", type=int, default=2000, metavar="K",
                   help="paired-bootstrap resamples of the held-out units (default 2000)")
    p.add_argument("--seed", type=int, default=0, help="seed of the paired bootstrap (default 0)")
    p.add_argument("--level", type=float, default=0.95, metavar="L", help="level of the intervals (default 0.95)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--plot", metavar="PATH", help="write a figure of the held-out RMSLEs (.png, .pdf or .svg)")
    p.set_defaults(func=_run)


def _run(args) -> int:
    from scalinglab.benchmark import scoreboard as S
    from scalinglab.cli.tables import check_level, check_level_supported, read_csv
    from scalinglab.errors import UserError
    from scalinglab.files import check_outputs
    from scalinglab.fitting.plot import check_plot_path, save_figure
    from scalinglab.serialization import dumps

    check_level(args.level)
    if args.plot:
        check_outputs({"--plot": args.plot}, [args.csv])
        check_plot_path(args.plot)
    if args.bootstrap < 1:
        raise UserError(f"--bootstrap {args.bootstrap}: the paired interval that decides ties needs resamples")
    check_level_supported(args.bootstrap, args.level)
    roles, label = {}, args.csv
    if args.dataset:
        from scalinglab import data

        roles, label, table = data.get(args.dataset).roles, args.dataset, data.load(args.dataset)
    else:
        table = read_csv(args.csv)
    holdout = args.holdout[0] if args.holdout[0] in ("largest-budget", "largest-n") else args.holdout
    c = args.c_col or roles.get("c")
    d = args.d_col or roles.get("d") or (None if c else "D")
    try:
        board = S.score_runs(table, holdout, n=args.n_col or roles.get("n", "N"), d=d, c=c,
                             loss=args.loss_col or roles.get("loss", "loss"), u=args.u_col, unit=args.unit_col,
                             where=args.where, n_boot=args.bootstrap, seed=args.seed, level=args.level, name=label)
    except UserError as exc:
        raise UserError(f"{label}: {exc}") from None
    if args.plot:
        save_figure(args.plot, S.figure(board))
    print(dumps({"source": label, **board.to_dict()}) if args.json else board.summary())
    return 0
