"""`scalinglab inverse-eval`: score one model on one Inverse Scaling Prize task, as the prize did."""

from __future__ import annotations

from scalinglab.cli import flags


def register(sub) -> None:
    p = sub.add_parser(
        "inverse-eval",
        help="score a model on an Inverse Scaling Prize task (accuracy, prize loss, acc_norm)",
        description="Classification tasks: each class scored by its summed token log-probability after the "
                    "prompt; accuracy = argmax; loss = -log of the correct class's probability renormalised "
                    "over the classes; acc_norm = lm-evaluation-harness's per-character normalisation. "
                    "Sequence-probability tasks: loss = the completion's negative log-likelihood.",
    )
    p.add_argument("--task", required=True, help="task name, e.g. neqa, memo-trap (scalinglab.inverse_scaling.tasks.TASKS)")
    p.add_argument("--model", required=True, help="hf:NAME (needs transformers and the hub or a local folder) "
                                                  "or a path to a scalinglab .pt checkpoint")
    p.add_argument("--limit", type=int, default=None, help="score only the first K examples")
    p.add_argument("--batch-size", type=int, default=16, help="examples per forward pass (default 16)")
    flags.add_json(p, "print one JSON object")
    p.set_defaults(func=_inverse_eval)


def _inverse_eval(args) -> int:
    import time

    from scalinglab.errors import UserError
    from scalinglab.inverse_scaling import adapters as lm_adapters
    from scalinglab.inverse_scaling import scoring
    from scalinglab.inverse_scaling import tasks as inverse

    if args.limit is not None and args.limit < 1:
        raise UserError(f"--limit must be at least 1, got {args.limit}")
    if args.batch_size < 1:
        raise UserError(f"--batch-size must be at least 1, got {args.batch_size}")
    task = inverse.get_task(args.task)
    rows = inverse.load_task(task.name, limit=args.limit)
    lm = lm_adapters.load_lm(args.model)
    t0 = time.perf_counter()
    _, summary = scoring.evaluate_rows(lm, rows, scoring.ScoreOptions(batch_size=args.batch_size,
                                                                      progress=not args.json))
    out = dict(task=task.name, metric=task.metric, model=lm.name, params=lm.params, **summary,
               seconds=round(time.perf_counter() - t0, 3))
    if args.json:
        from scalinglab.serialization import dumps

        print(dumps(out))  # NaN (one example's loss_se) -> null
        return 0
    for key, value in out.items():
        print(f"{key:<12} {value:.4f}" if isinstance(value, float) else f"{key:<12} {value}")
    return 0
