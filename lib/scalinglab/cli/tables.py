"""Helpers shared by the CLI commands that fit a table of runs: argument checks (all three fitting
commands), and, for those that read it with pandas (`isoflop`, `envelope`), reading a CSV, checking
columns, selecting rows (--where, --drop-flagged) and splitting into groups (--group-by). pandas is
imported inside, never at the top."""

from __future__ import annotations

from scalinglab.cli.flags import said

# What --drop-flagged reads as set or unset: pandas parses True/False itself,
# but hand-made CSVs say yes/no or 1/0; anything else is an error, not a guess.
TRUE = {"true", "t", "yes", "y", "1", "1.0"}
FALSE = {"false", "f", "no", "n", "0", "0.0", "", "nan"}


def check_resampling(args) -> None:
    """--bootstrap and --seed, as every fitting command takes them: counts, so not negative, and at most
    ``MAX_RESAMPLES`` resamples (refused up front rather than a MemoryError or days of work)."""
    from scalinglab.errors import UserError
    from scalinglab.fitting.options import check_resample_count

    if args.bootstrap < 0:
        raise UserError(f"--bootstrap must be >= 0, not {args.bootstrap}")
    if args.bootstrap == 1:   # one resample has no spread: its "interval" would be a point
        raise UserError("--bootstrap 1: one resample gives no interval; use 0 (none) or at least 2 (1000 is usual)")
    check_resample_count(args.bootstrap)
    if args.seed < 0:
        raise UserError(f"--seed must be >= 0, not {args.seed}")
    level = getattr(args, "level", None)
    if args.bootstrap >= 2 and isinstance(level, float) and 0 < level < 1:
        check_level_supported(args.bootstrap, level)


def check_level_supported(n_boot: int, level: float) -> None:
    """A percentile interval at ``level`` from ``n_boot`` resamples that is more than the extreme replicates
    (20 resamples printed a "100% interval" for --level 0.999999)."""
    import math

    from scalinglab.errors import UserError

    # Refused when a tail would hold under a tenth of a resample: the interval is then the replicates' extremes
    # to within a tenth of a gap, whatever the level says. Coarser intervals (5 resamples at 95%) are allowed and
    # print their resample count beside them.
    tail = n_boot * (1 - level) / 2
    if tail < 0.1:
        need = math.ceil(0.2 / (1 - level) - 1e-9)
        raise UserError(f"--level {level:g} with --bootstrap {n_boot}: each tail of the interval would hold "
                        f"{tail:.2g} resamples, so the interval is just the extreme replicates; that level needs at "
                        f"least {need:,} resamples")


def named_row(exc, table) -> str:
    """A RowError's message with its row named by the file's line when ``table`` came from a CSV, else by its
    place in the dataset (first row = 1); any other UserError's message as it is."""
    from scalinglab.errors import RowError

    if not isinstance(exc, RowError):
        return said(exc)
    lines = getattr(table, "lines", None)
    return exc.renamed(f"line {lines[exc.row]}" if lines is not None else f"row {exc.row + 1}")


def predict_from(path: str, where, read, predict):
    """``predict(table, rows)`` for the --predict table at ``path`` (read with ``read``) and its ``where`` rows;
    a bad file, selection or cell is one UserError naming the file, and the cell by its line."""

    from scalinglab.errors import UserError
    from scalinglab.fitting.conditions import selected

    table = None
    try:
        table = read(path)
        return predict(table, selected(table, where))
    except UserError as exc:
        raise UserError(named_row(exc, table) if table is None  # the reader names the file itself
                        else f"{path}: {named_row(exc, table)}") from None


def check_delta(delta: float | None) -> float:
    """--delta as given (a positive finite number), or Hoffmann et al.'s when not given."""
    from scalinglab.fitting.huber import HUBER_DELTA
    from scalinglab.fitting.options import check_delta as library_check

    if delta is None:
        return HUBER_DELTA
    return library_check(delta, "--delta")   # the library's check: sl.fit(delta=0) is refused the same way


def check_level(level: float) -> None:
    """--level, as every command with intervals takes it: strictly between 0 and 1."""
    from scalinglab.errors import UserError

    if not 0 < level < 1:  # also catches nan
        raise UserError(f"--level must lie strictly between 0 and 1 (e.g. 0.95), not {level}")


def parse_group_by(text: str | None) -> list[str]:
    """--group-by COL,...: the column names (none without the flag)."""
    from scalinglab.errors import UserError

    group_by = [c.strip() for c in (text or "").split(",") if c.strip()]
    if text is not None and not group_by:
        raise UserError(f"--group-by needs column names, not {text!r}")
    return group_by


def need_column(df, col: str, label: str, what: str) -> None:
    from scalinglab.errors import UserError

    if col not in df.columns:
        raise UserError(f"{label}: no {what} column {col!r} (columns: {', '.join(map(str, df.columns))})")


def select_rows(df, where: list[str], drop_flagged: list[str], label: str):
    """(rows --where keeps, which of them --drop-flagged drops): a boolean Series on those rows.

    Flagged rows are dropped per group, so that each group can say how many it lost.
    """
    import pandas as pd

    from scalinglab.errors import UserError, row_name
    from scalinglab.fitting.conditions import chosen

    if where:
        try:
            df = df[chosen(df, where)]
        except UserError as exc:
            raise UserError(f"{label}: {said(exc)}") from None
    flagged = pd.Series(False, index=df.index)
    for col in drop_flagged:
        need_column(df, col, label, "--drop-flagged")
        text = df[col].map(lambda v: "" if pd.isna(v) else str(v).strip().lower())
        odd = ~text.isin(TRUE | FALSE)
        if odd.any():
            pos = int(odd.to_numpy().argmax())
            raise UserError(f"{label}: --drop-flagged column {col!r} should hold true/false, yes/no or 1/0; "
                            f"{row_name(df.index, pos)} has {str(df[col].iloc[pos])!r}")
        flagged |= text.isin(TRUE)
    if df.empty:  # a header and no rows: say so rather than "every row is flagged"
        raise UserError(f"{label}: no runs to fit (the table has a header and no rows)")
    if flagged.all():
        raise UserError(f"{label}: every row is flagged in {', '.join(drop_flagged)}; nothing is left to fit")
    return df, flagged


def split_groups(df, group_by: list[str]):
    """[(labels, rows)]: one group for the whole table, or one per combination of values.

    A blank group value is a group of its own (shown as "(blank)"), never
    dropped, so that no run disappears from the analysis unseen.
    """
    if not group_by:
        return [({}, df)]
    out = []
    for key, g in df.groupby(group_by, sort=True, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        out.append(({c: ("(blank)" if v != v else str(v)) for c, v in zip(group_by, key)}, g))
    return out

