"""`scalinglab isoflop`: Hoffmann's Approach 2 on a table of runs.

Each budget's optimal N comes from ``scalinglab.fitting.isoflop.budget_optima`` and the
exponent a of N_opt ∝ C^a from ``isoflop.fit_exponent``; this module only reads
the table, selects rows, splits it into groups and prints. pandas is imported
inside the command (the optima need it), never at the top, and torch never.
"""

from __future__ import annotations

from scalinglab.cli.tables import (
    check_level,
    check_resampling,
    need_column,
    parse_group_by,
    read_csv,
    select_rows,
    split_groups,
)

DEFAULT_COLS = {"n": "N", "c": "C", "loss": "loss"}
FLAGS = {"n": "n_col", "c": "budget_col", "loss": "loss_col"}  # role -> the argparse dest naming its column
# Mirrors scalinglab.fitting.isoflop.METHODS (importing it would load pandas at the CLI's start);
# tests/test_cli_grammar.py checks that they agree.
METHODS = ("parabola", "spline")
# budget_optima's own default, passed explicitly because the check for a wrong
# --budget-col below compares against it.
MIN_POINTS = 3


def register(sub) -> None:
    p = sub.add_parser(
        "isoflop", help="each budget's optimal N and the exponent a of N_opt ∝ C^a (Approach 2)",
        description="Hoffmann et al.'s Approach 2: for each compute budget C, the minimum of loss against "
                    "log N (a parabola, or Porian et al.'s Akima spline) is that budget's optimal N; a weighted "
                    "least-squares line through log N_opt against log C gives the exponent a. Budgets whose "
                    "optimum lies at the edge of the sampled sizes, or with fewer than 3 sizes, are dropped and "
                    "listed. Intervals come from a noise bootstrap: every loss is perturbed by Gaussian noise "
                    "(by default of the size of the per-budget parabola residuals) and the optimum re-found. "
                    "Without a dataset's roles the columns default to N, C and loss.")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("csv", nargs="?", help="a CSV file with one row per run")
    src.add_argument("--dataset", metavar="NAME", help="a registered dataset (`scalinglab data list`)")
    p.add_argument("--n-col", metavar="COL", help="parameters N")
    p.add_argument("--budget-col", metavar="COL",
                   help="the nominal compute budget C each run belongs to (runs of one budget share a value; "
                        "default C, or the dataset's 'c' role)")
    p.add_argument("--loss-col", metavar="COL", help="final loss")
    p.add_argument("--method", default="parabola", choices=METHODS,
                   help="parabola in log N (Hoffmann; default) or Akima spline (Porian et al.)")
    p.add_argument("--bootstrap", type=int, default=1000, metavar="K",
                   help="noise-bootstrap draws per budget for the intervals and the fit's weights "
                        "(default 1000; 0: point estimates and an unweighted fit)")
    p.add_argument("--noise", type=float, default=None, metavar="SD",
                   help="sd of the loss noise in the bootstrap (default: pooled residual sd of per-budget parabolas)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    p.add_argument("--level", type=float, default=0.95, metavar="L",
                   help="level of the budgets' and the exponent's intervals (default 0.95)")
    p.add_argument("--group-by", metavar="COL,...",
                   help="fit each combination of these columns' values separately (e.g. source,experiment)")
    p.add_argument("--where", action="append", default=[], metavar="COND",
                   help="keep only rows matching COND, 'COL OP VALUE' with OP one of == != < <= > >= ~ "
                        "(~: contains), as in `scalinglab fit --where` (repeatable; all must hold)")
    p.add_argument("--drop-flagged", action="append", default=[], metavar="COL",
                   help="drop rows whose COL is true (true/yes/1), e.g. a QC outlier flag (repeatable)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_run)


def _source(args):
    """(table, column roles, label)."""
    if args.csv:
        return read_csv(args.csv), DEFAULT_COLS, args.csv
    from scalinglab import data

    ds = data.get(args.dataset)
    return data.load(args.dataset), ds.roles, args.dataset


def _run(args) -> int:
    import sys

    from scalinglab.errors import UserError
    from scalinglab.fitting import isoflop
    from scalinglab.fitting.analysis import IsoflopAnalysis, IsoflopGroup, group_text
    from scalinglab.serialization import dumps

    check_resampling(args)
    check_level(args.level)
    if args.noise is not None and not 0 < args.noise < float("inf"):  # also catches nan
        raise UserError(f"--noise must be a positive finite number, not {args.noise}")
    group_by = parse_group_by(args.group_by)

    df, roles, label = _source(args)
    cols = {role: getattr(args, FLAGS[role]) or roles.get(role, DEFAULT_COLS[role]) for role in DEFAULT_COLS}
    for col in group_by:
        need_column(df, col, label, "--group-by")
    df, flagged = select_rows(df, args.where, args.drop_flagged, label)
    # (labels, kept rows, number of flagged rows dropped); a group with every row
    # flagged is still listed, with nothing to fit.
    groups = [(labels, g[~flagged[g.index]], int(flagged[g.index].sum())) for labels, g in split_groups(df, group_by)]

    def named(exc: UserError, labels: dict) -> UserError:
        where = label + (f" [{group_text(labels)}]" if labels else "")
        return UserError(f"{where}: {exc}")

    # A first pass without the bootstrap is cheap and checks every value; a table
    # in which no budget has MIN_POINTS sizes almost always means --budget-col is a
    # per-run compute (e.g. 6ND) rather than the nominal budget, so say that
    # instead of letting the bootstrap complain about its noise.
    opt_kw = dict(n_col=cols["n"], c_col=cols["c"], loss_col=cols["loss"], method=args.method,
                  min_points=MIN_POINTS)
    most = {}  # group number -> the most sizes any of its budgets has
    for i, (labels, g, _) in enumerate(groups):
        if g.empty:
            continue
        try:
            most[i] = int(isoflop.budget_optima(g, **opt_kw)["n_points"].max())
        except UserError as exc:
            raise named(exc, labels) from None
    if max(most.values()) < MIN_POINTS:
        raise UserError(f"{label}: no budget in column {cols['c']!r} has {MIN_POINTS} or more sizes "
                        f"(at most {max(most.values())}); --budget-col must be the nominal budget that the runs "
                        "of one isoFLOP curve share")

    results = []
    for i, (labels, g, n_flagged) in enumerate(groups):
        if g.empty:
            results.append(IsoflopGroup.all_flagged(labels, n_flagged))
            continue
        if args.bootstrap and args.noise is None and most[i] <= MIN_POINTS:
            # budget_optima's default noise is the residual sd of per-budget parabolas,
            # which a budget of 3 sizes (a parabola's 3 coefficients) cannot give.
            raise named(UserError(f"no budget has more than {MIN_POINTS} sizes to estimate the bootstrap's "
                                  "noise from; give --noise SD (the sd of the loss between seeds) or --bootstrap 0"),
                        labels)
        optima = isoflop.budget_optima(g, **opt_kw, n_boot=args.bootstrap, seed=args.seed, noise=args.noise,
                                       level=args.level, progress=sys.stderr.isatty())
        if args.bootstrap and args.noise is None:
            _warn_misfit(g, cols, labels, isoflop)
        fit = isoflop.fit_exponent(optima, weighted=True, level=args.level)
        results.append(IsoflopGroup.from_fit(labels, len(g), n_flagged, optima, fit))

    analysis = IsoflopAnalysis(
        source=label, columns=cols, method=args.method, bootstrap=args.bootstrap, seed=args.seed, level=args.level,
        noise=args.noise if args.noise is not None else ("pooled parabola residual sd" if args.bootstrap else None),
        where=args.where, drop_flagged=args.drop_flagged, group_by=group_by, groups=results)
    print(dumps(analysis.to_dict()) if args.json else analysis.summary())  # NaN (no interval) -> null
    sys.stdout.flush()
    return 0


def _warn_misfit(g, cols, labels, isoflop) -> None:
    """Say so on stderr when the default bootstrap noise (one parabola's residual per budget) is
    mostly the parabola's misfit, not noise: then the parabola's vertex is biased by the curve's asymmetry,
    the interval does not include that bias, and the bootstrap medians move by noise the data do not have."""
    import sys

    from scalinglab.errors import UserError
    from scalinglab.fitting.analysis import group_text

    try:
        whole = isoflop.pooled_parabola_sd(isoflop.budget_groups(g, cols["n"], cols["c"], cols["loss"]), cols["loss"],
                                            cols["n"])
    except UserError:  # no budget with more than 3 sizes: the bootstrap already refused
        return
    local = isoflop.local_parabola_sd(g, cols["n"], cols["c"], cols["loss"])
    if local < isoflop.MISFIT_RATIO * whole:
        where = f" [{group_text(labels)}]" if labels else ""
        print(f"warning{where}: the bootstrap's default noise ({whole:.3g}, the per-budget parabola residual) is "
              f"mostly the parabola's misfit (residual of 5-size quadratics: {local:.3g}); the parabola's optima "
              "are then biased by the curve's asymmetry, which the intervals do not include. Give --noise SD (the "
              "seed-to-seed sd), narrow the sizes, or fit the law (scalinglab fit)", file=sys.stderr)
