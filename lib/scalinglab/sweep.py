"""IsoFLOP training sweeps of small GPTs, Kaplan-style and Hoffmann-style.

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

*Profiles* size the grid: ``smoke`` (CI, seconds), ``cpu`` (the committed CPU
run, ~40 minutes on one core), ``cpu-ladder`` (the ladder, ~4 core-hours with
3 seeds), ``gpu-quick`` (< 8 minutes on one H100/H200)
and ``gpu`` (hours).

Results go to SQLite: ``runs`` (one row per planned run: shape, counts,
config, status, device, library versions, git commit) and ``curves`` (its
validation loss at each evaluation, with the budget it stands for). Planned
rows are written first; a finished run's row and curve are written in one
transaction by the launcher, never by the job, so a SIGKILL can lose at most
the unfinished run's progress since its last checkpoint. Rerunning skips
finished runs and resumes the others from their checkpoints,
``<db>.runs/<run_id>.pt`` (each finished run's final weights stay there, for
``scalinglab.model.load_checkpoint``). ``launcher="submitit"`` sends the runs to SLURM (or
submitit's local executor) as independent jobs.
"""

from __future__ import annotations

import json
import math
import platform
import re
import sqlite3
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path

from scalinglab import __version__
from scalinglab.errors import UserError
from scalinglab.flops import count_params

# Porian et al.'s ladder on our own runs (issue 13), one change per step. Per preset: N counted
# (non_embedding: Kaplan's, C = 6·N_ne·D; standard: with the head, C = 6·N_std·D), warmup (long: the profile's
# kaplan_warmup_tokens; short: about N_std tokens), schedule (constant: one run per shape, read at every budget
# it passes; cosine: one run per (budget, shape), decayed to it) and per-size tuning (False: kaplan_lr, batch_size
# and beta2 0.95 for every size; True: today's hoffmann rule, lr ∝ N^lr_power, batch ∝ N^batch_power, beta2 0.99).
# Step 1 (head parameters and FLOPs in N and C) trains nothing: it re-reads ladder0's runs with the standard
# count. For it, ladder0's runs are also evaluated where 6·n_standard·D meets each of ladder2's budgets
# (RunSpec.standard_budgets; those curve rows have budget NULL, so ladder0's own analysis ignores them).
# Step 4 is the tuned cosine, not Porian's tuned constant LR: it then differs from step 3 in the per-size
# lr/batch/β2 alone (their last step also drops the cosine, a second change), and its rule is the one the
# committed hoffmann sweep already uses (a constant-LR rule would need its own probe).
LADDER = {
    "ladder0": ("non_embedding", "long", "constant", False),   # Kaplan reproduction
    "ladder2": ("standard", "short", "constant", False),       # + short warmup (after step 1's count)
    "ladder3": ("standard", "short", "cosine", False),         # + cosine decay matched to each budget
    "ladder4": ("standard", "short", "cosine", True),          # + per-size lr, batch and beta2
}
PRESET_CONFIG = {"kaplan": LADDER["ladder0"], "hoffmann": LADDER["ladder4"], **LADDER}
PRESETS = ("kaplan", "hoffmann", *LADDER)
# Presets that count Kaplan's non-embedding N (and C = 6·N_ne·D) in their budgets and isoFLOP points.
NON_EMBEDDING_PRESETS = tuple(p for p, cfg in PRESET_CONFIG.items() if cfg[0] == "non_embedding")
# The steps of Porian et al.'s ladder (scalinglab.porian.STEPS) each preset corresponds to, for its targets.
# kaplan is their "Reproducing Kaplan" but with a constant LR after warmup (theirs: a cosine over a long fixed
# horizon) and validation loss (theirs: smoothed train loss). hoffmann is their cosine step plus per-size
# lr/batch/β2 set by rule; their last step tunes those by search and drops the cosine, so it lies between the two.
PORIAN_STEPS = {"kaplan": ("kaplan_reproduction",), "hoffmann": ("plus_cosine", "tuned_constant_lr"),
                "ladder0": ("kaplan_reproduction", "plus_head"), "ladder2": ("plus_short_warmup",),
                "ladder3": ("plus_cosine",), "ladder4": ("tuned_constant_lr",)}
LAUNCHERS = ("local", "submitit")
# Resamples behind report()'s intervals, shared by exponent_differences() so it differences the same exponents:
# each isoFLOP budget's optimum is bootstrapped ISOFLOP_BOOT times, Approach 1's runs ENVELOPE_BOOT times
# (its intervals are percentiles, which a few hundred resamples move in the second decimal).
ISOFLOP_BOOT = 200
ENVELOPE_BOOT = 1000
SEED_BOOT = 1000   # seed_bootstrap's resamples: each is one isoFLOP fit without an inner bootstrap
# The notebooks' smoke sweeps train two seeds, so CI runs the replicate analysis the committed sweeps need.
WORKBOOK_SMOKE_SEEDS = 2
WORKBOOK_PRESETS = ("kaplan", "hoffmann")  # the sweeps the notebooks read (the ladder's have their own databases)


@dataclass(frozen=True)
class Profile:
    """How big a sweep is: data, shapes, budgets (per preset, in that preset's FLOPs) and batch."""

    name: str
    tokenizer: str
    seq_len: int
    shapes: tuple[tuple[int, int], ...]                   # (width, depth), smallest first
    budgets: dict[str, tuple[float, ...]]                  # preset -> budgets C under its counting
    batch_size: int = 16                                   # sequences per step (kaplan: all sizes)
    head_dim: int = 16
    train_bytes: int | None = 2_000_000                    # training text tokenized into the cache (None: all)
    val_bytes: int = 300_000
    eval_tokens: int = 16_384
    kaplan_lr: float = 3e-3
    kaplan_warmup_tokens: int = 100_000
    # Kaplan's runs have a fixed length: a shape trains to the largest budget it reaches within this many
    # tokens, so the smallest models (tiny non-embedding N, cheap in Kaplan's count) miss the top budgets.
    kaplan_max_tokens: int = 1 << 62
    hoffmann_lr: float = 3e-3                              # at n_ref; scaled as (N / n_ref)^lr_power
    n_ref: float = 1e5
    lr_power: float = -0.25
    max_lr: float = 3e-2
    batch_power: float = 0.25                              # hoffmann batch ∝ N^batch_power, in powers of 2
    # hoffmann: a budget trains only the shapes whose tokens per parameter D/N = C/(6N²) fall in this range
    # (Chinchilla picked sizes around each budget's optimum the same way); the rest would be wasted compute.
    tokens_per_param: tuple[float, float] = (0.0, math.inf)
    device: str = "cpu"
    threads: int = 1                                       # torch threads per run on CPU
    workers: int = 1                                       # runs at once (local launcher): keeps a GPU busy
    compile: bool | None = None                            # torch.compile (None: on CUDA)
    seed: int = 0
    shapes_by_preset: dict[str, tuple[tuple[int, int], ...]] = field(default_factory=dict)

    def shapes_for(self, preset: str) -> tuple[tuple[int, int], ...]:
        return self.shapes_by_preset.get(preset, self.shapes)


