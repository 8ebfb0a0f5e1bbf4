"""Parameter and FLOP accounting for a decoder-only transformer.

Part of why Kaplan et al. 2020 and Hoffmann et al. 2022 disagree is what
"N" means (Pearce & Song 2024; Porian et al. 2024). This module counts every
tensor of one concrete model and reports three conventions side by side.

The model (nanoGPT-style, pre-norm; ``scalinglab.training.model`` must match it)::

    wte   token embedding            vocab × width
    wpe   learned positional emb.    seq_len × width
    per layer (× depth):
      ln_1  LayerNorm                weight + bias: 2·width
      attn  qkv projection           width × 3·width  + bias 3·width
            output projection        width × width    + bias width
      ln_2  LayerNorm                2·width
      mlp   gelu:   fc  width × 4·width + bias 4·width; proj 4·width × width + bias width
            swiglu: gate and up, width × d_ff each + biases d_ff each;
                    down d_ff × width + bias width
    ln_f  final LayerNorm            2·width
    head  output projection          width × vocab, no bias (shares wte when tied)

With ``bias=False`` the linear layers and LayerNorms carry no bias (OpenLM's
choice); LayerNorm weights are always counted.

The three counts:

``non_embedding`` (Kaplan's N)
    Every layer plus ln_f: all but wte, wpe and head. Kaplan's approximation
    N ≈ 12·depth·width² (attention 4w², GELU MLP 8w²) omits the biases (9·width
    per layer) and LayerNorm weights and biases (4·width per layer, 2·width for
    ln_f): 13/(12·width) of each layer, 1.7% at width 64, 0.1% at width 1024.
    SwiGLU's rounded d_ff makes its MLP 3·width·d_ff, not 8·width².
``standard`` (Porian's N)
    non_embedding plus the head matrix, vocab·width: the head's matmul costs
    FLOPs like any layer, which Kaplan's count leaves out.
``total``
    Every stored tensor: standard plus the positional embedding and, when
    untied, the token embedding (a tied head already counted it).

FLOPs per training token (forward + backward ≈ 3 × forward's 2 per parameter):
``kaplan`` 6·non_embedding; ``standard`` 6·standard; ``with_attention``
6·standard + 6·seq_len·width·depth (the attention scores and their weighted
sum over a context of seq_len, Kaplan's 2·n_layer·n_ctx·d_attn forward term).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from scalinglab.errors import UserError
from scalinglab.serialization import to_jsonable

MLP_KINDS = ("gelu", "swiglu")


def kaplan_params(width, depth):
    """Kaplan et al. 2020's approximation of non-embedding N: 12·n_layer·d_model² (their Eq. 2.1)."""
    return 12 * depth * width * width



