"""`scalinglab chain`: task accuracy from a ladder of small runs (N, D → task loss → accuracy); `scalinglab
translate`: a saved loss law carried to another dataset through a loss-to-loss fit."""

from __future__ import annotations

STEP2_LAWS = ("sigmoid", "logit")   # scalinglab.downstream.chain.STEP2_LAWS (kept here: the CLI starts light)


def register(sub) -> None:
    from scalinglab.cli import flags

    p = sub.add_parser(
        "chain", help="predict task accuracy at target (N, D) from ladder runs: N, D → task loss → accuracy",
        description="Bhagia et al. 2024's two steps. Step 1 fits a loss law of N and D to each run's task loss "
                    "(the mean of its last --last evaluations); step 2 fits accuracy against task loss on every "
                    "evaluation after the first --skip share of each run, smoothed by a --smooth-point trailing "
                    "mean, with the point (loss 0, accuracy 1). The input has one row per evaluation: a run "
                    "column, n, d (tokens so far) and per task TASK_loss and TASK_acc (a fraction in [0, 1]). "
                    "A target whose predicted loss lies below every ladder loss gets a warning with the distance.")
    p.add_argument("csv", help="a CSV of ladder evaluations, one row per (run, checkpoint)")
    p.add_argument("--targets", metavar="CSV", required=True,
                   help="a CSV with n and d per target (and a run label, and TASK_acc to compare, if known)")
    p.add_argument("--tasks", metavar="T1,T2", required=True, help="task names: columns TASK_loss and TASK_acc")
    p.add_argument("--score", action="store_true", help="the targets must carry each task's accuracy column")
    flags.add_where(p)
    p.add_argument("--last", type=int, default=5, help="step 1: evaluations averaged at each run's end (5)")
    p.add_argument("--skip", type=float, default=0.1, help="step 2: share of each run's first evaluations dropped")
    p.add_argument("--smooth", type=int, default=5, help="step 2: trailing-mean width (5; 1 for none)")
    p.add_argument("--step1-law", default="chinchilla", help="a registered loss law of N and D (`scalinglab fit "
                                                              "--law`); default chinchilla")
    p.add_argument("--step2-law", choices=STEP2_LAWS, default="sigmoid", help="accuracy from loss (sigmoid)")
    p.add_argument("--no-anchor", action="store_true", help="leave out the (loss 0, accuracy 1) point")
    flags.add_resampling(p, flags.BOOTSTRAP_ON_REQUEST, "of whole ladder runs, both steps refitted")
    flags.add_json(p)
    flags.add_plot(p, "write accuracy against task loss, the sigmoid and the targets", metavar="PNG")
    p.set_defaults(func=_chain)
    _register_translate(sub)


def _register_translate(sub) -> None:
    from scalinglab.cli import flags

    t = sub.add_parser(
        "translate", help="carry a saved loss law to another dataset through a loss-to-loss fit",
        description="Brandfonbrener et al. 2024: models trained on two datasets with the same N and D lie on "
                    "L1 = K (L0 - E0)^kappa + E1. E0 is the saved law's E; K, kappa (and E1 unless --e1) are "
                    "fitted to the pairs; the target dataset's loss at each (n, d) of --targets follows.")
    t.add_argument("fit", help="a .slfit file written by `scalinglab fit --save` (Chinchilla's law)")
    t.add_argument("csv", help="a CSV of model pairs: the source model's loss and the target model's")
    t.add_argument("--x-col", metavar="COL", required=True, help="the source dataset's loss column")
    t.add_argument("--y-col", metavar="COL", required=True, help="the target dataset's loss column")
    t.add_argument("--targets", metavar="CSV", required=True, help="a CSV with n and d at which to predict")
    t.add_argument("--loss-col", metavar="COL", help="the targets' actual losses on the target dataset, if known")
    t.add_argument("--e1", type=float, help="the target dataset's irreducible loss, if known (else fitted)")
    flags.add_where(t)
    flags.add_json(t)
    t.set_defaults(func=_translate)


def _chain(args) -> int:
    from scalinglab.cli.tables import check_level, check_resampling, select_rows
    from scalinglab.downstream.report import ChainOptions, chain_report
    from scalinglab.runs import read_frame
    from scalinglab.serialization import dumps

    check_resampling(args)
    check_level(args.level)
    runs, targets = read_frame(args.csv), read_frame(args.targets)
    if args.where:
        runs, _ = select_rows(runs, args.where, [], args.csv)
    opts = ChainOptions(last=args.last, skip=args.skip, smooth=args.smooth, step1_law=args.step1_law,
                        step2_law=args.step2_law, anchor=not args.no_anchor, n_boot=args.bootstrap, seed=args.seed,
                        level=args.level)
    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    report = chain_report(runs, targets, tasks, opts, label=args.csv, target_label=args.targets, score=args.score)
    if args.plot:
        from scalinglab.downstream.plot import plot_report

        plot_report(report, args.plot)
    print(dumps(report.to_dict()) if args.json else report.summary())
    return 0


def _translate(args) -> int:
    from scalinglab.cli.tables import select_rows
    from scalinglab.downstream.report import translate_saved
    from scalinglab.fitting import saved
    from scalinglab.runs import read_frame
    from scalinglab.serialization import dumps

    params = dict(saved.load(args.fit).result.params)
    pairs, targets = read_frame(args.csv), read_frame(args.targets)
    if args.where:
        pairs, _ = select_rows(pairs, args.where, [], args.csv)
    res = translate_saved(params, args.fit, pairs, args.x_col, args.y_col, targets, e1=args.e1,
                          actual=args.loss_col, label=args.csv)
    print(dumps(res.to_dict()) if args.json else res.summary())
    return 0
