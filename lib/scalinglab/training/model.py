"""A readable GPT decoder sized by width and depth (after nanoGPT's model.py).

Pre-norm blocks (LayerNorm -> causal self-attention -> residual; LayerNorm ->
MLP -> residual), learned positional embeddings, biases in every linear layer
and LayerNorm except the head (``bias=False`` drops them all), a final
LayerNorm and a linear head, tied to the token embedding or separate.
Attention is PyTorch's fused ``scaled_dot_product_attention``. The MLP is GELU
(hidden 4*width) or SwiGLU (hidden from :func:`scalinglab.accounting.decoder.mlp_hidden`).

``GPT.param_counts()`` counts the real tensors under the three conventions of
``scalinglab.accounting.decoder.count_params`` (non-embedding, standard, total); the tests
check that the two agree for every option.

Checkpoints are plain dicts (config, weights, meta) written atomically:
``save_checkpoint(path, model, meta)`` and ``load_checkpoint(path) -> (model, meta)``.
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import torch
import torch.nn as nn
from torch.nn import functional as F

from scalinglab.accounting.decoder import mlp_hidden
from scalinglab.errors import UserError

MLPS = ("gelu", "swiglu")


@dataclass
class GPTConfig:
    vocab_size: int = 50257
    seq_len: int = 1024
    width: int = 768
    depth: int = 12
    n_head: int = 0          # 0: width // head_dim (at least 1)
    head_dim: int = 64
    mlp: str = "gelu"        # gelu | swiglu
    tied: bool = False       # share the head's weight with the token embedding
    bias: bool = True        # biases in linear layers and LayerNorms (False: OpenLM's choice)
    init_std: float = 0.02

    def __post_init__(self) -> None:
        if self.mlp not in MLPS:
            raise UserError(f"mlp must be one of {MLPS}, not {self.mlp!r}")
        if self.n_head <= 0:
            self.n_head = max(1, self.width // self.head_dim)
        if self.width % self.n_head:
            raise UserError(f"width {self.width} is not divisible by n_head {self.n_head}")

    @property
    def mlp_hidden(self) -> int:
        return mlp_hidden(self.width, self.mlp)


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.n_head = cfg.n_head
        self.qkv = nn.Linear(cfg.width, 3 * cfg.width, bias=cfg.bias)
        self.proj = nn.Linear(cfg.width, cfg.width, bias=cfg.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).contiguous().view(B, T, C))


class MLP(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.swiglu = cfg.mlp == "swiglu"
        hidden = cfg.mlp_hidden
        # SwiGLU's gate and value projections are one matrix, split in forward.
        self.fc = nn.Linear(cfg.width, 2 * hidden if self.swiglu else hidden, bias=cfg.bias)
        self.proj = nn.Linear(hidden, cfg.width, bias=cfg.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc(x)
        if self.swiglu:
            gate, value = h.chunk(2, dim=-1)
            h = F.silu(gate) * value
        else:
            h = F.gelu(h)
        return self.proj(h)


class Block(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.width, bias=cfg.bias)
        self.attn = CausalSelfAttention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.width, bias=cfg.bias)
        self.mlp = MLP(cfg)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.config = cfg
        self.wte = nn.Embedding(cfg.vocab_size, cfg.width)
        self.wpe = nn.Embedding(cfg.seq_len, cfg.width)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.depth))
        self.ln_f = nn.LayerNorm(cfg.width, bias=cfg.bias)
        self.head = nn.Linear(cfg.width, cfg.vocab_size, bias=False)
        if cfg.tied:
            self.head.weight = self.wte.weight
        self.apply(self._init_weights)
        # GPT-2's scaled init: each residual branch's output projection shrinks with depth.
        for name, p in self.named_parameters():
            if name.endswith("proj.weight"):
                nn.init.normal_(p, mean=0.0, std=cfg.init_std / math.sqrt(2 * cfg.depth))

    def _init_weights(self, module: nn.Module) -> None:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=self.config.init_std)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None):
        """Logits (B, T, vocab); with targets, (logits, mean cross-entropy)."""
        T = idx.size(1)
        if T > self.config.seq_len:
            raise UserError(f"sequence of {T} tokens is longer than seq_len {self.config.seq_len}")
        pos = torch.arange(T, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln_f(x))
        if targets is None:
            return logits
        loss = F.cross_entropy(logits.float().view(-1, logits.size(-1)), targets.reshape(-1))
        return logits, loss

    def param_counts(self) -> dict[str, int]:
        """Parameters under the three conventions of ``scalinglab.accounting.decoder.count_params``.

        non_embedding: everything but the token and position embeddings and the
        head (Kaplan et al.); standard: non-embedding plus the head's weight, tied
        or not (Hoffmann et al. / Porian et al.); total: every distinct tensor."""
        total = sum(p.numel() for p in self.parameters())  # a tied weight is counted once
        embedding = self.wte.weight.numel() + self.wpe.weight.numel()
        head = self.head.weight.numel()
        non_embedding = total - embedding - (0 if self.config.tied else head)
        return dict(non_embedding=non_embedding, standard=non_embedding + head, total=total)


def save_checkpoint(path: Path | str, model: GPT, meta: dict | None = None, **extra) -> Path:
    """Write config, weights and meta (plus any extra state, e.g. the optimizer) atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    model = getattr(model, "_orig_mod", model)  # unwrap torch.compile
    state = dict(config=asdict(model.config), model=model.state_dict(), meta=dict(meta or {}), **extra)
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)  # a SIGKILL mid-write leaves the previous checkpoint intact
    return path


