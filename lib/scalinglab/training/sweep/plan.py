"""A sweep's grid: presets, profiles (how big), and every run it plans, with its cost.

Long: the profiles' comments record how each grid was sized (probes, timings), which is why they live beside the
profiles; the planning itself is a few short functions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace

from scalinglab.errors import UserError
from scalinglab.accounting.decoder import count_params
from scalinglab.training.config import TrainConfig


# Porian et al.'s ladder on our own runs, one change per step. Per preset: N counted
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
# A family of models for evaluation (the inverse-scaling ladder), not a scaling sweep: each shape trained
# once, to about compute-optimal length (Profile.optimal_tokens_per_param tokens per standard-count parameter),
# with a cosine decayed to that length, a short warmup and a per-size learning rate (Profile.optimal_lr_at_64).
# A family of training curves under four learning-rate schedules, for laws that predict a
# whole loss curve from its schedule: every shape trained once per schedule, all to the same tokens per parameter
# (Profile.optimal_tokens_per_param, or Profile.schedules_steps steps), with the optimal preset's learning rate
# and warmup, and validation loss at ~100 points of each run (curve_points); Profile.schedules_seeds gives some
# shapes more seeds.
SCHEDULE_FAMILY = ("constant", "cosine", "wsd", "step")
# A learning-rate x batch grid, for hyperparameter laws (Li et al. 2025's eta_opt(N, D), B_opt(D)): every shape
# trained once per (peak lr, batch) to the same tokens per parameter, with the optimal preset's cosine and warmup
# rule; the peak rates are Profile.lrbatch_lr_multiples times lr_at_64 * (64 / width)^lrbatch_width_power (power 1:
# the optimal preset's rule; uncapped: a cap would merge the grid's top rates), the batches Profile.lrbatch_batches.
PRESET_CONFIG = {"kaplan": LADDER["ladder0"], "hoffmann": LADDER["ladder4"], **LADDER,
                 "optimal": ("standard", "short", "cosine", True),
                 "schedules": ("standard", "short", "family", True),
                 "lrbatch": ("standard", "short", "cosine", True)}
PRESETS = ("kaplan", "hoffmann", *LADDER, "optimal", "schedules", "lrbatch")
# Presets that count Kaplan's non-embedding N (and C = 6·N_ne·D) in their budgets and isoFLOP points (the
# reader's copy, scalinglab.sweeps.schema.NON_EMBEDDING_PRESETS, must agree: tests/test_sweep_store.py).
NON_EMBEDDING_PRESETS = tuple(p for p, cfg in PRESET_CONFIG.items() if cfg[0] == "non_embedding")
LAUNCHERS = ("local", "submitit")


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
    # preset optimal: tokens per (standard-count) parameter, and the learning rate lr_at_64 * 64 / width, capped
    # at max_lr (Adam's best rate for these small GPTs falls about as 1/width: the cpu profile's probe found
    # >= 1e-2 at width 16-24 and ~3e-3 at 32x2 and above)
    optimal_tokens_per_param: float = 20.0
    optimal_lr_at_64: float = 3e-3
    # preset optimal: each shape trained at these multiples of optimal_tokens_per_param (a ladder in D as well as N,
    # as Bhagia et al.'s model ladders are), one cosine to each length
    optimal_multiples: tuple[float, ...] = (1.0,)
    # preset schedules: more seeds for some shapes, a fixed length in steps instead of
    # optimal_tokens_per_param (None: tokens per parameter), evaluations per run (curve_points evenly spaced steps
    # plus up to curve_points // 5 geometrically spaced ones before the first, where the loss falls fastest), and the
    # measured training speed on one core (FLOP/s, bench/bench_train.py) that turns the plan's FLOPs into seconds
    schedules_seeds: tuple[tuple[int, int, int], ...] = ()   # (width, depth, seeds)
    schedules_steps: int | None = None
    curve_points: int = 100
    flops_per_s: float | None = None
    # preset lrbatch: the peak rates (multiples of optimal_lr_at_64 * (64 / width)^lrbatch_width_power: 1 is the
    # optimal preset's rule) and batches (sequences) of its grid
    lrbatch_lr_multiples: tuple[float, ...] = (0.5, 1.0, 2.0, 4.0)
    lrbatch_width_power: float = 1.0
    lrbatch_batches: tuple[int, ...] = (8, 16, 32)

    def shapes_for(self, preset: str) -> tuple[tuple[int, int], ...]:
        return self.shapes_by_preset.get(preset, self.shapes)


# Training speed of the cpu-schedules models on one core (FLOP/s with attention, forward + backward, as cost()
# counts them): bench/bench_train.py's eager fp32 at 96x2, 15,875 tokens/s x 1.79 MFLOP/token, measured on a
# 2-core machine under a load average of ~8 (an idle core gave ~23k tokens/s); cost() turns FLOPs into seconds.
FLOPS_PER_S_SCHEDULES = 2.8e10

PROFILES: dict[str, Profile] = {
    # CI: tiny widths and a 512-id BPE trained on 300 kB; both presets in ~20 s on 2 cores.
    "smoke": Profile(
        name="smoke", tokenizer="bpe512-t300000", seq_len=32, head_dim=8, batch_size=8,
        shapes=((8, 1), (16, 1), (24, 1), (32, 1), (48, 1)),
        budgets=dict(kaplan=(2e8, 4e8, 8e8, 1.6e9), hoffmann=(6e8, 1.2e9, 2.4e9), ladder0=(2e8, 4e8, 8e8, 1.6e9),
                     ladder2=(6e8, 1.2e9, 2.4e9), ladder3=(6e8, 1.2e9, 2.4e9), ladder4=(6e8, 1.2e9, 2.4e9)),
        train_bytes=600_000, val_bytes=100_000, eval_tokens=2_048, kaplan_warmup_tokens=8_192, n_ref=2e4,
        kaplan_max_tokens=40_000,
        shapes_by_preset=dict(optimal=((8, 1), (16, 1)),  # the 2-model smoke ladder
                              schedules=((8, 1), (12, 1), (16, 1))),
        schedules_seeds=((12, 1, 3),), schedules_steps=30, curve_points=10,
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
    # Porian et al.'s ladder on CPU: presets ladder0, ladder2, ladder3, ladder4, 3 seeds each,
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
    # The inverse-scaling ladder (preset optimal): 6 GPTs, each trained once at 20 tokens per parameter,
    # ~50 min on 2 idle cores (one run per core; 12.5k steps of 2,048 tokens). An 8k BPE, so the models spell English
    # words (the prize tasks' prompts and the corpus probes are scored as text); its head (8192·width) is most of
    # N_std at these widths, so N_std spans 0.83 decades (66k-450k) while the transformer blocks (N_ne, Kaplan's
    # count) span 1.8 (0.9k-57k). Each step costs about the same whatever the width (the 8k-way softmax dominates),
    # so the wall time follows the tokens, 20·N_std: a width-64 model would have doubled it. 60 MB of text are
    # ~14M tokens: the largest model's 9M tokens see no text twice.
    "cpu-inverse": Profile(
        name="cpu-inverse", tokenizer="bpe8192-t20000000", seq_len=128, batch_size=16,
        shapes=((8, 1), (12, 1), (16, 1), (24, 1), (32, 1), (48, 2)), budgets={},
        train_bytes=60_000_000, val_bytes=600_000, eval_tokens=65_536,
    ),
    # The downstream ladder (preset optimal): cpu-inverse's four smallest shapes again, at 2.5, 5 and 10 tokens per
    # parameter. With cpu-inverse's six models at 20, that is a ladder in N and D whose smaller rungs predict its
    # largest two (notebook 07's check of the two-step chain on our own models). 8.8M tokens in all.
    "cpu-downstream": Profile(
        name="cpu-downstream", tokenizer="bpe8192-t20000000", seq_len=128, batch_size=16,
        shapes=((8, 1), (12, 1), (16, 1), (24, 1)), budgets={},
        train_bytes=60_000_000, val_bytes=600_000, eval_tokens=65_536, optimal_multiples=(0.125, 0.25, 0.5),
    ),
    # The schedule family (preset schedules): 3 sizes x 4 schedules (constant, cosine, WSD with a 20%
    # linear cooldown, a two-stage step), each at 20 tokens per standard-count parameter, 3 seeds for the middle
    # size: 20 runs. Profile cpu-ladder's data and 512-id BPE (14.5M training tokens; the largest run reads 9.2M,
    # so no run repeats data). N_std 133k, 273k, 462k (a factor ~1.9 apart); warmup N tokens (5% of a run).
    # Validation on the first 8,192 tokens of the held-out text (the same tokens at every evaluation, so the curve
    # is smooth in the step) at 111-115 points per run (100 evenly spaced, the rest geometric before the first):
    # measured, an evaluation of 4,096 tokens takes 0.6-0.7 of a training step's time, so evaluating costs ~10% of
    # the training at 64x2 and ~5% at 128x2; and the training loss averaged over each interval. Eager fp32: in
    # bench/bench_train.py torch.compile and bf16 autocast were both slower than it on these models.
    # Peak LR 1.2e-2·64/width (1.2e-2, 8e-3, 6e-3): at 3e-3·64/width (optimal's rule) the 64x2 runs were limited by
    # their rate (a plateau near 3.8 nats, then a fall that a lower rate slowed, so the cosine ended above the
    # constant rate: 3.535 against 3.427); a probe of 64x2's cosine at 3e-3, 6e-3 and 1.2e-2 ended at 3.535, 3.458
    # and 3.416, the largest rate probed best. The 1/width scaling is assumed, not probed, for 96 and 128.
    "cpu-schedules": Profile(
        name="cpu-schedules", tokenizer="bpe512-t2000000", seq_len=128, batch_size=16,
        shapes=((64, 2), (96, 2), (128, 2)), budgets={}, train_bytes=30_000_000, val_bytes=600_000,
        eval_tokens=8_192, optimal_lr_at_64=1.2e-2, schedules_seeds=((96, 2, 3),), curve_points=100, flops_per_s=FLOPS_PER_S_SCHEDULES,
    ),
    # The learning-rate x batch grid (preset lrbatch): 3 sizes x 5 peak rates x 3 batches = 45 runs, each at 20
    # tokens per standard-count parameter with a cosine to its length, on cpu-ladder's 512-id BPE. N_std 11.5k,
    # 81.2k, 197k (16x1, 48x2, 80x2: 1.23 decades); batches of 8, 16, 32 sequences of 128 tokens (the smallest
    # model's 230k tokens are 56 steps at 32). Peak rates 0.25, 0.5, 1, 2, 4 times 1.2e-2 * (64/width)^0.5, a factor
    # of 2 apart: 0.006-0.096 at 16x1, 0.0027-0.043 at 80x2. The optimal preset's 1/width fell too fast at first
    # sight: a probe of 16x1 found its best rate near 0.024 (batch 32) to 0.048 (batch 8), about a third of
    # 1.2e-2 * 64/width, while cpu-schedules' probe found the largest of 3e-3, 6e-3, 1.2e-2 best at 64x2. The grid
    # began with the four rates from 0.5; 48x2's best run came out at the lowest of them at every batch, so the
    # 0.25 rate was added to every size (the sweep's stored profile_config still lists the first four). Timed on
    # one idle core (200 steps): 16x1 ~84k tokens/s, 48x2 ~40k, 80x2 ~27k: ~50 min for the grid alone, more
    # beside other work. The largest run reads 3.9M tokens of the first 10 MB of text (~4.9M tokens): no run
    # repeats data. Validation on the first 32,768 held-out tokens, the same text for every run.
    "cpu-lrbatch": Profile(
        name="cpu-lrbatch", tokenizer="bpe512-t2000000", seq_len=128, batch_size=16,
        shapes=((16, 1), (48, 2), (80, 2)), budgets={}, train_bytes=10_000_000, val_bytes=600_000,
        eval_tokens=32_768, optimal_lr_at_64=1.2e-2, lrbatch_lr_multiples=(0.25, 0.5, 1.0, 2.0, 4.0),
        lrbatch_width_power=0.5, lrbatch_batches=(8, 16, 32),
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
    # (`python -m scalinglab.training.corpus_build build ... --train-bytes 900000000`) before going further.
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


def cost(preset: str, profile: Profile | str, vocab_size: int, seeds: int = 1) -> dict:
    """What a sweep asks of the hardware: runs, training tokens, optimizer steps and FLOPs
    (forward+backward with attention, ``flops.flops_per_token(...).with_attention``, plus evaluations), and
    ``seconds`` on one core where the profile has a measured ``flops_per_s``. Every seed's runs count."""
    from scalinglab.accounting.decoder import flops_per_token, step_at

    prof = get_profile(profile) if isinstance(profile, str) else profile
    out = dict(runs=0, tokens=0, steps=0, flops=0.0)
    for r in plan(preset, prof, vocab_size, seeds):  # the schedules preset plans its extra seeds itself
        t = r.train
        fpt = flops_per_token(r.width, r.depth, vocab_size, seq_len=prof.seq_len).with_attention
        # the steps and evaluations scalinglab.training.loop.train makes: whole steps, the end evaluated once
        per_step = t.batch_size * prof.seq_len
        steps = step_at(t.total_tokens, per_step)
        evals = len({min(steps, step_at(e, per_step)) for e in t.eval_at_tokens} | {steps})
        out["runs"] += 1
        out["tokens"] += steps * per_step
        out["steps"] += steps
        out["flops"] += fpt * steps * per_step + fpt / 3 * evals * prof.eval_tokens  # eval: forward only
    if prof.flops_per_s:
        out["seconds"] = out["flops"] / prof.flops_per_s
    return out