PROFILES: dict[str, Profile] = {
    # CI: tiny widths and a 512-id BPE trained on 300 kB; both presets in ~20 s on 2 cores.
    "smoke": Profile(
        name="smoke", tokenizer="bpe512-t300000", seq_len=32, head_dim=8, batch_size=8,
        shapes=((8, 1), (16, 1), (24, 1), (32, 1), (48, 1)),
        budgets=dict(kaplan=(2e8, 4e8, 8e8, 1.6e9), hoffmann=(6e8, 1.2e9, 2.4e9), ladder0=(2e8, 4e8, 8e8, 1.6e9),
                     ladder2=(6e8, 1.2e9, 2.4e9), ladder3=(6e8, 1.2e9, 2.4e9), ladder4=(6e8, 1.2e9, 2.4e9)),
        train_bytes=600_000, val_bytes=100_000, eval_tokens=2_048, kaplan_warmup_tokens=8_192, n_ref=2e4,
        kaplan_max_tokens=40_000,
    ),
    # The committed CPU sweep (data/sweeps/): ~40 min on one core.
    "cpu": Profile(
        name="cpu", tokenizer="bpe1024-t2000000", seq_len=128, batch_size=16,
        shapes=((8, 1), (12, 1), (16, 1), (24, 1), (32, 1), (32, 2), (48, 2), (64, 2)),
        shapes_by_preset=dict(kaplan=((12, 1), (16, 1), (24, 1), (32, 2), (48, 2), (64, 3), (96, 3), (128, 4))),
        budgets=dict(kaplan=(2.5e10, 5e10, 1e11, 2e11, 4e11, 8e11),
                     hoffmann=(6.25e10, 1.25e11, 2.5e11, 5e11, 1e12)), tokens_per_param=(2, 1000),
        train_bytes=30_000_000, val_bytes=600_000, eval_tokens=65_536, kaplan_warmup_tokens=150_000,
        kaplan_max_tokens=20_000_000,
        # From a learning-rate probe at C = 2.5e11 (3e-3, 1e-2, 3e-2 at N = 32k, 106k, 434k): the best
        # rate falls from >= 1e-2 at 32k to ~3e-3 at 106k and above, hence the steep N^-0.75.
        hoffmann_lr=3.5e-3, lr_power=-0.75,
    ),
    # Porian et al.'s ladder on CPU (issue 13): presets ladder0, ladder2, ladder3, ladder4, 3 seeds each,
    # ~2 h on 2 cores (one run per core). Two decades of compute per step, 7 budgets a third of a decade apart;
    # ladder0's in Kaplan's count (C = 6·N_ne·D), the others' in the standard count. A 512-id BPE: the head
    # (512·width) is 82% of N_std at 8x1 and 18% at 96x2 (46% at 32x1), so step 1 still has a head to count
    # (Porian et al.'s smallest models are mostly head too) without it swamping every size (at 1,024 ids it was
    # 40-90%); ln 512 = 6.24. 9 shapes ~1.6x apart in N_std (5k to 273k). 30 MB of text are 14.6M tokens,
    # so no run repeats data (kaplan_max_tokens). Warmup: 200k tokens (long) against N_std (short, 5k-273k).
    "cpu-ladder": Profile(
        name="cpu-ladder", tokenizer="bpe512-t2000000", seq_len=128, batch_size=16,
        shapes=((8, 1), (12, 1), (16, 1), (24, 1), (32, 1), (48, 1), (48, 2), (64, 2), (96, 2)),
        budgets=dict(ladder0=tuple(1e10 * 10 ** (k / 3) for k in range(7)),
                     **{p: tuple(2e10 * 10 ** (k / 3) for k in range(7)) for p in ("ladder2", "ladder3", "ladder4")}),
        tokens_per_param=(2, 500), train_bytes=30_000_000, val_bytes=600_000, eval_tokens=65_536,
        kaplan_warmup_tokens=200_000, kaplan_max_tokens=14_000_000, hoffmann_lr=3.5e-3, lr_power=-0.75,
    ),
    # One H100/H200, < 8 min for both presets (untested here: no GPU in this session).
    # The models are tiny for a GPU, so: an 8k BPE (a 50k-row head would be most of N), no torch.compile
    # (compiling each shape would take longer than training it), and 4 runs at once on the one GPU.
    "gpu-quick": Profile(
        name="gpu-quick", tokenizer="bpe8192-t20000000", seq_len=256, batch_size=128, head_dim=32, device="cuda",
        shapes=((32, 2), (48, 2), (64, 2), (96, 2), (128, 3), (192, 3), (256, 4)),
        budgets=dict(kaplan=(1e13, 2e13, 4e13, 8e13, 1.6e14, 3.2e14), hoffmann=(1e14, 2e14, 4e14, 8e14),
                     # the ladder (untested: no GPU yet): ladder0 as kaplan, the standard-count steps as hoffmann
                     ladder0=(1e13, 2e13, 4e13, 8e13, 1.6e14, 3.2e14),
                     **{p: (1e14, 2e14, 4e14, 8e14) for p in ("ladder2", "ladder3", "ladder4")}),
        train_bytes=120_000_000, val_bytes=4_000_000, eval_tokens=262_144, kaplan_lr=2e-3,
        kaplan_warmup_tokens=10_000_000, kaplan_max_tokens=400_000_000, hoffmann_lr=2e-3, n_ref=2e6,
        tokens_per_param=(2, 1000), threads=4, workers=4, compile=False,
    ),
    # Hours on one GPU, GPT-2's tokenizer. Budgets are capped by the data: the staged corpus holds ~50M
    # tokens, so the top budget's smallest models see it several times; rebuild the full 231M-token corpus
    # (`python -m scalinglab.corpus build ... --train-bytes 900000000`) before going further.
    "gpu": Profile(
        name="gpu", tokenizer="gpt2", seq_len=512, batch_size=64, head_dim=64, device="cuda",
        shapes=((48, 2), (64, 2), (96, 2), (128, 2), (192, 3), (256, 4), (384, 6), (512, 8)),
        budgets=dict(kaplan=tuple(1e14 * 2**k for k in range(6)), hoffmann=tuple(1e15 * 2**k for k in range(5)),
                     ladder0=tuple(1e14 * 2**k for k in range(6)),
                     **{p: tuple(1e15 * 2**k for k in range(5)) for p in ("ladder2", "ladder3", "ladder4")}),
        train_bytes=None, val_bytes=8_000_000, eval_tokens=1_048_576, kaplan_lr=1e-3,
        kaplan_warmup_tokens=50_000_000, kaplan_max_tokens=1_000_000_000, hoffmann_lr=1e-3, n_ref=2e7,
        tokens_per_param=(2, 200), threads=4, workers=2,
    ),
}


def get_profile(name: str) -> Profile:
    if name not in PROFILES:
        raise UserError(f"unknown sweep profile {name!r}: use one of {', '.join(PROFILES)}")
    return PROFILES[name]


def cost(preset: str, profile: Profile | str, vocab_size: int) -> dict:
    """What a sweep asks of the hardware: runs, training tokens, optimizer steps and FLOPs
    (forward+backward with attention, ``flops.flops_per_token(...).with_attention``, plus evaluations)."""
    from scalinglab.flops import flops_per_token, step_at

    prof = get_profile(profile) if isinstance(profile, str) else profile
    out = dict(runs=0, tokens=0, steps=0, flops=0.0)
    for r in plan(preset, prof, vocab_size):
        t = r.train
        fpt = flops_per_token(r.width, r.depth, vocab_size, seq_len=prof.seq_len).with_attention
        # the steps and evaluations scalinglab.train.train makes: whole steps, the end evaluated once
        per_step = t["batch_size"] * prof.seq_len
        steps = step_at(t["total_tokens"], per_step)
        evals = len({min(steps, step_at(e, per_step)) for e in t["eval_at_tokens"]} | {steps})
        out["runs"] += 1
        out["tokens"] += steps * per_step
        out["steps"] += steps
        out["flops"] += fpt * steps * per_step + fpt / 3 * evals * prof.eval_tokens  # eval: forward only
    return out


def _check_preset(preset: str) -> None:
    if preset not in PRESETS:
        raise UserError(f"unknown sweep preset {preset!r}: use one of {', '.join(PRESETS)}")


def _check_seeds(seeds) -> None:
    if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 1:
        raise UserError(f"seeds must be a whole number of at least 1, got {seeds!r}")


# --- the grid ------------------------------------------------------------------------------

