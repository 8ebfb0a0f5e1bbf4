"""Scoring language models on the Inverse Scaling Prize tasks, as the prize did.

The prize pipeline (github.com/naimenz/inverse-scaling-eval-pipeline,
``eval_pipeline/models.py``) scores a classification example so:

* each class string (which carries its leading space) gets the *summed*
  log-probability of its tokens after the prompt, with no length normalisation;
* the prediction is the argmax class; ``correct`` = prediction == answer_index;
* ``loss`` = -log of the correct class's probability renormalised over the
  classes, i.e. -log_softmax(class log-probs)[answer_index];
* ``total_logprob`` = logsumexp of the class log-probs (the mass on the label set).

A sequence-probability example's loss is the completion's negative
log-likelihood. We also report lm-evaluation-harness's ``acc_norm``: the argmax
of each class's log-probability divided by its length in characters
(``len(choice)``, as the harness's ``process_results`` does).

Tokenisation: the prompt and each class are encoded separately and joined (as
lm-evaluation-harness does). The prize pipeline encoded ``prompt + class`` and
scored its last len(encode(class)) tokens; for GPT-2-style BPE, whose
pre-tokeniser starts a new token at every leading space, the two agree whenever
the prompt does not end in whitespace.

Efficiency: an example's prompt runs once and all its classes are scored from
its key/value cache (adapters with ``supports_cache``); single-token classes
need nothing but the prompt's last logits. Examples are batched (prompts right-
padded, continuations positioned after each prompt's true length). The naive
path, one forward per (prompt, class) as the prize pipeline ran it, is kept as
the reference the tests and ``bench/bench_scoring.py`` compare against.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scalinglab.errors import UserError


@dataclass(frozen=True)
class ScoreOptions:
    batch_size: int = 16      # examples per forward pass
    share_prompt: bool = True  # run each prompt once (needs an adapter with a KV cache)
    # A prompt too long for the context loses its oldest tokens, as lm-evaluation-harness does
    # (the classes are never cut); False makes it an error instead.
    truncate_prompt: bool = True
    progress: bool = False


# -- metrics from class log-probabilities (no model needed) ------------------------------------


def _logsumexp(x: np.ndarray) -> float:
    m = float(np.max(x))
    return m + float(np.log(np.sum(np.exp(x - m))))


def classification_metrics(class_logprobs, answer_index, classes):
    """Per-example prize metrics (and acc_norm) from each example's class log-probabilities."""
    import pandas as pd

    rows = []
    for lp, ans, cls in zip(class_logprobs, answer_index, classes):
        lp = np.asarray(lp, dtype=np.float64)
        if lp.shape != (len(cls),):
            raise ValueError(f"{len(cls)} classes but {lp.shape} log-probabilities")
        total = _logsumexp(lp)
        pred = int(np.argmax(lp))
        pred_norm = int(np.argmax(lp / np.array([len(c) for c in cls], dtype=np.float64)))
        rows.append(dict(loss=total - lp[ans], correct=int(pred == ans), predicted=cls[pred],
                         total_logprob=total, correct_norm=int(pred_norm == ans), class_logprobs=lp.tolist()))
    return pd.DataFrame(rows)


def summarise(per_example) -> dict:
    """Task-level numbers with their standard errors (binomial for accuracy)."""
    n = len(per_example)
    out = dict(n=n, loss=float(per_example["loss"].mean()),
               loss_se=float(per_example["loss"].std(ddof=1) / np.sqrt(n)) if n > 1 else float("nan"))
    if "correct" in per_example:
        acc = float(per_example["correct"].mean())
        out.update(accuracy=acc, accuracy_se=float(np.sqrt(acc * (1 - acc) / n)),
                   acc_norm=float(per_example["correct_norm"].mean()))
    return out


def prize_class_logprobs(loss, total_logprob, answer_index):
    """Both class log-probs of a two-class example, rebuilt from the prize pipeline's outputs.

    With p_c the correct class's probability and T = log(p_0 + p_1): loss = T' where
    log p_c = T - loss, and log p_other = T + log(1 - exp(-loss)).
    """
    lp_correct = total_logprob - loss
    lp_other = total_logprob + np.log(-np.expm1(-loss))
    return [([c, o] if a == 0 else [o, c]) for c, o, a in zip(lp_correct, lp_other, answer_index)]


# -- log-probabilities from a model -------------------------------------------------------------


def _encode(lm, prompts, continuations, truncate: bool, stats: dict | None = None):
    p_ids = [lm.encode_prompt(p) for p in prompts]
    c_ids = [[lm.encode_continuation(c) for c in cs] for cs in continuations]
    truncated = 0
    for i, (p, cs) in enumerate(zip(p_ids, c_ids)):
        if not p:
            raise UserError(f"example {i}: the prompt encodes to no tokens")
        if any(not c for c in cs):
            raise UserError(f"example {i}: a class or completion encodes to no tokens")
        room = lm.max_len - max(len(c) for c in cs)
        if len(p) > room:
            if not truncate or room < 1:
                raise UserError(f"example {i}: prompt plus continuation is {len(p) + lm.max_len - room} tokens, "
                                f"more than {lm.name}'s context of {lm.max_len}")
            p_ids[i] = p[-room:]
            truncated += 1
    if stats is not None:
        stats["truncated"] = truncated
    return p_ids, c_ids


def _pad(seqs, pad=0):
    import torch

    T = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), T), pad, dtype=torch.long)
    mask = torch.zeros((len(seqs), T), dtype=torch.bool)
    for r, s in enumerate(seqs):
        ids[r, : len(s)] = torch.tensor(s, dtype=torch.long)
        mask[r, : len(s)] = True
    return ids, mask


