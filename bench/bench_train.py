"""Training throughput of our GPT: tokens/s and, on a GPU, model FLOPs utilisation (MFU).

On CUDA it trains a GPT-2-sized model (124M parameters: width 768, depth 12,
GPT-2's 50,257-id vocabulary, 1,024-token context, tied head) with our
production settings (bf16 autocast, torch.compile, fused AdamW) and, in the
same run, the baseline of the same step in eager fp32 with unfused AdamW, and
prints the ratio. MFU = tokens/s x training FLOPs per token (6N with the head,
plus attention: ``flops_per_token(...).with_attention``) / the GPU's dense bf16
peak (H100/H200: 989 TFLOP/s). Target: at least 35%.

On CPU (``--cpu-variants``, the default without a GPU) it trains one model of
the CPU schedule family (profile ``cpu-schedules``: vocabulary 512, context 128,
batch 16; ``--width``/``--depth`` pick the size) four ways from the same
initialisation on the same batches of the real corpus: eager fp32 (what CPU
training does today), torch.compile (inductor, fp32), bf16 autocast (eager) and
both. The machine is shared, so the variants are timed interleaved, in rounds
of ``--steps`` steps each, and each keeps its fastest round (best of
``--rounds``). Their losses are compared with eager fp32's over the same steps,
against the gap that a different initialisation seed alone opens (fp32 eager,
seed 1): a variant *agrees* when its mean absolute loss difference from fp32
over the last half of the steps is below half that seed gap. The verdict line
names the variant to train with: one at least 1.3x faster than eager fp32 that
agrees, else eager fp32.

    python bench/bench_train.py [--steps 20] [--batch 16] [--rounds 5] [--width 96 --depth 2]
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


CPU_VARIANTS = {"eager fp32": (False, False), "compile fp32": (True, False), "eager bf16": (False, True),
                "compile bf16": (True, True)}
SPEEDUP_TO_SWITCH = 1.3


def cpu_variants(cfg: GPTConfig, batch: int, steps: int, rounds: int, tokens) -> dict:
    """Each variant's fastest round (tokens/s) and its loss at every step, trained interleaved on the same batches."""
    from scalinglab.training.loop import get_batch

    torch.use_deterministic_algorithms(True)  # as CPU training runs
    states = {}
    for name, (compiled, bf16) in {**CPU_VARIANTS, "eager fp32, seed 1": (False, False)}.items():
        torch.manual_seed(1 if "seed 1" in name else 0)
        model = GPT(cfg)
        opt = make_optimizer(model, TrainConfig(lr=3e-3), "cpu")
        states[name] = dict(model=model, opt=opt, fwd=torch.compile(model) if compiled else model, bf16=bf16,
                            losses=[], best=float("inf"))

    def run(st, first: int, n: int) -> None:
        for i in range(first, first + n):
            x, y = get_batch(tokens, batch, cfg.seq_len, i, seed=0)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=st["bf16"]):
                _, loss = st["fwd"](x, y)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(st["model"].parameters(), 1.0)
            st["opt"].step()
            st["opt"].zero_grad(set_to_none=True)
            st["losses"].append(loss.item())

    warm = 3
    for st in states.values():  # compiling happens here, outside the timed rounds
        t = time.perf_counter()
        run(st, 0, warm)
        st["warmup_s"] = time.perf_counter() - t
    for r in range(rounds):
        for st in states.values():
            t = time.perf_counter()
            run(st, warm + r * steps, steps)
            st["best"] = min(st["best"], time.perf_counter() - t)
    return {name: dict(tokens_per_s=batch * cfg.seq_len * steps / st["best"], losses=st["losses"],
                       warmup_s=st["warmup_s"]) for name, st in states.items()}


