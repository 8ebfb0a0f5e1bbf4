"""The column and parameter flags of `scalinglab fit --law NAME` and `compare-laws`, per law.

Which flags make sense depends on the law: its inputs (N and D or C, unique
tokens U, one variable x, the loss as input) and its target (the loss or a
downstream metric). A flag that does not fit the law is refused with a
one-line reason (exit 2), never ignored.
"""

from __future__ import annotations

from scalinglab.cli.flags import said

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
    cols = Columns.from_roles(roles, {"n": args.n_col, "d": args.d_col, "c": args.c_col, "loss": args.loss_col,
                                      "u": args.u_col, "x": args.x_col, "y": args.y_col}, tokens="d" in law.inputs)
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


def parse_fix(items, law, value=None) -> dict[str, float]:
    """--fix NAME=VALUE for any law (NAME in any case), the one parser of the flag, or a UserError naming it.
    ``value(name, text)`` checks a value where a law's own solver has rules of its own (Chinchilla's:
    ``fitting.chinchilla.settings.fixed_value``); else it must be a number."""
    from scalinglab.errors import UserError

    out = {}
    for text in items or []:
        name, sep, raw = text.partition("=")
        if not sep or not name.strip() or not raw.strip():
            raise UserError(f"--fix {text!r}: expected NAME=VALUE with NAME one of {', '.join(law.names)}, e.g. "
                            f"--fix {law.names[0]}={law.params[0].starts[-1]:g}")
        try:
            canon = law.param(name.strip()).name
            if value is not None:
                v = value(canon, raw.strip())
            else:
                try:
                    v = float(raw)
                except ValueError:
                    raise UserError(f"fixed {canon} must be a number, not {raw.strip()!r}") from None
        except UserError as exc:
            raise UserError(f"--fix {text}: {said(exc)}") from None
        if canon in out:
            raise UserError(f"--fix {text}: {canon} is fixed twice ({out[canon]:g} and {v:g})")
        out[canon] = v
    return out


def parse_tie(items, law) -> tuple[tuple[str, str], ...]:
    """--tie NAME=FORMULA (NAME held equal to another parameter, or given by a formula of them: beta=alpha,
    B=2*A) as (name, formula) pairs, the names checked by the law, or a UserError naming the flag."""
    from scalinglab.errors import UserError
    from scalinglab.fitting.expressions import parse

    out = []
    for text in items or []:
        name, sep, other = text.partition("=")
        if not sep or not name.strip() or not other.strip():
            raise UserError(f"--tie {text!r}: expected NAME=OTHER, the parameter NAME held equal to OTHER or to a "
                            "formula of the parameters (e.g. --tie beta=alpha, --tie B=2*A)")
        try:
            canon = law.param(name.strip()).name
            e = parse(other, law.names, f"{canon} =")
        except UserError as exc:
            raise UserError(f"--tie {text}: {said(exc)}") from None
        out.append((canon, e.identity or e.text))
    return tuple(out)


def refuse_fit_flags(args, law) -> None:
    """The `fit` flags that only Chinchilla's form supports, refused with a reason."""
    from scalinglab.errors import UserError

    if args.compute:
        raise UserError(f"--compute: compute-optimal allocations come from Chinchilla's form; law {law.name} "
                        "gives none (use --law chinchilla)")
    if args.tie_exponents:
        raise UserError(f"--tie-exponents ties Chinchilla's alpha and beta; for law {law.name} name the pair "
                        "with --tie NAME=OTHER (--law gadre is the tied form; --fix holds a parameter)")
    if args.drop_highest and law.target != "loss":
        raise UserError(f"--drop-highest drops the highest losses; law {law.name} predicts a downstream metric")
    if args.save:
        raise UserError(f"--save: a saved fit holds Chinchilla's form; law {law.name} cannot be saved (its JSON, "
                        "--json, holds the fit)")
    if args.start != "grid":
        raise UserError(f"--start {args.start}: the start is Chinchilla's Newton solver's; law {law.name} is fitted "
                        f"by the {law.solver} solver from its own grid")
