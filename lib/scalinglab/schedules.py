"""Learning-rate schedules as pure functions of the step: what the training loop applies and what curve laws read.

One definition serves both: :func:`scalinglab.training.loop.train` sets each step's rate from
:meth:`Schedule.at_step` and records that same number in the run's curve, and a law fitted to the curve can
rebuild the whole sequence, step by step, from the run's configuration (:meth:`Schedule.lrs`) without torch.

Positions are in tokens (``total``, ``warmup``, ``step_size`` = tokens per step), or in steps with
``step_size=1``. The rate of step s (0-based) depends on the position at its start, p = s·step_size:

- warmup (every schedule): linear, ``peak·min(p + step_size, warmup)/warmup`` while p < warmup: nanoGPT's
  lr·(it+1)/warmup_iters, so the first step already learns and the last warmup step is at the peak;
- ``constant``: the peak;
- ``cosine``: from the peak at the end of warmup to ``min_lr_ratio``·peak at ``total`` (Hoffmann et al. 2022;
  their floor is a tenth of the peak);
- ``wsd``: warmup-stable-decay (Hu et al. 2024, MiniCPM; Hägele et al. 2024): the peak until the last
  ``cooldown`` fraction of the run (0.2: the last 20% of its steps), then from the peak to ``min_lr_ratio``·peak
  at ``total``: linearly (``decay="linear"``, the default, what our training runs use and their databases
  record: Luo et al. 2025's ``wsdld``, linear decay to η_min = η_max/10 over the last 4,000 of 24,000 steps) or
  geometrically (``decay="geometric"``: η_max^(1−f)·η_min^f at the cooldown's fraction f, Luo et al.'s ``wsd``).
  The floor is the cosine's, a tenth of the peak, as in Luo et al.'s runs; Hägele et al. decay linearly to zero
  (``min_lr_ratio=0``, which a geometric decay cannot reach). The curve commands name the shapes as Luo et al. do
  (:data:`NAMED`: ``wsd`` geometric, ``wsdld`` linear);
- ``step``: two stages, the peak until ``drop_at`` of the run (0.5) and ``drop_factor``·peak (0.1) after it:
  Luo et al. 2025's two-stage schedule (their ``wsdcon_3``: 3e-4 for steps 0-8,000 of 16,000, then 3e-5).

The decays read the position at the start of a step, so the last step of a cosine or WSD run is a little
above the floor and a run's recorded rates never reach it early.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from scalinglab.errors import UserError

SCHEDULES = ("constant", "cosine", "wsd", "step")
DECAYS = ("linear", "geometric")
# the schedule names of the curve commands (``wsd:peak=...``), Luo et al. 2025's: name -> (Schedule name, decay)
NAMED = {"constant": ("constant", "linear"), "cosine": ("cosine", "linear"), "wsd": ("wsd", "geometric"),
         "wsdld": ("wsd", "linear"), "step": ("step", "linear")}


@dataclass(frozen=True)
class Schedule:
    """A learning-rate schedule: ``at(p)`` is the rate of the step that starts at position ``p``."""

    name: str
    peak: float
    total: float                   # the run's length (tokens, or steps with step_size 1)
    warmup: float = 0.0
    step_size: float = 1.0         # tokens per step (1: positions are steps)
    min_lr_ratio: float = 0.1      # cosine and wsd end here, as a fraction of the peak
    cooldown: float = 0.2          # wsd: the last fraction of the run, decayed
    drop_at: float = 0.5           # step: where the rate drops, as a fraction of the run
    drop_factor: float = 0.1       # step: the rate after the drop, as a fraction of the peak
    decay: str = "linear"          # wsd's cooldown: linear (Luo et al.'s wsdld) or geometric (their wsd)

    def __post_init__(self) -> None:
        if self.name not in SCHEDULES:
            raise UserError(f"schedule must be one of {SCHEDULES}, not {self.name!r}")
        if self.decay not in DECAYS:
            raise UserError(f"schedule {self.name}: decay must be one of {', '.join(DECAYS)}, not {self.decay!r}")
        if self.name == "wsd" and self.decay == "geometric" and not self.min_lr_ratio > 0:
            raise UserError(f"schedule {self.name}: a geometric cooldown needs a floor above 0, not "
                            f"{self.min_lr_ratio!r}")
        checks = [("peak", self.peak, self.peak >= 0), ("total", self.total, self.total > 0),
                  ("warmup", self.warmup, self.warmup >= 0), ("step_size", self.step_size, self.step_size > 0),
                  ("min_lr_ratio", self.min_lr_ratio, 0 <= self.min_lr_ratio <= 1),
                  ("cooldown", self.cooldown, 0 < self.cooldown <= 1),
                  ("drop_at", self.drop_at, 0 < self.drop_at < 1),
                  ("drop_factor", self.drop_factor, 0 <= self.drop_factor <= 1)]
        for name, value, ok in checks:
            if not (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and ok):
                raise UserError(f"schedule {self.name}: {name} {value!r} is out of range")

    def at(self, position: float) -> float:
        """The rate of the step that starts after ``position`` tokens (steps, with step_size 1)."""
        peak, total = self.peak, self.total
        if self.warmup and position < self.warmup:
            return peak * min(position + self.step_size, self.warmup) / self.warmup
        if self.name == "constant":
            return peak
        floor = peak * self.min_lr_ratio
        if self.name == "cosine":
            span = max(total - self.warmup, 1)
            progress = min(max(position - self.warmup, 0) / span, 1.0)
            return floor + 0.5 * (peak - floor) * (1 + math.cos(math.pi * progress))
        if self.name == "wsd":
            start = total * (1 - self.cooldown)
            if position < start:
                return peak
            left = min(max(total - position, 0.0) / (total - start), 1.0)
            if self.decay == "geometric":
                return peak * self.min_lr_ratio ** (1.0 - left)
            return floor + (peak - floor) * left
        return peak if position < total * self.drop_at else peak * self.drop_factor  # step

    def at_step(self, step: int) -> float:
        """The rate of step ``step`` (0-based): the one the training loop applies."""
        return self.at(step * self.step_size)

    def n_steps(self) -> int:
        """How many steps the run makes: ``total`` to the nearest whole step, at least one (as the loop counts)."""
        return max(1, round(self.total / self.step_size))

    def lrs(self, n: int | None = None) -> np.ndarray:
        """The rates of steps 0..n-1 (default: the run's steps), the same floats as :meth:`at_step` gives."""
        n = self.n_steps() if n is None else n
        return np.fromiter((self.at_step(s) for s in range(n)), dtype=float, count=n)
