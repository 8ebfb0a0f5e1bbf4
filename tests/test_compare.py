"""`scalinglab compare` (fitting.studies.systems): differences between two systems' laws with paired or independent
bootstrap intervals, on runs simulated from known laws."""

import json

import numpy as np
from scalinglab.cli import main
from scalinglab.fitting.chinchilla.law import ScalingLaw
from scalinglab.fitting.studies.systems import compare

LAW_A = ScalingLaw(E=1.7, A=480.0, B=2100.0, alpha=0.30, beta=0.34)
LAW_B = ScalingLaw(E=1.8, A=480.0, B=2100.0, alpha=0.40, beta=0.34)


def grid(k=6):
    """A k x k design of N and D varied independently."""
    N, D = np.meshgrid(np.logspace(7, 9, k), np.logspace(9, 11, k))
    return N.ravel(), D.ravel()


def runs(law, N, D, seed, sigma=0.005):
    return N, D, law.loss(N, D) * np.exp(sigma * np.random.default_rng(seed).standard_normal(len(N)))


def test_a_system_against_itself_differs_by_exactly_nothing_when_paired():
    # Same design, same losses: every paired replicate resamples the same points in both, so each
    # difference is 0 in every replicate. Independent resampling would give intervals of nonzero width.
    t = runs(LAW_A, *grid(), seed=0)
    res = compare(t, t, budgets=[1e20], n_boot=40)
    assert res.pairing == "paired" and res.n_pairs > 30
    for k in ("alpha", "beta", "a"):
        assert res.differences[k]["ci"] == [0.0, 0.0]
    assert res.budgets[0]["n_opt_ratio"]["ci"] == [1.0, 1.0] and res.budgets[0]["p_a_better"] == 0.0


def test_known_exponent_difference_is_recovered_on_a_shared_design():
    N, D = grid()
    res = compare(runs(LAW_A, N, D, 1), runs(LAW_B, N, D, 2), budgets=[1e20], n_boot=100)
    assert res.pairing == "paired"
    lo, hi = res.differences["alpha"]["ci"]
    # The truth is -0.10; 36 runs at 0.5% noise pin alpha to about +-0.02, so the interval holds -0.10
    # and excludes 0. beta is the same in both: its interval holds 0.
    assert lo < -0.10 < hi and hi < 0
    blo, bhi = res.differences["beta"]["ci"]
    assert blo < 0 < bhi
    # b's steeper alpha outweighs a's lower E at 1e20 FLOP (true optimal losses 3.35 vs 2.42): the
    # comparison must say b is better with near certainty, and its interval must hold the true gap.
    row = res.budgets[0]
    true_a = LAW_A.loss(LAW_A.n_opt(1e20), LAW_A.d_opt(1e20))
    true_b = LAW_B.loss(LAW_B.n_opt(1e20), LAW_B.d_opt(1e20))
    assert true_a > true_b and row["p_a_better"] < 0.05
    assert row["loss_difference"]["ci"][0] < true_a - true_b < row["loss_difference"]["ci"][1]


def test_different_designs_are_resampled_independently(tmp_path, capsys):
    N, D = grid()
    a = runs(LAW_A, N, D, 3)
    b = runs(LAW_B, N * 1.5, D, 4)  # another grid: nothing to pair
    paths = []
    for name, (n, d, loss) in (("a.csv", a), ("b.csv", b)):
        p = tmp_path / name
        p.write_text("N,D,loss\n" + "".join(f"{x:.17g},{y:.17g},{z:.17g}\n" for x, y, z in zip(n, d, loss)))
        paths.append(str(p))
    assert main(["compare", *paths, "--compute", "1e19", "--bootstrap", "60", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["pairing"] == "independent" and "designs differ" in out["pairing_reason"]
    lo, hi = out["differences"]["alpha"]["ci"]
    assert lo < -0.10 < hi
    assert main(["compare", *paths, "--bootstrap", "60"]) == 0
    assert "bootstrap: independent" in capsys.readouterr().out


def test_compare_needs_a_bootstrap(tmp_path, capsys):
    p = tmp_path / "a.csv"
    N, D, L = runs(LAW_A, *grid(), seed=0)
    p.write_text("N,D,loss\n" + "".join(f"{x:.17g},{y:.17g},{z:.17g}\n" for x, y, z in zip(N, D, L)))
    q = tmp_path / "b.csv"   # another draw: two copies of one table are refused before the bootstrap is asked for
    N, D, L = runs(LAW_A, *grid(), seed=1)
    q.write_text("N,D,loss\n" + "".join(f"{x:.17g},{y:.17g},{z:.17g}\n" for x, y, z in zip(N, D, L)))
    assert main(["compare", str(p), str(q), "--bootstrap", "0"]) == 2
    assert "needs a bootstrap" in capsys.readouterr().err
    assert main(["compare", str(p)]) == 2
    assert "needs two systems" in capsys.readouterr().err


def test_a_fit_at_a_bound_is_refused_not_compared(tmp_path, capsys):
    """Equal losses put b's exponents at their bound; compare printed N_opt inf and P(a better than b) = 1.000."""
    N, D, L = runs(LAW_A, *grid(), seed=0)
    a, b = tmp_path / "a.csv", tmp_path / "flat.csv"
    a.write_text("N,D,loss\n" + "".join(f"{x:.17g},{y:.17g},{z:.17g}\n" for x, y, z in zip(N, D, L)))
    b.write_text("N,D,loss\n" + "".join(f"{x:.17g},{y:.17g},4.5\n" for x, y in zip(N, D)))
    assert main(["compare", str(a), str(b), "--bootstrap", "20", "--compute", "1e20"]) == 2
    err = capsys.readouterr().err
    assert f"{b}: the fit did not converge (status at_bound" in err and err.count("\n") == 1
