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
    from scalinglab.cli import flags

    p.add_argument("fit", help="a .slfit file written by `scalinglab fit --save`")
    p.add_argument("csv", nargs="?", help="a CSV with one row per run to predict")
    flags.add_dataset(p, "a registered dataset to predict (`scalinglab data list`)")
    flags.add_columns(p, "n", "d", "c", "loss", default="the fit's",
                      detail={"loss": "compared with the predictions when the table has it"})
    flags.add_where(p)
    flags.add_level(p)
    p.add_argument("--out", metavar="FILE",
                   help="also write the CSV with the predictions and intervals added as columns")
    flags.add_json(p, "print one JSON object")
    p.set_defaults(func=_predict)

    a = sub.add_parser(
        "allocate", help="the compute-optimal N and D at a budget, from a saved fit",
        description="What a fit saved with `scalinglab fit --save` says to train at compute budget C: the same "
                    "rows `scalinglab fit --compute C` prints, to the digit, without refitting.")
    a.add_argument("fit", help="a .slfit file written by `scalinglab fit --save`")
    a.add_argument("--compute", action="append", type=float, metavar="C", required=True,
                   help="compute budget in FLOP (C = 6ND); repeat for several")
    flags.add_json(a, "print one JSON object")
    a.set_defaults(func=_allocate)


def _load(path: str):
    from scalinglab.fitting import saved

    return saved.load(path)


def _allocate(args) -> int:
    from scalinglab.errors import printable
    from scalinglab.fitting.allocation import check_budgets
    from scalinglab.fitting.prediction import forecast
    from scalinglab.fitting.workflow import UNUSABLE, allocations_or_problem
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
        print(f"{args.fit}: the law fitted on {s.result.n_rows} runs of {printable(s.source, 200)} "
              f"(status {s.result.status})")
        print()
        print(forecast.allocation_text(rows))
    return UNUSABLE if unusable else 0


def _predict(args) -> int:
    from scalinglab.cli.tables import check_level, named_row
    from scalinglab.errors import UserError
    from scalinglab.files import check_outputs
    from scalinglab.fitting.prediction.from_saved import predict_table
    from scalinglab.runs import load_runs
    from scalinglab.serialization import dumps

    check_level(args.level)
    if (args.csv is None) == (args.dataset is None):
        raise UserError("give the runs to predict: a CSV or --dataset NAME, one of them")
    check_outputs({"--out": args.out}, [args.fit, args.csv])
    s = _load(args.fit)
    runs = load_runs(args.csv, dataset=args.dataset)
    cols = {k: v for k, v in s.columns.items() if v} | {k: getattr(args, k) for k in ("n_col", "d_col", "c_col",
                                                                                      "loss_col") if getattr(args, k)}
    try:
        selected = runs.select(args.where).rows
        out = predict_table(s, runs.table, selected, cols, args.level, loss_given=bool(args.loss_col))
    except UserError as exc:
        raise UserError(f"{runs.label}: {named_row(exc, runs.table)}") from None
    if args.out:
        _write_out(args.out, runs.table, out.rows, selected)
    print(dumps({"fit": args.fit, **out.to_dict(), "csv": runs.label}) if args.json
          else out.summary(args.fit, runs.label) + (f"\nwritten to {args.out}" if args.out else ""))
    return 0


def _write_out(path: str, table: dict[str, list[str]], rows, at) -> None:
    """The table's rows ``at`` (those predicted, in order) with each one's prediction (``rows``) added."""
    import csv

    from scalinglab.files import atomic_write

    extra = ["predicted", "mean_lo", "mean_hi", "new_run_lo", "new_run_hi", "decades_N", "decades_D", "decades_C",
             "mahalanobis", "outside"]
    if rows and "calibrated_interval" in rows[0]:   # a fit saved with its calibration
        extra[1:1] = ["calibrated_lo", "calibrated_hi"]
    header = list(table) + [c for c in extra if c not in table]
    with atomic_write(path, f"--out {path}") as tmp, open(tmp, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        for i, r in enumerate(rows):
            e = r["extrapolation"]
            vals = {"predicted": r["predicted"], "mean_lo": r["mean_interval"][0], "mean_hi": r["mean_interval"][1],
                    "new_run_lo": r["new_run_interval"][0], "new_run_hi": r["new_run_interval"][1],
                    **dict(zip(("calibrated_lo", "calibrated_hi"), r.get("calibrated_interval", ()))),
                    **{k: e[k] for k in ("decades_N", "decades_D", "decades_C", "mahalanobis")},
                    "outside": int(e["outside"])}
            w.writerow([table[c][at[i]] if c in table else repr(float(vals[c])) if c != "outside" else vals[c]
                        for c in header])
