"""`scalinglab envelope`: Hoffmann's Approach 1 on a long table of training curves.

The envelope, its power laws and the bootstrap over runs all come from
``scalinglab.fitting.envelope.fit_envelope``; reading the table, --where and
--group-by are `scalinglab isoflop`'s own helpers. This module only resolves
the columns, checks each group and prints. pandas is imported inside the
command, never at the top, and torch never.
"""

from __future__ import annotations

from scalinglab.cli.tables import (check_method, check_resampling, group_text, need_column, read_csv,
                                   select_rows, split_groups)

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
FLAG = {role: f"--{role}-col" for role in COLUMNS}


def register(sub) -> None:
    p = sub.add_parser(
        "envelope", help="the lower envelope of training curves and the exponents of N_opt, D_opt ∝ C^a, C^b "
                         "(Approach 1)",
        description="Hoffmann et al.'s Approach 1 on a long table with one row per (run, checkpoint): at each "
                    "compute C the run with the lowest loss is that C's optimal size N_opt (and its tokens "
                    "D_opt); least-squares lines in log space give a of N_opt ∝ C^a and b of D_opt ∝ C^b. "
                    "--method grid (default, Hoffmann's) interpolates each curve in log C on 1,500 log-spaced "
                    "values; --method hull (McLeish et al.'s Gemstones) takes the lower convex hull of the "
                    "checkpoints. An optimum whose run is the smallest or largest model covering that C is an "
                    "edge and is left out unless --keep-edges (the Gemstones authors keep them: --method hull "
                    "--keep-edges is their procedure). Intervals come from a bootstrap over runs. Without "
                    "--flops-col (or a dataset's 'c' role) compute is C = 6·N·tokens, and then b = 1 - a by "
                    "construction. Without a dataset's roles the columns default to run, N, tokens and loss.")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("csv", nargs="?", help="a CSV file with one row per (run, checkpoint)")
    src.add_argument("--dataset", metavar="NAME", help="a registered dataset (`scalinglab data list`)")
    p.add_argument("--run-col", metavar="COL", help="run id: the rows of one training curve share it (default run)")
    p.add_argument("--n-col", metavar="COL", help="parameters N, constant along a run (default N)")
    p.add_argument("--tokens-col", metavar="COL", help="tokens D seen at the checkpoint (default tokens)")
    p.add_argument("--flops-col", metavar="COL",
                   help="compute C spent at the checkpoint (default: none, C = 6·N·tokens; with it, tokens "
                        "may be absent and are taken as C/(6N))")
    p.add_argument("--loss-col", metavar="COL", help="loss at the checkpoint (default loss)")
    p.add_argument("--method", default="grid", metavar="grid|hull",
                   help="grid: Hoffmann's 1,500-point interpolated envelope (default); hull: the lower convex "
                        "hull of the checkpoints (Gemstones)")
    p.add_argument("--keep-edges", action="store_true",
                   help="fit the optima held by the smallest or largest covering model too (default: drop them)")
    p.add_argument("--bootstrap", type=int, default=1000, metavar="K",
                   help="resamples of the runs for the intervals (default 1000; 0: point estimates only)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    p.add_argument("--level", type=float, default=0.95, metavar="L",
                   help="interval level (default 0.95; Hoffmann's Table 2 gives 10th-90th percentiles: 0.8)")
    p.add_argument("--where", action="append", default=[], metavar="COND",
                   help="keep only rows matching COND, 'COL OP VALUE' with OP one of == != < <= > >= ~ "
                        "(~: contains), as in `scalinglab fit --where`; e.g. 'tokens>=2e10' starts every curve "
                        "later (repeatable; all must hold)")
    p.add_argument("--group-by", metavar="COL,...",
                   help="fit each combination of these columns' values separately (e.g. family)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_run)


def _source(args):
    """(table, column per role, label): flags first, then the dataset's roles, then the defaults."""
    if args.csv:
        df, roles, label = read_csv(args.csv), {}, args.csv
    else:
        from scalinglab import data

        ds = data.get(args.dataset)
        df, roles, label = data.load(args.dataset), ds.roles, args.dataset
    cols = {role: getattr(args, f"{role}_col") or roles.get(key, default)
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
                            f"{', '.join(map(str, df.columns))}); name it with --tokens-col, or give the "
                            "compute with --flops-col")
        if args.tokens_col:  # asked for by name: a silent C/(6N) would hide the typo
            need_column(df, cols["tokens"], label, "tokens")
        cols = dict(cols, tokens=None)
    return cols


def _run(args) -> int:
    import json
    import sys

    from scalinglab.fitting import envelope
    from scalinglab.errors import UserError
    from scalinglab.harness.workbook import _jsonable

    check_method(args.method, envelope.METHODS)
    check_resampling(args)
    if not 0 < args.level < 1:  # also catches nan
        raise UserError(f"--level must lie strictly between 0 and 1 (e.g. 0.95), not {args.level}")
    group_by = [c.strip() for c in (args.group_by or "").split(",") if c.strip()]
    if args.group_by is not None and not group_by:
        raise UserError(f"--group-by needs column names, not {args.group_by!r}")

    df, cols, label = _source(args)
    if df.empty:  # before --where, whose checks would otherwise blame an empty selection
        raise UserError(f"{label}: no rows; expected one row per (run, checkpoint)")
    cols = _check_columns(df, cols, args, label)
    for col in group_by:
        need_column(df, col, label, "--group-by")
    df, _ = select_rows(df, args.where, [], label)
    options = envelope.EnvelopeOptions(method=args.method, drop_edges=not args.keep_edges, n_boot=args.bootstrap,
                                       level=args.level, seed=args.seed)

    # Every group's table is checked before any bootstrap runs, so that a bad value in the
    # last group does not cost the time of the first groups' fits.
    tables = []
    for labels, g in split_groups(df, group_by):
        try:
            curves = envelope.curves_table(g, cols["run"], cols["n"], cols["loss"], flops_col=cols["flops"],
                                           tokens_col=cols["tokens"])
        except UserError as exc:
            where = label + (f" [{group_text(labels)}]" if labels else "")
            raise UserError(f"{where}: {exc}") from None
        tables.append((labels, curves))
    # curves_table's output has fit_envelope's default column names, and taking it again is
    # the identity, so this is fit_envelope on the table as read.
    results = [_group_result(labels, curves, envelope.fit_envelope(curves, options)) for labels, curves in tables]

    out = dict(source=label, columns=cols,
               compute_from=f"column {cols['flops']}" if cols["flops"] else "6·N·tokens",
               tokens_from=f"column {cols['tokens']}" if cols["tokens"] else "C/(6N)",
               method=args.method, keep_edges=args.keep_edges, bootstrap=args.bootstrap, seed=args.seed,
               level=args.level, where=args.where, group_by=group_by, groups=results)
    if args.json:
        print(json.dumps(_jsonable(out), indent=2, allow_nan=False))  # NaN (no fit, no interval) -> null
    else:
        print(_text(out))
    sys.stdout.flush()
    return 0


def _segments(points) -> list[dict]:
    """Stretches of C over which one run holds the envelope, from low C to high."""
    import numpy as np

    run = points["run"].to_numpy()
    starts = np.flatnonzero(np.r_[True, run[1:] != run[:-1]])
    ends = np.r_[starts[1:], len(run)]
    out = []
    for i, j in zip(starts, ends):
        seg = points.iloc[i:j]
        out.append(dict(run=str(run[i]), n=float(seg["n"].iloc[0]), c_from=float(seg["flops"].iloc[0]),
                        c_to=float(seg["flops"].iloc[-1]), n_points=int(j - i), n_used=int(seg["used"].sum()),
                        n_edge=int(seg["edge"].sum())))
    return out


def _group_result(labels: dict, curves, fit) -> dict:
    return dict(group=labels, n_runs=fit.n_runs, n_sizes_trained=int(curves["n"].nunique()),
                n_checkpoints=len(curves), n_envelope_points=len(fit.points), n_points=fit.n_points,
                n_edge=fit.n_edge, n_sizes=fit.n_sizes,
                n_boot_failed=fit.n_boot_failed, status=fit.status,
                a=fit.exponent, a_ci=list(fit.ci), n_opt_coef=fit.coef,
                b=fit.d_exponent, b_ci=list(fit.d_ci), d_opt_coef=fit.d_coef,
                segments=_segments(fit.points))


def _interval(ci: list, level: float) -> str:
    if ci[0] != ci[0]:
        return "no interval"
    return f"{level:.0%} interval [{ci[0]:.3f}, {ci[1]:.3f}]"


def _text(out: dict) -> str:
    c = out["columns"]
    boot = (f"{out['bootstrap']}-resample bootstrap over runs (seed {out['seed']})" if out["bootstrap"]
            else "no bootstrap")
    edges = "edges kept" if out["keep_edges"] else "edges dropped"
    lines = [f"{out['source']}: {out['method']} envelope, {edges}, {boot}",
             f"columns: run = {c['run']}, N = {c['n']}, loss = {c['loss']}, "
             + (f"C = {c['flops']}, " if c["flops"] else "C = 6·N·tokens (no compute column), ")
             + (f"tokens = {c['tokens']}" if c["tokens"] else "tokens = C/(6N) (no tokens column)")]
    if out["where"]:
        lines.append("rows: " + "; ".join(f"where {s}" for s in out["where"]))
    derived = not (c["flops"] and c["tokens"])
    for res in out["groups"]:
        lines.append("")
        head = f"[{group_text(res['group'])}] " if res["group"] else ""
        dropped = "" if out["keep_edges"] else f", {res['n_edge']} at an edge dropped"
        failed = f", {res['n_boot_failed']} of {out['bootstrap']} resamples failed" if out["bootstrap"] else ""
        lines.append(f"{head}{res['n_runs']} runs of {res['n_sizes_trained']} sizes, {res['n_checkpoints']} "
                     f"checkpoints; {res['n_points']} of {res['n_envelope_points']} envelope points fitted"
                     f"{dropped}, {res['n_sizes']} sizes among them{failed}")
        if res["status"] != "ok":
            lines.append(f"  a, b: not fitted; status {res['status']}")
        else:
            lines.append(f"  a = {res['a']:.3f}, {_interval(res['a_ci'], out['level'])}; "
                         f"N_opt = {res['n_opt_coef']:.3g}·C^a; status {res['status']}")
            # With D = C/(6N) along every curve, log D_opt = log C - log 6 - log N_opt.
            why = " (= 1 - a: D = C/(6N) on every curve)" if derived else ""
            lines.append(f"  b = {res['b']:.3f}, {_interval(res['b_ci'], out['level'])}; "
                         f"D_opt = {res['d_opt_coef']:.3g}·C^b{why}")
        w = max([3] + [len(s["run"]) for s in res["segments"]])
        lines.append(f"  {'N_opt':>9}  {'run':<{w}} {'C from':>9} {'C to':>9} {'points':>7} {'edge':>5} {'fitted':>7}")
        for s in res["segments"]:
            lines.append(f"  {s['n']:>9.3g}  {s['run']:<{w}} {s['c_from']:>9.3g} {s['c_to']:>9.3g} "
                         f"{s['n_points']:>7} {s['n_edge']:>5} {s['n_used']:>7}")
    return "\n".join(lines)
