"""`scalinglab fit`: fit L(N, D) = E + A/N^alpha + B/D^beta to a table of runs, Hoffmann's way.

The start stays fast: numpy and the fit itself, no pandas or scipy for a CSV
(the file is read with the csv module), never torch; matplotlib only for --plot.
"""

from __future__ import annotations

import sys

from scalinglab.cli import flags
from scalinglab.cli.flags import said


def register(sub) -> None:
    p = sub.add_parser(
        "fit", help="fit the Chinchilla law L(N,D) = E + A/N^alpha + B/D^beta to your runs",
        description="Fit L(N, D) = E + A/N^alpha + B/D^beta with Hoffmann et al.'s method (log-space "
                    "Huber loss, delta 1e-3, summed; 4,500-start grid). Give D per run (--d-col) or "
                    "training compute (--c-col, D = C/(6N)). Without a dataset's roles the columns "
                    "default to N, D and loss.")

    flags.add_source(p)
    flags.add_columns(p, "n", "d", "c", "loss", "u", "x", "y")
    p.add_argument("--drop-highest", type=int, default=0, metavar="K",
                   help="drop the K highest-loss rows first (Epoch's protocol drops 5; default 0)")
    flags.add_resampling(p, flags.BOOTSTRAP_ON_REQUEST, "of the runs (rows), refitted for standard errors and "
                         "percentile intervals", by=True)
    flags.add_where(p)
    _add_fit_flags(p)
    flags.add_delta(p)
    flags.add_json(p)
    p.add_argument("--law", default="chinchilla", metavar="NAME",
                   help="the functional form: chinchilla (default), kaplan, data_constrained, gadre, saturating, "
                        "broken, downstream, logit (see docs/cli.md); flags a law has no use for are refused")
    p.set_defaults(func=_run)


def _add_fit_flags(p) -> None:
    """What `fit` does beyond fitting: hold out or predict runs, allocate compute, constrain, plot, save."""
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
    p.add_argument("--tie", action="append", metavar="NAME=OTHER",
                   help="hold parameter NAME equal to OTHER, or to a formula of the parameters (numbers, names, "
                        "+ - * / ** exp log sqrt), for any law (e.g. --tie Rstar_N=Rstar_D with --law "
                        "data_constrained, --tie 'alpha_D=2*alpha_N' with --law kaplan); repeat for several. "
                        "Chinchilla's Newton solver takes only beta=alpha (--tie-exponents); --solver least-squares "
                        "takes any formula")
    _add_solver_flags(p)
    flags.add_plot(p, "also draw the runs against the fitted law (loss vs compute with the law for several N, "
                        "and the residuals; held-out runs marked) to FILE: .png, .pdf or .svg")
    flags.add_save(p, "also save the fit (law, bootstrap draws, options, the fitted runs and their hash) to FILE, "
                        "a .slfit file that `scalinglab predict` and `allocate` reload without refitting")


def _add_solver_flags(p) -> None:
    """Which estimator fits, and where Chinchilla's Newton solver starts."""
    p.add_argument("--solver", choices=law_solvers(), metavar="NAME",
                   help="the estimator, one of "
                        f"{', '.join(law_solvers())}; default the law's own (chinchilla-newton for Chinchilla's "
                        "law, least-squares for the others). least-squares fits Chinchilla's form by scipy's "
                        "least squares from a grid in the free parameters, taking any --tie formula")
    p.add_argument("--start", choices=("grid", "varpro"), default="grid",
                   help="where Chinchilla's Newton solver (chinchilla-newton) starts: grid (Hoffmann's 4,500 "
                        "starts; default) or varpro (one start, the optimum of the least-squares solver varpro: "
                        "alpha and beta searched, E, A and B by non-negative least squares; then the same Huber "
                        "fit; the same optimum on Epoch's rows, faster: bench/bench_varpro.py). Not with --fix")


def law_solvers() -> tuple[str, ...]:
    """The solvers a law's fit can name (``fitting.solvers``' entries that return a ``LawFit``)."""
    from scalinglab.fitting.solvers import SOLVERS

    return tuple(s.name for s in SOLVERS.values() if s.result == "LawFit")


def _newton(args):
    """Chinchilla's Newton solver's settings from --start (None: its defaults)."""
    from scalinglab.fitting.chinchilla.settings import NewtonSettings

    start = getattr(args, "start", "grid")
    return None if start == "grid" else NewtonSettings(start=start)