def mlp_hidden(width: int, mlp: str = "gelu") -> int:
    """The MLP's hidden size: 4·width (GELU) or 256·ceil((8·width/3)/256) (SwiGLU, as OpenLM)."""
    if mlp == "gelu":
        return 4 * width
    if mlp == "swiglu":
        return 256 * -(-8 * width // (3 * 256))  # integer ceil: no float rounding at exact multiples
    raise UserError(f"mlp must be one of {', '.join(MLP_KINDS)}, not {mlp!r}")


@dataclass(frozen=True)
class ParamCounts:
    """Parameter counts of one model under each convention (see the module docstring)."""

    non_embedding: int
    standard: int
    total: int
    embedding: int          # wte, vocab·width
    positional: int         # wpe, seq_len·width
    head: int               # vocab·width (the same tensor as wte when tied)
    per_layer: int
    mlp_hidden: int
    kaplan_approx: int      # 12·depth·width², Kaplan's shorthand for non_embedding

    def to_dict(self) -> dict[str, int]:
        return to_jsonable({k: getattr(self, k) for k in self.__dataclass_fields__})


@dataclass(frozen=True)
class FlopsPerToken:
    """Training FLOPs per token (forward and backward) under each convention."""

    kaplan: int
    standard: int
    with_attention: int

    def to_dict(self) -> dict[str, int]:
        return to_jsonable({k: getattr(self, k) for k in self.__dataclass_fields__})


def _check(**sizes: int) -> None:
    for name, value in sizes.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise UserError(f"{name} must be a positive integer, not {value!r}")


def count_params(width: int, depth: int, vocab: int, seq_len: int = 1024, mlp: str = "gelu",
                 tied: bool = False, bias: bool = True) -> ParamCounts:
    """Count the parameters of the decoder described in this module's docstring."""
    _check(width=width, depth=depth, vocab=vocab, seq_len=seq_len)
    hidden = mlp_hidden(width, mlp)
    b = 1 if bias else 0
    norm = (2 if bias else 1) * width
    attn = 4 * width * width + b * 4 * width
    if mlp == "gelu":
        ffn = 2 * width * hidden + b * (hidden + width)
    else:
        ffn = 3 * width * hidden + b * (2 * hidden + width)
    per_layer = attn + ffn + 2 * norm
    non_embedding = depth * per_layer + norm
    head = vocab * width
    standard = non_embedding + head
    total = standard + seq_len * width + (0 if tied else vocab * width)
    return ParamCounts(non_embedding=non_embedding, standard=standard, total=total, embedding=vocab * width,
                       positional=seq_len * width, head=head, per_layer=per_layer, mlp_hidden=hidden,
                       kaplan_approx=int(kaplan_params(width, depth)))


def flops_per_token(width: int, depth: int, vocab: int, seq_len: int = 1024, mlp: str = "gelu",
                    tied: bool = False, bias: bool = True) -> FlopsPerToken:
    """Training FLOPs per token: 6·N for Kaplan's and the standard N, plus attention."""
    p = count_params(width, depth, vocab, seq_len=seq_len, mlp=mlp, tied=tied, bias=bias)
    return FlopsPerToken(kaplan=6 * p.non_embedding, standard=6 * p.standard,
                         with_attention=6 * p.standard + 6 * seq_len * width * depth)


# --- steps and hardware (torch-free, for sweep plans and reports as well as training) ---------------

def step_at(tokens: int, tokens_per_step: int) -> int:
    """The step at which ``tokens`` have been seen, to the nearest whole step (at least 1)."""
    return max(1, round(tokens / tokens_per_step))


# Dense bf16 tensor-core peaks (no sparsity) in FLOP/s, from NVIDIA's datasheets (which print the
# sparse figure, twice these), keyed by model as torch.cuda.get_device_name() spells it. A key of
# several words is a variant and wins over its shorter prefix ("H100 PCIe" over "H100").
PEAK_BF16 = {"H200": 989e12, "H100": 989e12, "H100 PCIe": 756e12, "A100": 312e12, "L40S": 362e12,
             "L40": 181e12, "L4": 121e12, "A10": 125e12}


def _model_tokens(name: str) -> list[str]:
    """'cuda:NVIDIA A100-SXM4-80GB' -> ['CUDA', 'NVIDIA', 'A100', 'SXM4', '80GB']."""
    return re.findall(r"[A-Z0-9]+", name.upper())


def gpu_peak(name: str) -> float | None:
    """The GPU's dense bf16 peak, or None when unknown (MFU is then not reported).

    Model names are compared whole, word by word: a substring match would read "NVIDIA L40" as
    an L4 and "NVIDIA A10G" as an A10, and report a utilisation off by the ratio of their peaks.
    """
    words = _model_tokens(name)
    best = None
    for key, peak in PEAK_BF16.items():
        k = _model_tokens(key)
        hit = any(words[i:i + len(k)] == k for i in range(len(words) - len(k) + 1))
        if hit and (best is None or len(k) > best[0]):
            best = (len(k), peak)
    return best[1] if best else None
