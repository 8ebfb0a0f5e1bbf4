"""IsoFLOP training sweeps of small GPTs, Kaplan-style and Hoffmann-style: plan, launch, store.

A sweep is a grid of compute budgets x model shapes under one *preset*:

``kaplan`` (Kaplan et al. 2020, as Porian et al. 2024 reconstruct it)
    N counts non-embedding parameters and C = 6·N·D; one run per shape at a
    constant learning rate after a long fixed warmup, with the same learning
    rate, batch and beta2 for every size. A run is as long as the largest
    budget needs, and its validation loss is logged at every budget it passes
    (Kaplan's envelope), so each run gives one isoFLOP point per budget.
``hoffmann`` (Hoffmann et al. 2022, with Porian et al.'s corrections)
    N counts the head too (``flops.count_params(...).standard``) and C = 6·N·D;
    one run per (budget, shape), warmup of about N tokens, cosine decay to the
    budget, learning rate and batch scaled with N and beta2 = 0.99.

``ladder0``, ``ladder2``, ``ladder3``, ``ladder4``
    Porian et al.'s ladder from the first to the second, one change per step
    (``LADDER``; step 1, the count, re-reads ladder0's runs), for profile
    ``cpu-ladder``.
``optimal``
    A family of models, each shape once at ~20 tokens per parameter.
``schedules``
    Training curves, not an isoFLOP grid: each shape once per learning-rate
    schedule of ``SCHEDULE_FAMILY`` (constant, cosine, WSD, step; defined in
    ``scalinglab.schedules``), at the same tokens per parameter, evaluated at
    ~100 points a run, for profile ``cpu-schedules``.

*Profiles* size the grid: ``smoke`` (CI, seconds), ``cpu`` (the committed CPU
run, ~40 minutes on one core), ``cpu-ladder`` (the ladder, ~4 core-hours with
3 seeds), ``cpu-schedules`` (the schedule family), ``gpu-quick`` (< 8 minutes on one H100/H200)
and ``gpu`` (hours).

Results go to SQLite: ``runs`` (one row per planned run: shape, counts,
config, status, device, library versions, git commit) and ``curves`` (its
validation loss at each evaluation, with the budget it stands for, the
learning rate of the step that ended there and the training loss averaged
since the previous evaluation). Planned
rows are written first; a finished run's row and curve are written in one
transaction by the launcher, never by the job, so a SIGKILL can lose at most
the unfinished run's progress since its last checkpoint. Rerunning skips
finished runs and resumes the others from their checkpoints,
``<db>.runs/<run_id>.pt`` (each finished run's final weights stay there, for
``scalinglab.training.model.load_checkpoint``). ``launcher="submitit"`` sends the runs to SLURM (or
submitit's local executor) as independent jobs.

Reading the results (isoFLOP points, curves, exponents, the report) is ``scalinglab.sweeps``; the notebooks'
choice of sweeps is ``scalinglab.harness.sweeps``.
"""


from scalinglab.training.sweep.launch import (  # noqa: F401
    checkpoint_path,
    device_name,
    git_commit,
    load_tokens,
    run_job,
    run_sweep,
    versions,
)
from scalinglab.training.sweep.plan import (  # noqa: F401
    LADDER,
    LAUNCHERS,
    MIN_STEPS,
    NON_EMBEDDING_PRESETS,
    PRESET_CONFIG,
    PRESETS,
    PROFILES,
    SCHEDULE_FAMILY,
    Profile,
    RunSpec,
    check_preset,
    check_seeds,
    cost,
    curve_points,
    describe_cost,
    get_profile,
    plan,
)
from scalinglab.training.sweep.store import (  # noqa: F401
    SCHEMA,
    connect,
    pending,
    record_result,
    register_plan,
    spec_from_dict,
    spec_to_dict,
    summary_counts,
    sweep_meta,
)
