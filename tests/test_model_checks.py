"""A checkpoint is refused, in one line and before anything large is built, when its config and tensors disagree,
its weights are not finite, it names a tokenizer that would have to be trained, or it differs from its folder's
manifest."""

import shutil
from pathlib import Path

import pytest
from scalinglab.errors import UserError

torch = pytest.importorskip("torch")

LADDER = Path(__file__).resolve().parents[1] / "data" / "models" / "inverse-ladder"


def _tiny(path, meta=None, edit=None):
    from scalinglab.training.model import GPT, GPTConfig, save_checkpoint

    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=300, seq_len=64, width=32, depth=1, head_dim=16))
    save_checkpoint(path, model, meta or {"tokenizer": "gpt2"})
    if edit:
        state = torch.load(path, weights_only=True)
        edit(state)
        torch.save(state, path)
    return path


def test_a_config_larger_than_its_tensors_is_refused_before_it_is_built(tmp_path):
    import resource

    from scalinglab.training.model import load_checkpoint

    path = _tiny(tmp_path / "big.pt", edit=lambda s: s["config"].update(width=16384, depth=64, head_dim=128))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(UserError, match="config and weights disagree"):
        load_checkpoint(path)
    # Building that model would take 3.5 GB; the peak resident set grows by far less than 100 MB.
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100_000


def test_non_finite_weights_are_refused(tmp_path):
    from scalinglab.training.model import load_checkpoint

    def poison(state):
        state["model"]["head.weight"].fill_(float("nan"))

    with pytest.raises(UserError, match="'head.weight' holds non-finite weights"):
        load_checkpoint(_tiny(tmp_path / "nan.pt", edit=poison))


def test_a_named_tokenizer_is_never_trained(tmp_path):
    from scalinglab.inverse_scaling.adapters import load_checkpoint_lm

    # The cache is empty in tests (conftest): training this tokenizer would read the corpus for hours.
    path = _tiny(tmp_path / "tok.pt", meta={"tokenizer": "bpe8192-t999999999999"})
    with pytest.raises(UserError, match="never because a checkpoint names it"):
        load_checkpoint_lm(path)


def test_a_checkpoint_that_differs_from_its_manifest_is_refused(tmp_path):
    from scalinglab.inverse_scaling.adapters import load_checkpoint_lm

    folder = tmp_path / "ladder"
    shutil.copytree(LADDER, folder)
    files = sorted(folder.glob("*.pt"))
    load_checkpoint_lm(files[0])                       # as exported: accepted
    shutil.copy(files[1], files[0])                    # another valid model under the first one's name
    with pytest.raises(UserError, match="its sha256 differs from manifest.json's"):
        load_checkpoint_lm(files[0])


def test_a_pickled_hugging_face_folder_is_one_line(tmp_path):
    pytest.importorskip("transformers")
    import pickle

    from scalinglab.inverse_scaling.adapters import load_lm

    folder = tmp_path / "hf"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "gpt2", "n_layer": 1, "n_embd": 8, "n_head": 2, '
                                        '"vocab_size": 16, "n_positions": 8}')
    (folder / "pytorch_model.bin").write_bytes(pickle.dumps({"not": "tensors"}))
    with pytest.raises(UserError) as err:
        load_lm(f"hf:{folder}")
    assert "\n" not in str(err.value) and "could not load Hugging Face model" in str(err.value)


def test_a_spec_without_a_model_is_named(tmp_path):
    from scalinglab.sweeps.report import _model_spec

    assert _model_spec('{"model": {"width": 8, "depth": 1, "vocab_size": 9, "seq_len": 4}}')["width"] == 8
    with pytest.raises(UserError, match="no usable model shape .*KeyError.*edited or damaged"):
        _model_spec('{"train": {}}')
