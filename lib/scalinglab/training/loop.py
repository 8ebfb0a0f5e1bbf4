"""Train one GPT on a token stream, logging validation loss at chosen token counts.

One loop, top to bottom (after nanoGPT's train.py): sample a batch, set the
learning rate, forward, backward, clip, step; at each of ``eval_at_tokens``
measure the validation loss. Because a FLOP budget is a token count for a
given model (C = flops_per_token x D), one constant-learning-rate run yields
its loss at every budget it passes (Kaplan et al.'s envelope), while a
cosine-to-budget run (Hoffmann et al.) is evaluated at its end.

Schedules (:mod:`scalinglab.schedules`, one definition for the loop and for
curve laws): linear warmup over ``warmup_tokens`` (Kaplan's long fixed warmup,
or short, about N tokens, as Porian et al.), then ``cosine`` decay to
``min_lr_ratio`` of the peak at ``total_tokens``, ``constant``, ``wsd``
(stable, then a linear cooldown over the last ``cooldown`` of the run to
``min_lr_ratio`` of the peak) or ``step`` (the peak, then ``drop_factor`` of
it after ``drop_at`` of the run). Each curve row records the rate of the step
that ended there, the number the optimizer used, and the mean training loss
of the steps since the previous row (``train_loss_mean``).

On CUDA: bf16 autocast, torch.compile and fused AdamW. On CPU: fp32,
deterministic algorithms, and bit-identical results for the same seed, also
across a resume: batch b is drawn from a generator seeded by (seed, b), and a
checkpoint holds the model, the optimizer and the loss curve so far.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

# step_at and gpu_peak live with the FLOP accounting, so that sweep planning and reports need no torch
from scalinglab.accounting.decoder import PEAK_BF16, gpu_peak, step_at  # noqa: F401 (re-exported)
from scalinglab.errors import UserError
from scalinglab.schedules import SCHEDULES  # noqa: F401 (re-exported)
from scalinglab.serialization import to_jsonable
from scalinglab.training.config import TrainConfig, schedule_of  # noqa: F401 (re-exported)
from scalinglab.training.model import GPT, GPTConfig, save_checkpoint


@dataclass
class TrainResult:
    curve: list[dict]            # one row per evaluation: step, tokens, loss, lr, seconds
    final_loss: float
    tokens: int
    steps: int
    seconds: float
    device: str
    tokens_per_s: float

    def to_dict(self) -> dict:
        return to_jsonable(asdict(self))

    def summary(self) -> str:
        return (f"final loss {self.final_loss:.4f} after {self.tokens:,} tokens ({self.steps:,} steps, "
                f"{len(self.curve)} evaluations) in {self.seconds:.1f} s on {self.device} "
                f"({self.tokens_per_s:,.0f} tokens/s)")


def lr_at(tokens_seen: int, cfg: TrainConfig, tokens_per_step: int) -> float:
    """The learning rate of the step that starts after ``tokens_seen`` tokens and trains on ``tokens_per_step``.

    Warmup is linear in the tokens seen by the end of the step, nanoGPT's lr·(it+1)/warmup_iters in
    tokens: the first step already learns (lr/warmup_steps, not ~0) and the last warmup step is at the
    peak. Counting "+1" in tokens instead of steps made step 0 a wasted step at lr/warmup_tokens.
    """
    return schedule_of(cfg, tokens_per_step).at(tokens_seen)


def resolve_device(device: str = "auto") -> str:
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise UserError("device 'cuda' requested but torch sees no GPU")
    return device


def get_batch(tokens: np.ndarray, batch_size: int, seq_len: int, step: int, seed: int):
    """Random windows of seq_len+1 tokens, a pure function of (seed, step) so resumes replay exactly."""
    gen = torch.Generator().manual_seed(seed * 1_000_003 + step)
    starts = torch.randint(len(tokens) - seq_len - 1, (batch_size,), generator=gen).numpy()
    windows = torch.from_numpy(np.stack([tokens[s:s + seq_len + 1] for s in starts]).astype(np.int64))
    return windows[:, :-1], windows[:, 1:]


@torch.no_grad()
def evaluate(model: GPT, val: np.ndarray, cfg: TrainConfig, device: str) -> float:
    """Mean cross-entropy over non-overlapping windows of the first ``eval_tokens`` validation tokens."""
    T = model.config.seq_len
    n = max(1, min(cfg.eval_tokens, len(val) - 1) // T)
    windows = torch.from_numpy(np.asarray(val[: n * T + 1]).astype(np.int64))
    x, y = windows[:-1].view(n, T), windows[1:].view(n, T)
    model.eval()
    total = 0.0
    for i in range(0, n, cfg.eval_batch_size):
        xb, yb = x[i:i + cfg.eval_batch_size].to(device), y[i:i + cfg.eval_batch_size].to(device)
        with _autocast(device):
            _, loss = model(xb, yb)
        total += loss.item() * xb.size(0)
    model.train()
    return total / n


def _autocast(device: str):
    if device == "cuda":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return torch.autocast("cpu", enabled=False)


def make_optimizer(model: GPT, cfg: TrainConfig, device: str) -> torch.optim.AdamW:
    """AdamW; matrices decay, biases, LayerNorms (1-D tensors) do not (nanoGPT)."""
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [dict(params=[p for p in params if p.dim() >= 2], weight_decay=cfg.weight_decay),
              dict(params=[p for p in params if p.dim() < 2], weight_decay=0.0)]
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), eps=cfg.eps,
                             fused=device == "cuda")


class CheckpointError(UserError):
    """A resume checkpoint that cannot be trusted: unreadable, not a checkpoint, or another run's."""