def _chinchilla_options(args):
    """(FitOptions, fixed) for Chinchilla's solver from --fix, --tie, --tie-exponents, --start and --delta, or a
    UserError naming the flag and the value."""
    from scalinglab.cli.law_flags import parse_fix, parse_tie
    from scalinglab.cli.tables import check_delta
    from scalinglab.errors import UserError
    from scalinglab.fitting.chinchilla.approach3 import CHINCHILLA
    from scalinglab.fitting.chinchilla.settings import fixed_value, parametrisation
    from scalinglab.fitting.options import FitOptions

    fixed = list(parse_fix(args.fix, CHINCHILLA, value=fixed_value).items())   # its solver's rules for the values
    delta = check_delta(getattr(args, "delta", None))
    tied = parse_tie(getattr(args, "tie", None), CHINCHILLA)
    held = {k: v for k, v in fixed if k in ("alpha", "beta")}
    pair = {k: v for k, v in tied if k in ("alpha", "beta")}   # --tie's ties of an exponent
    try:
        if args.tie_exponents:   # beta = alpha, Chinchilla's one tie; --tie may say it too, not otherwise
            other = {k: v for k, v in pair.items() if v.strip() != ("beta" if k == "alpha" else "alpha")}
            if other:
                k, v = next(iter(other.items()))
                raise UserError(f"--tie-exponents holds beta = alpha, but --tie gives {k} = {v}: give one of them")
            if len(held) == 2 and held["alpha"] != held["beta"]:
                raise UserError(f"tied exponents need alpha = beta, but they are fixed at {held['alpha']!r} and "
                                f"{held['beta']!r}")
            if len(held) < 2 and not pair:
                # With one exponent held, the tie holds the other at its value (the law's tie resolution).
                tied = (*tied, ("alpha", "beta") if "beta" in held else ("beta", "alpha"))
        options = FitOptions(fixed=fixed, settings=_newton(args), delta=delta, tied=tied,
                             solver=getattr(args, "solver", None))
        if options.solver in (None, "chinchilla-newton"):
            parametrisation(options)  # its Newton solver ties beta to alpha only: say so before reading the runs
        return options, dict(options.fixed)
    except UserError as exc:  # a combination: twice the same name, a tie against two values, nothing free
        flags = " ".join([f"--fix {t}" for t in args.fix or []] + [f"--tie {t}" for t in args.tie or []]
                         + (["--tie-exponents"] if args.tie_exponents else []))
        raise UserError(f"{flags}: {said(exc)}") from None


def _law_options(args, law):
    """(FitOptions, fixed) for a registry law from --fix, --tie and --delta, checked before the runs are read."""
    from scalinglab.cli.law_flags import parse_fix, parse_tie
    from scalinglab.cli.tables import check_delta
    from scalinglab.errors import UserError
    from scalinglab.fitting.laws.base import check_ties
    from scalinglab.fitting.options import FitOptions

    fixed = parse_fix(args.fix, law)
    tied = parse_tie(args.tie, law)
    try:
        options = FitOptions(delta=check_delta(args.delta), tied=tied, solver=args.solver)
        check_ties(law, options.tied, fixed)   # a parameter fixed and tied, a circle
    except UserError as exc:
        given = " ".join([f"--fix {t}" for t in args.fix or []] + [f"--tie {t}" for t in args.tie or []])
        raise UserError(f"{given}: {said(exc)}") from None
    return options, fixed


def _request(args, law):
    """The fit asked for, every flag checked before anything is read: a bad flag is the user's first problem."""
    from dataclasses import replace

    from scalinglab.cli.law_flags import refuse_fit_flags
    from scalinglab.cli.tables import check_level, check_resampling
    from scalinglab.errors import UserError
    from scalinglab.fitting.options import Resampling
    from scalinglab.fitting.workflow import FitRequest

    chinchilla = law.name == "chinchilla"
    if not chinchilla:
        refuse_fit_flags(args, law)
    if args.solver:
        _check_solver(args, law)
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
    options, fixed = _chinchilla_options(args) if chinchilla else _law_options(args, law)
    options = replace(options, resampling=Resampling(args.bootstrap, args.bootstrap_by, args.seed, args.level))
    return FitRequest(law, None, options, fixed, args.drop_highest, tuple(args.compute or ()),
                      progress=args.bootstrap > 0 and sys.stderr.isatty(), calibrate=bool(args.save))


def _check_solver(args, law) -> None:
    """--solver against the law and the flags only Chinchilla's Newton solver takes, before the runs are read."""
    from scalinglab.errors import UserError
    from scalinglab.fitting.solvers import get

    solver = get(args.solver)
    try:
        solver.check(law)
    except UserError as exc:
        raise UserError(f"--solver {args.solver}: {said(exc)}; law {law.name}'s own is {law.solver}") from None
    if solver.name != "chinchilla-newton":
        starts = "a grid of the law's own starts" if solver.generic else "Hoffmann's grid"
        if args.start != "grid":
            raise UserError(f"--start with --solver {args.solver}: --start is where the Newton solver starts; the "
                            f"{args.solver} solver starts from {starts} (drop --solver to use the law's own)")
        if args.save:
            raise UserError(f"--save with --solver {args.solver}: a saved fit is checked against the Newton "
                            "solver's optimum when it is reloaded (drop --solver to save the law's own fit)")


def _run(args) -> int:
    from dataclasses import replace

    from scalinglab.cli.law_flags import law_columns
    from scalinglab.cli.tables import named_row, predict_from
    from scalinglab.errors import UserError
    from scalinglab.files import check_outputs
    from scalinglab.fitting import laws as Lw
    from scalinglab.fitting import workflow as W
    from scalinglab.runs import load_runs, read_table
    from scalinglab.serialization import dumps

    check_outputs({"--save": args.save, "--plot": args.plot}, [args.csv, args.predict])
    law = Lw.get(args.law)
    request = _request(args, law)
    runs = load_runs(args.csv, dataset=args.dataset)
    request = replace(request, columns=law_columns(args, law, runs.roles))
    try:
        report = W.fit_runs(runs.select(args.where, args.holdout), request)
    except UserError as exc:  # name the file or dataset the bad column or value came from, and its line
        raise UserError(f"{runs.label}: {named_row(exc, runs.table)}") from None
    if args.predict:
        report = predict_from(args.predict, args.where, read_table,
                              lambda table, rows: W.predict_other(report, table, rows, args.predict))
    if args.plot:
        report = W.write_plot(report, args.plot)
    if args.save:
        report = W.write_saved(report, args.save)
    print(dumps(report.to_dict()) if args.json else report.summary())
    return report.exit_status
