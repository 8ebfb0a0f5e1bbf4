"""`scalinglab scoreboard`: a table of runs on the extrapolation benchmark's scoreboard (laws × estimators,
scored on the runs a split holds out)."""

from __future__ import annotations

from scalinglab.cli.flags import said

HOLDOUT_HELP = ("which runs to hold out: largest-budget (every run at the largest --c-col value), largest-n (the "
                "largest fifth of the model sizes), or a condition COL OP VALUE (repeat: any)")


def register(sub) -> None:
    p = sub.add_parser(
        "scoreboard", help="which law, fitted how, predicts your held-out runs: laws x estimators, scored",
        description="Fit every applicable law x estimator (Chinchilla by Approach 3 and by variable projection, "
                    "Kaplan's and Gadre et al.'s forms, the data-constrained form with --u-col, and Approach 2's "
                    "parabola and spline with --c-col) and the naive baselines (a power law in C; with budgets also "
                    "the last budget's optimum carried forward) to the runs a --holdout split keeps, and score each "
                    "on the runs it holds out: RMSLE, the share of held-out units inside a calibrated interval "
                    "(fitted one training unit below each, forward by scale) beside the bootstrap's parameter-only "
                    "one, and with budgets N_opt and L_min against the held-out budget's own optimum. Units, not "
                    "runs, are counted: on isoFLOP runs a budget is one unit, so a one-budget hold-out is one unit; "
                    "entries are ranked (a paired bootstrap over units) only with at least 5 held-out units, else "
                    "'not ranked'.")
    from scalinglab.cli import flags

    flags.add_source(p)
    p.add_argument("--holdout", action="append", required=True, metavar="WAY", help=HOLDOUT_HELP)
    flags.add_columns(p, "n", "d", "c", "loss", "u", alternatives=False,
                      detail={"d": "without it D = C/(6N)", "c": "the isoFLOP budget each run belongs to (adds "
                              "Approach 2)"},
                      defaults={"d": "the dataset's role, else D", "c": "the dataset's role"})
    p.add_argument("--unit-col", metavar="COL",
                   help="the independent unit: rows sharing a value of COL share a misfit and count once (e.g. N: "
                        "a model read at several token counts); default: the budget on isoFLOP runs (--c-col with "
                        "shared budgets), else each run")
    flags.add_where(p)
    flags.add_resampling(p, flags.BOOTSTRAP_FOR_INTERVALS, "the paired bootstrap of the held-out units that decides "
                         "ties")
    p.add_argument("--fit-bootstrap", type=int, default=100, metavar="K",
                   help="row-bootstrap refits behind the parameter-only intervals (Approach 3, law engine; 0: none)")
    flags.add_json(p)
    flags.add_plot(p, "also write a figure of the held-out RMSLEs to FILE (.png, .pdf or "
                                                  ".svg)")
    p.set_defaults(func=_run)


def _run(args) -> int:
    from scalinglab.benchmark import scoreboard as S
    from scalinglab.cli.tables import check_level, check_level_supported
    from scalinglab.errors import UserError
    from scalinglab.files import check_outputs
    from scalinglab.fitting.plot import check_plot_path, save_figure
    from scalinglab.runs import read_frame
    from scalinglab.serialization import dumps

    check_level(args.level)
    if args.plot:
        check_outputs({"--plot": args.plot}, [args.csv])
        check_plot_path(args.plot)
    if args.fit_bootstrap < 0:
        raise UserError(f"--fit-bootstrap {args.fit_bootstrap}: give 0 (no parameter-only interval) or more")
    if args.bootstrap < 1:
        raise UserError(f"--bootstrap {args.bootstrap}: the paired interval that decides ties needs resamples")
    check_level_supported(args.bootstrap, args.level)
    if args.dataset:
        from scalinglab import data

        roles, label, table = data.get(args.dataset).roles, args.dataset, data.load(args.dataset)
    else:
        roles, label, table = {}, args.csv, read_frame(args.csv)
    holdout = args.holdout[0] if args.holdout[0] in ("largest-budget", "largest-n") else args.holdout
    c = args.c_col or roles.get("c")
    d = args.d_col or roles.get("d") or (None if c else "D")
    try:
        board = S.score_runs(table, holdout, n=args.n_col or roles.get("n", "N"), d=d, c=c,
                             loss=args.loss_col or roles.get("loss", "loss"), u=args.u_col, unit=args.unit_col,
                             where=args.where, n_boot=args.bootstrap, seed=args.seed, level=args.level,
                             fit_boot=args.fit_bootstrap, name=label)
    except UserError as exc:
        raise UserError(f"{label}: {said(exc)}") from None
    if args.plot:
        save_figure(args.plot, S.figure(board))
    print(dumps({"source": label, **board.to_dict()}) if args.json else board.summary())
    return 0