def tokenizer_vocab(name: str) -> int:
    """The vocabulary a profile's tokenizer has, from its name (``bpe512-t2000000``: 512; ``gpt2``: 50,257),
    so that a plan's cost needs no trained tokenizer."""
    import re

    m = re.fullmatch(r"bpe(\d+)(-t\d+)?", name)
    return int(m.group(1)) if m else 50257


def describe_cost(preset: str, profile: str, seeds: int = 1) -> str:
    """What `scalinglab sweep --cost` prints: the sweep's runs, steps, tokens and FLOPs, per shape and in all,
    and the seconds on one core where the profile has a measured speed."""
    prof = get_profile(profile)
    vocab = tokenizer_vocab(prof.tokenizer)
    total = cost(preset, prof, vocab, seeds)
    lines = [f"{preset}/{profile} ({prof.tokenizer}, {vocab} ids): {total['runs']} runs, {total['steps']:,} steps, "
             f"{total['tokens']:,} tokens, {total['flops']:.3g} FLOP (training and evaluations)"]
    by_shape: dict = {}
    for r in plan(preset, prof, vocab, seeds):
        by_shape.setdefault((r.width, r.depth), []).append(r)
    for (w, d), runs in by_shape.items():
        one = cost(preset, replace(prof, shapes=((w, d),), shapes_by_preset={}), vocab, seeds)
        per = one["flops"] / one["runs"]
        secs = f", ~{per / prof.flops_per_s:,.0f} s each" if prof.flops_per_s else ""
        lines.append(f"  {w}x{d}: N_std {runs[0].n_standard:,}, {one['runs']} runs of "
                     f"{one['steps'] // one['runs']:,} steps, {per:.3g} FLOP each{secs}")
    if prof.flops_per_s:
        lines.append(f"about {total['seconds']:,.0f} s = {total['seconds'] / 3600:.1f} core-hours at the profile's "
                     f"measured {prof.flops_per_s:.3g} FLOP/s on one core (longer when other work shares the core)")
    return "\n".join(lines)


