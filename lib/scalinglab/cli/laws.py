"""`scalinglab fit --law NAME` for the registry's laws other than Chinchilla, and what compare-laws shares.

Which flags make sense depends on the law: its inputs (N and D or C, unique
tokens U, one variable x, the loss as input) and its target (the loss or a
downstream metric). A flag that does not fit the law is refused with a
one-line reason (exit 2), never ignored.
"""

from __future__ import annotations

ROLE_FLAGS = {"n": "--n-col", "d": "--d-col", "u": "--u-col", "x": "--x-col"}


def law_columns(args, law, roles):
    """``Columns`` for ``law`` from the flags and the dataset's roles, refusing flags the law has no use for."""
    from scalinglab.errors import UserError
    from scalinglab.fitting.laws import Columns

    given = {"--n-col": args.n_col, "--d-col": args.d_col, "--c-col": args.c_col, "--u-col": args.u_col,
             "--x-col": args.x_col, "--y-col": args.y_col, "--loss-col": args.loss_col}
    uses = {ROLE_FLAGS[r] for r in law.inputs if r in ROLE_FLAGS}
    if "d" in law.inputs:
        uses.add("--c-col")
    if "loss" in law.inputs or law.target == "loss":
        uses.add("--loss-col")
    if law.target == "metric":
        uses.add("--y-col")
    for flag, value in given.items():
        if value and flag not in uses:
            raise UserError(f"{flag} {value}: law {law.name} does not use it ({_needs(law)})")
    d_col, c_col = args.d_col, args.c_col
    if "d" in law.inputs and not (c_col or d_col):
        if "d" in roles or "c" not in roles:
            d_col = roles.get("d", "D")
        else:
            c_col = roles["c"]
    cols = Columns(n=args.n_col or roles.get("n", "N"), d=d_col, loss=args.loss_col or roles.get("loss", "loss"),
                   c=c_col, u=args.u_col or roles.get("u"), x=args.x_col or roles.get("x"),
                   y=args.y_col or roles.get("y"))
    if "u" in law.inputs and not cols.u:
        raise UserError(f"law {law.name} needs each run's unique tokens: give --u-col COL")
    if "x" in law.inputs and not cols.x:
        raise UserError(f"law {law.name} is a law in one variable: give it with --x-col COL")
    if law.target == "metric" and not cols.y:
        raise UserError(f"law {law.name} predicts a downstream metric: give its column with --y-col COL")
    return cols


def _needs(law) -> str:
    names = {"n": "N (--n-col)", "d": "D (--d-col or --c-col)", "u": "unique tokens (--u-col)", "x": "x (--x-col)",
             "loss": "the loss (--loss-col)"}
    target = "the loss (--loss-col)" if law.target == "loss" else "a metric (--y-col)"
    return f"it reads {', '.join(names[r] for r in law.inputs)} and predicts {target}"


def parse_fix(items, law) -> dict[str, float]:
    """--fix NAME=VALUE for a registry law, or a UserError naming the flag."""
    from scalinglab.errors import UserError

    out = {}
    for text in items or []:
        name, sep, value = text.partition("=")
        try:
            if not sep or not name.strip():
                raise ValueError
            v = float(value)
        except ValueError:
            raise UserError(f"--fix {text!r}: expected NAME=VALUE with NAME one of {', '.join(law.names)}") from None
        try:
            canon = law.param(name.strip()).name
        except UserError as exc:
            raise UserError(f"--fix {text}: {exc}") from None
        if canon in out:
            raise UserError(f"--fix {text}: {canon} is fixed twice")
        out[canon] = v
    return out


def refuse_fit_flags(args, law) -> None:
    """The `fit` flags that only Chinchilla's form supports, refused with a reason."""
    from scalinglab.errors import UserError

    if args.compute:
        raise UserError(f"--compute: compute-optimal allocations come from Chinchilla's form; law {law.name} "
                        "gives none (use --law chinchilla)")
    if args.tie_exponents:
        raise UserError(f"--tie-exponents ties Chinchilla's alpha and beta; law {law.name} has no such pair "
                        "(--law gadre is the tied form; --fix holds a parameter)")
    if args.drop_highest and law.target != "loss":
        raise UserError(f"--drop-highest drops the highest losses; law {law.name} predicts a downstream metric")


