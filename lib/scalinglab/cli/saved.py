"""`scalinglab predict` and `scalinglab allocate`: use a fit saved by `scalinglab fit --save` (a .slfit file),
reloaded bit for bit, never refitted.
"""

from __future__ import annotations


def register(sub) -> None:
    p = sub.add_parser(
        "predict", help="predict the loss of new runs from a saved fit, with mean and new-run intervals",
        description="Predict the loss at each row's (N, D) of a CSV from a fit saved with `scalinglab fit --save`. "
                    "Each row gets the law's prediction, the mean interval (the law: bootstrap of its parameters), "
                    "the new-run interval (adds the fit's residual noise), and its distance from the fitted runs. "
                    "Columns default to those the fit was made with; a loss column, when present, is compared.")
    p.add_argument("fit", help="a .slfit file written by `scalinglab fit --save`")
    p.add_argument("csv", help="a CSV with one row per run to predict")
    p.add_argument("--n-col", metavar="COL", help="parameters N (default: the fit's)")
    cols = p.add_mutually_exclusive_group()
    cols.add_argument("--d-col", metavar="COL", help="training tokens D (default: the fit's)")
    cols.add_argument("--c-col", metavar="COL", help="training compute C in FLOP; D = C/(6N)")
    p.add_argument("--loss-col", metavar="COL",
                   help="actual losses to compare, if the CSV has them (default: the fit's)")
    p.add_argument("--level", type=float, metavar="L",
                   help="interval level (default: the fit's bootstrap level, or 0.95)")
    p.add_argument("--out", metavar="FILE",
                   help="also write the CSV with the predictions and intervals added as columns")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_predict)

    a = sub.add_parser(
        "allocate", help="the compute-optimal N and D at a budget, from a saved fit",
        description="What a fit saved with `scalinglab fit --save` says to train at compute budget C: the same "
                    "rows `scalinglab fit --compute C` prints, to the digit, without refitting.")
    a.add_argument("fit", help="a .slfit file written by `scalinglab fit --save`")
    a.add_argument("--compute", action="append", type=float, metavar="C", required=True,
                   help="compute budget in FLOP (C = 6ND); repeat for several")
    a.add_argument("--json", action="store_true", help="print one JSON object")
    a.set_defaults(func=_allocate)


def _load(path: str):
    from scalinglab.fitting import saved

    return saved.load(path)


def _allocate(args) -> int:
    from scalinglab.cli.fit import UNUSABLE, allocations_or_problem
    from scalinglab.fitting import forecast
    from scalinglab.fitting.allocation import check_budgets
    from scalinglab.serialization import dumps

    check_budgets(args.compute)
    s = _load(args.fit)
    rows, unusable = allocations_or_problem(s.result, args.compute, s.N, s.D, s.L)
    if args.json:
        out = {"fit": args.fit, "source": s.source, "data_sha256": s.data_hash,
               "compute_optimal": None if unusable else rows}
        if unusable:
            out["compute_optimal_unusable"] = unusable
        print(dumps(out))
    elif unusable:
        print(f"compute-optimal allocation: none, the fit cannot support one ({unusable}); exit status {UNUSABLE}")
    else:
        print(f"{args.fit}: the law fitted on {s.result.n_rows} runs of {s.source} (status {s.result.status})")
        print()
        print(forecast.allocation_text(rows))
    return UNUSABLE if unusable else 0


