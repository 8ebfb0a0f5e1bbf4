"""The papers' own parameter and FLOP conventions, each a named function: Kaplan et al. 2020's
12·l·d², Pearce & Song 2024's N_T(N_E) for Kaplan's models, OpenLM's count (Gadre et al. 2024) and the
Gemstones authors' (McLeish et al. 2025). Our own decoder's counts are in ``decoder``."""

from __future__ import annotations

import re

import numpy as np

from scalinglab.accounting.decoder import count_params, kaplan_params  # noqa: F401 (Kaplan's, listed with the others)
from scalinglab.errors import UserError

# Gemstones: GPT-NeoX vocabulary, 2,048-token context, 128-wide heads, GEGLU with a 4·width hidden size
# (three width × 4·width matrices).
GEMSTONES_VOCAB = 50304
GEMSTONES_SEQ_LEN = 2048
GEMSTONES_HEAD_DIM = 128
GEMSTONES_MLP_RATIO = 4
# OpenLM's vocabulary and context length, from the model JSONs' configs.
OPENLM_VOCAB = 50432
OPENLM_SEQ_LEN = 2048
PEARCE_SONG_GAMMA = 47491.0


def kaplan_total_params(n_e, gamma: float = PEARCE_SONG_GAMMA):
    """Pearce & Song 2024's total N_T for Kaplan's models from their non-embedding N_E: N_E + γ·N_E^(1/3)
    (their fit of the embedding share over Kaplan's shapes)."""
    n_e = np.asarray(n_e, float)
    return n_e + gamma * n_e ** (1 / 3)


# OpenLM's named configs (open_lm/model_configs/open_lm_1b.json, open_lm_7b.json): hidden_dim,
# n_layers, n_heads. With them scalinglab.papers.warmup.openlm_params reproduces the authors' params and
# params_no_embed for both models exactly (tests/test_pearce_song.py), which is the check on these.
OPENLM_NAMED_SHAPES = {"open_lm_1b": (2048, 24, 16), "open_lm_7b": (4096, 32, 32)}


def openlm_shape(arch: str) -> tuple[int, int, int]:
    """(d_model, n_layers, n_heads) of an OpenLM arch as Gadre et al. name it: d=512_l=8_h=4 or open_lm_1b/7b."""
    if arch in OPENLM_NAMED_SHAPES:
        return OPENLM_NAMED_SHAPES[arch]
    m = re.fullmatch(r"d=(\d+)_l=(\d+)_h=(\d+)", str(arch))
    if m is None:
        raise UserError(f"unknown OpenLM arch {arch!r}: expected d=<width>_l=<layers>_h=<heads> "
                        f"or one of {', '.join(OPENLM_NAMED_SHAPES)}")
    return tuple(int(g) for g in m.groups())


def openlm_params(d_model, n_layers, n_heads) -> tuple[np.ndarray, np.ndarray]:
    """(params, params_no_embed) as Gadre et al. count them, for OpenLM shapes.

    ``scalinglab.accounting.decoder.count_params`` with OpenLM's choices (SwiGLU, no biases, gain-only LayerNorm,
    untied head, rotary so no positional table): ``params`` is every parameter, the input embedding and
    the output head included; ``params_no_embed`` drops the input embedding and keeps the head, which
    is our ``standard`` count, not Kaplan's non-embedding N. When the heads do not divide the width
    (d=488 with 12 heads) attention works in n_heads·(d // n_heads) dimensions, so the four projections
    are narrower. This reproduces the final-loss table's params and params_no_embed for its six shapes
    and the grid's tokens = 20·params for all 130 of its shapes (the tests check both).
    """
    width, depth, heads = np.broadcast_arrays(*(np.atleast_1d(np.asarray(v)).astype(np.int64)
                                                for v in (d_model, n_layers, n_heads)))
    standard = np.array([count_params(int(w), int(n), OPENLM_VOCAB, seq_len=OPENLM_SEQ_LEN, mlp="swiglu",
                                            bias=False).standard for w, n in zip(width, depth)], dtype=np.int64)
    standard -= 4 * depth * width * (width - heads * (width // heads))
    return standard + OPENLM_VOCAB * width, standard


def gemstones_params(width, depth, vocab: int = GEMSTONES_VOCAB):
    """Parameters of a Gemstone: untied embedding and head, GQA attention, GEGLU MLP (12·w²), two RMSNorms a layer.

    Attention has w/128 query heads and half as many key-value groups, rounded
    down: width 384 has 3 query heads but one key and one value head.
    """
    w, d = np.asarray(width, dtype=float), np.asarray(depth, dtype=float)
    heads = w // GEMSTONES_HEAD_DIM
    groups = heads // 2
    attention = w * (heads + 2 * groups) * GEMSTONES_HEAD_DIM + GEMSTONES_HEAD_DIM * heads * w
    per_layer = attention + 3 * GEMSTONES_MLP_RATIO * w**2 + 2 * w
    return 2 * vocab * w + w + d * per_layer


def gemstones_non_embedding_params(width, depth, vocab: int = GEMSTONES_VOCAB):
    """Kaplan's N for a Gemstone: :func:`gemstones_params` less the token embedding and the output head.

    The convention of :func:`scalinglab.accounting.decoder.count_params` (``non_embedding``): every
    layer and the final norm, no vocabulary matrix. Gemstones use RoPE, so there is no
    positional embedding to remove; the head is untied, so there are two vocab × width
    matrices. The share removed runs from 8% (width 1536, depth 50) to 74% (width 768,
    depth 3): in this suite it depends on the shape more than on the size.
    """
    w = np.asarray(width, dtype=float)
    return gemstones_params(width, depth, vocab) - 2 * vocab * w


def gemstones_flops_per_token(width, depth, vocab: int = GEMSTONES_VOCAB, seq_len: int = GEMSTONES_SEQ_LEN):
    """Training FLOPs per token under the Gemstones authors' accounting (forward + backward).

    Per layer and token, forward: q/k/v projections 4w² (w/128 query heads, half as
    many key and value heads, not rounded down as in :func:`gemstones_params`: the authors'
    FLOP count treats them as real numbers), RoPE 5.25w, causal scores s·w and weighted sum 2s·w
    (half of the full matrices), softmax 3s per head, output projection 2w², MLP
    24w² + 42w (three matmuls, GEGLU's elementwise work and the residual adds),
    RMSNorms 14w. Backward: twice the projections, RoPE, MLP and norms, 2.5 times the
    score, softmax and weighted-sum work (flash attention recomputes them). After the
    layers: a final RMSNorm 7w and the logits 2w·vocab, tripled for the backward.
    """
    w, d = np.asarray(width, dtype=float), np.asarray(depth, dtype=float)
    s = float(seq_len)
    heads = w / GEMSTONES_HEAD_DIM
    qkv = 4 * w**2
    rope = 5.25 * w
    mixing = s * w + 3 * s * heads + 2 * s * w   # scores, softmax, weighted sum
    out_proj = 2 * w**2
    mlp = 6 * GEMSTONES_MLP_RATIO * w**2 + 10 * GEMSTONES_MLP_RATIO * w + 2 * w
    norms = 14 * w
    forward = qkv + rope + mixing + out_proj + mlp + norms
    backward = 2 * (qkv + rope) + 2.5 * mixing + 2 * out_proj + 2 * (mlp + norms)
    head = 7 * w + 2 * w * vocab
    return d * (forward + backward) + 3 * head