@dataclass(frozen=True)
class RunSpec:
    """One training run of a sweep: everything a job needs, JSON-serialisable."""

    run_id: str
    preset: str
    profile: str
    width: int
    depth: int
    budget: float                  # the largest budget this run is evaluated at (C, preset's counting)
    budgets: tuple[float, ...]     # every budget it passes, each logged
    n_non_embedding: int
    n_standard: int
    n_total: int
    model: dict
    train: dict
    replicate: int = 0             # which of the sweep's seeds (0: the profile's seed; run ids of 0 carry no suffix)
    # ladder0 only: the standard-count budgets (ladder2's) it is also evaluated at, for the ladder's step 1
    standard_budgets: tuple[float, ...] = ()


# A cosine run needs enough steps for its budget to be met to within 1/(2*MIN_STEPS) (whole steps).
MIN_STEPS = 25


def _pow2(x: float, lo: int, hi: int) -> int:
    return int(min(max(2 ** round(math.log2(x)), lo), hi))


def _hoffmann_batch(prof: Profile, n: int, tokens: float) -> int:
    """Batch grows with N (in powers of 2), but shrinks until the run has MIN_STEPS steps."""
    batch = _pow2(prof.batch_size * (n / prof.n_ref) ** prof.batch_power, 4, 4 * prof.batch_size)
    while batch > 1 and tokens / (batch * prof.seq_len) < MIN_STEPS:
        batch //= 2
    return batch


def plan(preset: str, profile: Profile | str, vocab_size: int, seeds: int = 1) -> list[RunSpec]:
    """Every run of the sweep, smallest budget and shape first; with ``seeds=k`` each run k times.

    Replicate i trains with seed ``profile.seed + i`` (initialisation and batch order) and the run id
    of the first plus ``-s<i>``, so a sweep planned with one seed is the first replicate of the same
    sweep planned with more, and extending a finished database retrains nothing."""
    _check_preset(preset)
    _check_seeds(seeds)
    prof = get_profile(profile) if isinstance(profile, str) else profile
    first = _plan_one_seed(preset, prof, vocab_size)
    runs = first + [replace(r, run_id=f"{r.run_id}-s{i}", replicate=i, train=dict(r.train, seed=prof.seed + i))
                    for i in range(1, seeds) for r in first]
    return sorted(runs, key=lambda r: (r.budget, r.n_standard, r.replicate))


