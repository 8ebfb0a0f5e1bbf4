"""`scalinglab compare-laws`: several registry laws on the same runs, scored on runs they never saw."""

from __future__ import annotations


def register(sub) -> None:
    p = sub.add_parser(
        "compare-laws", help="which law? held-out error of several laws, and whether the data tell them apart",
        description="Fit each --law to the runs and score it on held-out runs: a split (--holdout COND, or the "
                    "last runs by compute) and leave-one-group-out (--leave-out-by COL, default the N column). "
                    "Held-out error is RMSLE; a paired bootstrap of the held-out runs says whether the best law "
                    "beats the runner-up or the data cannot tell them apart.")
    from scalinglab.cli import flags

    flags.add_source(p)
    p.add_argument("--law", action="append", required=True, metavar="NAME",
                   help="a law to compare (repeat, at least two): chinchilla, kaplan, data_constrained, gadre, "
                        "saturating, broken, downstream, logit")
    flags.add_columns(p, "n", "d", "c", "loss", "u", "x", "y")
    flags.add_where(p)
    split = p.add_mutually_exclusive_group()
    split.add_argument("--holdout", action="append", metavar="COND",
                       help="the split: hold out rows matching COND (repeat: any), fit the rest")
    split.add_argument("--order-by", metavar="COL",
                       help="the split: order runs by COL (default compute 6ND, or x) and hold out the last ones")
    p.add_argument("--train-frac", type=float, default=0.7, metavar="F",
                   help="share of the ordered runs fitted (default 0.7)")
    p.add_argument("--leave-out-by", metavar="COL",
                   help="leave-one-group-out by COL (default: the first input's column, e.g. N: each model size)")
    p.add_argument("--no-logo", action="store_true", help="skip leave-one-group-out")
    p.add_argument("--paired-by", metavar="COL",
                   help="the split verdict's paired bootstrap draws whole values of COL (e.g. the N column: runs "
                        "of one model size share its misfit); default: each held-out run on its own")
    p.add_argument("--at", metavar="ROLE=V,...",
                   help="report each law's prediction at a point, e.g. n=7e9,d=1.4e11 (roles n, d, u, x, loss), "
                        "with its bootstrap interval under --bootstrap")
    p.add_argument("--objective", choices=("huber", "squares"), default="huber",
                   help="huber (Hoffmann's delta 1e-3 on log residuals; default) or squares (gives AIC/BIC)")
    flags.add_resampling(p, flags.BOOTSTRAP_ON_REQUEST, "of each law's fit: of the split's training runs (an "
                         "interval per held-out run) and, with --at, of all runs (the interval there)")
    flags.add_delta(p)
    flags.add_json(p)
    p.set_defaults(func=_run)


def _parse_at(text: str | None) -> dict[str, float] | None:
    from scalinglab.errors import UserError

    if not text:
        return None
    out = {}
    for part in text.split(","):
        role, sep, value = part.partition("=")
        role = role.strip().lower()
        try:
            if not sep or role not in ("n", "d", "u", "x", "loss"):
                raise ValueError
            out[role] = float(value)
        except ValueError:
            raise UserError(f"--at {text!r}: expected ROLE=VALUE,... with ROLE one of n, d, u, x, loss "
                            "(e.g. n=7e9,d=1.4e11)") from None
        if not 0 < out[role] < float("inf"):   # every law's inputs are positive: a law at n=-1 printed nan
            raise UserError(f"--at {text!r}: {role} must be a positive finite number, not {value.strip()}")
    return out


def _run(args) -> int:
    import sys

    from scalinglab.cli.tables import check_delta, named_row
    from scalinglab.errors import UserError
    from scalinglab.fitting import laws as Lw
    from scalinglab.fitting.laws.compare import compare
    from scalinglab.runs import load_runs
    from scalinglab.serialization import dumps

    laws = [Lw.get(name) for name in args.law]
    _check(args, laws)
    at = _parse_at(args.at)
    runs = load_runs(args.csv, dataset=args.dataset)
    table, label = runs.table, runs.label
    try:
        cols = _columns(args, laws, runs.roles)
        res = compare(laws, table, cols, select=args.where, holdout=args.holdout, order_by=args.order_by,
                      train_frac=args.train_frac, group_by=args.leave_out_by, logo=not args.no_logo,
                      paired_by=args.paired_by, target=at,
                      objective=args.objective, n_boot=args.bootstrap, seed=args.seed, level=args.level,
                      delta=check_delta(args.delta),
                      progress=sys.stderr.isatty())
    except UserError as exc:
        raise UserError(f"{label}: {named_row(exc, table)}") from None
    beyond = _beyond_runs(at, cols, table) if at else {}
    if args.json:
        print(dumps({"source": label, **res.to_dict(), "at_decades_beyond_runs": beyond}))
        return 0
    print(res.summary(label))
    far = {role: d for role, d in beyond.items() if d != 0}
    if far:
        where = ", ".join(f"{role} {abs(d):.2f} decades {'above' if d > 0 else 'below'}" for role, d in far.items())
        print(f"WARNING: --at lies outside the runs ({where} their range): each law's value there extrapolates its "
              "form, which the runs cannot check")
    return 0


def _check(args, laws) -> None:
    from scalinglab.cli.tables import check_level
    from scalinglab.errors import UserError

    if len(laws) < 2:
        raise UserError("--law: give at least two laws to compare")
    check_level(args.level)
    if args.bootstrap < 0:
        raise UserError(f"--bootstrap {args.bootstrap}: must be 0 or more")
    if args.train_frac and not 0 < args.train_frac < 1:
        raise UserError(f"--train-frac {args.train_frac:g}: must lie strictly between 0 and 1")


def _columns(args, laws, roles):
    """One set of columns for all the laws: each reads its own roles from it, and a flag none of them uses is
    refused; every law must find its columns."""
    from scalinglab.cli.law_flags import law_columns
    from scalinglab.errors import UserError

    cols, unused = None, {}
    for law in laws:
        try:
            cols = law_columns(args, law, roles)
            break
        except UserError as exc:
            unused[law.name] = exc
    if cols is None:
        raise next(iter(unused.values()))
    for law in laws:
        law_columns(_Lenient(args, law), law, roles)
    return cols


def _beyond_runs(at: dict[str, float], cols, table) -> dict[str, float]:
    """Per --at role: signed decades beyond the range of that role's column in the table (0 inside)."""
    import math

    out = {}
    for role, value in at.items():
        col = cols.for_role(role) if role in ("n", "d", "u", "x", "loss") else None
        try:
            vals = [float(v) for v in table[col]] if col in table else []
        except (TypeError, ValueError):
            vals = []
        vals = [v for v in vals if v > 0 and math.isfinite(v)]
        if not vals:
            continue
        lo, hi, x = math.log10(min(vals)), math.log10(max(vals)), math.log10(value)
        out[role] = x - hi if x > hi else x - lo if x < lo else 0.0
    return out


class _Lenient:
    """The args with the column flags this law does not read blanked, so that the check asks only for its own."""

    def __init__(self, args, law):
        from scalinglab.cli.law_flags import ROLE_FLAGS

        self.__dict__.update(vars(args))
        uses = {ROLE_FLAGS[r][2:].replace("-", "_") for r in law.inputs if r in ROLE_FLAGS}
        if "d" in law.inputs:
            uses.add("c_col")
        for flag in ("n_col", "d_col", "c_col", "u_col", "x_col", "y_col"):
            if flag not in uses and not (flag == "y_col" and law.target == "metric"):
                self.__dict__[flag] = None
        if not ("loss" in law.inputs or law.target == "loss"):
            self.__dict__["loss_col"] = None