def cpu_main(a) -> None:
    import numpy as np
    from scalinglab.training.sweep.launch import load_tokens
    from scalinglab.training.sweep.plan import get_profile

    prof = get_profile("cpu-schedules")
    tok, train_tokens, _ = load_tokens(prof)
    cfg = GPTConfig(vocab_size=tok.vocab_size, seq_len=prof.seq_len, width=a.width, depth=a.depth,
                    head_dim=min(prof.head_dim, a.width))
    batch, steps = a.batch or prof.batch_size, a.steps or 20
    n = GPT(cfg).param_counts()
    print(f"device: CPU, {torch.get_num_threads()} thread(s); model: width {cfg.width}, depth {cfg.depth}, "
          f"vocab {cfg.vocab_size}, seq {cfg.seq_len}, {n['standard']:,} parameters with the head; batch {batch}; "
          f"{a.rounds} interleaved rounds of {steps} steps, best round kept")
    res = cpu_variants(cfg, batch, steps, a.rounds, train_tokens)
    base = res["eager fp32"]
    half = len(base["losses"]) // 2

    def gap(name: str) -> float:
        return float(np.mean(np.abs(np.subtract(res[name]["losses"][half:], base["losses"][half:]))))

    seed_gap = gap("eager fp32, seed 1")
    print(f"loss gap that another initialisation seed opens (fp32, mean |dL| over steps {half}-"
          f"{len(base['losses'])}): {seed_gap:.4f} nats; a variant agrees below half of it, {seed_gap / 2:.4f}")
    print(f"{'variant':<14} {'tokens/s':>9} {'ratio':>6} {'first steps s':>13} {'mean |dL|':>9} {'final dL':>9}"
          "  agrees")
    chosen, best_ratio = "eager fp32", 1.0
    for name in CPU_VARIANTS:
        r = res[name]
        ratio = r["tokens_per_s"] / base["tokens_per_s"]
        d, agrees = gap(name), gap(name) < seed_gap / 2
        final = r["losses"][-1] - base["losses"][-1]
        print(f"{name:<14} {r['tokens_per_s']:>9,.0f} {ratio:>5.2f}x {r['warmup_s']:>13.1f} {d:>9.4f} {final:>+9.4f}  "
              f"{'yes' if agrees else 'NO'}")
        if ratio >= SPEEDUP_TO_SWITCH and agrees and ratio > best_ratio:
            chosen, best_ratio = name, ratio
    print(f"verdict: train with {chosen}" + (f" ({best_ratio:.2f}x eager fp32)" if chosen != "eager fp32" else
                                            f" (no variant is >= {SPEEDUP_TO_SWITCH}x faster and agrees)"))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=None)
    p.add_argument("--batch", type=int, default=None)
    p.add_argument("--threads", type=int, default=1, help="CPU threads (default 1: a shared machine)")
    p.add_argument("--rounds", type=int, default=5, help="CPU variants: interleaved timing rounds (best kept)")
    p.add_argument("--width", type=int, default=96, help="CPU variants: the model's width")
    p.add_argument("--depth", type=int, default=2, help="CPU variants: the model's depth")
    p.add_argument("--cpu-variants", action="store_true", help="the CPU comparison, even with a GPU present")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu" or a.cpu_variants:
        cpu_main(a)
        return
    torch.backends.cuda.matmul.allow_tf32 = True
    cfg = GPTConfig(vocab_size=50257, seq_len=1024, width=768, depth=12, head_dim=64, tied=True)
    batch, steps = a.batch or 16, a.steps or 30
    fpt = flops_per_token(cfg.width, cfg.depth, cfg.vocab_size, seq_len=cfg.seq_len, tied=cfg.tied).with_attention
    n = GPT(cfg).param_counts()
    name = torch.cuda.get_device_name(0)
    print(f"device: {name}; model: width {cfg.width}, depth {cfg.depth}, vocab {cfg.vocab_size}, seq {cfg.seq_len}, "
          f"{n['total'] / 1e6:.1f}M parameters ({n['standard'] / 1e6:.1f}M with the head); batch {batch}")
    base = measure(cfg, batch, steps, device, fast=False)
    ours = measure(cfg, batch, steps, device, fast=True)
    print(f"baseline (eager fp32, unfused AdamW): {base:,.0f} tokens/s")
    print(f"ours (bf16 autocast + torch.compile + fused AdamW): "
          f"{ours:,.0f} tokens/s; ratio {ours / base:.2f}x")
    peak = gpu_peak(name)
    if peak:
        print(f"MFU: {ours * fpt / peak:.1%} of {peak / 1e12:.0f} TFLOP/s dense bf16 "
              f"({ours * fpt / 1e12:.0f} TFLOP/s achieved; target >= 35%)")
    else:
        print(f"MFU: unknown peak for {name!r}; achieved {ours * fpt / 1e12:.1f} TFLOP/s")


if __name__ == "__main__":
    main()