def _predict(args) -> int:
    import numpy as np

    from scalinglab.cli.tables import check_level, named_row
    from scalinglab.errors import UserError
    from scalinglab.files import check_outputs
    from scalinglab.fitting import approach3 as F
    from scalinglab.fitting import forecast
    from scalinglab.fitting.domain import legend, short
    from scalinglab.runs import read_table
    from scalinglab.serialization import dumps

    if args.level is not None:
        check_level(args.level)
    check_outputs({"--out": args.out}, [args.fit, args.csv])
    s = _load(args.fit)
    table = read_table(args.csv)
    if not len(next(iter(table.values()), [])):
        raise UserError(f"{args.csv}: the table has no rows (a header only)")
    saved_cols = s.columns
    n_col = args.n_col or saved_cols.get("n_col") or "N"
    c_col = args.c_col or (None if args.d_col else saved_cols.get("c_col"))
    d_col = None if c_col else (args.d_col or saved_cols.get("d_col") or "D")
    loss_col = args.loss_col or saved_cols.get("loss_col") or "loss"
    try:
        for col in (n_col, c_col or d_col):
            if col not in table:
                raise UserError(f"no column {col!r}; the table has {', '.join(table)}")
        if args.loss_col and args.loss_col not in table:
            raise UserError(f"--loss-col: no column {args.loss_col!r}; the table has {', '.join(table)}")
        N = F._column(table, n_col)
        X = F._column(table, c_col or d_col)
        F.positive_logs(N, n_col)
        F.positive_logs(X, c_col or d_col)
        D = X / (6.0 * N) if c_col else X
        actual = None
        if loss_col in table:
            actual = F._column(table, loss_col)
            F.positive_logs(actual, loss_col)
    except UserError as exc:
        raise UserError(f"{args.csv}: {named_row(exc, table)}") from None
    rows = forecast.prediction_rows(s.result, N, D, s.domain, s.residual_sd, args.level, actual)
    bs = s.result.bootstrap
    level = args.level if args.level is not None else (bs.level if bs is not None else 0.95)
    if args.out:
        _write_out(args.out, table, rows)
    n_out = sum(r["extrapolation"]["outside"] for r in rows)
    if args.json:
        print(dumps({"fit": args.fit, "source": s.source, "data_sha256": s.data_hash, "csv": args.csv,
                     "level": level, "residual_sd": s.residual_sd, "n_outside": n_out, "domain": s.domain.to_dict(),
                     "rows": rows}))
        return 0
    boot = (f"{len(bs.samples)} bootstrap replicates" if bs is not None and len(bs.samples)
            else "no bootstrap: no mean interval")
    print(f"{args.fit}: the law fitted on {s.result.n_rows} runs of {s.source} (status {s.result.status}; {boot})")
    print(f"{args.csv}: {len(rows)} runs; {round(level * 100):d}% intervals: mean law = the law's value (bootstrap "
          f"of its parameters), new run = one more run's loss (adds residual sd {s.residual_sd:.3g} in log loss)")
    print()
    head = f"{'row':>5}{'N':>11}{'D':>11}{'C':>11}{'predicted':>11}   {'mean law':<18}   {'new run':<18}"
    if actual is not None:
        head += f"{'actual':>9}"
    print(head + f"{'beyond':>11}")
    for i, r in enumerate(rows):
        lo, hi = r["mean_interval"]
        mean = "-" if not np.isfinite(lo) else f"[{lo:.4f}, {hi:.4f}]"
        line = (f"{i:>5d}{r['N']:>11.4g}{r['D']:>11.4g}{r['C']:>11.4g}{r['predicted']:>11.4f}   {mean:<18}   "
                f"[{r['new_run_interval'][0]:.4f}, {r['new_run_interval'][1]:.4f}]")
        if actual is not None:
            line += f"{r['actual']:>9.4f}"
        print(line + f"{short(r['extrapolation']):>11}")
    print()
    print(legend([r["extrapolation"] for r in rows]))
    if n_out:
        print(f"WARNING: {n_out} of {len(rows)} runs lie outside the fitted runs: their predictions extrapolate the "
              "law's form")
    if args.out:
        print(f"written to {args.out}")
    return 0


def _write_out(path: str, table: dict[str, list[str]], rows) -> None:
    import csv

    from scalinglab.files import atomic_write

    extra = ["predicted", "mean_lo", "mean_hi", "new_run_lo", "new_run_hi", "decades_N", "decades_D", "decades_C",
             "mahalanobis", "outside"]
    header = list(table) + [c for c in extra if c not in table]
    with atomic_write(path, f"--out {path}") as tmp, open(tmp, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        for i, r in enumerate(rows):
            e = r["extrapolation"]
            vals = {"predicted": r["predicted"], "mean_lo": r["mean_interval"][0], "mean_hi": r["mean_interval"][1],
                    "new_run_lo": r["new_run_interval"][0], "new_run_hi": r["new_run_interval"][1],
                    **{k: e[k] for k in ("decades_N", "decades_D", "decades_C", "mahalanobis")},
                    "outside": int(e["outside"])}
            w.writerow([table[c][i] if c in table else repr(float(vals[c])) if c != "outside" else vals[c]
                        for c in header])
