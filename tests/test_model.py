import itertools

import pytest
import torch
from scalinglab.accounting.decoder import count_params, mlp_hidden
from scalinglab.errors import UserError
from scalinglab.training.model import GPT, GPTConfig, load_checkpoint, save_checkpoint


@pytest.mark.parametrize("mlp,tied,bias", list(itertools.product(("gelu", "swiglu"), (False, True), (True, False))))
@pytest.mark.parametrize("width,depth,vocab,seq_len", [(48, 3, 517, 33), (64, 1, 1000, 128), (96, 2, 50257, 16)])
def test_param_counts_agree_with_flops(mlp, tied, bias, width, depth, vocab, seq_len):
    cfg = GPTConfig(vocab_size=vocab, seq_len=seq_len, width=width, depth=depth, mlp=mlp, tied=tied, bias=bias,
                    head_dim=16)
    model = GPT(cfg)
    ours = model.param_counts()
    theirs = count_params(width, depth, vocab, seq_len=seq_len, mlp=mlp, tied=tied, bias=bias)
    assert ours == dict(non_embedding=theirs.non_embedding, standard=theirs.standard, total=theirs.total)
    # the total is what torch stores: no tensor is double-counted, none forgotten
    assert ours["total"] == sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())
    assert model.blocks[0].mlp.proj.in_features == mlp_hidden(width, mlp)


def test_tied_head_shares_the_embedding():
    model = GPT(GPTConfig(vocab_size=64, seq_len=8, width=16, depth=1, tied=True, head_dim=8))
    assert model.head.weight is model.wte.weight
    untied = GPT(GPTConfig(vocab_size=64, seq_len=8, width=16, depth=1, tied=False, head_dim=8))
    assert untied.head.weight is not untied.wte.weight


def test_forward_shapes_loss_and_causality():
    torch.manual_seed(0)
    cfg = GPTConfig(vocab_size=50, seq_len=12, width=32, depth=2, head_dim=8, mlp="swiglu")
    model = GPT(cfg).eval()
    idx = torch.randint(50, (3, 12))
    logits = model(idx)
    assert logits.shape == (3, 12, 50)
    logits2, loss = model(idx, idx)
    assert torch.equal(logits, logits2)
    # an untrained model predicts about uniformly: loss near ln(vocab) (within 10%: init std 0.02 is small)
    assert abs(loss.item() - torch.log(torch.tensor(50.0)).item()) < 0.1 * torch.log(torch.tensor(50.0)).item()
    # changing the last token must not change the logits of earlier positions (causal mask)
    idx2 = idx.clone()
    idx2[:, -1] = (idx2[:, -1] + 1) % 50
    out2 = model(idx2)
    assert torch.allclose(out2[:, :-1], logits[:, :-1], atol=1e-6)
    assert not torch.allclose(out2[:, -1], logits[:, -1])
    with pytest.raises(UserError, match="longer than seq_len"):
        model(torch.zeros(1, 13, dtype=torch.long))


def test_checkpoint_round_trip(tmp_path):
    torch.manual_seed(1)
    model = GPT(GPTConfig(vocab_size=40, seq_len=10, width=24, depth=2, head_dim=8, tied=True))
    path = save_checkpoint(tmp_path / "m.pt", model, {"run_id": "x", "n": 3})
    loaded, meta = load_checkpoint(path)
    assert meta == {"run_id": "x", "n": 3}
    assert loaded.config == model.config and not loaded.training
    assert loaded.head.weight is loaded.wte.weight  # tying survives the round trip
    idx = torch.randint(40, (2, 10))
    assert torch.equal(loaded(idx), model.eval()(idx))


def test_bad_config_is_rejected():
    with pytest.raises(UserError, match="mlp"):
        GPTConfig(mlp="relu")
    with pytest.raises(UserError, match="divisible"):
        GPTConfig(width=30, n_head=4)