def check_preset(preset: str) -> None:
    if preset not in PRESETS:
        raise UserError(f"unknown sweep preset {preset!r}: use one of {', '.join(PRESETS)}")


def check_seeds(seeds) -> None:
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
    train: TrainConfig             # stored as JSON by spec_to_dict (the fields SPEC_TRAIN_FIELDS names)
    replicate: int = 0             # which of the sweep's seeds (0: the profile's seed; run ids of 0 carry no suffix)
    # ladder0 only: the standard-count budgets (ladder2's) it is also evaluated at, for the ladder's step 1
    standard_budgets: tuple[float, ...] = ()


# A stored spec's train fields, in the order it names them: the JSON a sweep database holds, unchanged since the
# first databases (so committed ones resume and their specs read back equal to the plan's). The schedule's shape
# (SCHEDULE_SHAPE) is named only by the schedules preset, whose runs vary it; other presets' runs use the defaults
# and their stored specs, older than these parameters, do not name them. TrainConfig's other fields (beta1, eps,
# weight_decay, grad_clip, eval_batch_size) are the defaults in every plan and never stored.
SCHEDULE_SHAPE = ("min_lr_ratio", "cooldown", "drop_at", "drop_factor")
SPEC_TRAIN_FIELDS = ("eval_tokens", "seed", "device", "checkpoint_every_s", "compile", "lr", "schedule",
                     *SCHEDULE_SHAPE, "warmup_tokens", "total_tokens", "batch_size", "beta2", "eval_at_tokens")


