"""Every notebook runs headlessly in the smoke profile and writes its summary."""

import json
import os
from pathlib import Path

import pytest
from conftest import ROOT, mirror_or_skip

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))

# The headline keys each notebook's summary.json must hold (from the issues).
REQUIRED_KEYS = {
    "01_chinchilla_fit": ["fits", "bootstrap", "hoffmann_test", "mean_trap", "corrected", "approach2", "approach1"],
    "02_kaplan_vs_hoffmann": ["pearce_song", "sweeps", "chinchilla_sets", "porian_exponents", "porian_published", "kaplan_counting_real",
                              "warmup_gadre_grid", "sweeps_difference"],
    "03_inverse_scaling": ["neqa_gpt3_accuracy", "neqa_gpt3_mean_loss", "neqa_gpt3_trend", "neqa_gpt3_own_scale",
                           "ladder", "ladder_prize", "ladder_prize_trends", "ladder_neqa_negated_minus_plain",
                           "truthfulqa_family_trends", "obsscaling_pooled_dispersion",
                           "obsscaling_trend_counts_pooled_fdr", "pythia_trend_counts_fdr", "neqa_gpt3_clustered",
                           "obsscaling_inverse_fdr", "pythia_power", "ladder_prize_clustered"],
    "04_extrapolation": ["m_le_1", "paper_targets", "training_range", "shape_holdout", "paper_reproduction",
                         "few_runs", "which_law"],
    "05_estimator_audit": ["noise", "settings", "designs", "recommendation", "best", "rule", "width_bias",
                           "our_grids", "porian_grids", "porian_gap", "varpro_exact", "audit_power"],
    "06_loss_curves": ["mpl_reproduction", "law_comparison", "coverage", "curve_calibration", "own_runs", "one_run"],
    "07_downstream": ["chained", "chained_coverage", "reproduction", "misses", "loss_to_loss"],
    "08_extrapolation_benchmark": ["scoreboard", "sldbench", "ranking", "calibration", "coverage_overall", "protocol",
                                   "datasets", "audit_truths", "audit_verdicts", "audit_power"],
    "09_hyperparameters_and_data": ["step_law", "own_grid", "regmix", "sldbench"],
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
    from scalinglab.harness.reproduce import run_notebooks

    mirror_or_skip()
    ran = os.environ.get("SCALINGLAB_NOTEBOOK_RESULTS")
    if ran:  # `make test`: nbval has just run every notebook in the smoke profile into this folder
        results = Path(ran)
    else:  # the same code path as `make reproduce PROFILE=smoke`
        results = tmp_path / "results"
        monkeypatch.delenv("SCALINGLAB_PROFILE", raising=False)
        run_notebooks("smoke", results, notebooks=[path], progress=False)
        assert (results / path.stem / path.name).is_file()
    summary = json.loads((results / path.stem / "summary.json").read_text())
    assert summary["profile"] == "smoke"
    for key in REQUIRED_KEYS.get(path.stem, []):
        assert key in summary, f"{path.stem}/summary.json lacks {key!r}"
    assert list((results / path.stem).glob("*.png")), f"{path.stem} saved no figure"
    if path.stem == "02_kaplan_vs_hoffmann":  # the smoke sweeps train seeds, so CI runs the replicate analysis
        from scalinglab.harness.sweeps import WORKBOOK_SMOKE_SEEDS

        for preset, s in summary["sweeps"].items():
            assert s["replicates"]["seeds"] == WORKBOOK_SMOKE_SEEDS, preset
            assert s["replicates"]["seed_sd"] > 0 and s["exponent_seed_bootstrap"], preset


def test_notebooks_get_only_the_parameters_they_declare(tmp_path):
    from scalinglab.harness.reproduce import notebook_parameters, sweep_profile_for

    assert notebook_parameters({"profile"}, "smoke", tmp_path) == {"profile": "smoke"}
    got = notebook_parameters({"profile", "sweep_dir", "ladder_dir"}, "full", tmp_path)
    # a sweep's runs are not a model ladder (notebook 03 reads an exported one): ladder_dir is left to the user
    assert got == {"profile": "full", "sweep_dir": str(tmp_path)}
    assert notebook_parameters({"profile", "sweep_dir"}, "full", None) == {"profile": "full"}
    assert sweep_profile_for("none") is None and sweep_profile_for("cpu") == "cpu"


def test_reproduce_refuses_an_unknown_sweep_profile_in_one_line(tmp_path, capsys):
    from scalinglab.harness.reproduce import main

    assert main(["--sweep-profile", "gpu_quick", "--results", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "unknown sweep profile 'gpu_quick'" in err and err.count("\n") == 1
