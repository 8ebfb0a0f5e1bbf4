"""Gemstones (McLeish et al. 2025): training curves, the authors' accounting, their Approach-1 numbers.

"Gemstones: A Model Suite for Multi-Faceted Scaling Laws" (arXiv:2502.06857)
trained 22 Gemma-like decoders of unusual shapes (widths 256-3072, depths
3-80, 48M-2.0B parameters) on Dolma 1.7 at a constant learning rate ("hot"),
with 10%-length cooldown branches off the checkpoints. The registry
(``registry/gemstones.toml``) holds the authors' fitting tables; :func:`curves`
turns one into the long table :mod:`scalinglab.fitting.frontier.envelope` takes.

The authors' Approach 1 (``plotters/approach_1.py`` at commit 5f420478 of
github.com/mcleish7/gemstone-scaling-laws):

- N is ``params_active_precise``: every parameter, token embedding and untied
  output head included (:func:`param_count` reproduces it from width and depth);
- C is *not* 6·N·D but their own count of FLOPs per token times tokens
  (:func:`flops_per_token`: attention over a 2,048-token context, GQA with two
  queries per key-value head, a three-matmul GEGLU MLP, RMSNorms, RoPE and the
  logits; embedding lookups free). It is 1.18 × 6N for the smallest model and
  0.99 × 6N for the largest;
- the envelope is the lower convex hull of every checkpoint in
  (log C, log loss), from the cheapest checkpoint to the lowest loss
  (``envelope`` method "hull"), with no interpolation and no edge exclusion;
- N_opt ∝ C^a is an unweighted least-squares line through the hull vertices.

Their headline a = 0.4994 was computed from ``wandb_df_for_fitting_hot_477.jsonl``
(a checkpoint every 477 steps, from 2B tokens), which the mirror does not
carry; the mirrored ``gemstones-hot`` has every fifth of those checkpoints,
from 10B tokens. Their cooldown number comes from the mirrored
``gemstones-cool-end`` itself, so it can be reproduced exactly.
"""

from __future__ import annotations

import pandas as pd

from scalinglab.accounting.conventions import GEMSTONES_VOCAB, gemstones_flops_per_token
from scalinglab.errors import UserError

DATASETS = ("gemstones-hot", "gemstones-hot-100b", "gemstones-cool-end", "gemstones-cool-begin",
            "gemstones-lr-ablation-hot")

# The authors' Approach-1 fits (parameters/approach_1_linear_regression_{params,tokens}*.json at
# commit 5f420478): a and log-intercept of N_opt ∝ C^a, b of D_opt ∝ C^b, and the table each used.
PUBLISHED_APPROACH1 = {
    "hot": dict(a=0.499380216082636, intercept=-2.8451076960767026, b=0.4809888232129201,
                data="wandb_df_for_fitting_hot_477.jsonl (not mirrored)"),
    "cooldown": dict(a=0.5969810173757477, intercept=-7.522191520048853, b=0.3932603792287174,
                     data="gemstones-cool-end"),
    "hot_100b": dict(a=0.45790307973088284, intercept=-1.025860400775425, b=None,
                     data="wandb_df_for_fitting_hot_100b+_477.jsonl (not mirrored)"),
    "lr_ablation": dict(a=0.5131275357521606, intercept=-3.568844080633294, b=None,
                        data="wandb_df_for_fitting_lr_ablation_hot_477.jsonl (not mirrored)"),
}


def curves(name: str = "gemstones-hot", flops: str = "authors") -> pd.DataFrame:
    """One Gemstones table as training curves: run, n, n_ne, width, depth, step, tokens, flops, loss.

    n is the authors' N (``params_active_precise``), n_ne Kaplan's
    (:func:`non_embedding_params`). ``flops="authors"`` counts compute as the authors
    do (:func:`flops_per_token` times tokens); ``flops="6N"`` as 6·N·D with their N.
    The LR ablation's ``cooler_`` prefix is dropped so that runs keep the main suite's names.
    """
    from scalinglab import data

    if name not in DATASETS:
        raise UserError(f"not a Gemstones dataset: {name!r} (one of {', '.join(DATASETS)})")
    if flops not in ("authors", "6N"):
        raise UserError(f"Gemstones compute must be 'authors' or '6N', not {flops!r}")
    raw = data.load(name)
    raw = raw[raw["step"] > 0]
    # int64 would overflow in 6·N·D (~1e22): every count goes through float.
    n = raw["params_active_precise"].to_numpy(float)
    tokens = raw["tokens"].to_numpy(float)
    per_token = gemstones_flops_per_token(raw["width"], raw["depth"]) if flops == "authors" else 6 * n
    out = pd.DataFrame({
        "run": raw["run_name"].str.replace("cooler_", "", regex=False).str.replace("PyGemma-", "", regex=False)
        .str.replace("_pretrain", "", regex=False).to_numpy(),
        # Kaplan's N from the released count, less the two vocabulary matrices (non_embedding_params).
        "n": n, "n_ne": n - 2 * GEMSTONES_VOCAB * raw["width"].to_numpy(float),
        "width": raw["width"].to_numpy(), "depth": raw["depth"].to_numpy(),
        "step": raw["step"].to_numpy(), "tokens": tokens, "flops": per_token * tokens,
        "loss": raw["final_loss"].to_numpy(float),
    })
    return out.sort_values(["n", "run", "step"]).reset_index(drop=True)