def _logprobs_at(lm, ids, mask, positions, rows, at, targets, past=None, use_cache=False):
    """One forward; log P(target) at each requested (row, position), plus the cache if asked for.

    Only the requested positions go through the output head: with a 50k vocabulary the head
    dominates a small model's cost, and a prompt needs just its last position."""
    import torch

    rows, at, targets = (torch.as_tensor(x, dtype=torch.long) for x in (rows, at, targets))
    logits, past = lm.forward(ids, mask, positions, past=past, use_cache=use_cache, select=(rows, at))
    picked = torch.log_softmax(logits.float(), dim=-1)
    return picked.gather(1, targets[:, None])[:, 0].double(), past


def _score_full(lm, p_ids, c_ids):
    """One padded forward over every prompt+class sequence of the batch."""
    import torch

    seqs, owner, rows, pos, tgt = [], [], [], [], []
    for i, (p, cs) in enumerate(zip(p_ids, c_ids)):
        for j, c in enumerate(cs):
            r = len(seqs)
            seqs.append(p + c)
            for t, tok in enumerate(c):
                rows.append(r), pos.append(len(p) + t - 1), tgt.append(tok), owner.append((i, j))
    ids, mask = _pad(seqs)
    values, _ = _logprobs_at(lm, ids, mask, torch.arange(ids.size(1)).expand_as(ids), rows, pos, tgt)
    return _accumulate(values, owner, c_ids)


def _accumulate(values, owner, c_ids):
    out = [np.zeros(len(cs)) for cs in c_ids]
    for v, (i, j) in zip(values.tolist(), owner):
        out[i][j] += v
    return out


def _score_cached(lm, p_ids, c_ids):
    """Prompts once (batched), then every class from the prompts' key/value cache."""
    import torch

    P, mask_p = _pad(p_ids)
    owner = [(i, j) for i, cs in enumerate(c_ids) for j in range(len(cs))]
    first, past = _logprobs_at(lm, P, mask_p, torch.arange(P.size(1)).expand_as(P),
                               [i for i, _ in owner], [len(p_ids[i]) - 1 for i, _ in owner],
                               [c_ids[i][j][0] for i, j in owner], use_cache=True)
    out = _accumulate(first, owner, c_ids)
    longer = [(i, j) for i, j in owner if len(c_ids[i][j]) > 1]
    if not longer:
        return out
    # Continuations feed all but their last token; each sits right after its own prompt's last real token.
    X, mask_c = _pad([c_ids[i][j][:-1] for i, j in longer])
    src = torch.tensor([i for i, _ in longer])
    lengths = torch.tensor([len(p_ids[i]) for i, _ in longer])
    # Padding slots past a short row's end may point beyond the context; clamp them (they are masked anyway).
    positions = (lengths[:, None] + torch.arange(X.size(1))[None, :]).clamp(max=lm.max_len - 1)
    rows, pos, tgt, own = [], [], [], []
    for r, (i, j) in enumerate(longer):
        for t, tok in enumerate(c_ids[i][j][1:]):
            rows.append(r), pos.append(t), tgt.append(tok), own.append((i, j))
    rest, _ = _logprobs_at(lm, X, torch.cat([mask_p[src], mask_c], dim=1), positions, rows, pos, tgt,
                           past=lm.select_past(past, src))
    return [a + b for a, b in zip(out, _accumulate(rest, own, c_ids))]


def continuation_logprobs(lm, prompts, continuations, opts: ScoreOptions = ScoreOptions(), stats=None):
    """For each prompt, the summed log-probability of each of its continuations (a list of arrays).

    ``stats``, if a dict, receives ``truncated``: how many prompts lost their oldest tokens."""
    import torch
    from tqdm import tqdm

    p_ids, c_ids = _encode(lm, prompts, continuations, opts.truncate_prompt, stats)
    score = _score_cached if opts.share_prompt and lm.supports_cache else _score_full
    out = []
    starts = range(0, len(p_ids), opts.batch_size)
    with torch.inference_mode():
        for s in tqdm(starts, desc=f"scoring {lm.name}", disable=not opts.progress, leave=False):
            out += score(lm, p_ids[s:s + opts.batch_size], c_ids[s:s + opts.batch_size])
    return out


def naive_logprobs(lm, prompts, continuations, truncate_prompt: bool = True):
    """The reference: one forward pass per (prompt, continuation), as the prize pipeline ran HF models."""
    import torch

    p_ids, c_ids = _encode(lm, prompts, continuations, truncate_prompt)
    with torch.inference_mode():
        return [np.array([_score_full(lm, [p], [[c]])[0][0] for c in cs]) for p, cs in zip(p_ids, c_ids)]


# -- whole tasks ---------------------------------------------------------------------------------


def evaluate_rows(lm, rows, opts: ScoreOptions = ScoreOptions()):
    """(per-example DataFrame, summary dict) for validated task rows (see scalinglab.inverse_scaling.tasks)."""
    import pandas as pd

    prompts, stats = list(rows["prompt"]), {}
    if "completion" in rows:
        lps = continuation_logprobs(lm, prompts, [[c] for c in rows["completion"]], opts, stats)
        per = pd.DataFrame(dict(loss=[-float(lp[0]) for lp in lps]))
    else:
        classes = list(rows["classes"])
        lps = continuation_logprobs(lm, prompts, classes, opts, stats)
        per = classification_metrics(lps, list(rows["answer_index"]), classes)
    return per, summarise(per) | {"truncated_prompts": stats["truncated"]}