def spec_to_dict(spec: RunSpec) -> dict:
    """A run's spec as JSON-ready data: what the database stores and a job receives."""
    train = spec.train.to_dict()
    names = [k for k in SPEC_TRAIN_FIELDS if spec.preset == "schedules" or k not in SCHEDULE_SHAPE]
    out = {f.name: getattr(spec, f.name) for f in fields(spec)}
    out.update(budgets=list(spec.budgets), standard_budgets=list(spec.standard_budgets), model=dict(spec.model),
               train={k: train[k] for k in names})
    return out


def spec_from_dict(d: dict) -> RunSpec:
    """The RunSpec a stored spec describes (the inverse of :func:`spec_to_dict`; a spec stored before seeds were
    planned has replicate 0)."""
    return RunSpec(**{**d, "budgets": tuple(d["budgets"]), "standard_budgets": tuple(d.get("standard_budgets", ())),
                      "train": TrainConfig(**d["train"])})


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
    check_preset(preset)
    check_seeds(seeds)
    prof = get_profile(profile) if isinstance(profile, str) else profile
    first = _plan_one_seed(preset, prof, vocab_size)

    def n_seeds(r: RunSpec) -> int:
        more = {(w, d): k for w, d, k in prof.schedules_seeds} if preset == "schedules" else {}
        return max(seeds, more.get((r.width, r.depth), 1))

    runs = first + [replace(r, run_id=f"{r.run_id}-s{i}", replicate=i, train=replace(r.train, seed=prof.seed + i))
                    for r in first for i in range(1, n_seeds(r))]
    return sorted(runs, key=lambda r: (r.budget, r.n_standard, r.replicate))


