"""`scalinglab fit`: fit L(N, D) = E + A/N^alpha + B/D^beta to a table of runs, Hoffmann's way.

The start stays fast: numpy and the fit itself, no pandas or scipy for a CSV
(the file is read with the csv module), never torch; matplotlib only for --plot.
"""

from __future__ import annotations

# The exit status when --compute was asked for and the fit cannot support an allocation (none is printed).
UNUSABLE = 3


def register(sub) -> None:
    p = sub.add_parser(
        "fit", help="fit the Chinchilla law L(N,D) = E + A/N^alpha + B/D^beta to your runs",
        description="Fit L(N, D) = E + A/N^alpha + B/D^beta with Hoffmann et al.'s method (log-space "
                    "Huber loss, delta 1e-3, summed; 4,500-start grid). Give D per run (--d-col) or "
                    "training compute (--c-col, D = C/(6N)). Without a dataset's roles the columns "
                    "default to N, D and loss.")
    from scalinglab.cli import flags

    flags.add_source(p)
    flags.add_columns(p, "n", "d", "c", "loss", "u", "x", "y")
    p.add_argument("--drop-highest", type=int, default=0, metavar="K",
                   help="drop the K highest-loss rows first (Epoch's protocol drops 5; default 0)")
    flags.add_resampling(p, flags.BOOTSTRAP_ON_REQUEST, "of the runs (rows), refitted for standard errors and "
                         "percentile intervals", by=True)
    flags.add_where(p)
    check = p.add_mutually_exclusive_group()
    check.add_argument("--holdout", action="append", metavar="COND",
                       help="hold out rows matching COND (e.g. 'tokens>1e11'): fit the rest, then print the "
                            "held-out runs' predicted vs actual loss; repeat to hold out rows matching any")
    check.add_argument("--predict", metavar="CSV",
                       help="fit every (selected) row, then predict the runs of another CSV with the same "
                            "columns and compare with their losses")
    p.add_argument("--compute", action="append", type=float, metavar="C",
                   help="also say what to train at compute budget C (FLOP): N_opt, D_opt, tokens per parameter "
                        "and the loss there, with intervals when bootstrapped; repeat for several budgets. A fit "
                        "that did not converge (e.g. at_bound) or whose every bootstrap resample failed gives no "
                        "allocation: it says why and exits with status 3")
    p.add_argument("--fix", action="append", metavar="NAME=VALUE",
                   help="hold a parameter at a value instead of fitting it, e.g. E=1.69 or alpha=0.34 (NAME one "
                        "of E, A, B, alpha, beta, any case); repeat for several. Each fixed parameter lowers the "
                        "runs needed by two")
    p.add_argument("--tie-exponents", action="store_true",
                   help="fit one exponent for N and D (beta = alpha, Gadre et al. 2024's form): 4 free "
                        "parameters, so 8 runs are enough; a = b = 0.5 by construction")
    flags.add_delta(p)
    p.add_argument("--solver", choices=("grid", "varpro"), default="grid",
                   help="where the Newton solver starts: grid (Hoffmann's 4,500 starts; default) or varpro (one "
                        "start from variable projection, alpha and beta searched with E, A, B by non-negative least "
                        "squares; the same optimum on Epoch's rows, faster: bench/bench_varpro.py). Not with --fix")
    p.add_argument("--plot", metavar="FILE",
                   help="also draw the runs against the fitted law (loss vs compute with the law for several N, "
                        "and the residuals; held-out runs marked) to FILE: .png, .pdf or .svg")
    p.add_argument("--save", metavar="FILE",
                   help="also save the fit (law, bootstrap draws, options, the fitted runs and their hash) to FILE, "
                        "a .slfit file that `scalinglab predict` and `allocate` reload without refitting")
    flags.add_json(p)
    p.add_argument("--law", default="chinchilla", metavar="NAME",
                   help="the functional form: chinchilla (default), kaplan, data_constrained, gadre, saturating, "
                        "broken, downstream, logit (see docs/cli.md); flags a law has no use for are refused")
    p.set_defaults(func=_run)


