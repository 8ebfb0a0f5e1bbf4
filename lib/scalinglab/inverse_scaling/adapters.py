"""Language models behind one small interface, for scoring (``scalinglab.inverse_scaling.scoring``).

An adapter has a ``name``, ``max_len`` (context in tokens), ``params`` (for
trend plots), ``encode_prompt``/``encode_continuation`` and

    forward(ids, mask, positions, past=None, use_cache=False, select=None) -> (float logits, past)

returning logits [B, T, V], or [K, V] at the (rows, positions) pairs in
``select``. ``mask`` covers the past and the new tokens ([B, S+T], True = real
token) and ``positions`` are the new tokens' absolute positions. ``select_past(past,
rows)`` picks (and repeats) batch rows of a cache, so that an example's classes
all continue from its prompt's cache.

* ``GPTCheckpointLM``: scalinglab's own GPT (``scalinglab.training.model``), from a
  checkpoint. Its module has no cache, so the adapter runs the same layers with
  one; a self-check against ``model(idx)`` at load time turns the cached path
  off (falling back to full sequences) should the architecture ever differ.
* ``HFCausalLM``: any Hugging Face causal LM through ``transformers`` (imported
  only here, only when used); ``hf:NAME`` loads from the hub or a local folder.
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path

from scalinglab.errors import UserError


class CausalLM:
    name: str = "lm"
    max_len: int = 1024
    params: float = float("nan")
    supports_cache: bool = False

    def encode_prompt(self, text: str) -> list[int]:
        return self.encode_continuation(text)

    def encode_continuation(self, text: str) -> list[int]:
        raise NotImplementedError

    def forward(self, ids, mask, positions, past=None, use_cache=False, select=None):
        raise NotImplementedError

    def select_past(self, past, rows):
        raise NotImplementedError


class GPTCheckpointLM(CausalLM):
    """scalinglab's GPT with a tokenizer (anything with ``encode(str) -> list[int]``)."""

    def __init__(self, model, tokenizer, name: str = "gpt", meta: dict | None = None):
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.name = name
        self.meta = dict(meta or {})
        self.max_len = model.config.seq_len
        counts = model.param_counts() if hasattr(model, "param_counts") else {}
        # sweeps record the non-embedding count in meta (scalinglab.training.sweep.run_job); else count the tensors
        self.params = float(self.meta.get("n_non_embedding") or counts.get("non_embedding") or
                            sum(p.numel() for p in model.parameters()))
        self.supports_cache = self._cache_matches_model()

    def encode_continuation(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text))

    def _cache_matches_model(self) -> bool:
        import torch

        ids = torch.arange(min(7, self.max_len))[None, :] % self.model.config.vocab_size
        with torch.inference_mode():
            try:
                ours, _ = self.forward(ids, torch.ones_like(ids, dtype=torch.bool), torch.arange(ids.size(1))[None])
            except (AttributeError, TypeError, RuntimeError):
                return False
            ref = self.model(ids)
            ref = ref[0] if isinstance(ref, tuple) else ref
        # float32 kernels differ in summation order only: agreement to 1e-4 means the same function.
        return bool(torch.allclose(ours, ref.float(), atol=1e-4, rtol=1e-4))

    def forward(self, ids, mask, positions, past=None, use_cache=False, select=None):
        """The model's layers with a key/value cache and a padding mask (same weights, same maths)."""
        import torch
        import torch.nn.functional as F

        m = self.model
        B, T = ids.shape
        x = m.wte(ids) + m.wpe(positions.expand(B, T))
        S = mask.size(1)
        causal = torch.arange(S)[None, :] <= (S - T + torch.arange(T))[:, None]  # [T, S]
        attn_mask = causal[None, None] & mask[:, None, None, :]
        new_past = []
        for layer, block in enumerate(m.blocks):
            h = block.ln_1(x)
            C = h.size(-1)
            nh = block.attn.n_head
            q, k, v = (t.view(B, T, nh, C // nh).transpose(1, 2) for t in block.attn.qkv(h).split(C, dim=2))
            if past is not None:
                k = torch.cat([past[layer][0], k], dim=2)
                v = torch.cat([past[layer][1], v], dim=2)
            new_past.append((k, v))
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
            x = x + block.attn.proj(y.transpose(1, 2).reshape(B, T, C))
            x = x + block.mlp(block.ln_2(x))
        if select is not None:
            x = x[select]  # the head only where log-probabilities are read
        return m.head(m.ln_f(x)).float(), new_past

    def select_past(self, past, rows):
        return [(k[rows], v[rows]) for k, v in past]


def _checkpoint_tokenizer(meta: dict, vocab_size: int, tokenizer=None, folder: Path | None = None):
    if tokenizer is not None:
        return tokenizer
    from scalinglab.training.tokenizer import bpe_from_file, get_tokenizer

    spec = meta.get("tokenizer") or ("gpt2" if vocab_size == 50257 else None)
    if folder is not None and (folder / "tokenizer.json").is_file():  # an exported model folder carries its own
        return bpe_from_file(folder / "tokenizer.json", spec if isinstance(spec, str) else "tokenizer.json")
    if spec is None:
        raise UserError(f"the checkpoint's meta names no tokenizer and its vocabulary ({vocab_size}) is not GPT-2's")
    return get_tokenizer(spec if isinstance(spec, str) else spec["name"], train=False)


def load_checkpoint_lm(path: Path | str, tokenizer=None, name: str | None = None) -> GPTCheckpointLM:
    import pickle

    from scalinglab.training.model import load_checkpoint

    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: no such checkpoint")
    _check_manifest(path)
    from scalinglab.errors import shown
    from scalinglab.files import regular_file

    regular_file(path)
    with open(path, "rb") as fh:
        head = fh.read(4)
    if head != b"PK\x03\x04":   # torch.save writes a zip archive; a CSV or a bare pickle drew torch's internals
        raise UserError(f"{path}: not a scalinglab GPT checkpoint (a checkpoint is the zip archive torch.save "
                        f"writes; this file begins {shown(head.decode('latin-1'))})")
    try:
        model, meta = load_checkpoint(path, map_location="cpu")
    except (KeyError, RuntimeError, ValueError, EOFError, pickle.UnpicklingError) as exc:  # EOF: an empty file
        why = (str(exc).splitlines() or [type(exc).__name__])[0]  # torch's messages run over several lines
        raise UserError(f"{path}: not a scalinglab GPT checkpoint ({why})") from None
    tok = _checkpoint_tokenizer(meta, model.config.vocab_size, tokenizer, folder=path.parent)
    return GPTCheckpointLM(model, tok, name=name or path.stem, meta=meta)


def _check_manifest(path: Path) -> None:
    """A checkpoint in an exported folder (one with manifest.json) must match the manifest's sha256 for it, as
    ``load_family`` requires of the whole folder: scoring an altered file would report the manifest's model."""
    import json

    from scalinglab.data import sha256_of

    manifest = path.parent / "manifest.json"
    if not manifest.is_file():
        return
    try:
        models = json.loads(manifest.read_text())["models"]
        entry = next((m for m in models if m.get("file") == path.name), None)
    except (ValueError, KeyError, TypeError, AttributeError):
        raise UserError(f"{manifest}: not a readable model manifest") from None
    if entry is None:
        raise UserError(f"{path}: not listed in its folder's {manifest.name}")
    if sha256_of(path) != entry.get("sha256"):
        raise UserError(f"{path}: its sha256 differs from {manifest.name}'s (the file was altered or damaged)")


def ladder_checkpoints(folder: Path | str) -> list[Path]:
    """The ``*.pt`` checkpoints under a sweep folder, empty if there are none, in natural order (numbers
    compared as numbers, so a sweep's kaplan-w12 comes before kaplan-w128, smallest model first)."""
    import re

    folder = Path(folder)
    if not folder.is_dir():
        return []
    return sorted(folder.rglob("*.pt"),
                  key=lambda p: [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", str(p))])


class HFCausalLM(CausalLM):
    """A ``transformers`` causal LM and its tokenizer (anything with ``encode(text, add_special_tokens=...)``)."""

    supports_cache = True
    _cache_kw: str | None = None

    def __init__(self, model, tokenizer, name: str = "hf"):
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.name = name
        cfg = model.config
        self.max_len = int(getattr(cfg, "n_positions", None) or getattr(cfg, "max_position_embeddings", 1024))
        # Without the token embedding and the (untied) head, like GPTCheckpointLM (learned position tables stay in).
        embeddings = {id(m.weight): m.weight.numel() for m in (model.get_input_embeddings(),
                                                               model.get_output_embeddings()) if m is not None}
        self.params = float(sum(p.numel() for p in model.parameters()) - sum(embeddings.values()))

    # The prize pipeline tokenised the prompt with the tokenizer's special tokens (OPT's BOS included) and
    # counted each class's tokens without them; we do the same.
    def encode_prompt(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=True))

    def encode_continuation(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    def forward(self, ids, mask, positions, past=None, use_cache=False, select=None):
        import inspect

        # transformers 5.x renamed past_key_values to cache; accept either generation of the API.
        if self._cache_kw is None:
            self._cache_kw = "cache" if "cache" in inspect.signature(self.model.forward).parameters else "past_key_values"
        out = self.model(input_ids=ids, attention_mask=mask.long(), position_ids=positions.expand_as(ids),
                         use_cache=use_cache or past is not None, **{self._cache_kw: past})
        logits = out.logits if select is None else out.logits[select]
        return logits.float(), getattr(out, self._cache_kw)

    def select_past(self, past, rows):
        past.reorder_cache(rows)  # index_select along the batch; repeated rows copy an example's prompt
        return past


def load_hf(name: str, **kwargs) -> HFCausalLM:
    try:
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError:
        raise UserError("Hugging Face models need transformers: pip install 'scalinglab[hf]'") from None
    def load(**kw):
        import warnings

        tok = AutoTokenizer.from_pretrained(name, **kw)
        with warnings.catch_warnings():   # torch warns before refusing a pickled file; the refusal says enough
            warnings.filterwarnings("ignore", message="Detected pickle protocol")
            return tok, AutoModelForCausalLM.from_pretrained(name, dtype="float32", **kw)

    try:
        try:  # a local folder or the local cache answers at once, with no network
            tok, model = load(local_files_only=True, **kwargs)
        except OSError:
            if Path(name).exists():
                raise
            # Offline, the hub client retries for about a minute before it gives up: ask first.
            offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on")
            if offline or not _hub_reachable():
                why = "HF_HUB_OFFLINE is set" if offline else f"{HF_HOST} cannot be reached"
                raise UserError(f"Hugging Face model {name!r} is not in the local cache and {why}; "
                                "download it on a connected machine or give a local folder") from None
            tok, model = load(**kwargs)
    except (OSError, ValueError, EOFError, pickle.UnpicklingError, RuntimeError) as exc:
        # ValueError: a folder with no usable model or tokenizer; UnpicklingError: a pickled pytorch_model.bin,
        # which torch's weights_only loading refuses to run (the refusal is right; the traceback was not).
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        raise UserError(f"could not load Hugging Face model {name!r}: {first}") from None
    return HFCausalLM(model, tok, name=name)


HF_HOST = "huggingface.co"


def _hub_reachable(timeout: float = 3.0) -> bool:
    import socket

    try:
        socket.create_connection((HF_HOST, 443), timeout=timeout).close()
    except OSError:
        return False
    return True


def load_lm(spec: str) -> CausalLM:
    """``hf:NAME`` (hub id or local folder) or a path to a scalinglab ``.pt`` checkpoint."""
    if spec.startswith("hf:"):
        return load_hf(spec[3:])
    if Path(spec).suffix == ".pt" or Path(spec).is_file():
        return load_checkpoint_lm(spec)
    raise UserError(f"unknown model {spec!r}: give hf:NAME or a path to a .pt checkpoint")
