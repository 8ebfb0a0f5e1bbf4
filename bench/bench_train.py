"""Training throughput of our GPT: tokens/s and, on a GPU, model FLOPs utilisation (MFU).

On CUDA it trains a GPT-2-sized model (124M parameters: width 768, depth 12,
GPT-2's 50,257-id vocabulary, 1,024-token context, tied head) with our
production settings (bf16 autocast, torch.compile, fused AdamW) and, in the
same run, the baseline of the same step in eager fp32 with unfused AdamW, and
prints the ratio. MFU = tokens/s x training FLOPs per token (6N with the head,
plus attention: ``flops_per_token(...).with_attention``) / the GPU's dense bf16
peak (H100/H200: 989 TFLOP/s). Target: at least 35%.

On CPU it trains a small model (no MFU: that needs a GPU's known peak) and the
two settings coincide (fp32 eager is what training uses on CPU), so the ratio
is ~1 by construction.

    python bench/bench_train.py [--steps 20] [--batch 16]
"""

from __future__ import annotations

import argparse
import time

import torch
from scalinglab.accounting.decoder import flops_per_token
from scalinglab.training.loop import TrainConfig, gpu_peak, make_optimizer
from scalinglab.training.model import GPT, GPTConfig


def measure(cfg: GPTConfig, batch: int, steps: int, device: str, fast: bool) -> float:
    """Tokens per second of full training steps (forward, backward, clip, AdamW), after warm-up steps."""
    torch.manual_seed(0)
    model = GPT(cfg).to(device)
    opt = make_optimizer(model, TrainConfig(), device if fast else "cpu")  # fused AdamW only when fast on CUDA
    step_model = torch.compile(model) if (fast and device == "cuda") else model
    autocast = torch.autocast("cuda", dtype=torch.bfloat16, enabled=fast and device == "cuda")
    x = torch.randint(cfg.vocab_size, (batch, cfg.seq_len), device=device)
    warmup = 3 if device == "cpu" else 10

    def step():
        with autocast:
            _, loss = step_model(x, x)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(warmup):
        step()
    if device == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    if device == "cuda":
        torch.cuda.synchronize()
    return batch * cfg.seq_len * steps / (time.perf_counter() - t0)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=None)
    p.add_argument("--batch", type=int, default=None)
    p.add_argument("--threads", type=int, default=1, help="CPU threads (default 1: a shared machine)")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        cfg = GPTConfig(vocab_size=50257, seq_len=1024, width=768, depth=12, head_dim=64, tied=True)
        batch, steps = a.batch or 16, a.steps or 30
    else:
        cfg = GPTConfig(vocab_size=1024, seq_len=128, width=128, depth=4, head_dim=32)
        batch, steps = a.batch or 16, a.steps or 10
    fpt = flops_per_token(cfg.width, cfg.depth, cfg.vocab_size, seq_len=cfg.seq_len, tied=cfg.tied).with_attention
    n = GPT(cfg).param_counts()
    name = torch.cuda.get_device_name(0) if device == "cuda" else "CPU"
    print(f"device: {name}; model: width {cfg.width}, depth {cfg.depth}, vocab {cfg.vocab_size}, seq {cfg.seq_len}, "
          f"{n['total'] / 1e6:.1f}M parameters ({n['standard'] / 1e6:.1f}M with the head); batch {batch}")
    base = measure(cfg, batch, steps, device, fast=False)
    ours = measure(cfg, batch, steps, device, fast=True)
    print(f"baseline (eager fp32, unfused AdamW): {base:,.0f} tokens/s")
    print(f"ours ({'bf16 autocast + torch.compile + fused AdamW' if device == 'cuda' else 'fp32 eager, as on CPU'}): "
          f"{ours:,.0f} tokens/s; ratio {ours / base:.2f}x")
    peak = gpu_peak(name) if device == "cuda" else None
    if peak:
        print(f"MFU: {ours * fpt / peak:.1%} of {peak / 1e12:.0f} TFLOP/s dense bf16 "
              f"({ours * fpt / 1e12:.0f} TFLOP/s achieved; target >= 35%)")
    elif device == "cuda":
        print(f"MFU: unknown peak for {name!r}; achieved {ours * fpt / 1e12:.1f} TFLOP/s")
    else:
        print(f"MFU: needs a GPU (CPU achieved {ours * fpt / 1e9:.1f} GFLOP/s)")


if __name__ == "__main__":
    main()
