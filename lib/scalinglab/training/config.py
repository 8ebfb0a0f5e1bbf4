"""``TrainConfig``: how one run trains (optimizer, schedule, evaluations, seed, device), frozen, torch-free,
so a sweep's plan (``training.sweep.plan.RunSpec``) carries it without importing the training loop.

:func:`schedule_of` is the run's learning-rate schedule (``scalinglab.schedules``); a config whose schedule
is unknown or out of range is refused when it is made.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from scalinglab.schedules import Schedule
from scalinglab.serialization import to_jsonable


@dataclass(frozen=True)
class TrainConfig:
    lr: float = 1e-3
    min_lr_ratio: float = 0.1      # cosine and wsd end at this fraction of the peak
    schedule: str = "cosine"       # constant | cosine | wsd | step (scalinglab.schedules)
    cooldown: float = 0.2          # wsd: the last fraction of the run, decayed linearly
    drop_at: float = 0.5           # step: where the rate drops, as a fraction of the run
    drop_factor: float = 0.1       # step: the rate after the drop, as a fraction of the peak
    warmup_tokens: int = 0
    total_tokens: int = 1_000_000  # the run's length (cosine decays to it)
    batch_size: int = 32           # sequences per step
    beta1: float = 0.9
    beta2: float = 0.95
    eps: float = 1e-8
    weight_decay: float = 0.1
    grad_clip: float = 1.0
    eval_at_tokens: tuple[int, ...] = ()  # the run's end is always evaluated
    eval_tokens: int = 65_536      # validation tokens per evaluation (a fixed prefix of val)
    eval_batch_size: int = 64
    seed: int = 0
    device: str = "auto"           # auto | cpu | cuda
    compile: bool | None = None    # None: on CUDA only
    checkpoint_every_s: float = 60.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "eval_at_tokens", tuple(self.eval_at_tokens))
        schedule_of(self, 1)  # refuses an unknown schedule or parameters out of range

    def to_dict(self) -> dict:
        """Every field, plain JSON types (``eval_at_tokens`` a list): what a checkpoint's meta records."""
        return to_jsonable({**asdict(self), "eval_at_tokens": list(self.eval_at_tokens)})


def schedule_of(cfg: TrainConfig, tokens_per_step: int) -> Schedule:
    """The run's learning-rate schedule, in tokens: the function the loop takes every step's rate from."""
    return Schedule(cfg.schedule, peak=cfg.lr, total=cfg.total_tokens, warmup=cfg.warmup_tokens,
                    step_size=tokens_per_step, min_lr_ratio=cfg.min_lr_ratio, cooldown=cfg.cooldown,
                    drop_at=cfg.drop_at, drop_factor=cfg.drop_factor)
