"""`scalinglab trend` and `scalinglab inverse-eval` from the command line."""

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from scalinglab.cli import main


@pytest.fixture
def trend_csv(tmp_path):
    x = np.logspace(8, 11, 6)
    z = np.log10(x) - 9.5
    df = pd.DataFrame(dict(task=["down"] * 6 + ["level"] * 6, compute=np.r_[x, x],
                           acc=np.r_[0.6 - 0.08 * z, np.full(6, 0.5)], n=1000))
    path = tmp_path / "runs.csv"
    df.to_csv(path, index=False)
    return path


def test_trend_json_has_one_object_per_group(trend_csv, capsys):
    rc = main(["trend", str(trend_csv), "--x-col", "compute", "--y-col", "acc", "--count-col", "n",
               "--group-by", "task", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert {o["group"]: o["trend"] for o in out} == {"down": "inverse", "level": "flat"}
    assert all(0 <= o["p_trend"] <= 1 for o in out)


@pytest.mark.parametrize("argv, message", [
    (["--x-col", "compute", "--y-col", "accuracy", "--count-col", "n"], "no column 'accuracy'"),
    (["--x-col", "compute", "--y-col", "task", "--count-col", "n"], "column 'task' is not numeric"),
    (["--x-col", "compute", "--y-col", "acc", "--count-col", "n", "--alpha", "2"], "--alpha"),
])
def test_trend_bad_input_exits_2_with_one_line(trend_csv, capsys, argv, message):
    assert main(["trend", str(trend_csv), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_trend_no_grouped_rows_exits_2(tmp_path, capsys):
    path = tmp_path / "empty.csv"
    path.write_text("task,compute,acc,n\n")
    assert main(["trend", str(path), "--x-col", "compute", "--y-col", "acc", "--count-col", "n",
                 "--group-by", "task"]) == 2
    err = capsys.readouterr().err
    assert "no rows" in err and err.count("\n") == 1


def test_trend_missing_file(tmp_path, capsys):
    assert main(["trend", str(tmp_path / "nope.csv"), "--x-col", "a", "--y-col", "b", "--count-col", "c"]) == 2
    assert "no such file" in capsys.readouterr().err


def test_cli_modules_do_not_import_torch():
    code = ("import sys, scalinglab.cli.trend, scalinglab.cli.inverse_eval; "
            "assert 'torch' not in sys.modules and 'pandas' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.fixture
def tiny_checkpoint(tmp_path):
    import torch
    from scalinglab.training.model import GPT, GPTConfig, save_checkpoint

    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=50257, seq_len=256, width=32, depth=1, head_dim=16))
    return save_checkpoint(tmp_path / "tiny.pt", model, {"tokenizer": "gpt2"})


def test_inverse_eval_scores_a_checkpoint(mirror, tiny_checkpoint, capsys):
    rc = main(["inverse-eval", "--task", "neqa", "--model", str(tiny_checkpoint), "--limit", "6", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["task"] == "neqa" and out["n"] == 6
    assert 0 <= out["accuracy"] <= 1 and out["loss"] > 0 and out["accuracy"] * 6 == round(out["accuracy"] * 6)


@pytest.mark.parametrize("argv, message", [
    (["--task", "neqq", "--model", "x.pt"], "unknown inverse-scaling task 'neqq'"),
    (["--task", "neqa", "--model", "missing.pt"], "missing.pt: no such checkpoint"),
    (["--task", "neqa", "--model", "gpt2"], "unknown model 'gpt2'"),
    (["--task", "neqa", "--model", "x.pt", "--limit", "0"], "--limit must be >= 1, not 0"),
    (["--task", "neqa", "--model", "x.pt", "--batch-size", "0"], "--batch-size must be >= 1, not 0"),
])
def test_inverse_eval_bad_input_exits_2(mirror, capsys, argv, message):
    assert main(["inverse-eval", *argv]) == 2
    assert message in capsys.readouterr().err


def test_inverse_eval_json_is_strict_json_for_one_example(mirror, tiny_checkpoint, capsys):
    # one example has no standard error (NaN), which json.dumps would write as the non-JSON token NaN
    assert main(["inverse-eval", "--task", "neqa", "--model", str(tiny_checkpoint), "--limit", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))
    assert out["n"] == 1 and out["loss_se"] is None and out["loss"] > 0


def test_ladder_checkpoints_lists_a_sweeps_runs(tmp_path, tiny_checkpoint):
    from scalinglab.inverse_scaling.adapters import ladder_checkpoints, load_checkpoint_lm

    runs = tmp_path / "kaplan.db.runs"
    runs.mkdir()
    for name in ("b.pt", "a.pt", "kaplan-w128-d4.pt", "kaplan-w16-d1.pt"):
        (runs / name).write_bytes(tiny_checkpoint.read_bytes())
    # natural order: a sweep's widths compare as numbers (plain sorting puts w128 before w16)
    assert [p.name for p in ladder_checkpoints(runs)] == ["a.pt", "b.pt", "kaplan-w16-d1.pt", "kaplan-w128-d4.pt"]
    assert ladder_checkpoints(tmp_path / "none") == []
    lm = load_checkpoint_lm(runs / "a.pt")
    # one block of width 32: 12*32^2 weights + 288 biases + 3 LayerNorms of 64 = 12,768 non-embedding parameters
    assert lm.name == "a" and lm.supports_cache and lm.params == 12 * 32**2 + 288 + 3 * 64


@pytest.mark.parametrize("content", [b"", bytes(range(256))], ids=["empty", "not-a-pickle"])
def test_a_corrupt_checkpoint_is_a_user_error(tmp_path, content):
    from scalinglab.errors import UserError
    from scalinglab.inverse_scaling.adapters import load_lm

    path = tmp_path / "broken.pt"
    path.write_bytes(content)
    with pytest.raises(UserError, match="broken.pt: not a scalinglab GPT checkpoint") as err:
        load_lm(str(path))
    assert "\n" not in str(err.value)  # the CLI prints it as one line


def test_a_folder_without_a_model_is_a_user_error(tmp_path):
    pytest.importorskip("transformers")
    from scalinglab.errors import UserError
    from scalinglab.inverse_scaling.adapters import load_lm

    with pytest.raises(UserError, match="could not load Hugging Face model") as err:
        load_lm(f"hf:{tmp_path}")  # an existing, empty local folder: nothing is downloaded
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("offline", [True, False], ids=["HF_HUB_OFFLINE", "hub unreachable"])
def test_an_uncached_hub_model_offline_fails_fast(monkeypatch, offline):
    """Before, the hub client retried for ~50 s before its error; now the cache is asked first."""
    pytest.importorskip("transformers")
    import time

    from scalinglab.errors import UserError
    from scalinglab.inverse_scaling import adapters as lm_adapters

    monkeypatch.setenv("HF_HUB_OFFLINE", "1" if offline else "0")
    monkeypatch.setattr(lm_adapters, "_hub_reachable", lambda timeout=3.0: False)
    t0 = time.perf_counter()
    with pytest.raises(UserError, match="'scalinglab-test/no-such-model' is not in the local cache and "
                       + ("HF_HUB_OFFLINE is set" if offline else "huggingface.co cannot be reached")) as err:
        lm_adapters.load_lm("hf:scalinglab-test/no-such-model")
    assert "\n" not in str(err.value)
    assert time.perf_counter() - t0 < 10  # a cache lookup, not a minute of retries