def _plan_one_seed(preset: str, prof: Profile, vocab_size: int) -> list[RunSpec]:
    from scalinglab.flops import step_at

    budgets = tuple(sorted(prof.budgets[preset]))
    runs = []
    for width, depth in prof.shapes_for(preset):
        counts = count_params(width, depth, vocab_size, seq_len=prof.seq_len)
        model = dict(vocab_size=vocab_size, seq_len=prof.seq_len, width=width, depth=depth,
                     head_dim=min(prof.head_dim, width))
        common = dict(preset=preset, profile=prof.name, width=width, depth=depth,
                      n_non_embedding=counts.non_embedding, n_standard=counts.standard, n_total=counts.total,
                      model=model)
        base = dict(eval_tokens=prof.eval_tokens, seed=prof.seed, device=prof.device, checkpoint_every_s=30.0,
                    compile=prof.compile)
        count, warmup, schedule, tuned = PRESET_CONFIG[preset]
        if schedule == "constant":
            n = counts.non_embedding if count == "non_embedding" else counts.standard
            reach = [c for c in budgets if math.ceil(c / (6 * n)) <= prof.kaplan_max_tokens] or budgets[:1]
            tokens = [math.ceil(c / (6 * n)) for c in reach]
            evals, standard = list(tokens), ()
            if preset == "ladder0":  # step 1's points: the same run where 6·n_standard·D meets ladder2's budgets
                standard = tuple(c for c in sorted(prof.budgets.get("ladder2", ()))
                                 if math.ceil(c / (6 * counts.standard)) <= tokens[-1])
                evals = sorted(set(evals) | {math.ceil(c / (6 * counts.standard)) for c in standard})
            train = dict(base, lr=prof.kaplan_lr, schedule="constant",
                         warmup_tokens=prof.kaplan_warmup_tokens if warmup == "long" else counts.standard,
                         total_tokens=tokens[-1], batch_size=prof.batch_size, beta2=0.95, eval_at_tokens=evals)
            run_id = f"kaplan-w{width}-d{depth}" if preset == "kaplan" else f"{preset}-w{width}-d{depth}"
            runs.append(RunSpec(run_id=run_id, budget=reach[-1], budgets=tuple(reach), train=train,
                                standard_budgets=standard, **common))
            continue
        n = counts.standard
        if tuned:
            lr = min(prof.hoffmann_lr * (n / prof.n_ref) ** prof.lr_power, prof.max_lr)
        lo, hi = prof.tokens_per_param
        for c in budgets:
            if not lo <= c / (6 * n * n) <= hi:
                continue
            if tuned:
                batch, beta2 = _hoffmann_batch(prof, n, c / (6 * n)), 0.99
            else:  # step 3: step 0's lr, batch and beta2 for every size; a run too short for them is left out
                lr, batch, beta2 = prof.kaplan_lr, prof.batch_size, 0.95
                if c / (6 * n) < MIN_STEPS * batch * prof.seq_len:
                    continue
            tokens = step_at(math.ceil(c / (6 * n)), batch * prof.seq_len) * batch * prof.seq_len
            # Also evaluated on the way, every half-octave of compute down to the grid's smallest budget:
            # mid-cosine points are what Hoffmann's Approach 1 takes the envelope of (scalinglab.envelope),
            # and they never stand for a budget, so the isoFLOP analysis ignores them.
            on_the_way = [math.ceil(c * 2 ** (-k / 2) / (6 * n)) for k in range(1, 2 * len(budgets))
                          if c * 2 ** (-k / 2) >= budgets[0] * (1 - 1e-9)]
            train = dict(base, lr=lr, schedule="cosine", warmup_tokens=min(n, tokens // 4), total_tokens=tokens,
                         batch_size=batch, beta2=beta2, eval_at_tokens=sorted(on_the_way) + [tokens])
            runs.append(RunSpec(run_id=f"{preset}-C{c:.3g}-w{width}-d{depth}", budget=c, budgets=(c,),
                                train=train, **common))
    return runs


# --- the database --------------------------------------------------------------------------

SCHEMA = """
CREATE TABLE IF NOT EXISTS sweep (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY, preset TEXT NOT NULL, profile TEXT NOT NULL,
    width INTEGER NOT NULL, depth INTEGER NOT NULL, budget REAL NOT NULL,
    n_non_embedding INTEGER NOT NULL, n_standard INTEGER NOT NULL, n_total INTEGER NOT NULL,
    spec TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'planned',
    final_loss REAL, tokens INTEGER, steps INTEGER, seconds REAL, tokens_per_s REAL,
    device TEXT, versions TEXT, git_commit TEXT, checkpoint TEXT, finished_at TEXT
);
CREATE TABLE IF NOT EXISTS curves (
    run_id TEXT NOT NULL REFERENCES runs(run_id), step INTEGER NOT NULL, tokens INTEGER NOT NULL,
    budget REAL, flops REAL NOT NULL, loss REAL NOT NULL, train_loss REAL, lr REAL, seconds REAL,
    PRIMARY KEY (run_id, step)
);
"""


def connect(db_path: Path | str) -> sqlite3.Connection:
    try:
        con = sqlite3.connect(db_path, timeout=60)
        con.executescript(SCHEMA)
    except sqlite3.DatabaseError as exc:  # another kind of file, or a folder
        raise UserError(f"{db_path}: not a sweep database ({exc})") from None
    return con


def _meta(con: sqlite3.Connection) -> dict:
    return {k: json.loads(v) for k, v in con.execute("SELECT key, value FROM sweep")}


def register_plan(con: sqlite3.Connection, preset: str, prof: Profile, runs: list[RunSpec], vocab: int) -> None:
    """Write the sweep's identity and its planned runs; refuses a database made for another sweep.
    Planning more seeds than before adds their runs (``seeds`` records the most planned); fewer removes none."""
    meta = _meta(con)
    if meta and (meta.get("preset"), meta.get("profile")) != (preset, prof.name):
        raise UserError(f"database holds the {meta.get('preset')}/{meta.get('profile')} sweep, "
                        f"not {preset}/{prof.name}: use another --db")
    seeds = max([meta.get("seeds", 1)] + [r.replicate + 1 for r in runs])
    with con:
        for key, value in dict(preset=preset, profile=prof.name, tokenizer=prof.tokenizer, vocab_size=vocab,
                               profile_config=asdict(prof)).items():
            con.execute("INSERT OR IGNORE INTO sweep VALUES (?, ?)", (key, json.dumps(value)))
        con.execute("INSERT OR REPLACE INTO sweep VALUES ('seeds', ?)", (json.dumps(seeds),))
        con.executemany(
            "INSERT OR IGNORE INTO runs (run_id, preset, profile, width, depth, budget, n_non_embedding, "
            "n_standard, n_total, spec) VALUES (?,?,?,?,?,?,?,?,?,?)",
            [(r.run_id, r.preset, r.profile, r.width, r.depth, r.budget, r.n_non_embedding, r.n_standard,
              r.n_total, json.dumps(asdict(r))) for r in runs])


def record_result(con: sqlite3.Connection, spec: RunSpec, result: dict) -> None:
    """The launcher's one write per finished run: its row and its curve in one transaction."""
    from scalinglab.flops import step_at

    n = spec.n_non_embedding if spec.preset in NON_EMBEDDING_PRESETS else spec.n_standard
    budget_at = {step_at(math.ceil(c / (6 * n)), result["tokens_per_step"]): c for c in spec.budgets}
    with con:
        con.execute("DELETE FROM curves WHERE run_id = ?", (spec.run_id,))
        con.executemany(
            "INSERT INTO curves VALUES (?,?,?,?,?,?,?,?,?)",
            [(spec.run_id, r["step"], r["tokens"], budget_at.get(r["step"]), 6.0 * n * r["tokens"], r["loss"],
              r.get("train_loss"), r.get("lr"), r.get("seconds")) for r in result["curve"]])
        con.execute(
            "UPDATE runs SET status='finished', final_loss=?, tokens=?, steps=?, seconds=?, tokens_per_s=?, "
            "device=?, versions=?, git_commit=?, checkpoint=?, finished_at=? WHERE run_id=?",
            (result["final_loss"], result["tokens"], result["steps"], result["seconds"], result["tokens_per_s"],
             result["device"], json.dumps(result["versions"]), result["git_commit"], result["checkpoint"],
             datetime.now(timezone.utc).isoformat(timespec="seconds"), spec.run_id))


def pending(con: sqlite3.Connection) -> list[RunSpec]:
    """Unfinished runs, a whole seed's grid before the next seed's: a sweep stopped early still has
    complete replicates."""
    rows = con.execute("SELECT spec FROM runs WHERE status != 'finished'").fetchall()
    return sorted((_spec(json.loads(s)) for (s,) in rows), key=lambda r: (r.replicate, r.budget, r.n_standard))


def _spec(d: dict) -> RunSpec:
    return RunSpec(**{**d, "budgets": tuple(d["budgets"]), "standard_budgets": tuple(d.get("standard_budgets", ()))})


# --- one job -------------------------------------------------------------------------------

def versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = dict(python=platform.python_version(), scalinglab=__version__)
    for pkg in ("torch", "numpy", "tokenizers", "tiktoken"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = None
    return out


def git_commit() -> str:
    """HEAD of the checkout the library runs from, with '+dirty' when files differ (or 'unknown')."""
    root = Path(__file__).resolve().parents[2]
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (head + ("+dirty" if dirty else "")) if head else "unknown"


def device_name(device: str) -> str:
    import torch

    if device == "cuda":
        return f"cuda:{torch.cuda.get_device_name(0)}"
    name = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            name = next((line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")), name)
    except OSError:
        pass
    threads = torch.get_num_threads()
    return f"cpu:{name} ({threads} thread{'s' if threads > 1 else ''})"


def load_tokens(prof: Profile):
    """(tokenizer, train tokens, val tokens) from the cache, tokenizing on first use."""
    from scalinglab.tokenizer import get_tokenizer, token_cache

    tok = get_tokenizer(prof.tokenizer)
    return (tok, token_cache(tok, "train", max_bytes=prof.train_bytes),
            token_cache(tok, "val", max_bytes=prof.val_bytes))


def run_job(spec_dict: dict, checkpoint: str) -> dict:
    """Train one run, resuming from (and finally saving to) ``checkpoint``; returns its result.
    Writes no database."""
    import torch

    from scalinglab.model import GPTConfig
    from scalinglab.train import TrainConfig, resolve_device, train

    spec = _spec(spec_dict)
    prof = get_profile(spec.profile)
    device = resolve_device(prof.device)
    if device == "cpu":
        torch.set_num_threads(prof.threads)
    _, train_tokens, val_tokens = load_tokens(prof)
    model_cfg = GPTConfig(**spec.model)
    train_cfg = TrainConfig(**spec.train)
    ckpt = Path(checkpoint)
    meta = dict(run_id=spec.run_id, preset=spec.preset, profile=spec.profile, tokenizer=prof.tokenizer,
                n_non_embedding=spec.n_non_embedding, n_standard=spec.n_standard)
    commit = git_commit()  # the code this job loaded, before anyone commits during a long run
    res = train(model_cfg, train_cfg, train_tokens, val_tokens, checkpoint=ckpt, meta=meta)
    return dict(curve=res.curve, final_loss=res.final_loss, tokens=res.tokens, steps=res.steps,
                seconds=res.seconds, tokens_per_s=res.tokens_per_s, device=device_name(res.device),
                tokens_per_step=train_cfg.batch_size * model_cfg.seq_len, versions=versions(),
                git_commit=commit, checkpoint=str(ckpt))


# --- launchers -----------------------------------------------------------------------------

def checkpoint_path(db_path: Path, run_id: str) -> Path:
    """Where a run's checkpoint lives: ``<db>.runs/<run_id>.pt`` (the file name says which run it is)."""
    return db_path.with_name(db_path.name + ".runs") / f"{run_id}.pt"


def run_sweep(preset: str, profile: str, db_path: Path | str, *, launcher: str = "local",
              max_runs: int | None = None, progress: bool = True, executor: str | None = None,
              workers: int | None = None, on_finish: Callable[[RunSpec, dict], None] | None = None,
              seeds: int = 1) -> dict:
    """Run (or resume) a sweep into ``db_path``; returns the counts of planned and finished runs.

    ``seeds=k`` trains every run of the grid with k seeds (:func:`plan`); on a finished one-seed database
    it trains only the new replicates.

    ``workers`` runs that many at once on this machine (default: the profile's); ``executor``
    picks submitit's cluster ("local", "debug", "slurm"; default: auto)."""
    from tqdm.auto import tqdm

    _check_preset(preset)
    if launcher not in LAUNCHERS:
        raise UserError(f"unknown launcher {launcher!r}: use one of {', '.join(LAUNCHERS)}")
    if max_runs is not None and max_runs < 0:  # a negative slice would silently skip the last runs instead
        raise UserError(f"max_runs must be at least 0, got {max_runs}")
    prof = get_profile(profile)
    _check_seeds(seeds)
    db_path = Path(db_path)
    db_path.parent.mkdir(parents=True, exist_ok=True)
    con = connect(db_path)  # a bad --db fails before the tokenizing
    tok, _, _ = load_tokens(prof)  # tokenize once here, not in every job
    register_plan(con, preset, prof, plan(preset, prof, tok.vocab_size, seeds), tok.vocab_size)
    todo = pending(con)[:max_runs]
    bar = tqdm(total=len(todo), desc=f"{preset}/{profile}", unit="run", disable=not progress)

    def finish(spec: RunSpec, result: dict) -> None:
        record_result(con, spec, result)
        bar.update(1)
        bar.set_postfix_str(f"{spec.run_id} loss {result['final_loss']:.3f}")
        if on_finish:
            on_finish(spec, result)

    workers = workers or prof.workers
    if launcher == "local" and workers <= 1:
        for spec in todo:
            finish(spec, run_job(asdict(spec), str(checkpoint_path(db_path, spec.run_id))))
    elif launcher == "local":
        _pool(todo, db_path, workers, finish)
    else:
        _submitit(todo, db_path, prof, finish, executor)
    bar.close()
    out = summary_counts(con)
    con.close()
    return out


def _pool(todo: list[RunSpec], db_path: Path, workers: int, finish) -> None:
    """Several runs at once in worker processes (tiny models leave a GPU mostly idle); results come back here."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {pool.submit(run_job, asdict(s), str(checkpoint_path(db_path, s.run_id))): s for s in todo}
        for fut in as_completed(futures):
            finish(futures[fut], fut.result())


def _submitit(todo: list[RunSpec], db_path: Path, prof: Profile, finish, cluster: str | None) -> None:
    """Submit every pending run as its own job; record each as it completes (the jobs never touch the DB)."""
    import submitit

    folder = db_path.with_name(db_path.name + ".submitit")
    ex = submitit.AutoExecutor(folder=str(folder), cluster=cluster)
    ex.update_parameters(timeout_min=24 * 60, cpus_per_task=prof.threads, nodes=1, tasks_per_node=1,
                         gpus_per_node=1 if prof.device == "cuda" else 0)
    jobs, failed = {}, []
    try:
        for spec in todo:
            job = ex.submit(run_job, asdict(spec), str(checkpoint_path(db_path, spec.run_id)))
            jobs[job.job_id] = (job, spec)
        while jobs:
            for job_id in [j for j, (job, _) in jobs.items() if job.done()]:
                job, spec = jobs.pop(job_id)
                try:
                    result = job.result()
                except Exception as exc:  # one failed run must not stop the others being recorded
                    failed.append(f"{spec.run_id} (job {job_id}: {_failure_line(exc)})")
                    continue
                finish(spec, result)
            if jobs:
                time.sleep(0.5)
    finally:
        # Left early (Ctrl-C, an error recording a result): cancel the jobs still queued or running, so
        # that rerunning the sweep, which resubmits every unfinished run, never has two jobs training into
        # one checkpoint. Their checkpoints stay, and the resubmitted runs resume from them.
        for job, _ in jobs.values():
            try:
                job.cancel(check=False)
            except Exception:  # noqa: BLE001 - best effort: the job may have just ended
                pass
    if failed:
        raise UserError(f"{len(failed)} of {len(todo)} runs failed and stay pending (logs in {folder}; rerun to "
                        f"retry): {'; '.join(failed)}")


def _failure_line(exc: Exception) -> str:
    """The exception line of a failed job's trace (submitit wraps it among log paths), else its first line."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    raised = [ln for ln in lines if re.match(r"^[\w.]+(Error|Exception|Interrupt|Exit)\b", ln)]
    return (raised[-1] if raised else lines[0] if lines else type(exc).__name__)[:200]


def summary_counts(con: sqlite3.Connection) -> dict:
    planned, finished = con.execute(
        "SELECT COUNT(*), COALESCE(SUM(status = 'finished'), 0) FROM runs").fetchone()
    return dict(planned=planned, finished=finished)


# --- analysis ------------------------------------------------------------------------------

# A run's replicate (its seed's index; databases from before seeds were planned have none: 0)
_REPLICATE_OF = "COALESCE(json_extract(r.spec, '$.replicate'), 0)"
_REPLICATE = f"{_REPLICATE_OF} AS replicate"


def _run_of(run_ids):
    """The run of the one-seed grid each run id replicates: a replicate's id is that run's plus -s<i>."""
    return run_ids.str.replace(r"-s\d+$", "", regex=True)


def _usable_budgets(points):
    """The budgets an isoFLOP fit uses: those with at least 4 finished sizes."""
    sizes = points.groupby("flops")["n"].nunique()
    return sizes[sizes >= 4].index


def isoflop_points(db_path: Path | str):
    """One row per (run, budget it passed): preset, run_id, width, depth, n (the preset's N),
    n_non_embedding, n_standard, n_total, flops (the budget C), tokens, loss (validation), replicate."""
    import pandas as pd

    db_path = Path(db_path)
    if not db_path.is_file():
        raise UserError(f"{db_path}: no such sweep database")
    if db_path.suffix == ".csv":  # an export of this very table
        df = pd.read_csv(db_path)
        return df if "replicate" in df else df.assign(replicate=0)
    with sqlite3.connect(db_path) as con:
        df = pd.read_sql_query(
            "SELECT r.preset, r.run_id, r.width, r.depth, r.n_non_embedding, r.n_standard, r.n_total, "
            f"c.budget AS flops, c.tokens, c.loss, {_REPLICATE} FROM curves c JOIN runs r USING (run_id) "
            "WHERE c.budget IS NOT NULL AND r.status = 'finished' ORDER BY c.budget, r.n_standard", con)
    df.insert(4, "n", df["n_non_embedding"].where(df["preset"].isin(NON_EMBEDDING_PRESETS), df["n_standard"]))
    return df


def loss_curves(db_path: Path | str, mean_over_seeds: bool = False):
    """Every logged evaluation of every finished run, for Approach 1 (``scalinglab.envelope``): preset,
    run_id, shape ("w<width>-d<depth>"), width, depth, n (the preset's N), step, tokens, flops
    (6·N·tokens), budget (the budget a row stands for, if any), loss (validation) and replicate.

    ``mean_over_seeds`` averages each run's replicates evaluation by evaluation (they share their
    schedule): one curve per run of the one-seed grid, under its run id, with ``seeds`` (how many
    were averaged) in place of ``replicate``."""
    import pandas as pd

    db_path = Path(db_path)
    if not db_path.is_file():
        raise UserError(f"{db_path}: no such sweep database")
    try:
        with sqlite3.connect(db_path) as con:
            df = pd.read_sql_query(
                "SELECT r.preset, r.run_id, r.width, r.depth, r.n_non_embedding, r.n_standard, c.step, c.tokens, "
                f"c.flops, c.budget, c.loss, {_REPLICATE} FROM curves c JOIN runs r USING (run_id) "
                "WHERE r.status = 'finished' "
                "ORDER BY r.n_standard, c.flops", con)
    except (sqlite3.DatabaseError, pd.errors.DatabaseError) as exc:
        raise UserError(f"{db_path}: not a sweep database ({exc})") from None
    df.insert(2, "shape", "w" + df["width"].astype(str) + "-d" + df["depth"].astype(str))
    df.insert(5, "n", df["n_non_embedding"].where(df["preset"].isin(NON_EMBEDDING_PRESETS), df["n_standard"]).astype(float))
    df = df.drop(columns=["n_non_embedding", "n_standard"])
    if mean_over_seeds:
        cols = list(df.columns)
        df["run_id"] = _run_of(df["run_id"])
        keys = [c for c in cols if c not in ("loss", "replicate")]
        df = (df.groupby(keys, as_index=False, dropna=False, sort=False)
              .agg(loss=("loss", "mean"), seeds=("replicate", "size")))
        df = df[[c if c != "replicate" else "seeds" for c in cols]]
    return df


def exponent(db_path: Path | str, method: str = "spline", n_boot: int = ISOFLOP_BOOT,
             window: int | None = None) -> dict:
    """N* ∝ C^a from the sweep's isoFLOP points: {a, ci, n_budgets, dropped} or {a: None, reason}.

    ``window=k`` fits each budget on the k sizes around its lowest loss (``isoflop.budget_optima``)."""
    fit = _isoflop_fit(db_path, method, n_boot, window)
    if isinstance(fit, str):
        return dict(a=None, ci=None, reason=fit)
    if fit.status != "ok" or not math.isfinite(fit.exponent):
        return dict(a=None, ci=None, reason=f"{fit.status}: {fit.n_budgets} budget(s) with an interior optimum",
                    dropped=[list(d) for d in fit.dropped])
    ci = [None if not math.isfinite(x) else round(x, 4) for x in fit.ci]
    return dict(a=round(fit.exponent, 4), ci=ci, n_budgets=fit.n_budgets, method=method, window=window,
                dropped=[list(d) for d in fit.dropped])


def _isoflop_fit(db_path: Path | str, method: str, n_boot: int, window: int | None, points=None, noise=None):
    """The IsoflopFit behind :func:`exponent` (of ``points`` if given: a subset of the sweep's; with
    ``noise`` for its bootstrap if given), or why there is none (a string)."""
    from scalinglab.isoflop import budget_optima, fit_exponent

    points = isoflop_points(db_path) if points is None else points
    usable = _usable_budgets(points)
    if len(usable) < 3:
        return f"{len(usable)} budget(s) with at least 4 finished sizes (needs 3)"
    # replicates (runs that differ only in their seed) are averaged, and their spread is the bootstrap's noise
    optima = budget_optima(points[points["flops"].isin(usable)], "n", "flops", "loss", method=method,
                           n_boot=n_boot, window=window, replicates="mean", noise=noise)
    return fit_exponent(optima)


def exponent_by_seed(db_path: Path | str, method: str = "spline", window: int | None = None,
                     noise: str = "measured") -> list[dict]:
    """a from each seed's runs alone, one entry per replicate: {replicate, a, n_budgets} (a None, with a
    reason, where that seed has no fit). The estimator of :func:`exponent`, its bootstrap's noise the
    model measured on all the seeds (``noise="measured"``): the spread of these is how far the choice of
    one seed moves a one-seed sweep's exponent. ``noise="fallback"`` analyses each seed as a one-seed
    sweep would be, with the parabola residual as the noise: what a sweep without replicates reports."""
    from scalinglab.isoflop import seed_noise

    if noise not in ("measured", "fallback"):
        raise UserError(f"noise must be measured or fallback, not {noise!r}")
    points = isoflop_points(db_path)
    measured = seed_noise(points, "n", "flops", "loss")
    noise = measured.at if noise == "measured" and measured.dof else None
    out = []
    for rep, pts in points.groupby("replicate"):
        fit = _isoflop_fit(db_path, method, ISOFLOP_BOOT, window, points=pts, noise=noise)
        if isinstance(fit, str) or fit.status != "ok":
            out.append(dict(replicate=int(rep), a=None, reason=fit if isinstance(fit, str) else fit.status))
        else:
            out.append(dict(replicate=int(rep), a=round(fit.exponent, 4), n_budgets=fit.n_budgets))
    return out


def seed_bootstrap(db_path: Path | str, method: str = "spline", window: int | None = None,
                   n_boot: int = SEED_BOOT, seed: int = 0, level: float = 0.95) -> dict:
    """a from the seed-averaged isoFLOP points, with two intervals built on resampling each run's seeds.

    The unit is a run of the one-seed grid with its replicates (a Kaplan-preset run gives a point at
    every budget it passes, so the unit carries its points at all of them, and the correlation between
    budgets that the WLS interval ignores). Each resample draws, for every run, k of its k replicates
    with replacement and re-averages; with k of 2 or 3, plain resampling would understate the spread by
    (k−1)/k, so each replicate's deviation from its run's mean is first scaled by √(k/(k−1)). Then the
    isoFLOP optima (no inner bootstrap) and the least-squares fit of N* ∝ C^a
    (``isoflop.resampled_exponents``, on the budgets :func:`exponent` uses). ``a`` is that fit to the seed
    means: plain least squares on the optima, not :func:`exponent`'s WLS on bootstrap medians.

    - ``ci``: percentiles of the resampled a. Seed noise only: the grid, the estimator and the power
      law are held fixed, the budgets' scatter about the line does not enter, and the seeds' spread is
      taken as known (from 2 or 3 per run), so it is the narrowest honest interval, not the widest.
    - ``scatter``: generalised least squares on the same optima with the seeds' covariance of the
      budgets' log N* (the seed noise of shared runs included) plus τ²·I, the budgets' scatter beyond it
      (``isoflop.fit_exponent_scatter``): {a, ci, se, df, tau, n_budgets, n_boot_complete,
      budget_seed_sd (each budget's seed sd of log N*, to set τ against)}. Lack of fit enters, as
      independent across budgets; in a sweep whose budgets share runs (Kaplan preset) a shape's
      systematic deviation moves several budgets' optima together, which τ²·I does not carry.

    Resamples left with fewer than two budgets are counted in ``n_boot_failed``. It assumes the runs'
    seeds are independent; replicate i of every run draws its batches from the same stream (seed i),
    so a seed's luck with the data order is shared across its runs. Needs every run to have 2+ seeds.

    {a, ci, n_boot, n_boot_failed, runs, seeds, method, window, scatter, boot (the resampled a's)} or
    {a: None, ci: None, reason}."""
    out, _ = _seed_fits(db_path, method, window, n_boot, seed, level)
    return out


def _seed_fits(db_path, method, window, n_boot, seed, level):
    """(:func:`seed_bootstrap`'s dict, the scatter IsoflopFit or None)."""
    import numpy as np

    from scalinglab.isoflop import exponents_of_optima, fit_exponent_scatter, resampled_optima

    points = isoflop_points(db_path)
    points["run"] = _run_of(points["run_id"])
    k = points.groupby("run")["replicate"].nunique()
    if points.empty or k.min() < 2:
        return dict(a=None, ci=None, reason=f"{int((k < 2).sum())} of {len(k)} runs have fewer than 2 seeds "
                                                 "(scalinglab sweep --seeds K)"), None
    usable = _usable_budgets(points)
    rng = np.random.default_rng(seed)
    columns = {}  # (flops, n) -> the seed mean, then n_boot resampled means
    for run, g in points[points["flops"].isin(usable)].groupby("run"):
        wide = g.pivot_table(index="replicate", columns="flops", values="loss")
        if wide.isna().any().any():
            return dict(a=None, ci=None, reason=f"run {run}: its seeds passed different budgets"), None
        loss = wide.to_numpy()
        mean = loss.mean(axis=0)
        resid = (loss - mean) * np.sqrt(len(loss) / (len(loss) - 1))
        draws = rng.integers(0, len(loss), (n_boot, len(loss)))
        boot = mean + resid[draws].mean(axis=1)           # (n_boot, budgets of this run)
        for j, c in enumerate(wide.columns):
            columns[c, float(g["n"].iloc[0])] = np.concatenate([[mean[j]], boot[:, j]])
    budgets = []
    for c in sorted({c for c, _ in columns}):
        ns = sorted(n for cc, n in columns if cc == c)
        budgets.append((c, np.array(ns), np.array([columns[c, n] for n in ns])))
    flops = [c for c, _, _ in budgets]
    opt = resampled_optima(budgets, method, window)
    a_all = exponents_of_optima(flops, opt)
    a, boot = a_all[0], a_all[1:]
    if not np.isfinite(a):
        return dict(a=None, ci=None, reason="no fit on the seed means"), None
    ok = boot[np.isfinite(boot)]
    ci = [round(float(q), 4) for q in np.quantile(ok, [(1 - level) / 2, (1 + level) / 2])] if len(ok) else None
    # the trend's interval: the budgets with an interior optimum on the means, their seed covariance from
    # the resamples in which all of them stay interior
    used = np.isfinite(opt[:, 0])
    rows = opt[used][:, 1:]
    complete = rows[:, np.isfinite(rows).all(axis=0)]
    scatter_fit, scatter = None, dict(a=None, ci=None, reason="fewer than 3 budgets with an interior optimum")
    if used.sum() >= 3 and complete.shape[1] < 20:
        scatter = dict(a=None, ci=None, reason=f"only {complete.shape[1]} resamples keep every budget's optimum "
                                               "interior (needs 20 for their covariance)")
    elif used.sum() >= 3:
        seed_cov = np.cov(complete)
        scatter_fit = fit_exponent_scatter(np.asarray(flops)[used], opt[used, 0], seed_cov)
        scatter = dict(a=round(scatter_fit.exponent, 4), ci=[round(float(v), 4) for v in scatter_fit.ci],
                       se=round(scatter_fit.se, 4), df=scatter_fit.df_resid, tau=round(scatter_fit.tau, 4),
                       n_budgets=scatter_fit.n_budgets, n_boot_complete=int(complete.shape[1]),
                       budget_seed_sd=[round(float(v), 4) for v in np.sqrt(np.diag(seed_cov))])
    return dict(a=round(float(a), 4), ci=ci, n_boot=n_boot, n_boot_failed=int(n_boot - len(ok)), runs=len(k),
                seeds=int(k.max()), method=method, window=window, scatter=scatter, boot=ok), scatter_fit


def select_replicates(db_path: Path | str, replicates, out_path: Path | str) -> Path:
    """A copy of a sweep database with only the runs of ``replicates`` (e.g. ``[0]``: the sweep as a one-seed
    sweep would have been), so that every analysis can be rerun on a subset of the seeds. Overwrites
    ``out_path``."""
    db_path, out_path = Path(db_path), Path(out_path)
    if not db_path.is_file():
        raise UserError(f"{db_path}: no such sweep database")
    keep = sorted({int(r) for r in replicates})
    out_path.unlink(missing_ok=True)
    src, dst = sqlite3.connect(db_path), sqlite3.connect(out_path)
    try:
        src.backup(dst)
        with dst:
            dst.execute(f"CREATE TEMP TABLE drop_runs AS SELECT run_id FROM runs r WHERE {_REPLICATE_OF} "
                        f"NOT IN ({','.join('?' * len(keep))})", keep)
            dst.execute("DELETE FROM curves WHERE run_id IN (SELECT run_id FROM drop_runs)")
            dst.execute("DELETE FROM runs WHERE run_id IN (SELECT run_id FROM drop_runs)")
            dst.execute("INSERT OR REPLACE INTO sweep VALUES ('seeds', ?)", (json.dumps(len(keep)),))
    except sqlite3.DatabaseError as exc:
        raise UserError(f"{db_path}: not a sweep database ({exc})") from None
    finally:
        src.close()
        dst.close()
    return out_path


def replicate_noise(db_path: Path | str) -> dict:
    """How many seeds the sweep's isoFLOP points have, and the noise its intervals assume.

    {seeds: the most runs behind one (budget, size) point, points_with_replicates, seed_sd, dof,
    runs_per_seed, median_point_sd, noise_floor, noise_slope, parabola_sd, exponent_by_seed}.
    ``seed_sd`` is the pooled seed-to-seed sd of one run's loss (a few far-off points can dominate it:
    ``median_point_sd`` is the typical point's); the bootstrap uses the model ``isoflop.seed_noise``
    fits, √(noise_floor² + (noise_slope·Δ)²) with Δ the excess over the budget's lowest loss. Without
    replicates these are None and the isoFLOP bootstrap falls back on ``parabola_sd``, the residual sd
    of per-budget parabolas (of seed 0's points: what a one-seed sweep uses), which also holds their
    misfit. ``exponent_by_seed`` (with several seeds): :func:`exponent_by_seed`. A Kaplan-style run
    gives points at several budgets, so its points' deviations are correlated and ``dof`` overstates
    the information."""
    from scalinglab.isoflop import _budgets, _pooled_parabola_sd, replicate_cells, seed_noise

    points = isoflop_points(db_path)
    if points.empty:
        return dict(seeds=0, points_with_replicates=0, seed_sd=None, dof=0, parabola_sd=None)
    noise = seed_noise(points, "n", "flops", "loss")
    cells = replicate_cells(points, "n", "flops", "loss")
    try:  # what a one-seed sweep's bootstrap would use: seed 0's parabola residual
        first = points[points["replicate"] == points["replicate"].min()]
        parabola = _pooled_parabola_sd(_budgets(first, "n", "flops", "loss", "mean"), "loss", "n")
    except UserError:  # no budget with more than three sizes
        parabola = None
    modelled = noise.to_dict()
    replicated = cells[cells["runs"] > 1]
    out = dict(seeds=int(cells["runs"].max()), points_with_replicates=noise.cells, seed_sd=modelled["sd"],
               dof=noise.dof, runs_per_seed=int(points.loc[points["replicate"] == 0, "run_id"].nunique()),
               median_point_sd=float(replicated["sd"].median()) if len(replicated) else None,
               noise_floor=modelled["floor"], noise_slope=modelled["slope"], parabola_sd=parabola)
    if points["replicate"].nunique() > 1:
        out["exponent_by_seed"] = exponent_by_seed(db_path)
    return out


def report(db_path: Path | str) -> dict:
    db_path = Path(db_path)
    if not db_path.is_file():
        raise UserError(f"{db_path}: no such sweep database")
    con = sqlite3.connect(db_path)
    try:
        meta = _meta(con)
        counts = summary_counts(con)
        runs = con.execute("SELECT spec, tokens, seconds, device, finished_at FROM runs "
                           "WHERE status='finished' ORDER BY finished_at").fetchall()
    except sqlite3.DatabaseError as exc:
        raise UserError(f"{db_path}: not a sweep database ({exc})") from None
    finally:
        con.close()
    return dict(db=str(db_path), preset=meta.get("preset"), profile=meta.get("profile"), **counts,
                **_throughput(runs), budget_sharing=budget_sharing(db_path), exponent=exponent(db_path),
                # the same fit with Hoffmann's parabolas over the 5 sizes nearest each minimum (a parabola
                # only describes the curve near it): how much the estimator alone moves a
                exponent_parabola=exponent(db_path, method="parabola", window=5),
                exponent_envelope=envelope_exponent(db_path), replicates=replicate_noise(db_path),
                # with several seeds: the spline estimator's intervals from resampling seeds (seed noise only)
                # and with the budgets' scatter added (GLS)
                exponent_seed_bootstrap={k: v for k, v in seed_bootstrap(db_path).items() if k != "boot"})


def envelope_exponent(db_path: Path | str, n_boot: int = ENVELOPE_BOOT) -> dict:
    """N* ∝ C^a by Hoffmann's Approach 1 on the sweep's curves (each run a curve, mid-run evaluations
    included): {a, ci, n_sizes, status} or {a: None, reason}.

    ENVELOPE_BOOT resamples (1,000, as notebook 01 uses). Resamples left with fewer than two sizes among
    their optima are dropped and counted in ``n_boot_failed``, so the interval is conditional on the rest."""
    fit = _envelope_fit(db_path, n_boot)
    if isinstance(fit, str):
        return dict(a=None, ci=None, reason=fit)
    if fit.status != "ok":
        return dict(a=None, ci=None, reason=fit.status)
    ci = [None if not math.isfinite(x) else round(x, 4) for x in fit.ci]
    return dict(a=round(fit.exponent, 4), ci=ci, n_sizes=fit.n_sizes, method="grid, edges dropped",
                n_boot=n_boot, n_boot_failed=fit.n_boot_failed)


def _envelope_fit(db_path: Path | str, n_boot: int):
    """The EnvelopeFit behind :func:`envelope_exponent`, or why there is none (a string)."""
    from scalinglab.envelope import EnvelopeOptions, fit_envelope

    curves = loss_curves(db_path, mean_over_seeds=True)  # the envelope of single seeds would pick lucky ones
    if curves["run_id"].nunique() < 2:
        return f"{curves['run_id'].nunique()} finished run(s) (needs 2)"
    return fit_envelope(curves, EnvelopeOptions(n_boot=n_boot, seed=0), run_col="run_id")


def budget_sharing(db_path: Path | str) -> dict:
    """How many of a sweep's finished runs give an isoFLOP point at more than one budget.

    {runs, budgets, shared_runs}: a Kaplan-style sweep reads one run per size at every budget it
    passes, so every budget's optimum comes from the same runs and the optima (and a WLS fit's
    residuals across budgets) are correlated; a Hoffmann-style sweep trains one run per (budget,
    size) and shares none. ``independent_budgets`` is ``shared_runs == 0``.
    """
    points = isoflop_points(db_path)
    per_run = points.groupby("run_id")["flops"].nunique()
    shared = int((per_run > 1).sum())
    return dict(runs=int(len(per_run)), budgets=int(points["flops"].nunique()), shared_runs=shared,
                independent_budgets=shared == 0)


def exponent_differences(db_a: Path | str, db_b: Path | str, level: float = 0.95) -> dict:
    """a(db_a) − a(db_b) by each estimator of :func:`report`, for two independently trained sweeps.

    {spline, parabola, envelope} → ``isoflop.ExponentDifference.to_dict()``, or {difference: None,
    reason} when either sweep has no exponent by that estimator. The isoFLOP estimators' intervals are
    WLS t-intervals, so their standard errors combine (Welch–Satterthwaite,
    ``isoflop.exponent_difference``); Approach 1's are bootstrap percentiles, often skewed, so its
    resamples are differenced pair by pair (``isoflop.bootstrap_difference``), and so are those of
    :func:`seed_bootstrap` (``seeds``: spline optima of the seed means, resampling seeds; it needs two
    or more seeds per run in both sweeps); ``seeds_scatter`` combines its two GLS fits with the seeds'
    covariance plus the budgets' scatter (Welch–Satterthwaite, as the WLS entries; its scatter term
    assumes independent budgets, so it is marked like them). The Welch entries also carry
    ``ci_min_df``, the interval on the smaller fit's residual df, a conservative check. Same settings
    as :func:`report`, so the differences are of the exponents it prints.

    The WLS intervals (each sweep's, hence the difference's) assume independent budget optima. A sweep
    that reads one run at several budgets (:func:`budget_sharing`; the kaplan preset) breaks that: its
    optima share runs and its residuals are correlated, so its SE, and the interval built from it, rests
    on an assumption that fails. The spline and parabola entries carry ``shared_runs`` ({sweep: runs read
    at several budgets}) and ``assumes_independent_budgets`` (True), and ``assumption_holds``. Approach 1
    resamples whole runs, and the seed bootstrap a run's seeds with all their budgets, which carries the
    sharing, so their entries have ``assumption_holds`` True.
    """
    from scalinglab.isoflop import bootstrap_difference, exponent_difference

    def unavailable(fits) -> str:
        why = [(Path(db).stem, f if isinstance(f, str) else f.status) for db, f in zip((db_a, db_b), fits)]
        return "; ".join(f"{name}: {w}" for name, w in why if w != "ok")

    out = {}
    shared = {Path(db).stem: budget_sharing(db)["shared_runs"] for db in (db_a, db_b)}
    for key, method, window in (("spline", "spline", None), ("parabola", "parabola", 5)):
        fits = [_isoflop_fit(db, method, ISOFLOP_BOOT, window) for db in (db_a, db_b)]
        why = unavailable(fits)
        out[key] = dict(difference=None, reason=why) if why else exponent_difference(*fits, level=level).to_dict()
        out[key].update(shared_runs=shared, assumes_independent_budgets=True,
                        assumption_holds=not any(shared.values()))
    fits = [_envelope_fit(db, ENVELOPE_BOOT) for db in (db_a, db_b)]
    why = unavailable(fits)
    out["envelope"] = dict(difference=None, reason=why) if why else bootstrap_difference(
        fits[0].boot[:, 0], fits[1].boot[:, 0], fits[0].exponent - fits[1].exponent, level=level).to_dict()
    out["envelope"].update(shared_runs=shared, assumes_independent_budgets=False, assumption_holds=True)
    seeds = [_seed_fits(db, "spline", None, SEED_BOOT, 0, level) for db in (db_a, db_b)]
    why = "; ".join(f"{Path(db).stem}: {b['reason']}" for db, (b, _) in zip((db_a, db_b), seeds) if b["a"] is None)
    (first, fit_a), (second, fit_b) = seeds
    out["seeds"] = dict(difference=None, reason=why) if why else bootstrap_difference(
        first["boot"], second["boot"], first["a"] - second["a"], level=level).to_dict()
    out["seeds"].update(shared_runs=shared, assumes_independent_budgets=False, assumption_holds=True)
    why = why or "; ".join(f"{Path(db).stem}: {b['scatter']['reason']}" for db, (b, f) in zip((db_a, db_b), seeds)
                           if f is None)
    out["seeds_scatter"] = (dict(difference=None, reason=why) if why
                            else exponent_difference(fit_a, fit_b, level=level).to_dict())
    # its seed covariance carries shared runs, but its scatter term is independent across budgets
    out["seeds_scatter"].update(shared_runs=shared, assumes_independent_budgets=True,
                                assumption_holds=not any(shared.values()))
    return out


def _throughput(runs: list[tuple]) -> dict:
    """Training seconds, FLOPs (with attention) and, on a GPU of known peak, the sweep's overall utilisation
    (FLOPs over the wall-clock span of the runs, however many ran at once)."""
    from scalinglab.flops import flops_per_token, gpu_peak

    if not runs:
        return dict(train_seconds=0.0, train_flops=0.0)
    flops = 0.0
    for spec, tokens, _, _, _ in runs:
        m = json.loads(spec)["model"]
        flops += tokens * flops_per_token(m["width"], m["depth"], m["vocab_size"], seq_len=m["seq_len"]).with_attention
    seconds = sum(r[2] for r in runs)
    out = dict(train_seconds=round(seconds, 1), train_flops=flops, flops_per_s=flops / max(seconds, 1e-9))
    devices = {r[3] for r in runs}
    peak = gpu_peak(next(iter(devices))) if len(devices) == 1 and next(iter(devices)).startswith("cuda") else None
    if peak:
        first, last = (datetime.fromisoformat(runs[i][4]) for i in (0, -1))
        wall = (last - first).total_seconds() + runs[0][2]
        out.update(wall_seconds=round(wall, 1), utilisation=flops / (wall * peak))
    return out


# --- notebook entry point ------------------------------------------------------------------

def workbook_sweeps(profile: str, results_dir: Path | str) -> dict[str, Path | None]:
    """Sweep databases per preset: "smoke" runs (or resumes) both presets' smoke sweeps, with
    WORKBOOK_SMOKE_SEEDS seeds, into ``results_dir/sweeps/<preset>.db``; "full" returns the committed
    files under data/sweeps/."""
    if profile == "smoke":
        out = {}
        for preset in WORKBOOK_PRESETS:
            db = Path(results_dir) / "sweeps" / f"{preset}.db"
            run_sweep(preset, "smoke", db, progress=False, seeds=WORKBOOK_SMOKE_SEEDS)
            out[preset] = db
        return out
    if profile != "full":
        raise UserError(f"workbook profile must be smoke or full, not {profile!r}")
    from scalinglab.workbook import project_root

    folder = project_root(Path(__file__).resolve().parent) / "data" / "sweeps"
    return {p: next((f for f in (folder / f"{p}.db", folder / f"{p}.csv") if f.is_file()), None)
            for p in WORKBOOK_PRESETS}
