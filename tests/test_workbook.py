"""The notebook harness: profiles, results folder, summary.json."""

import json
import math

import numpy as np
import pytest
from scalinglab.errors import UserError
from scalinglab.harness.workbook import Workbook, project_root, resolve_profile


def test_profile_env_overrides_the_parameter(monkeypatch):
    monkeypatch.setenv("SCALINGLAB_PROFILE", "smoke")
    assert resolve_profile("full") == "smoke"
    monkeypatch.delenv("SCALINGLAB_PROFILE")
    assert resolve_profile("full") == "full"


def test_unknown_profile_is_refused(monkeypatch):
    monkeypatch.delenv("SCALINGLAB_PROFILE", raising=False)
    with pytest.raises(UserError, match="'fast'"):
        Workbook("x", "fast")


def test_summary_is_strict_json(tmp_path, monkeypatch):
    monkeypatch.delenv("SCALINGLAB_PROFILE", raising=False)
    monkeypatch.setenv("SCALINGLAB_RESULTS", str(tmp_path))
    wb = Workbook("00_demo", "smoke")
    assert wb.pick(full=4000, smoke=100) == 100
    wb.summary["fit"] = {"alpha": np.float64(0.34), "grid": np.arange(3), "bad": math.nan}
    path = wb.write_summary()
    assert path == tmp_path / "00_demo" / "summary.json"
    # json.loads rejects NaN only with a hook: parse strictly to prove none slipped through.
    loaded = json.loads(path.read_text(), parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))
    assert loaded == {"profile": "smoke", "fit": {"alpha": 0.34, "grid": [0, 1, 2], "bad": None}}


def test_project_root_found_from_notebooks_folder():
    root = project_root()
    assert project_root(root / "notebooks") == root