def _options(args):
    """FitOptions from --fix and --tie-exponents, or a UserError naming the flag and the value."""
    from scalinglab.errors import UserError
    from scalinglab.fitting import approach3 as F
    from scalinglab.fitting.options import fixed_value, param_name

    fixed = []
    for text in args.fix or []:
        name, sep, value = text.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise UserError(f"--fix {text!r}: expected NAME=VALUE with NAME one of {', '.join(F.PARAMS)}, "
                            "e.g. --fix E=1.69")
        try:
            canon = param_name(name)
            fixed.append((canon, fixed_value(canon, value.strip())))
        except UserError as exc:
            raise UserError(f"--fix {text}: {exc}") from None
    from scalinglab.cli.tables import check_delta

    delta = check_delta(getattr(args, "delta", None))
    try:
        return F.FitOptions(fixed=fixed, tie_exponents=args.tie_exponents, solver=getattr(args, "solver", "grid"),
                            delta=delta)
    except UserError as exc:  # a combination: twice the same name, a tie against two values, nothing free
        flags = " ".join([f"--fix {t}" for t in args.fix or []] + (["--tie-exponents"] if args.tie_exponents else []))
        raise UserError(f"{flags}: {exc}") from None


def _source(args):
    """(table, column roles, label) of the runs: a CSV or a registered dataset (``scalinglab.runs``)."""
    from scalinglab.runs import load_runs

    runs = load_runs(args.csv, dataset=args.dataset)
    return runs.table, runs.roles, runs.label


def _run(args) -> int:
    import sys

    import numpy as np

    from scalinglab.cli.tables import check_groups, check_level, check_resampling, named_row, no_rows, predict_from
    from scalinglab.errors import UserError
    from scalinglab.files import check_outputs
    from scalinglab.fitting import approach3 as F
    from scalinglab.runs import read_table
    from scalinglab.serialization import dumps

    check_outputs({"--save": args.save, "--plot": args.plot}, [args.csv, args.predict])
    if args.law != "chinchilla" or args.u_col or args.x_col or args.y_col:
        from scalinglab.cli.laws import run_fit

        return run_fit(args, _source, read_table)
    opts = _options(args)  # before reading anything: a bad flag is the user's first problem
    table, roles, label = _source(args)
    n_col = args.n_col or roles.get("n", "N")
    loss_col = args.loss_col or roles.get("loss", "loss")
    c_col, d_col = args.c_col, args.d_col
    if not (c_col or d_col):  # D from the roles if known, else C, else a column called D
        if "d" in roles or "c" not in roles:
            d_col = roles.get("d", "D")
        else:
            c_col = roles["c"]
    check_resampling(args)
    check_level(args.level)
    if args.bootstrap_by and not args.bootstrap:
        raise UserError(f"--bootstrap-by {args.bootstrap_by} needs --bootstrap K (how many resamples)")
    if args.compute:
        from scalinglab.fitting.allocation import check_budgets

        check_budgets(args.compute)  # before the fit: a bootstrap can take a while
    if args.plot:
        from scalinglab.fitting.plot import check_plot_path

        check_plot_path(args.plot)
    if args.save:
        from scalinglab.fitting.saved import check_save_path

        check_save_path(args.save)
    cols = dict(n_col=n_col, d_col=d_col, loss_col=loss_col, c_col=c_col)
    boot = dict(n_boot=args.bootstrap, seed=args.seed, level=args.level, progress=args.bootstrap > 0 and sys.stderr.isatty())
    check, check_label = None, label
    try:
        labels = None
        if args.bootstrap_by:
            from scalinglab.fitting import holdout as H

            labels = H.group_labels(table, args.bootstrap_by)
            check_groups(labels, args.bootstrap_by)
            boot.update(unit=args.bootstrap_by)
        if not (args.where or args.holdout or args.predict or args.bootstrap_by):
            N, D, L, names = F.runs_from_table(table, drop_highest=args.drop_highest, **cols)
            res = F.fit_arrays(N, D, L, opts, names=names, **boot)
        else:
            from scalinglab.fitting import holdout as H

            if args.holdout:
                boot.pop("unit", None)
                check = H.holdout(table, args.holdout, **cols, select=args.where, drop_highest=args.drop_highest,
                                  options=opts, groups=args.bootstrap_by, **boot)
                res = check.fit
                N, D, L = H.runs_at(table, check.train_rows, **cols)[:3]
            else:
                rows = np.flatnonzero(H.where(table, args.where))
                if not rows.size:
                    raise UserError(no_rows(args.where))
                N, D, L, names = H.runs_at(table, rows, **cols)
                keep = F.keep_below_highest(L, args.drop_highest)
                N, D, L = N[keep], D[keep], L[keep]
                groups = None if labels is None else labels[rows][keep]
                res = F.fit_arrays(N, D, L, opts, names=names, groups=groups, **boot)
    except UserError as exc:  # name the file or dataset the bad column or value came from, and its line
        raise UserError(f"{label}: {named_row(exc, table)}") from None
    if args.predict:
        from scalinglab.fitting.forecast import residual_sd

        check_label = args.predict
        sigma = residual_sd(res, N, D, L)
        check = predict_from(args.predict, args.where, read_table, lambda other, rows: H.predict(
            res, *H.runs_at(other, rows, **cols)[:3], rows=rows, sigma=sigma))
    if c_col and np.nanmin(D) < 1:  # fewer than one token per run: C is not training compute in FLOP
        raise UserError(f"{label}: --c-col {c_col}: D = C/(6N) is below one token in {int((D < 1).sum())} of "
                        f"{len(D)} runs (smallest C {np.nanmin(np.asarray(D) * 6 * np.asarray(N)):.3g}); the column "
                        "must hold each run's training compute in FLOP")
    predictions = getattr(check, "heldout", check)
    from scalinglab.fitting import forecast

    if predictions is not None:  # each held-out or predicted run's distance from the fitted runs
        predictions = forecast.with_domain(predictions, N, D)
        if args.holdout:
            from dataclasses import replace

            check = replace(check, heldout=predictions)
    allocation, unusable = allocations_or_problem(res, args.compute, N, D, L) if args.compute else (None, None)
    if args.plot:
        from scalinglab.fitting.plot import save_fit_figure

        others = None if predictions is None else (predictions.N, predictions.D, predictions.actual)
        what = "held out" if args.holdout else f"from {check_label}"
        save_fit_figure(args.plot, res, N, D, L, others=others, others_label=what, title=label)
    if args.save:
        from scalinglab.fitting import saved

        saved.save(args.save, saved.SavedFit(res, np.asarray(N, float), np.asarray(D, float), np.asarray(L, float),
                                             columns=cols, source=label, n_dropped=args.drop_highest))
    if args.json:
        out = {"source": label, "n_dropped": args.drop_highest, **res.to_dict()}
        if args.plot:
            out["plot"] = args.plot
        if args.save:
            out["saved"] = args.save
        if args.where:
            out["where"] = list(args.where)
        if args.holdout:
            out["holdout"] = check.to_dict()
        elif args.predict:
            out["predict"] = {"source": args.predict, **predictions.to_dict()}
        if allocation:
            out["compute_optimal"] = allocation
        elif unusable:
            out["compute_optimal"] = None
            out["compute_optimal_unusable"] = unusable
        # NaN (an SE from under two replicates) becomes null: bare NaN is not JSON.
        print(dumps(out))
    else:
        print(res.summary(label, args.drop_highest))
        if allocation:
            print()
            print(forecast.allocation_text(allocation))
        elif unusable:
            print()
            print(f"compute-optimal allocation: none, the fit cannot support one ({unusable}); exit status {UNUSABLE}")
        if predictions is not None:
            what = (f"held out ({' or '.join(args.holdout)})" if args.holdout else f"predicted from {check_label}")
            print()
            print(predictions.summary(what, res.n_rows))
        if args.plot:
            print()
            print(f"plot written to {args.plot}")
        if args.save:
            print()
            print(f"fit saved to {args.save}")
    return UNUSABLE if unusable else 0


