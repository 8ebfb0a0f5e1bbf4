"""The committed notebooks show what they save: each `wb.savefig` call's figure is an inline output of the cell
that makes it, the notebook has no error or stderr output, and it stays small enough to open and diff."""

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
MAX_BYTES = 4 * 1024 * 1024   # a dozen 100-dpi figures take 1-2 MB as base64; 4 MB is where GitHub stops rendering
SAVEFIG = re.compile(r"\bwb\.savefig\(")


def code_cells(path: Path) -> list[dict]:
    return [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]


def images(cell: dict) -> int:
    return sum("image/png" in out.get("data", {}) for out in cell.get("outputs", []))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_saved_figure_is_shown_inline(path):
    cells = code_cells(path)
    saved = [(i, len(SAVEFIG.findall("".join(c["source"])))) for i, c in enumerate(cells)]
    assert sum(n for _, n in saved) >= 1, f"{path.name} saves no figure"
    # One image per call, in the cell that calls it (a call inside a loop would need more: none is today).
    assert [(i, images(cells[i])) for i, n in saved if n] == [(i, n) for i, n in saved if n]
    assert sum(images(c) for c in cells) == sum(n for _, n in saved), "an image output no wb.savefig made"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_error_or_stderr_outputs(path):
    bad = [(i, out.get("name") or out["output_type"]) for i, c in enumerate(code_cells(path))
           for out in c.get("outputs", []) if out["output_type"] == "error" or out.get("name") == "stderr"]
    assert bad == []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_size(path):
    assert path.stat().st_size < MAX_BYTES


def test_no_path_is_printed_for_a_figure():
    # A cell ending in wb.savefig(...) without ';' prints the PosixPath of the PNG under the figure.
    for path in NOTEBOOKS:
        for c in code_cells(path):
            for out in c.get("outputs", []):
                assert "PosixPath(" not in "".join(out.get("data", {}).get("text/plain", "")), path.name
