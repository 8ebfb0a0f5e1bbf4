"""`scalinglab fit-curve` and `scalinglab predict-curve`: whole loss curves under learning-rate schedules.

fit-curve fits a curve law (the multi-power law of Luo et al. 2025, Tissue et al. 2024's annealing law, or a
power law in steps) to a table of (run, step, lr, loss) rows (``scalinglab.curves.report.fit_table``);
predict-curve predicts a schedule from a saved fit (``predict_schedule``). numpy, pandas and scipy load inside
the commands; torch never.
"""

from __future__ import annotations

from scalinglab.cli import flags
from scalinglab.cli.tables import check_level
from scalinglab.runs import read_frame

LAWS = ("multipower", "tissue", "baseline")   # mirrors scalinglab.curves.laws.LAWS (tests check it)


def register(sub) -> None:
    _register_fit(sub)
    _register_predict(sub)


def _register_fit(sub) -> None:

    p = sub.add_parser("fit-curve", help="fit a loss-curve law to (run, step, lr, loss) rows",
                       description="Fit a law of the whole loss curve under its learning-rate schedule to a table "
                                   "with one row per (run, step): step counts the steps done, lr is that step's "
                                   "rate, loss the loss after it (empty where none was logged). Rates between rows "
                                   "are interpolated linearly, unless --schedule gives a run's every step. One "
                                   "parameter set for all runs; Huber (delta 1e-3) on log loss. --bootstrap K "
                                   "resamples blocks of consecutive steps' residuals (a parameter-only band); "
                                   "--calibrate leaves each run (a schedule) out in turn for an interval that holds "
                                   "the misfit on a new schedule.")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("csv", nargs="?", help="a CSV with columns run, step, lr, loss")
    flags.add_dataset(src, "a registered curve (repeatable; Luo et al.'s mpl-* sets: each is one run)", repeatable=True)
    p.add_argument("--law", default="multipower", choices=LAWS,
                   help="multipower (Luo et al. 2025, default), tissue (Tissue et al. 2024), baseline (power law "
                        "in steps)")
    p.add_argument("--schedule", action="append", metavar="SPEC",
                   help="a run's exact schedule, step by step (repeatable): a CSV of run, step, lr rows (every step, "
                        "or rows interpolated), or [RUN=]NAME:key=value,... as predict-curve reads it (no RUN=: "
                        "every run); the table's lr column, where given, must agree. --dataset mpl-* rebuilds "
                        "Luo et al.'s schedules itself")
    p.add_argument("--calibrate", action="store_true",
                   help="also calibrate the interval on schedules the fit never saw: each run left out in turn, "
                        "the law refitted on the others, the last tenth of its logged losses predicted; a random "
                        "effect per run gives the interval predict-curve shows for a new schedule (needs 3 runs)")
    flags.add_where(p)
    flags.add_resampling(p, flags.BOOTSTRAP_ON_REQUEST, "of blocks of consecutive steps' residuals")
    flags.add_json(p, "print the fit's JSON (to_dict)")
    flags.add_plot(p, "draw the curves, the fit and its intervals to PATH", metavar="PATH")
    flags.add_save(p, "save the fit (JSON) for predict-curve --fit", metavar="PATH")
    p.set_defaults(func=_fit)


def _register_predict(sub) -> None:
    q = sub.add_parser("predict-curve", help="predict a schedule's loss curve from a saved curve fit",
                       description="Predict the loss curve of a learning-rate schedule from a fit saved by "
                                   "`fit-curve --save`: the schedule by name with parameters, e.g. "
                                   "'wsd:peak=3e-4,cooldown=0.2,steps=24000' (Luo et al.'s names: constant, "
                                   "cosine, wsd (geometric cooldown), wsdld (linear cooldown), step; keys peak, "
                                   "steps, warmup, cooldown, floor, drop_at, drop_factor), or a CSV of one run's "
                                   "(run, step, lr) rows. The calibrated interval when the fit was saved with "
                                   "--calibrate; else the parameter-only band when it was bootstrapped.")
    q.add_argument("schedule", help="NAME:key=value,... or a CSV file with columns run, step, lr")
    q.add_argument("--fit", required=True, metavar="PATH", help="a fit saved by fit-curve --save")
    q.add_argument("--at", metavar="STEPS", help="comma-separated steps to predict (default: 12 spread over the run)")
    flags.add_json(q, "print the prediction's JSON (to_dict)")
    flags.add_plot(q, "draw the predicted curve and its interval to PATH", metavar="PATH")
    q.set_defaults(func=_predict)


def _fit(args) -> int:
    from scalinglab.curves.report import fit_source
    from scalinglab.files import check_outputs
    from scalinglab.serialization import dumps

    check_level(args.level)
    inputs = [args.csv] + [s for s in args.schedule or [] if ":" not in s]
    check_outputs({"--plot": args.plot, "--save": args.save}, inputs)
    report = fit_source(args.csv, datasets=args.dataset or (), schedules=args.schedule or (), where=args.where,
                        law=args.law, n_boot=args.bootstrap, seed=args.seed, level=args.level,
                        calibrate=args.calibrate, read=read_frame)
    if args.save:
        report.save(args.save)
    if args.plot:
        report.plot(args.plot)
    print(dumps(report.to_dict()) if args.json else report.summary())
    return 0


def _predict(args) -> int:
    import math

    from scalinglab.curves.report import predict_schedule
    from scalinglab.errors import UserError
    from scalinglab.serialization import dumps

    at = None
    if args.at:
        try:
            steps = [float(s) for s in args.at.split(",")]
        except ValueError:
            raise UserError(f"--at {args.at!r}: not comma-separated step numbers") from None
        bad = [s for s in steps if not (math.isfinite(s) and s == round(s) and 1 <= s <= 1e15)]
        if bad:   # 100.5 was predicted and printed as step 100
            raise UserError(f"--at {args.at!r}: step {bad[0]:g} is not a whole number of steps >= 1")
        at = [int(s) for s in steps]
    table = read_frame(args.schedule) if ":" not in args.schedule else None
    pred = predict_schedule(args.fit, args.schedule, at=at, table=table)
    if args.plot:
        pred.plot(args.plot)
    print(dumps(pred.to_dict()) if args.json else pred.summary())
    return 0