def curve_points(steps: int, n: int) -> list[int]:
    """The steps a curve is evaluated at: ``n`` evenly spaced (the last is ``steps``), and up to ``n // 5`` more
    spaced geometrically from step 1 to the first of them, where the loss falls fastest; sorted, distinct."""
    even = {max(1, round(steps * k / n)) for k in range(1, n + 1)}
    first = min(even)
    early = {int(round(first ** (k / (n // 5 + 1)))) for k in range(n // 5 + 1)} if n >= 5 else set()
    return sorted(even | {s for s in early if 1 <= s < first})


def _plan_schedules(prof: Profile, vocab_size: int) -> list[RunSpec]:
    """Preset schedules: every shape once per schedule of SCHEDULE_FAMILY, all of a shape's runs alike but for it."""
    from scalinglab.accounting.decoder import step_at

    runs = []
    for width, depth in prof.shapes_for("schedules"):
        counts = count_params(width, depth, vocab_size, seq_len=prof.seq_len)
        n = counts.standard
        per_step = prof.batch_size * prof.seq_len
        steps = prof.schedules_steps or step_at(math.ceil(prof.optimal_tokens_per_param * n), per_step)
        tokens = steps * per_step
        model = dict(vocab_size=vocab_size, seq_len=prof.seq_len, width=width, depth=depth,
                     head_dim=min(prof.head_dim, width))
        budget = 6.0 * n * tokens
        for schedule in SCHEDULE_FAMILY:
            # the schedules' shapes (scalinglab.schedules): cosine and WSD end at a tenth of the peak, WSD cools
            # down over the last 20% of the steps, the step schedule drops to a tenth at half-way
            train = TrainConfig(eval_tokens=prof.eval_tokens, seed=prof.seed, device=prof.device, checkpoint_every_s=30.0,
                         compile=prof.compile, lr=min(prof.optimal_lr_at_64 * 64 / width, prof.max_lr),
                         schedule=schedule, min_lr_ratio=0.1, cooldown=0.2, drop_at=0.5, drop_factor=0.1,
                         warmup_tokens=min(n, tokens // 4), total_tokens=tokens, batch_size=prof.batch_size,
                         beta2=0.99, eval_at_tokens=[s * per_step for s in curve_points(steps, prof.curve_points)])
            runs.append(RunSpec(run_id=f"schedules-{schedule}-w{width}-d{depth}", preset="schedules",
                                profile=prof.name, width=width, depth=depth, budget=budget, budgets=(budget,),
                                n_non_embedding=counts.non_embedding, n_standard=n, n_total=counts.total,
                                model=model, train=train))
    return runs


def _plan_lrbatch(prof: Profile, vocab_size: int) -> list[RunSpec]:
    """Preset lrbatch: every shape once per (peak lr, batch) of the profile's grid, all to the same tokens per
    parameter, with the optimal preset's schedule, warmup (min(N, a quarter of the run)) and evaluations."""
    from scalinglab.accounting.decoder import step_at

    runs = []
    for width, depth in prof.shapes_for("lrbatch"):
        counts = count_params(width, depth, vocab_size, seq_len=prof.seq_len)
        n = counts.standard
        model = dict(vocab_size=vocab_size, seq_len=prof.seq_len, width=width, depth=depth,
                     head_dim=min(prof.head_dim, width))
        rule = prof.optimal_lr_at_64 * (64 / width) ** prof.lrbatch_width_power
        for batch in prof.lrbatch_batches:
            per_step = batch * prof.seq_len
            tokens = step_at(math.ceil(prof.optimal_tokens_per_param * n), per_step) * per_step
            budget = 6.0 * n * tokens
            on_the_way = [tokens >> k for k in range(1, 6) if tokens >> k >= MIN_STEPS * per_step]
            for mult in prof.lrbatch_lr_multiples:
                lr = float(f"{rule * mult:.4g}")  # the grid's rates as written, not 0.0048000000000000004
                train = TrainConfig(eval_tokens=prof.eval_tokens, seed=prof.seed, device=prof.device,
                                    checkpoint_every_s=30.0, compile=prof.compile, lr=lr, schedule="cosine",
                                    warmup_tokens=min(n, tokens // 4), total_tokens=tokens, batch_size=batch,
                                    beta2=0.99, eval_at_tokens=sorted(on_the_way) + [tokens])
                runs.append(RunSpec(run_id=f"lrbatch-w{width}-d{depth}-lr{lr:.4g}-b{batch}", preset="lrbatch",
                                    profile=prof.name, width=width, depth=depth, budget=budget, budgets=(budget,),
                                    n_non_embedding=counts.non_embedding, n_standard=n, n_total=counts.total,
                                    model=model, train=train))
    return runs


def _plan_one_seed(preset: str, prof: Profile, vocab_size: int) -> list[RunSpec]:
    from scalinglab.accounting.decoder import step_at

    if preset == "schedules":
        return _plan_schedules(prof, vocab_size)
    if preset == "lrbatch":
        return _plan_lrbatch(prof, vocab_size)
    budgets = tuple(sorted(prof.budgets.get(preset, ())))
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
            train = TrainConfig(**base, lr=prof.kaplan_lr, schedule="constant",
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
        shape_budgets = budgets
        if preset == "optimal":  # one budget per shape: its compute-optimal length
            lr = min(prof.optimal_lr_at_64 * 64 / width, prof.max_lr)
            shape_budgets = tuple(6.0 * n * math.ceil(prof.optimal_tokens_per_param * m * n) for m in prof.optimal_multiples)
        for c in shape_budgets:
            if preset != "optimal" and not lo <= c / (6 * n * n) <= hi:
                continue
            if preset == "optimal":
                batch, beta2 = prof.batch_size, 0.99
            elif tuned:
                batch, beta2 = _hoffmann_batch(prof, n, c / (6 * n)), 0.99
            else:  # step 3: step 0's lr, batch and beta2 for every size; a run too short for them is left out
                lr, batch, beta2 = prof.kaplan_lr, prof.batch_size, 0.95
                if c / (6 * n) < MIN_STEPS * batch * prof.seq_len:
                    continue
            tokens = step_at(math.ceil(c / (6 * n)), batch * prof.seq_len) * batch * prof.seq_len
            # Also evaluated on the way, every half-octave of compute down to the grid's smallest budget:
            # mid-cosine points are what Hoffmann's Approach 1 takes the envelope of (scalinglab.fitting.frontier.envelope),
            # and they never stand for a budget, so the isoFLOP analysis ignores them.
            on_the_way = [math.ceil(c * 2 ** (-k / 2) / (6 * n)) for k in range(1, 2 * len(budgets))
                          if c * 2 ** (-k / 2) >= budgets[0] * (1 - 1e-9)]
            if preset == "optimal":  # a learning curve for each model: every octave of its tokens
                on_the_way = [tokens >> k for k in range(1, 6) if tokens >> k >= MIN_STEPS * batch * prof.seq_len]
            train = TrainConfig(**base, lr=lr, schedule="cosine", warmup_tokens=min(n, tokens // 4), total_tokens=tokens,
                         batch_size=batch, beta2=beta2, eval_at_tokens=sorted(on_the_way) + [tokens])
            runs.append(RunSpec(run_id=f"{preset}-C{c:.3g}-w{width}-d{depth}", budget=c, budgets=(c,),
                                train=train, **common))
    return runs