# TrainConfig fields a checkpoint may differ in and still be resumed: how often it is written, where it runs
_RESUME_FREE = {"checkpoint_every_s", "device", "compile", "eval_batch_size"}


def _resume(checkpoint: Path, device: str, model: GPT, optimizer, cfg: TrainConfig, meta: dict,
            eval_steps: list[int]) -> tuple[int, list, float, list]:
    """(step, curve, seconds, [sum, count] of the training losses since the last evaluation) from a resume
    checkpoint (one written before that sum was kept gives [0.0, 0]), its weights and optimizer state loaded
    into ``model`` and ``optimizer``; CheckpointError (naming the file) when it is corrupt, hostile (anything
    but tensors and plain data is refused unread: ``weights_only``), or another run's."""
    def bad(why: str) -> CheckpointError:
        return CheckpointError(f"{checkpoint}: cannot resume from this checkpoint ({why})")

    try:
        with warnings.catch_warnings():  # torch warns about the pickle protocol of files it then refuses
            warnings.simplefilter("ignore")
            state = torch.load(checkpoint, map_location=device, weights_only=True)
    except Exception as exc:  # noqa: BLE001 - a damaged file raises anything from zipfile to the unpickler
        raise bad((str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]) from None
    if not isinstance(state, dict) or not {"model", "optimizer", "step", "curve", "seconds"} <= set(state):
        raise bad("not a training checkpoint: no model, optimizer, step, curve and seconds")
    saved = state.get("meta") if isinstance(state.get("meta"), dict) else {}
    if "run_id" in saved and "run_id" in meta and saved["run_id"] != meta["run_id"]:
        raise bad(f"it is run {saved.get('run_id')!r}'s, not {meta.get('run_id')!r}'s")
    saved_train, train_cfg = saved.get("train"), cfg.to_dict()
    if isinstance(saved_train, dict):
        differ = sorted(k for k in set(saved_train) & set(train_cfg) - _RESUME_FREE if saved_train[k] != train_cfg[k])
        if differ:
            raise bad(f"trained with another {', '.join(differ)}")
    config = state.get("config")
    if isinstance(config, dict):
        differ = sorted(k for k, v in asdict(model.config).items() if k in config and config[k] != v)
        if differ:
            raise bad(f"a model with another {', '.join(differ)}")
    step, curve, seconds, total_steps = state["step"], state["curve"], state["seconds"], eval_steps[-1]
    if isinstance(step, bool) or not isinstance(step, int) or not 0 <= step <= total_steps:
        raise bad(f"step {step!r} is not one of this run's 0..{total_steps}")
    if not isinstance(seconds, (int, float)) or not math.isfinite(seconds) or seconds < 0:
        raise bad(f"elapsed seconds {seconds!r}")
    if not isinstance(curve, list) or not all(
            isinstance(r, dict) and isinstance(r.get("step"), int) and 0 < r["step"] <= step
            and isinstance(r.get("tokens"), int) and isinstance(r.get("loss"), (int, float))
            and math.isfinite(r["loss"]) and r["loss"] >= 0 for r in curve) \
            or [r["step"] for r in curve] != [s for s in eval_steps if s <= step]:
        raise bad(f"its loss curve is not this run's evaluations up to step {step} with finite losses")
    try:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
    except Exception as exc:  # noqa: BLE001 - wrong keys, shapes or types
        raise bad((str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]) from None
    if not all(torch.isfinite(t).all() for t in model.state_dict().values() if t.is_floating_point()):
        raise bad("its weights are not all finite")
    acc = state.get("train_loss_acc")
    if not (isinstance(acc, list) and len(acc) == 2 and isinstance(acc[0], float) and math.isfinite(acc[0])
            and isinstance(acc[1], int) and not isinstance(acc[1], bool) and acc[1] >= 0):
        acc = [0.0, 0]
    return step, curve, float(seconds), acc


