"""Parameter and FLOP accounting: hand-computed cases for both MLP kinds, and the CLI."""

import json
import subprocess
import sys

import pytest
from scalinglab.accounting.decoder import count_params, flops_per_token, mlp_hidden
from scalinglab.errors import UserError


def test_gelu_counts_by_hand():
    # width 64, depth 2, vocab 100, seq 16. Per layer:
    #   attention 4·64² + 4·64 (qkv and proj weights and biases)      = 16,640
    #   MLP       2·64·256 + 256 + 64                                  = 33,088
    #   two LayerNorms 4·64                                            =    256
    # = 49,984; two layers 99,968; + ln_f 128 = 100,096.
    p = count_params(64, 2, 100, seq_len=16, mlp="gelu")
    assert p.per_layer == 49_984 and p.mlp_hidden == 256
    assert p.non_embedding == 100_096
    assert p.standard == 100_096 + 6_400               # + head 64·100
    assert p.total == 106_496 + 6_400 + 1_024          # + wte 100·64 + wpe 16·64
    assert p.kaplan_approx == 12 * 2 * 64**2 == 98_304  # omits 13·64 per layer and ln_f
    tied = count_params(64, 2, 100, seq_len=16, mlp="gelu", tied=True)
    assert (tied.non_embedding, tied.standard, tied.total) == (100_096, 106_496, 107_520)


def test_swiglu_counts_by_hand():
    # width 64: 8·64/3 = 170.7 → d_ff = 256. Per layer:
    #   attention 16,640; MLP 3·64·256 + 2·256 + 64 = 49,728; LayerNorms 256 → 66,624.
    p = count_params(64, 2, 100, seq_len=16, mlp="swiglu")
    assert p.mlp_hidden == 256 and p.per_layer == 66_624
    assert p.non_embedding == 2 * 66_624 + 128 == 133_376
    assert p.standard == 133_376 + 6_400 and p.total == 133_376 + 2 * 6_400 + 1_024
    # Without biases: LayerNorm weights only (2·64 per layer, 64 for ln_f).
    nb = count_params(64, 2, 100, seq_len=16, mlp="swiglu", bias=False)
    assert nb.non_embedding == 2 * (4 * 64**2 + 3 * 64 * 256 + 128) + 64


@pytest.mark.parametrize("width,d_ff", [(64, 256), (384, 1024), (385, 1280), (512, 1536), (768, 2048), (1024, 2816)])
def test_swiglu_hidden_rounds_up_to_256(width, d_ff):
    # 8·384/3 = 1024 exactly must not round up to 1280 (integer ceil, not float).
    assert mlp_hidden(width, "swiglu") == d_ff
    assert mlp_hidden(width, "gelu") == 4 * width


def test_gpt2_small_matches_the_published_count():
    # GPT-2 124M (tied embeddings, 1024 positions): 124,439,808 parameters, as nanoGPT
    # reports before subtracting wpe; a count that is off by one tensor misses this.
    p = count_params(768, 12, 50257, seq_len=1024, tied=True)
    assert p.total == 124_439_808
    assert p.non_embedding == 85_056_000


def test_flops_per_token():
    f = flops_per_token(64, 2, 100, seq_len=16)
    assert f.kaplan == 6 * 100_096
    assert f.standard == 6 * 106_496
    assert f.with_attention == 6 * 106_496 + 6 * 16 * 64 * 2


def test_bad_sizes_are_user_errors():
    with pytest.raises(UserError, match="width"):
        count_params(0, 2, 100)
    with pytest.raises(UserError, match="mlp"):
        count_params(64, 2, 100, mlp="relu")


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "scalinglab", "params", *args], capture_output=True, text=True)


def test_cli_json_keys_and_values():
    out = _cli("--width", "64", "--depth", "2", "--vocab", "100", "--seq", "16", "--mlp", "swiglu", "--tied", "--json")
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    want = count_params(64, 2, 100, seq_len=16, mlp="swiglu", tied=True)
    assert (got["non_embedding"], got["standard"], got["total"]) == (want.non_embedding, want.standard, want.total)
    assert set(got["flops_per_token"]) == {"kaplan", "standard", "with_attention"}
    assert got["flops_per_token"]["kaplan"] == 6 * want.non_embedding


def test_cli_total_line_says_what_it_adds():
    for tied, added in ((False, "+ input and positional embeddings"), (True, "+ positional embedding (the input")):
        out = _cli("--width", "64", "--depth", "2", "--vocab", "100", *(["--tied"] if tied else []))
        total = next(line for line in out.stdout.splitlines() if line.startswith("total"))
        assert added in total and f"{count_params(64, 2, 100, tied=tied).total:,}" in total


def test_cli_bad_value_exits_2_without_traceback():
    out = _cli("--width", "-5", "--depth", "2", "--vocab", "100")
    assert out.returncode == 2 and "Traceback" not in out.stderr and "width" in out.stderr


# Property tests: the conventions must relate to each other the same way for every shape,
# not only for the hand-computed cases above.
from hypothesis import given, settings
from hypothesis import strategies as st

shapes = st.fixed_dictionaries(dict(
    width=st.integers(1, 4096), depth=st.integers(1, 96), vocab=st.integers(2, 256_000),
    seq_len=st.integers(1, 8192), mlp=st.sampled_from(["gelu", "swiglu"]), tied=st.booleans(),
    bias=st.booleans()))


@settings(max_examples=200, deadline=None)
@given(shapes)
def test_conventions_nest_for_every_shape(shape):
    from scalinglab.accounting.decoder import count_params, flops_per_token

    p = count_params(**shape)
    w, L, V, S = shape["width"], shape["depth"], shape["vocab"], shape["seq_len"]
    assert p.embedding == p.head == V * w and p.positional == S * w
    assert p.standard == p.non_embedding + p.head
    assert p.total == p.standard + p.positional + (0 if shape["tied"] else p.embedding)
    # Kaplan's 12·L·d² omits only biases and norms, so it never exceeds the exact count (GELU).
    if shape["mlp"] == "gelu":
        assert p.kaplan_approx == 12 * L * w * w <= p.non_embedding
    f = flops_per_token(**shape)
    assert (f.kaplan, f.standard) == (6 * p.non_embedding, 6 * p.standard)
    assert f.with_attention == f.standard + 6 * S * w * L


@pytest.mark.parametrize("name, peak", [
    # as torch.cuda.get_device_name() reports them (sweep.py stores them prefixed with "cuda:")
    ("NVIDIA L4", 121e12),
    ("NVIDIA L40", 181e12),            # a substring match read this as an L4
    ("NVIDIA L40S", 362e12),
    ("cuda:NVIDIA L40S", 362e12),
    ("NVIDIA H100 80GB HBM3", 989e12),
    ("NVIDIA H100 PCIe", 756e12),      # the PCIe card runs slower clocks than the SXM part
    ("NVIDIA H200", 989e12),
    ("NVIDIA A100-SXM4-80GB", 312e12),
    ("NVIDIA A100 80GB PCIe", 312e12),
    ("NVIDIA A10", 125e12),
    ("NVIDIA A10G", None),             # a different chip from the A10: unknown, not misread
    ("NVIDIA GeForce RTX 4090", None),
    ("cpu", None),
])
def test_gpu_peak_matches_whole_model_names(name, peak):
    from scalinglab.accounting.decoder import gpu_peak

    assert gpu_peak(name) == peak
