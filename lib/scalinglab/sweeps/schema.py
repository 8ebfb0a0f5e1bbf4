"""The sweep database's tables: the one definition its writer (``training.sweep.store``) creates and its
reader (:class:`scalinglab.sweeps.SweepStore`) reads. Plain constants, no imports: both sides load it cheaply.

``sweep`` holds the sweep's identity (key -> JSON value: preset, profile, tokenizer, vocab_size,
profile_config, seeds). ``runs`` has one row per planned run: shape, counts, the run's spec (JSON), status,
and, once finished, its results, device, library versions and git commit. ``curves`` has one row per
evaluation of a finished run: the budget it stands for (if any), validation loss, the learning rate of the
step that ended there and the training loss averaged since the previous row.
"""

SCHEMA = """
CREATE TABLE IF NOT EXISTS sweep (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY, preset TEXT NOT NULL, profile TEXT NOT NULL,
    width INTEGER NOT NULL, depth INTEGER NOT NULL, budget REAL NOT NULL,
    n_non_embedding INTEGER NOT NULL, n_standard INTEGER NOT NULL, n_total INTEGER NOT NULL,
    spec TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'planned',
    final_loss REAL, tokens INTEGER, steps INTEGER, seconds REAL, tokens_per_s REAL,
    device TEXT, versions TEXT, git_commit TEXT, checkpoint TEXT, finished_at TEXT,
    owner TEXT, lease_until REAL, claims INTEGER NOT NULL DEFAULT 0, finished_by TEXT
);
CREATE TABLE IF NOT EXISTS curves (
    run_id TEXT NOT NULL REFERENCES runs(run_id), step INTEGER NOT NULL, tokens INTEGER NOT NULL,
    budget REAL, flops REAL NOT NULL, loss REAL NOT NULL, train_loss REAL, lr REAL, seconds REAL,
    train_loss_mean REAL, PRIMARY KEY (run_id, step)
);
"""

# Columns added since the first schema, with their definitions: a database made before them gets them
# (ALTER TABLE ... ADD COLUMN) when a sweep opens it; readers never need them.
#   owner: who holds the run's claim (host:pid:token); lease_until: when the claim expires (Unix seconds);
#   claims: how many times the run was claimed, i.e. how often training started on it;
#   finished_by: the owner that recorded its result.
ADDED_COLUMNS = {"owner": "TEXT", "lease_until": "REAL", "claims": "INTEGER NOT NULL DEFAULT 0",
                 "finished_by": "TEXT"}
# The same for curves. train_loss is the training batch's loss at the row's step; train_loss_mean the mean of
# the batches' losses since the previous row (the training loss smoothed over the logging interval; NULL in
# rows written before it was kept). lr is the rate of the step that ended at the row's step.
ADDED_CURVE_COLUMNS = {"train_loss_mean": "REAL"}

# The presets whose N (and so C = 6·N·D) counts non-embedding parameters (Kaplan's count); every other
# preset counts the head too. A reader takes a run's N from this; ``training.sweep.plan.PRESET_CONFIG``
# plans by it (tests/test_sweep_store.py checks the two agree).
NON_EMBEDDING_PRESETS = ("kaplan", "ladder0")

# A run's replicate (its seed's index) in SQL: databases from before seeds were planned store none, i.e. 0.
REPLICATE_OF = "COALESCE(json_extract(r.spec, '$.replicate'), 0)"
