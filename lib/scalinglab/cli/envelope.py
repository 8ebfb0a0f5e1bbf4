"""`scalinglab envelope`: Hoffmann's Approach 1 on a long table of training curves.

The envelope, its power laws and the bootstrap over runs all come from
``scalinglab.fitting.frontier.envelope.fit_envelope``; reading the table, --where and
--group-by are `scalinglab isoflop`'s own helpers. This module only resolves
the columns, checks each group and prints. pandas is imported inside the
command, never at the top, and torch never.
"""

from __future__ import annotations

from scalinglab.cli.tables import (
    check_level,
    check_resampling,
    need_column,
    parse_group_by,
    select_rows,
    split_groups,
)
from scalinglab.runs import read_frame

# CLI role -> (its default column in a CSV, the registry role that names it for a --dataset).
# The registry's vocabulary is the one `scalinglab fit` reads (n, d, c, loss); only "run" is
# new, so a dataset registered for `fit` already supplies N, D and the loss here.
COLUMNS = {
    "run": ("run", "run"),
    "n": ("N", "n"),
    "tokens": ("tokens", "d"),
    "flops": (None, "c"),  # absent: C = 6·N·tokens
    "loss": ("loss", "loss"),
}
WHAT = {"run": "run", "n": "N", "tokens": "tokens", "flops": "compute", "loss": "loss"}
# role -> its flag; tokens and compute take the grammar's D and C flags.
FLAG = {"run": "--run-col", "n": "--n-col", "tokens": "--d-col", "flops": "--c-col", "loss": "--loss-col"}
DEST = {role: flag[2:].replace("-", "_") for role, flag in FLAG.items()}  # role -> argparse dest
# Mirrors scalinglab.fitting.frontier.envelope.METHODS (importing it would load pandas at the CLI's start);
# tests/test_cli_grammar.py checks that they agree.
METHODS = ("grid", "hull")


DESCRIPTION = (
    "Hoffmann et al.'s Approach 1 on a long table with one row per (run, checkpoint): at each "
    "compute C the run with the lowest loss is that C's optimal size N_opt (and its tokens "
    "D_opt); least-squares lines in log space give a of N_opt ∝ C^a and b of D_opt ∝ C^b. "
    "--method grid (default, Hoffmann's) interpolates each curve in log C on 1,500 log-spaced "
    "values; --method hull (McLeish et al.'s Gemstones) takes the lower convex hull of the "
    "checkpoints. An optimum whose run is the smallest or largest model covering that C is an "
    "edge and is left out unless --keep-edges (the Gemstones authors keep them: --method hull "
    "--keep-edges is their procedure). Intervals come from a bootstrap over runs. Without "
    "--c-col (or a dataset's 'c' role) compute is C = 6·N·tokens, and then b = 1 - a by "
    "construction. Without a dataset's roles the columns default to run, N, tokens and loss.")


def register(sub) -> None:
    from scalinglab.cli import flags

    p = sub.add_parser(
        "envelope", help="the lower envelope of training curves and the exponents of N_opt, D_opt ∝ C^a, C^b "
                         "(Approach 1)", description=DESCRIPTION)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("csv", nargs="?", help="a CSV file with one row per (run, checkpoint)")
    flags.add_dataset(src)
    p.add_argument("--run-col", metavar="COL", help="run id: the rows of one training curve share it (default run)")
    flags.add_columns(p, "n", "d", "c", "loss", alternatives=False,
                      detail={"n": "constant along a run", "d": "seen at the checkpoint", "loss": "at the checkpoint",
                              "c": "here spent at the checkpoint; with it, tokens may be absent"},
                      defaults={"d": "the dataset's role, else tokens",
                                "c": "the dataset's role, else none: C = 6·N·tokens"})
    p.add_argument("--method", default="grid", choices=METHODS,
                   help="grid: Hoffmann's 1,500-point interpolated envelope (default); hull: the lower convex "
                        "hull of the checkpoints (Gemstones)")
    p.add_argument("--keep-edges", action="store_true",
                   help="fit the optima held by the smallest or largest covering model too (default: drop them)")
    flags.add_bootstrap(p, 1000, "resamples of the runs for the intervals (default 1000; 0: point estimates only)")
    flags.add_seed(p)
    flags.add_level(p, "Hoffmann's Table 2 gives 10th-90th percentiles: 0.8")
    flags.add_where(p)
    flags.add_group_by(p, "fit each combination of these columns' values separately (e.g. family)")
    flags.add_json(p, "print one JSON object")
    p.set_defaults(func=_run)


def _source(args):
    """(table, column per role, label): flags first, then the dataset's roles, then the defaults."""
    if args.csv:
        df, roles, label = read_frame(args.csv), {}, args.csv
    else:
        from scalinglab import data

        ds = data.get(args.dataset)
        df, roles, label = data.load(args.dataset), ds.roles, args.dataset
    cols = {role: getattr(args, DEST[role]) or roles.get(key, default)
            for role, (default, key) in COLUMNS.items()}
    return df, cols, label


def _check_columns(df, cols: dict, args, label: str) -> dict:
    """The columns the fit will read, each checked to exist; tokens may be None when compute is given."""
    from scalinglab.errors import UserError

    for role in ("run", "n", "loss", "flops"):
        if cols[role] is not None and cols[role] not in df.columns:
            raise UserError(f"{label}: no {WHAT[role]} column {cols[role]!r} (columns: "
                            f"{', '.join(map(str, df.columns))}); name it with {FLAG[role]}")
    if cols["tokens"] not in df.columns:
        if cols["flops"] is None:
            raise UserError(f"{label}: no tokens column {cols['tokens']!r} (columns: "
                            f"{', '.join(map(str, df.columns))}); name it with --d-col, or give the "
                            "compute with --c-col")
        if args.d_col:  # asked for by name: a silent C/(6N) would hide the typo
            need_column(df, cols["tokens"], label, "tokens")
        cols = dict(cols, tokens=None)
    return cols


def _run(args) -> int:
    import sys
    from dataclasses import replace

    from scalinglab.errors import UserError
    from scalinglab.fitting.frontier import envelope
    from scalinglab.fitting.frontier.analysis import envelope_analysis
    from scalinglab.serialization import dumps

    check_resampling(args)
    check_level(args.level)
    group_by = parse_group_by(args.group_by)

    df, cols, label = _source(args)
    if df.empty:  # before --where, whose checks would otherwise blame an empty selection
        raise UserError(f"{label}: no rows; expected one row per (run, checkpoint)")
    cols = _check_columns(df, cols, args, label)
    for col in group_by:
        need_column(df, col, label, "--group-by")
    df, _ = select_rows(df, args.where or [], [], label)
    options = envelope.EnvelopeOptions(method=args.method, drop_edges=not args.keep_edges, n_boot=args.bootstrap,
                                       level=args.level, seed=args.seed)

    analysis = envelope_analysis(split_groups(df, group_by), label, cols, options)
    analysis = replace(analysis, keep_edges=args.keep_edges, where=args.where or [], group_by=group_by)
    print(dumps(analysis.to_dict()) if args.json else analysis.summary())  # NaN (no fit, no interval) -> null
    sys.stdout.flush()
    return 0
