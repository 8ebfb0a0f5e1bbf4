"""`scalinglab hparams`: the learning rate and batch size a hyperparameter law (Li et al. 2025's form, fitted to a
learning-rate x batch grid) predicts at a new (N, D), with intervals, the query's distance from the fitted runs
and the predicted loss penalty of the usual alternatives (``scalinglab.hparams``)."""

from __future__ import annotations

from scalinglab.cli import flags

THRESHOLD = 0.0025   # mirrors scalinglab.hparams.AUTHORS_THRESHOLD (tests/test_hparams.py checks)


def register(sub) -> None:
    p = sub.add_parser(
        "hparams", help="predicted learning rate and batch size at (N, D) from a learning-rate x batch grid",
        description="Fits eta_opt = c N^a D^b and B_opt = c D^b (tokens) through each (N, D) group's near-optimal "
                    "runs, as Li et al. 2025 (Step Law) do, and prints the prediction at --at with intervals "
                    "over resamples of whole (N, D) groups, how far --at lies from the fitted groups, and the "
                    "predicted loss penalty of a fixed lr and of Kaplan's and DeepSeek's rules.")
    flags.add_source(p, "one row per run: N, D, peak learning rate, batch size and final loss")
    flags.add_columns(p, "n", "d", "loss", "lr", "batch",
                      detail={"batch": "in tokens, or in sequences with --seq-len"})
    p.add_argument("--seq-len", type=int, default=None, metavar="L",
                   help="the batch column counts sequences of L tokens (default: it counts tokens)")
    p.add_argument("--at", metavar="n=N,d=D", required=True,
                   help="the model size N and training tokens D to advise on, e.g. n=7e9,d=1.4e12")
    p.add_argument("--threshold", type=float, default=THRESHOLD,
                   help=f"near-optimal runs: within this relative loss of their (N, D) group's best (default "
                        f"{THRESHOLD:g}, the authors'; 0: the best run alone)")
    p.add_argument("--fixed-lr", type=float, default=3e-4, metavar="LR",
                   help="the fixed learning rate whose penalty is reported (default 3e-4)")
    flags.add_resampling(p, flags.BOOTSTRAP_FOR_INTERVALS, "whole (N, D) groups, the law refitted on each")
    flags.add_json(p)
    p.set_defaults(func=_run)


def _run(args) -> int:
    from scalinglab.cli.compare_laws import _parse_at
    from scalinglab.errors import UserError
    from scalinglab.hparams.advice import advise
    from scalinglab.hparams.table import hparam_runs
    from scalinglab.serialization import dumps

    at = _parse_at(args.at)
    if set(at) != {"n", "d"}:
        raise UserError(f"--at {args.at!r}: give n and d, e.g. n=7e9,d=1.4e12")
    if not 0 <= args.threshold < 1:
        raise UserError(f"--threshold must be in [0, 1), got {args.threshold:g}")
    if not 0 < args.level < 1:
        raise UserError(f"--level must be between 0 and 1, got {args.level:g}")
    runs = hparam_runs(args.csv, dataset=args.dataset, n_col=args.n_col, d_col=args.d_col, loss_col=args.loss_col,
                       lr_col=args.lr_col, batch_col=args.batch_col, seq_len=args.seq_len)
    res = advise(runs, at["n"], at["d"], fixed_lr=args.fixed_lr, threshold=args.threshold, n_boot=args.bootstrap,
                 seed=args.seed, level=args.level)
    print(dumps(res.to_dict()) if args.json else res.summary())
    return 0
