"""Prize-faithful scoring: metrics, and the efficient scorer against naive per-class forwards."""

import math

import numpy as np
import pandas as pd
import pytest
import torch
from scalinglab.errors import UserError
from scalinglab.inverse_scaling import scoring
from scalinglab.inverse_scaling.adapters import GPTCheckpointLM, HFCausalLM
from scalinglab.training.model import GPT, GPTConfig  # the tiny GPT comes from the real model module


class ByteTokenizer:
    """Offline stand-in for BPE: one id per byte (vocabulary 256)."""

    def encode(self, text, add_special_tokens=False):
        return list(text.encode())


PROMPTS = ["Write a quote that ends in the word \"heavy\": Absence makes the heart grow",
           "Q: 2+2?\nA:", "x", "The following are questions.\nAnswer:"]
CLASSES = [[" heavy.", " fonder."], [" 4", " five", " IV (roman)"], [" a", " bb"], [" A", " B"]]
# float32 forwards in different batch shapes differ by ~1e-6 per token; 1e-4 bounds that with room.
TOL = 1e-4


@pytest.fixture(scope="module")
def gpt_lm():
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=256, seq_len=128, width=32, depth=2, head_dim=16))
    return GPTCheckpointLM(model, ByteTokenizer(), name="tiny-gpt")


def test_metrics_follow_the_prize_definitions():
    lp = [np.log([0.2, 0.6]), np.log([0.5, 0.1, 0.1])]
    per = scoring.classification_metrics(lp, [0, 0], [[" a", " b"], [" x", " y", " z"]])
    assert per["correct"].tolist() == [0, 1] and per["predicted"].tolist() == [" b", " x"]
    assert per["loss"][0] == pytest.approx(-math.log(0.2 / 0.8))  # renormalised over the two classes
    assert per["total_logprob"][1] == pytest.approx(math.log(0.7))
    summary = scoring.summarise(per)
    assert summary["accuracy"] == 0.5 and summary["accuracy_se"] == pytest.approx(0.5 / math.sqrt(2))


def test_acc_norm_divides_by_characters_and_can_flip_the_answer():
    # A long class with a lower total log-prob wins once divided by its length.
    lp = [np.array([-4.0, -6.0])]
    per = scoring.classification_metrics(lp, [1], [[" no", " absolutely yes"]])
    assert per["correct"][0] == 0 and per["correct_norm"][0] == 1


def test_prize_outputs_round_trip_to_class_logprobs():
    lp = np.log(np.array([[0.3, 0.5], [0.05, 0.01]]))
    ans = np.array([1, 0])
    per = scoring.classification_metrics(lp, ans, [[" A", " B"]] * 2)
    back = scoring.prize_class_logprobs(per["loss"].to_numpy(), per["total_logprob"].to_numpy(), ans)
    assert np.allclose(back, lp, atol=1e-12)


@pytest.mark.parametrize("opts", [scoring.ScoreOptions(batch_size=1), scoring.ScoreOptions(batch_size=3),
                                  scoring.ScoreOptions(share_prompt=False)])
def test_efficient_scoring_matches_naive_per_class_forwards(gpt_lm, opts):
    assert gpt_lm.supports_cache  # the KV-cache path is the one under test
    fast = scoring.continuation_logprobs(gpt_lm, PROMPTS, CLASSES, opts)
    naive = scoring.naive_logprobs(gpt_lm, PROMPTS, CLASSES)
    for f, n in zip(fast, naive):
        assert f.shape == n.shape and np.abs(f - n).max() < TOL


def test_naive_scoring_is_the_direct_sum_of_token_logprobs(gpt_lm):
    prompt, cls = PROMPTS[1], CLASSES[1][2]
    ids = torch.tensor([list((prompt + cls).encode())])
    with torch.no_grad():
        logp = torch.log_softmax(gpt_lm.model(ids)[0].double(), -1)
    p = len(prompt.encode())
    direct = sum(logp[p + t - 1, tok].item() for t, tok in enumerate(cls.encode()))
    assert scoring.naive_logprobs(gpt_lm, [prompt], [[cls]])[0][0] == pytest.approx(direct, abs=TOL)


