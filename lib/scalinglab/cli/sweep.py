"""`scalinglab sweep`, `sweep-report` and `ladder-report`: isoFLOP training sweeps from the shell (training:
``scalinglab.training.sweep``; reading the results: ``scalinglab.sweeps``)."""

from __future__ import annotations

import argparse
import json

from scalinglab.cli import flags

# Mirror scalinglab.training.sweep (CLI modules import only argparse at the top, to start fast);
# tests/test_sweep.py checks that they agree.
PRESETS = ("kaplan", "hoffmann", "ladder0", "ladder2", "ladder3", "ladder4", "optimal", "schedules", "lrbatch")
PROFILES = ("smoke", "cpu", "cpu-ladder", "cpu-inverse", "cpu-downstream", "cpu-schedules", "cpu-lrbatch",
            "gpu-quick", "gpu")


def register(sub) -> None:
    p = sub.add_parser("sweep", help="train an isoFLOP grid of small GPTs into a SQLite database (resumable)",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--preset", choices=PRESETS, required=True,
                   help="kaplan: non-embedding N, constant LR after a long warmup, fixed hyperparameters; "
                        "hoffmann: N with the head, short warmup, cosine to budget, scaled LR/batch/beta2; "
                        "ladder0/2/3/4: Porian et al.'s ladder, one change per step (profile cpu-ladder): "
                        "0 = kaplan, 2 = + N with the head and a short warmup, 3 = + cosine to each budget, "
                        "4 = + per-size LR/batch/beta2 (= hoffmann); "
                        "optimal: not a sweep but a family of models, each shape once at ~20 tokens per parameter "
                        "(profile cpu-inverse: the inverse-scaling ladder); "
                        "schedules: training curves of each shape under constant, cosine, WSD and step learning-rate "
                        "schedules, ~100 evaluations a run (profile cpu-schedules); "
                        "lrbatch: each shape once per (peak learning rate, batch size) of a grid, at ~20 tokens per "
                        "parameter (profile cpu-lrbatch)")
    p.add_argument("--profile", choices=PROFILES, default="smoke",
                   help="the grid's size, from smoke (seconds, CI) to gpu (hours); see scalinglab.training.sweep")
    flags.add_db(p, "SQLite results database (created, or resumed)")
    p.add_argument("--launcher", choices=("local", "submitit"), default="local",
                   help="local: runs one after another here; submitit: one job per run (SLURM when available)")
    p.add_argument("--executor", choices=("auto", "slurm", "local", "debug"), default="auto",
                   help="submitit's cluster")
    p.add_argument("--max-runs", type=int, default=None, help="stop after this many runs (resume later)")
    p.add_argument("--workers", type=int, default=None, help="runs at once with --launcher local (default: the profile's)")
    p.add_argument("--seeds", type=int, default=1,
                   help="train every run with this many seeds (replicates measure seed-to-seed noise; "
                        "raising it on a finished database trains only the new seeds)")
    flags.add_json(p, "print the report as JSON when done")
    p.add_argument("--cost", action="store_true",
                   help="print what the sweep would cost (runs, steps, tokens, FLOPs, and seconds on one core where "
                        "the profile has a measured speed) and exit without training")
    p.add_argument("--export", metavar="FOLDER", default=None,
                   help="when done, write the finished models there: float16 weights, the tokenizer and a "
                        "manifest with sha256 (small enough to commit; read by inverse-eval)")
    p.set_defaults(func=_sweep)
    _register_reports(sub)


def _register_reports(sub) -> None:
    r = sub.add_parser("sweep-report", help="planned and finished runs and the compute-optimal exponent of a sweep")
    flags.add_db(r, "the sweep's SQLite results database")
    flags.add_json(r, "print one JSON object")
    r.set_defaults(func=_report)

    lad = sub.add_parser("ladder-report",
                         help="Porian et al.'s ladder on our runs: a per step, its shift, and theirs (several databases)")
    lad.add_argument("--dir", required=True, metavar="FOLDER",
                     help="folder holding ladder0.db, ladder2.db, ladder3.db, ladder4.db (a missing one: no fit)")
    lad.add_argument("--method", choices=("parabola", "spline"), default="parabola",
                     help="each budget's optimum: parabola in log N (Hoffmann's; default, as in isoflop) or Akima "
                          "spline (Porian et al.'s: --method spline)")
    flags.add_bootstrap(lad, 1000, "block-bootstrap resamples (whole shapes)")
    flags.add_seed(lad)
    flags.add_level(lad)
    flags.add_json(lad, "print one JSON object")
    lad.set_defaults(func=_ladder)


def _print_report(rep, as_json: bool) -> None:
    print(json.dumps(rep.to_dict(), indent=2) if as_json else rep.summary())


def _sweep(args) -> int:
    from scalinglab.files import check_output
    from scalinglab.training import sweep

    check_output(args.db, "--db")   # a FIFO would hang sqlite; --export was checked before the command started
    if args.cost:
        print(sweep.describe_cost(args.preset, args.profile, args.seeds))
        return 0
    sweep.run_sweep(args.preset, args.profile, args.db, launcher=args.launcher, max_runs=args.max_runs,
                    workers=args.workers, seeds=args.seeds,
                    executor=None if args.executor == "auto" else args.executor)
    if args.export:
        from scalinglab.training.sweep.export import export_models

        manifest = export_models(args.db, args.export)
        size = sum(m["bytes"] for m in manifest["models"])
        print(f"exported {len(manifest['models'])} models ({size / 1e6:.1f} MB in float16) to {args.export}")
    if args.preset in ("optimal", "schedules", "lrbatch") and not args.json:  # one budget per model: no isoFLOP exponent
        from scalinglab.training.sweep.export import describe_family

        print(describe_family(args.db))
        return 0
    from scalinglab.sweeps import report

    _print_report(report(args.db), args.json)
    return 0


def _ladder(args) -> int:
    from pathlib import Path

    from scalinglab.errors import UserError
    from scalinglab.papers.porian_ladder import ladder_report

    if not Path(args.dir).is_dir():
        raise UserError(f"{args.dir}: no such folder")
    _print_report(ladder_report(args.dir, method=args.method, n_boot=args.bootstrap, seed=args.seed,
                                level=args.level), args.json)
    return 0


def _report(args) -> int:
    from scalinglab.sweeps import report

    _print_report(report(args.db), args.json)
    return 0