def train(model_cfg: GPTConfig, cfg: TrainConfig, train_tokens: np.ndarray, val_tokens: np.ndarray, *,
          checkpoint: Path | str | None = None, on_eval: Callable[[dict], None] | None = None,
          meta: dict | None = None, on_checkpoint: Callable[[int], None] | None = None) -> TrainResult:
    """Train from scratch, or resume from ``checkpoint`` when it exists; the final weights are saved there.

    A checkpoint that cannot be resumed (corrupt, hostile, another run's or another configuration's)
    raises :class:`CheckpointError` and is left as it is. ``on_checkpoint(step)`` is called before each
    checkpoint is written; whatever it raises stops training, that checkpoint unwritten (a sweep's job
    stops there when its run's claim was taken over)."""
    device = resolve_device(cfg.device)
    if device == "cpu":
        torch.use_deterministic_algorithms(True)
    else:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    tokens_per_step = cfg.batch_size * model_cfg.seq_len
    total_steps = step_at(cfg.total_tokens, tokens_per_step)
    eval_steps = sorted({min(total_steps, step_at(t, tokens_per_step)) for t in cfg.eval_at_tokens} | {total_steps})

    torch.manual_seed(cfg.seed)
    model = GPT(model_cfg).to(device)
    optimizer = make_optimizer(model, cfg, device)
    step, curve, elapsed, train_acc = 0, [], 0.0, [0.0, 0]  # train_acc: sum and count of losses since the last row
    checkpoint = Path(checkpoint) if checkpoint else None
    run_meta = dict(meta or {}, train=cfg.to_dict())
    if checkpoint and checkpoint.is_file():
        step, curve, elapsed, train_acc = _resume(checkpoint, device, model, optimizer, cfg, run_meta, eval_steps)
    schedule, eval_at = schedule_of(cfg, tokens_per_step), set(eval_steps)
    compiled = torch.compile(model) if (cfg.compile if cfg.compile is not None else device == "cuda") else model

    def save() -> None:
        if checkpoint:
            if on_checkpoint:
                on_checkpoint(step)
            save_checkpoint(checkpoint, model, run_meta, optimizer=optimizer.state_dict(), step=step,
                            curve=curve, seconds=elapsed, train_loss_acc=list(train_acc))

    model.train()
    t0, last_save = time.perf_counter() - elapsed, time.perf_counter()
    while step < total_steps:
        lr = schedule.at_step(step)
        for group in optimizer.param_groups:
            group["lr"] = lr
        x, y = get_batch(train_tokens, cfg.batch_size, model_cfg.seq_len, step, cfg.seed)
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        with _autocast(device):
            _, loss = compiled(x, y)
        loss.backward()
        if cfg.grad_clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        step += 1
        train_loss = loss.item()
        train_acc = [train_acc[0] + train_loss, train_acc[1] + 1]
        elapsed = time.perf_counter() - t0
        if step in eval_at:
            row = dict(step=step, tokens=step * tokens_per_step, loss=evaluate(model, val_tokens, cfg, device),
                       train_loss=train_loss, train_loss_mean=train_acc[0] / train_acc[1], lr=lr,
                       seconds=time.perf_counter() - t0)
            train_acc = [0.0, 0]
            curve.append(row)
            if on_eval:
                on_eval(row)
        if checkpoint and (step == total_steps or time.perf_counter() - last_save > cfg.checkpoint_every_s):
            elapsed = time.perf_counter() - t0
            save()
            last_save = time.perf_counter()
    seconds = time.perf_counter() - t0
    return TrainResult(curve=curve, final_loss=curve[-1]["loss"], tokens=step * tokens_per_step, steps=step,
                       seconds=seconds, device=device, tokens_per_s=step * tokens_per_step / max(seconds, 1e-9))
