"""`make lab-check`'s driver, the parts that need no browser (the browser run itself is `make lab-check`)."""

import ast
import json
from pathlib import Path

from scalinglab.harness import lab_check

LIB = Path(lab_check.__file__).resolve().parents[1]


def test_playwright_is_imported_only_inside_the_driver_function():
    """The library imports without playwright: only lab_check.main imports it, inside the function."""
    for path in LIB.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n.split(".")[0] == "playwright" for n in names):
                assert path.name == "lab_check.py", f"{path} imports playwright"
                assert node not in tree.body, "playwright must be imported inside a function"


def test_describe_diff_names_what_lab_changed():
    before = {"cells": [{"cell_type": "code", "metadata": {"trusted": True, "tags": []}, "source": ["x"]}],
              "metadata": {"kernelspec": {"display_name": "Python 3"}}, "nbformat": 4, "nbformat_minor": 5}
    after = json.loads(json.dumps(before))
    after["metadata"]["kernelspec"]["display_name"] = "Python 3 (ipykernel)"
    del after["cells"][0]["metadata"]["trusted"]
    lines = lab_check.describe_diff(json.dumps(before).encode(), json.dumps(after).encode())
    assert any(line.startswith("metadata.kernelspec:") and "(ipykernel)" in line for line in lines), lines
    assert "cell metadata.trusted dropped: 1 cells" in lines
    assert not any("tags" in line for line in lines)
    same = lab_check.describe_diff(json.dumps(before).encode(), json.dumps(before, indent=1).encode() + b"\n")
    assert same == ["same JSON, other bytes (indentation, key order, escaping or trailing newline)"]


def test_kernels_get_absolute_paths_and_no_backend(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SCALINGLAB_DATA_MIRROR", "shared/data")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    env = lab_check.lab_env(tmp_path / "lab")
    assert env["SCALINGLAB_DATA_MIRROR"] == str(tmp_path / "shared" / "data")
    assert "MPLBACKEND" not in env and env["SCALINGLAB_PROFILE"] == "smoke"
    assert env["SCALINGLAB_RESULTS"] == str(tmp_path / "lab" / "results")