def allocations_or_problem(res, compute, N, D, L) -> tuple[list | None, str | None]:
    """(``forecast.allocations`` at each budget, None) when the fit supports an allocation, else (None, why).
    The fit's status is checked before the allocation is computed: a law at a bound (all losses equal, say)
    can overflow on the way to an N_opt."""
    from scalinglab.fitting import forecast

    problem = _allocation_problem(res, ())
    if problem:
        return None, problem
    try:
        rows = forecast.allocations(res, compute, N, D, L)
    except (OverflowError, ZeroDivisionError) as exc:   # Python floats overflow where numpy gives inf
        return None, f"the law gives no finite allocation ({exc})"
    problem = _allocation_problem(res, rows)
    return (None, problem) if problem else (rows, None)


def _allocation_problem(res, allocation) -> str | None:
    """Why the fit cannot give a compute-optimal allocation, or None when it can: a fit that did not converge
    (a parameter at a bound, a term that vanished, the iteration limit), a bootstrap whose every resample
    failed, or an allocation that is not a finite positive N and D."""
    import math

    if res.status != "converged":
        bound = f" ({', '.join(res.at_bound)} at a bound)" if getattr(res, "at_bound", ()) else ""
        return f"fit status {res.status}{bound}"
    bs = res.bootstrap
    if bs is not None and bs.n_boot and not len(bs.samples):
        return f"all {bs.n_boot} bootstrap resamples failed"
    for row in allocation:
        if not all(math.isfinite(row[k]) and row[k] > 0 for k in ("n_opt", "d_opt")):
            return f"N_opt {row['n_opt']:.3g}, D_opt {row['d_opt']:.3g} at C = {row['C']:.3g}"
    return None
