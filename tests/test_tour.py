"""The README's tour and docs/cli.md show what the commands print now (scalinglab.harness.tour)."""

import shutil
from pathlib import Path

from scalinglab.harness.tour import TOUR, masked, refresh

ROOT = Path(__file__).resolve().parents[1]


def _fresh(tmp_path: Path, doc: str) -> tuple[str, str]:
    # The commands run in a copy of examples/, so their outputs (--plot) never land in the checkout.
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    (tmp_path / "results").mkdir()
    text = (ROOT / doc).read_text()
    return text, refresh(text, cwd=tmp_path)


def test_readme_tour_outputs_are_current(tmp_path, mirror):
    text, new = _fresh(tmp_path, "README.md")
    assert len(TOUR.findall(text)) >= 3
    assert masked(new) == masked(text), "README's tour is stale: python -m scalinglab.harness.tour README.md"


def test_cli_reference_outputs_are_current(tmp_path, mirror):
    text, new = _fresh(tmp_path, "docs/cli.md")
    assert masked(new) == masked(text), "docs/cli.md is stale: python -m scalinglab.harness.tour docs/cli.md"


def test_masking_keeps_what_must_not_change():
    assert masked("a = 0.505, 95% interval [0.445, 0.565]") == masked("a = 0.51, 95% interval [0.44, 0.57]")
    assert masked("--budget-col budget") != masked("--c-col budget")
    assert masked("status ok") != masked("status at_bound")


def test_a_stale_output_is_caught(tmp_path):
    # The README's first tour block on the example runs (a fit of 33 runs, no mirror needed), made stale:
    # refreshing it must change it. One block, not the whole tour, since the mechanism is per block.
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    (tmp_path / "results").mkdir()
    block = next(m.group(0) for m in TOUR.finditer((ROOT / "README.md").read_text())
                 if "$ scalinglab fit examples/" in m.group(0))
    assert "status: converged" in block
    stale = block.replace("status: converged", "status: failed", 1)
    assert masked(refresh(stale, cwd=tmp_path)) == masked(block) != masked(stale)
