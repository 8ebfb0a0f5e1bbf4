import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# A relative mirror (the README's `export SCALINGLAB_DATA_MIRROR=../shared/data`) means relative to where it was
# set; tests that chdir or start subprocesses in a temporary folder must still find it, so fix it now.
if os.environ.get("SCALINGLAB_DATA_MIRROR") and not Path(os.environ["SCALINGLAB_DATA_MIRROR"]).is_absolute():
    os.environ["SCALINGLAB_DATA_MIRROR"] = str(Path(os.environ["SCALINGLAB_DATA_MIRROR"]).resolve())


@pytest.fixture(autouse=True)
def _isolated_results(tmp_path, monkeypatch):
    """Tests never write into the checkout's results/ or the user's cache."""
    monkeypatch.setenv("SCALINGLAB_RESULTS", str(tmp_path / "results"))
    monkeypatch.setenv("SCALINGLAB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("MPLBACKEND", "Agg")


def refused(capsys, argv, *fragments):
    """`scalinglab ARGV` exits 2 with one line holding every fragment."""
    from scalinglab.cli import main

    assert main(list(map(str, argv))) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    for fragment in fragments:
        assert fragment in err, err
    return err


def mirror_or_skip() -> Path:
    """The offline data mirror; tests that need real data skip without one."""
    root = os.environ.get("SCALINGLAB_DATA_MIRROR")
    if not root or not Path(root).is_dir():
        pytest.skip("needs $SCALINGLAB_DATA_MIRROR (CI sets it to ../shared/data)")
    return Path(root)


@pytest.fixture
def mirror() -> Path:
    return mirror_or_skip()


@pytest.fixture(scope="session")
def smoke_cache(tmp_path_factory):
    """One token cache for the whole run: the smoke tokenizer is trained once, not per test or module."""
    return tmp_path_factory.mktemp("sweep-cache")


@pytest.fixture
def cache(smoke_cache, monkeypatch, mirror):
    """The smoke sweep profile's tokens, in the shared cache (the sweep tests train on them)."""
    from scalinglab.training import sweep

    monkeypatch.setenv("SCALINGLAB_CACHE", str(smoke_cache))
    sweep.load_tokens(sweep.get_profile("smoke"))
    return smoke_cache
