"""A training sweep's results, read: isoFLOP points, curves, the sweep's meta, and what they say.

``SweepStore(db)`` (:mod:`scalinglab.sweeps.store`) is the one reader of a sweep database (its tables:
:mod:`scalinglab.sweeps.schema`): ``points()``, ``curves()``, ``dense_curves()``, ``runs()``, ``meta()``.
:mod:`~scalinglab.sweeps.analysis` fits the compute-optimal exponent by every estimator with its intervals
and differences two sweeps; :func:`report` gathers one sweep's into a :class:`SweepReport` (what
``scalinglab sweep-report`` prints); :mod:`~scalinglab.sweeps.seeds` makes notebook 02's tables of them.

Planning, training and writing a sweep is ``scalinglab.training.sweep``; nothing here imports torch or
the training loop.
"""

from scalinglab.sweeps.analysis import (  # noqa: F401
    BLOCK_BOOT,
    ENVELOPE_BOOT,
    ISOFLOP_BOOT,
    PORIAN_STEPS,
    SEED_BOOT,
    budget_sharing,
    envelope_exponent,
    exponent,
    exponent_by_seed,
    exponent_differences,
    isoflop_points,
    loss_curves,
    replicate_noise,
    seed_bootstrap,
    select_replicates,
)
from scalinglab.sweeps.report import SweepReport, report, throughput  # noqa: F401
from scalinglab.sweeps.schema import NON_EMBEDDING_PRESETS  # noqa: F401
from scalinglab.sweeps.store import SweepStore  # noqa: F401
