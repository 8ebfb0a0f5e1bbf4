"""Efficient prize scoring (prompt once, classes from its KV cache, examples batched) vs naive per-class
forwards, in the same run, on the same model and examples. Prints the speed-up and the largest
log-probability difference.

    SCALINGLAB_DATA_MIRROR=../shared/data .venv/bin/python bench/bench_scoring.py [--examples 64]
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
from scalinglab.inverse_scaling import scoring
from scalinglab.inverse_scaling import tasks as inverse
from scalinglab.inverse_scaling.adapters import GPTCheckpointLM
from scalinglab.training.model import GPT, GPTConfig
from scalinglab.training.tokenizer import get_tokenizer
from timing import best_of


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--examples", type=int, default=64)
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--depth", type=int, default=4)
    args = ap.parse_args()
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=50257, seq_len=512, width=args.width, depth=args.depth))
    lm = GPTCheckpointLM(model, get_tokenizer("gpt2"), name=f"random GPT w{args.width} d{args.depth}")
    print(f"model: {lm.name}, {lm.params:,.0f} non-embedding params; KV-cache path self-check: {lm.supports_cache}")
    for task in ("neqa", "memo-trap"):
        rows = inverse.load_task(task, limit=args.examples)
        prompts, classes = list(rows["prompt"]), list(rows["classes"])
        # Warm both paths up on two examples, then time each once, back to back, on the same examples.
        scoring.continuation_logprobs(lm, prompts[:2], classes[:2])
        scoring.naive_logprobs(lm, prompts[:2], classes[:2])
        t_naive, naive = best_of(lambda: scoring.naive_logprobs(lm, prompts, classes), repeat=1)
        t_fast, fast = best_of(lambda: scoring.continuation_logprobs(lm, prompts, classes), repeat=1)
        diff = max(float(np.abs(a - b).max()) for a, b in zip(fast, naive))
        n_cls = sum(len(c) for c in classes)
        print(f"{task:<10} {len(prompts)} examples, {n_cls} classes: naive {t_naive:.3f} s, efficient "
              f"{t_fast:.3f} s, speed-up x{t_naive / t_fast:.1f}; max |delta log-prob| = {diff:.2e}")


if __name__ == "__main__":
    main()
