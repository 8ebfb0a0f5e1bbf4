"""The fourth round of hostile input: nothing destroyed, nothing read whole, every command as careful as `fit`.
Each case a careless or hostile user tried is kept here: a one-line refusal (exit 2), a warning with the
distance, or a right answer."""

import math

import numpy as np
import pytest
from conftest import refused
from scalinglab.cli import main
from scalinglab.fitting import saved
from test_saved_fit import _rewrite, simulate


# --- a saved exact fit loads on any BLAS kernel ---------------------------------------------------------------

def test_the_objective_tolerance_allows_rounding_of_an_exact_fit_and_nothing_more():
    """An exact fit's objective is a sum of rounding errors (1.97e-30 on one kernel, 2.34e-30 on Haswell's): a
    relative tolerance refused the second. An edit of 1e-9 to alpha moves every residual by about 1e-9 * log N
    (~2e-8), so the objective by ~n * 2e-16: far outside the tolerance."""
    tol = saved.objective_tolerance(1.97215e-30, 20)
    assert abs(2.34193e-30 - 1.97215e-30) <= tol
    assert 20 * 0.5 * (1e-9 * math.log(1e8)) ** 2 > 100 * tol
    # Away from zero the relative tolerance is the one that binds, as before.
    assert saved.objective_tolerance(1e-3, 200) == pytest.approx(1e-11, rel=0.05)


def _flat_fit(tmp_path):
    N, D, _ = simulate(20, 3)
    flat = tmp_path / "flat.csv"
    flat.write_text("N,D,loss\n" + "".join(f"{n:.17g},{d:.17g},4.5\n" for n, d in zip(N, D)))
    out = tmp_path / "flat.slfit"
    assert main(["fit", str(flat), "--save", str(out)]) == 0
    return out


def test_an_exact_fit_loads_when_its_objective_is_recomputed_by_another_kernel(tmp_path, capsys, monkeypatch):
    """Another BLAS kernel's evaluation, stood in for by the stored objective scaled by 1.19 (what Haswell's
    gave), still loads; an edit of the law by 1e-6 in E does not."""
    out = _flat_fit(tmp_path)
    capsys.readouterr()
    from scalinglab.fitting import solver

    real = solver.objective
    monkeypatch.setattr(solver, "objective", lambda *a, **k: real(*a, **k) * 1.19)
    assert saved.load(out).result.objective < 1e-20
    monkeypatch.setattr(solver, "objective", real)
    bad = tmp_path / "edited.slfit"
    _rewrite(out, bad, lambda o: o["law"].update(E=o["law"]["E"] * (1 + 1e-6)))
    refused(capsys, ["allocate", bad, "--compute", "1e12"], str(bad), "is not what its law gives")