def test_a_model_the_cached_path_does_not_reproduce_falls_back_to_full_sequences(gpt_lm):
    class Shifted(torch.nn.Module):  # different function from the layers the adapter would run
        def __init__(self, inner):
            super().__init__()
            self.inner, self.config = inner, inner.config
            self.wte, self.wpe, self.blocks, self.ln_f, self.head = (inner.wte, inner.wpe, inner.blocks,
                                                                      inner.ln_f, inner.head)

        def forward(self, idx):
            return self.inner(idx) * 0.5

    lm = GPTCheckpointLM(Shifted(gpt_lm.model), ByteTokenizer())
    assert not lm.supports_cache
    fast = scoring.continuation_logprobs(lm, PROMPTS, CLASSES)
    naive = scoring.naive_logprobs(lm, PROMPTS, CLASSES)
    assert all(np.abs(f - n).max() < TOL for f, n in zip(fast, naive))


def test_hugging_face_adapter_matches_naive_scoring_offline():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(vocab_size=256, n_positions=128, n_embd=32, n_layer=2, n_head=2,
                                  bos_token_id=0, eos_token_id=0)
    lm = HFCausalLM(transformers.GPT2LMHeadModel(cfg), ByteTokenizer(), name="tiny-gpt2")
    # tied head: only the 256 x 32 token embedding leaves the count (position embeddings stay, as in GPT-2 papers)
    assert lm.params == sum(p.numel() for p in lm.model.parameters()) - 256 * 32
    fast = scoring.continuation_logprobs(lm, PROMPTS, CLASSES, scoring.ScoreOptions(batch_size=2))
    naive = scoring.naive_logprobs(lm, PROMPTS, CLASSES)
    assert all(np.abs(f - n).max() < TOL for f, n in zip(fast, naive))


def test_evaluate_rows_handles_both_task_kinds(gpt_lm):
    cls = pd.DataFrame(dict(prompt=PROMPTS, classes=CLASSES, answer_index=[0, 1, 1, 0]))
    per, summary = scoring.evaluate_rows(gpt_lm, cls)
    assert summary["n"] == 4 and 0 <= summary["accuracy"] <= 1 and (per["loss"] > 0).all()
    seq = pd.DataFrame(dict(prompt=PROMPTS[:2], completion=[" fonder.", " 4"]))
    per, summary = scoring.evaluate_rows(gpt_lm, seq)
    expected = -scoring.naive_logprobs(gpt_lm, PROMPTS[:2], [[" fonder."], [" 4"]])[1][0]
    assert per["loss"][1] == pytest.approx(expected, abs=TOL) and "accuracy" not in summary


def test_a_too_long_prompt_loses_its_oldest_tokens_or_is_an_error(gpt_lm):
    stats = {}
    long = scoring.continuation_logprobs(gpt_lm, ["y" * 300 + "x" * 125], [[" a", " bb"]], stats=stats)
    kept = scoring.naive_logprobs(gpt_lm, ["x" * 125], [[" a", " bb"]])  # 128 - len(" bb") prompt bytes remain
    assert stats == {"truncated": 1} and np.abs(long[0] - kept[0]).max() < TOL
    # A batch of truncated prompts with classes of different lengths fills the context exactly.
    prompts, classes = ["p" * 300, "q" * 300], [[" a", " b"], [" " + "c" * 20, " d"]]
    fast = scoring.continuation_logprobs(gpt_lm, prompts, classes, stats=stats)
    naive = scoring.naive_logprobs(gpt_lm, prompts, classes)
    assert stats == {"truncated": 2} and all(np.abs(f - n).max() < TOL for f, n in zip(fast, naive))
    with pytest.raises(UserError, match="example 0: .*context of 128"):
        scoring.continuation_logprobs(gpt_lm, ["x" * 200], [[" a", " b"]], scoring.ScoreOptions(truncate_prompt=False))
    with pytest.raises(UserError, match="example 0: .*context of 128"):
        scoring.continuation_logprobs(gpt_lm, ["x"], [[" " + "a" * 130, " b"]])