def _check_tensors(config: GPTConfig, weights: dict) -> None:
    """The model ``config`` describes has exactly the tensors in ``weights``, each finite. The check builds the
    model on torch's meta device, which allocates nothing: a 1.4 KB file whose config asked for width 16384 and
    depth 64 used to grow to 3.5 GB before load_state_dict refused it. Non-finite weights would score every item
    (all-NaN logits gave accuracy 0.40 and a loss of nan) instead of being refused."""
    with torch.device("meta"):
        shapes = {k: tuple(v.shape) for k, v in GPT(config).state_dict().items()}
    given = {k: tuple(v.shape) for k, v in weights.items()}
    if shapes != given:
        missing = sorted(set(shapes) - set(given))
        wrong = sorted(k for k in set(shapes) & set(given) if shapes[k] != given[k])
        what = (f"its config implies tensor {missing[0]!r}, absent from its weights" if missing else
                f"tensor {wrong[0]!r} has shape {list(given[wrong[0]])}, its config implies {list(shapes[wrong[0]])}"
                if wrong else f"its weights hold tensor {sorted(set(given) - set(shapes))[0]!r}, not in its config")
        raise UserError(f"config and weights disagree: {what}")
    for k, v in weights.items():
        if v.is_floating_point() and not bool(torch.isfinite(v).all()):
            raise UserError(f"tensor {k!r} holds non-finite weights (NaN or inf)")


def load_checkpoint(path: Path | str, map_location="cpu") -> tuple[GPT, dict]:
    """(model in eval mode on ``map_location``, meta). A file that is not a readable GPT checkpoint
    (truncated, another format, or anything but tensors and plain data: ``weights_only``) is a
    UserError naming it."""
    try:
        state = torch.load(path, map_location=map_location, weights_only=True)
        known = {f.name for f in fields(GPTConfig)}
        config = GPTConfig(**{k: v for k, v in state["config"].items() if k in known})
        _check_tensors(config, state["model"])   # before allocating: the config alone could ask for gigabytes
        model = GPT(config)
        model.load_state_dict(state["model"])
        meta = state["meta"]
    except FileNotFoundError:
        raise UserError(f"{path}: no such checkpoint") from None
    except UserError as exc:  # e.g. a config whose width its heads do not divide
        raise UserError(f"{path}: not a scalinglab GPT checkpoint ({exc})") from None
    except Exception as exc:  # noqa: BLE001 - a damaged file raises anything from zipfile to the unpickler
        why = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        raise UserError(f"{path}: not a scalinglab GPT checkpoint ({type(exc).__name__}: {why})") from None
    model.to(map_location if isinstance(map_location, (str, torch.device)) else "cpu").eval()
    return model, meta
