"""Every notebook runs headlessly in the smoke profile and writes its summary."""

import json

import pytest

from conftest import ROOT, mirror_or_skip

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))

# The headline keys each notebook's summary.json must hold (from the issues).
REQUIRED_KEYS = {
    "01_chinchilla_fit": ["fits", "bootstrap", "hoffmann_test", "mean_trap", "corrected", "approach2"],
    "02_kaplan_vs_hoffmann": ["pearce_song", "porian_exponents"],
    "03_inverse_scaling": ["neqa_gpt3_accuracy", "neqa_gpt3_mean_loss", "neqa_gpt3_trend", "truthfulqa_family_trends"],
}


def test_every_notebook_has_one_parameters_cell():
    import nbformat

    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        tagged = [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
        assert len(tagged) == 1, f"{path.name}: {len(tagged)} cells tagged 'parameters'"
        assert "profile" in tagged[0].source, f"{path.name}: parameters cell has no profile"


@pytest.mark.notebook
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_in_smoke_profile(path, tmp_path, monkeypatch):
    import papermill as pm

    mirror_or_skip()
    results = tmp_path / "results"
    monkeypatch.setenv("SCALINGLAB_RESULTS", str(results))
    monkeypatch.delenv("SCALINGLAB_PROFILE", raising=False)
    pm.execute_notebook(
        str(path), str(tmp_path / path.name), parameters={"profile": "smoke"},
        cwd=str(path.parent), kernel_name="python3", progress_bar=False,
    )
    summary = json.loads((results / path.stem / "summary.json").read_text())
    assert summary["profile"] == "smoke"
    for key in REQUIRED_KEYS.get(path.stem, []):
        assert key in summary, f"{path.stem}/summary.json lacks {key!r}"
    assert list((results / path.stem).glob("*.png")), f"{path.stem} saved no figure"
