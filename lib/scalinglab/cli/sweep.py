"""`scalinglab sweep` and `scalinglab sweep-report`: isoFLOP training sweeps from the shell."""

from __future__ import annotations

import argparse
import json

# Mirror scalinglab.training.sweep (CLI modules import only argparse at the top, to start fast);
# tests/test_sweep.py checks that they agree.
PRESETS = ("kaplan", "hoffmann", "ladder0", "ladder2", "ladder3", "ladder4")
PROFILES = ("smoke", "cpu", "cpu-ladder", "gpu-quick", "gpu")


def register(sub) -> None:
    p = sub.add_parser("sweep", help="train an isoFLOP grid of small GPTs into a SQLite database (resumable)",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--preset", choices=PRESETS, required=True,
                   help="kaplan: non-embedding N, constant LR after a long warmup, fixed hyperparameters; "
                        "hoffmann: N with the head, short warmup, cosine to budget, scaled LR/batch/beta2; "
                        "ladder0/2/3/4: Porian et al.'s ladder, one change per step (profile cpu-ladder): "
                        "0 = kaplan, 2 = + N with the head and a short warmup, 3 = + cosine to each budget, "
                        "4 = + per-size LR/batch/beta2 (= hoffmann)")
    p.add_argument("--profile", choices=PROFILES, default="smoke")
    p.add_argument("--db", required=True, help="SQLite results database (created, or resumed)")
    p.add_argument("--launcher", choices=("local", "submitit"), default="local",
                   help="local: runs one after another here; submitit: one job per run (SLURM when available)")
    p.add_argument("--executor", choices=("auto", "slurm", "local", "debug"), default="auto",
                   help="submitit's cluster")
    p.add_argument("--max-runs", type=int, default=None, help="stop after this many runs (resume later)")
    p.add_argument("--workers", type=int, default=None, help="runs at once with --launcher local (default: the profile's)")
    p.add_argument("--seeds", type=int, default=1,
                   help="train every run with this many seeds (replicates measure seed-to-seed noise; "
                        "raising it on a finished database trains only the new seeds)")
    p.add_argument("--json", action="store_true", help="print the report as JSON when done")
    p.set_defaults(func=_sweep)

    r = sub.add_parser("sweep-report", help="planned and finished runs and the compute-optimal exponent of a sweep")
    r.add_argument("--db", required=True)
    r.add_argument("--json", action="store_true")
    r.set_defaults(func=_report)


def _print_report(rep: dict, as_json: bool) -> None:
    if as_json:
        print(json.dumps(rep, indent=2))
        return
    print(f"{rep['preset']}/{rep['profile']}: {rep['finished']}/{rep['planned']} runs finished "
          f"({rep['train_seconds']:.0f} s of training, {rep['train_flops']:.3g} FLOPs)")
    if "utilisation" in rep:
        print(f"GPU utilisation over the sweep: {rep['utilisation']:.1%} of dense bf16 peak")
    e = rep["exponent"]
    if e.get("a") is None:
        print(f"exponent: not available ({e.get('reason')})")
    else:
        ci = e["ci"]
        interval = f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci and None not in ci else ""
        print(f"exponent a (N* ∝ C^a): {e['a']:.3f}{interval} from {e['n_budgets']} budgets (spline optima)")
        p = rep.get("exponent_parabola") or {}
        if p.get("a") is not None and p.get("ci") and None not in p["ci"]:
            print(f"  with parabola optima (5 sizes around each minimum): {p['a']:.3f} "
                  f"[{p['ci'][0]:.3f}, {p['ci'][1]:.3f}]")
    boot = rep.get("exponent_seed_bootstrap") or {}
    if boot.get("a") is not None and boot.get("ci"):
        failed = f"; {boot['n_boot_failed']} left fewer than 2 budgets" if boot.get("n_boot_failed") else ""
        print(f"  spline optima of the seed means, resampling each run's {boot['seeds']} seeds: {boot['a']:.3f} "
              f"[{boot['ci'][0]:.3f}, {boot['ci'][1]:.3f}] ({boot['n_boot']} resamples{failed}; seed noise only)")
        sc = boot.get("scatter") or {}
        if sc.get("a") is not None:
            print(f"  the same optima, with the budgets' scatter about the line added (GLS, seed covariance + "
                  f"τ = {sc['tau']:.3f}): {sc['a']:.3f} [{sc['ci'][0]:.3f}, {sc['ci'][1]:.3f}] (t, {sc['df']:.0f} df)")
    env = rep.get("exponent_envelope") or {}
    if env.get("a") is not None and env.get("ci") and None not in env["ci"]:
        dropped = (f"; {env['n_boot_failed']} of {env['n_boot']} resamples left fewer than 2 sizes and were dropped"
                   if env.get("n_boot_failed") else "")
        print(f"  Approach 1, the envelope of the runs' curves: {env['a']:.3f} [{env['ci'][0]:.3f}, "
              f"{env['ci'][1]:.3f}] ({env['n_sizes']} sizes on it{dropped})")
    noise = rep.get("replicates") or {}
    if noise.get("seed_sd") is not None:
        print(f"  seeds: up to {noise['seeds']} per point; seed-to-seed sd of one run's loss {noise['seed_sd']:.4f} "
              f"pooled over {noise['points_with_replicates']} points from {noise['runs_per_seed']} runs per seed "
              f"(median point {noise['median_point_sd']:.4f})")
        if noise.get("noise_floor") is not None:
            print(f"  the isoFLOP bootstrap's noise, fitted to them: sd = √({noise['noise_floor']:.4f}² + "
                  f"({noise['noise_slope']:.3f}·Δ)²), Δ the loss above its budget's lowest; /√k for a mean of k seeds")
        each = [e["a"] for e in noise.get("exponent_by_seed", [])]
        if each:
            print("  each seed's runs alone (spline optima): a = "
                  + ", ".join("n/a" if a is None else f"{a:.3f}" for a in each))
    elif noise.get("parabola_sd") is not None:
        print(f"  one seed per point: the isoFLOP bootstrap's noise is the parabola residual sd "
              f"{noise['parabola_sd']:.4f}, misfit included (--seeds K measures it)")
    shared = rep.get("budget_sharing") or {}
    if shared.get("shared_runs"):
        # The isoFLOP intervals are WLS intervals across budgets; with runs shared between budgets the
        # optima are correlated (positively: one run's luck moves all its points), which such intervals
        # ignore. Approach 1 resamples whole runs, so it carries the sharing.
        print(f"  note: {shared['shared_runs']} of {shared['runs']} runs give a point at more than one budget, so the "
              "budget optima are correlated: the spline and parabola intervals assume independent budgets and are "
              "likely too narrow; Approach 1's bootstrap resamples whole runs, and the seed bootstrap (with --seeds) "
              "a run's seeds at all its budgets")


def _sweep(args) -> int:
    from scalinglab.training import sweep

    sweep.run_sweep(args.preset, args.profile, args.db, launcher=args.launcher, max_runs=args.max_runs,
                    workers=args.workers, seeds=args.seeds,
                    executor=None if args.executor == "auto" else args.executor)
    _print_report(sweep.report(args.db), args.json)
    return 0


def _report(args) -> int:
    from scalinglab.training import sweep

    _print_report(sweep.report(args.db), args.json)
    return 0