def run_fit(args, source, read_table) -> int:
    """`scalinglab fit --law NAME` for a registry law; ``source(args)`` gives (table, roles, label),
    ``read_table(path)`` the table of --predict."""
    import sys

    import numpy as np

    from scalinglab.cli.tables import check_delta, check_level, check_resampling, named_row, no_rows, predict_from
    from scalinglab.errors import UserError
    from scalinglab.fitting import holdout as H
    from scalinglab.fitting import laws as Lw
    from scalinglab.fitting.laws.table import predict_rows
    from scalinglab.serialization import dumps

    law = Lw.get(args.law)
    if law.name == "chinchilla":  # reached only with a flag Chinchilla's fit has no use for
        for flag, value in (("--u-col", args.u_col), ("--x-col", args.x_col), ("--y-col", args.y_col)):
            if value:
                raise UserError(f"{flag} {value}: law chinchilla does not use it ({_needs(law)})")
    refuse_fit_flags(args, law)
    fixed = parse_fix(args.fix, law)
    check_resampling(args)
    check_level(args.level)
    if args.bootstrap_by and not args.bootstrap:
        raise UserError(f"--bootstrap-by {args.bootstrap_by} needs --bootstrap K (how many resamples)")
    if args.plot:
        from scalinglab.fitting.plot import check_plot_path

        check_plot_path(args.plot)   # before the fit: a bad path fails fast
    table, roles, label = source(args)
    cols = law_columns(args, law, roles)
    progress = args.bootstrap > 0 and sys.stderr.isatty()
    boot = dict(n_boot=args.bootstrap, seed=args.seed, level=args.level, groups=args.bootstrap_by)
    predictions, what = None, None
    try:
        Lw.base.check_fixed(law, fixed)
        keep = H.where(table, args.where)
        if not keep.any():
            raise UserError(no_rows(args.where))
        held = H.any_of(table, args.holdout) & keep if args.holdout else np.zeros_like(keep)
        if args.holdout and not held.any():
            raise UserError(f"{' or '.join(map(repr, args.holdout))} holds out none of the selected rows")
        res = Lw.fit_table(law, table, cols, keep & ~held, fixed=fixed, drop_highest=args.drop_highest,
                           delta=check_delta(args.delta), progress=progress, **boot)
        if args.holdout:
            predictions = predict_rows(res, table, np.flatnonzero(held), cols)
            what = f"held out ({' or '.join(args.holdout)})"
    except UserError as exc:
        raise UserError(f"{label}: {named_row(exc, table)}") from None
    if args.predict:
        predictions = predict_from(args.predict, args.where, read_table,
                                   lambda other, rows: predict_rows(res, other, rows, cols))
        what = f"predicted from {args.predict}"
    if args.plot:
        from scalinglab.fitting.approach3 import keep_below_highest
        from scalinglab.fitting.plot import law_figure, save_figure

        fitted = predict_rows(res, table, np.flatnonzero(keep & ~held), cols)
        if args.drop_highest:   # the rows the fit dropped are not "fitted runs"
            kept = keep_below_highest(fitted.actual, args.drop_highest)
            fitted = predict_rows(res, table, fitted.rows[kept], cols)
        save_figure(args.plot, law_figure(fitted, predictions, others_label=what or "", target=law.target,
                                          title=f"{label}: law {law.name}"))
    if args.json:
        out = {"source": label, "n_dropped": args.drop_highest, **res.to_dict()}
        if args.where:
            out["where"] = list(args.where)
        if predictions is not None:
            out["holdout" if args.holdout else "predict"] = predictions.to_dict()
        if args.plot:
            out["plot"] = args.plot
        print(dumps(out))
    else:
        print(res.summary(label, args.drop_highest))
        if predictions is not None:
            print()
            print(predictions.summary(what, res.n_rows))
        if args.plot:
            print(f"\nplot written to {args.plot}")
    return 0
