"""`scalinglab fit` from the shell: output, column roles, bad input exits 2 with one line."""

import json
import subprocess
import sys

import numpy as np
import pytest
from scalinglab.cli import main
from scalinglab.fitting.chinchilla.law import ScalingLaw

TRUE = ScalingLaw(E=1.8, A=480.0, B=2100.0, alpha=0.35, beta=0.37)


@pytest.fixture
def runs_csv(tmp_path):
    """40 noiseless runs with N and D varied independently, plus a compute column."""
    rng = np.random.default_rng(0)
    N = 10 ** rng.uniform(7, 10, 40)
    D = 10 ** rng.uniform(9, 11.5, 40)
    L = TRUE.loss(N, D)
    path = tmp_path / "runs.csv"
    lines = ["params,tokens,flops,final_loss"]
    lines += [f"{n:.17g},{d:.17g},{6 * n * d:.17g},{loss:.17g}" for n, d, loss in zip(N, D, L)]
    path.write_text("\n".join(lines) + "\n")
    return path


def run_json(capsys, *argv):
    assert main(["fit", *map(str, argv), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_json_recovers_the_law_from_d_or_from_compute(runs_csv, capsys):
    by_d = run_json(capsys, runs_csv, "--n-col", "params", "--d-col", "tokens", "--loss-col", "final_loss")
    by_c = run_json(capsys, runs_csv, "--n-col", "params", "--c-col", "flops", "--loss-col", "final_loss")
    for out in (by_d, by_c):
        assert out["status"] == "converged" and out["n_rows"] == 40
        # Noiseless data: the optimum is the truth, up to the solver's 1e-9 gradient tolerance.
        for k in ("E", "A", "B", "alpha", "beta"):
            assert out["params"][k] == pytest.approx(getattr(TRUE, k), rel=1e-4)
        assert out["a"] == pytest.approx(TRUE.a, rel=1e-4)


def test_bootstrap_and_drop_highest_appear_in_json(runs_csv, capsys):
    out = run_json(capsys, runs_csv, "--n-col", "params", "--d-col", "tokens", "--loss-col", "final_loss",
                   "--drop-highest", "3", "--bootstrap", "50", "--seed", "1")
    assert out["n_rows"] == 37 and out["n_dropped"] == 3
    bs = out["bootstrap"]
    assert bs["n_boot"] == 50 and bs["seed"] == 1
    lo, hi = bs["ci"]["alpha"]
    assert lo <= out["params"]["alpha"] <= hi and set(bs["se"]) >= {"E", "A", "B", "alpha", "beta", "a", "b"}


def test_json_is_strict_when_an_se_is_undefined():
    # One replicate has no standard deviation: it must serialise as null, not as NaN (which is not JSON).
    # (The CLI refuses --bootstrap 1, below; the library still allows it.)
    from scalinglab.fitting.chinchilla import approach3 as F
    from scalinglab.serialization import dumps

    rng = np.random.default_rng(0)
    N, D = 10 ** rng.uniform(7, 10, 40), 10 ** rng.uniform(9, 11.5, 40)
    res = F.fit_arrays(N, D, TRUE.loss(N, D), n_boot=1)
    def no_constants(name):
        raise ValueError(f"non-JSON constant {name}")
    out = json.loads(dumps(res.to_dict()), parse_constant=no_constants)
    assert out["bootstrap"]["se"]["alpha"] is None and isinstance(out["bootstrap"]["ci"]["alpha"][0], float)


@pytest.mark.parametrize("command", ["fit", "isoflop", "envelope", "compare", "design"])
def test_one_resample_is_refused_as_no_interval(runs_csv, capsys, command):
    """One resample has no spread: its '95% interval' would be a point (envelope printed [0.906, 0.906]
    beside a = 0.588). Every command that takes --bootstrap refuses 1 before reading the table."""
    extra = {"compare": [str(runs_csv)], "design": ["--target", "1e22", "--budget-left", "1e22"]}.get(command, [])
    assert main([command, str(runs_csv), *extra, "--bootstrap", "1"]) == 2
    err = capsys.readouterr().err
    assert "--bootstrap 1: one resample gives no interval" in err and err.count("\n") == 1


def test_header_names_are_stripped_like_the_cells(runs_csv, capsys):
    runs_csv.write_text(runs_csv.read_text().replace(",", ", "))
    out = run_json(capsys, runs_csv, "--n-col", "params", "--d-col", "tokens", "--loss-col", "final_loss")
    assert out["n_rows"] == 40 and out["params"]["alpha"] == pytest.approx(TRUE.alpha, rel=1e-4)


def test_human_output_is_a_table(runs_csv, capsys):
    assert main(["fit", str(runs_csv), "--n-col", "params", "--d-col", "tokens", "--loss-col", "final_loss",
                 "--bootstrap", "20"]) == 0
    out = capsys.readouterr().out
    assert "status: converged" in out and "95% interval" in out
    lines = out.splitlines()
    head = next(i for i, line in enumerate(lines) if "estimate" in line)
    assert [line.split()[0] for line in lines[head + 1:head + 8]] == ["E", "A", "B", "alpha", "beta", "a", "b"]


def test_dataset_roles_supply_the_columns(mirror, capsys):
    out = run_json(capsys, "--dataset", "epoch-chinchilla", "--drop-highest", "5")
    # The registry's roles say N is 'Model Size' and C 'Training FLOP', so D = C/(6N): Epoch's fit.
    assert out["n_rows"] == 240 and out["params"]["beta"] == pytest.approx(0.3672, abs=0.002)


@pytest.mark.parametrize("argv, message", [
    (["--n-col", "nope", "--d-col", "tokens", "--loss-col", "final_loss"], "no column 'nope'"),
    (["--n-col", "params", "--d-col", "tokens", "--loss-col", "final_loss", "--drop-highest", "35"],
     "at least 10 runs"),
    (["--n-col", "params", "--d-col", "tokens", "--loss-col", "final_loss", "--drop-highest", "-1"],
     "must be >= 0"),
    (["--n-col", "params", "--d-col", "tokens"], "no column 'loss'"),
    (["--n-col", "params", "--d-col", "tokens", "--loss-col", "final_loss", "--bootstrap", "5", "--seed", "-1"],
     "--seed must be >= 0"),
    (["--n-col", "params", "--d-col", "tokens", "--loss-col", "final_loss", "--bootstrap-by", "params"],
     "--bootstrap-by params needs --bootstrap K"),
    (["--n-col", "params", "--d-col", "tokens", "--loss-col", "final_loss", "--bootstrap", "5",
      "--bootstrap-by", "model"], "no column 'model' to group rows by"),
])
def test_bad_arguments_exit_2_with_one_line(runs_csv, capsys, argv, message):
    assert main(["fit", str(runs_csv), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


@pytest.mark.parametrize("edit, message", [
    (lambda rows: rows[:3] + [rows[3].replace(rows[3].split(",")[3], "")] + rows[4:], "missing"),
    (lambda rows: rows[:5] + [rows[5].replace(rows[5].split(",")[0], "-1")] + rows[6:], "must be positive"),
    (lambda rows: rows[:2] + [rows[2].replace(rows[2].split(",")[3], "n/a")] + rows[3:], "non-number"),
    (lambda rows: [rows[0]] + [",".join([n, f"{20 * float(n):.17g}", c, loss]) for n, _, c, loss in
                               (r.split(",") for r in rows[1:])], "D ∝ N"),  # 20 tokens per parameter
    (lambda rows: [], "is empty"),
    (lambda rows: [rows[0] + ",params"] + [r + ",1" for r in rows[1:]], "column 'params' twice"),
])
def test_bad_data_exits_2_naming_the_problem(runs_csv, capsys, edit, message):
    rows = runs_csv.read_text().splitlines()
    runs_csv.write_text("\n".join(edit(rows)) + "\n")
    assert main(["fit", str(runs_csv), "--n-col", "params", "--d-col", "tokens", "--loss-col", "final_loss"]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_unreadable_file_and_unknown_dataset_exit_2(tmp_path, capsys):
    assert main(["fit", str(tmp_path / "missing.csv")]) == 2
    assert "missing.csv: no such file" in capsys.readouterr().err
    assert main(["fit", str(tmp_path)]) == 2  # a directory
    assert "is a folder, not a file" in capsys.readouterr().err
    assert main(["fit", "--dataset", "epoch-chinchila"]) == 2
    assert "did you mean epoch-chinchilla" in capsys.readouterr().err


def test_subprocess_exit_code_and_no_traceback(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("N,D,loss\n1,2,3\n")
    proc = subprocess.run([sys.executable, "-m", "scalinglab", "fit", str(bad)], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.startswith("scalinglab fit: error:") and "Traceback" not in proc.stderr


def heavy_modules_after(argv: list[str]) -> str:
    """The heavy libraries loaded after running `scalinglab ARGV` in a fresh interpreter, as printed."""
    code = ("import sys; from scalinglab.cli import main; "
            f"main({argv!r}); "
            "print(sorted(m for m in ('torch', 'pandas', 'scipy', 'statsmodels', 'matplotlib', 'seaborn') "
            "if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return proc.stdout.strip().splitlines()[-1]


def test_fit_start_imports_no_heavy_modules(runs_csv):
    argv = ["fit", str(runs_csv), "--n-col", "params", "--d-col", "tokens", "--loss-col", "final_loss"]
    assert heavy_modules_after(argv) == "[]"


# --- held-out checks: --where, --holdout, --predict ---------------------------

FIT_COLS = ["--n-col", "params", "--d-col", "tokens", "--loss-col", "final_loss"]


def test_holdout_json_predicts_unseen_rows(runs_csv, capsys):
    out = run_json(capsys, runs_csv, *FIT_COLS, "--holdout", "tokens>1e11")
    tokens = np.array([float(r.split(",")[1]) for r in runs_csv.read_text().splitlines()[1:]])
    held = out["holdout"]
    assert held["conditions"] == ["tokens>1e11"]
    assert [r["row"] for r in held["rows"]] == list(np.flatnonzero(tokens > 1e11))
    assert out["n_rows"] == held["n_train"] == int((tokens <= 1e11).sum())
    # Noiseless runs of one law: the held-out losses are predicted to the solver's tolerance.
    assert held["summary"]["max_abs_rel_error"] < 1e-6
    assert all(r["actual"] == pytest.approx(TRUE.loss(r["N"], r["D"]), rel=1e-12) for r in held["rows"])


def test_where_selects_rows_and_holdout_reports_intervals(runs_csv, capsys):
    # A second group of runs from another law: --where must keep it out of the fit.
    other = ScalingLaw(E=2.5, A=480.0, B=2100.0, alpha=0.35, beta=0.37)
    rows = runs_csv.read_text().splitlines()
    extra = [f"{n},{d},{c},{other.loss(float(n), float(d)):.17g}"
             for n, d, c, _ in (r.split(",") for r in rows[1:21])]
    runs_csv.write_text("\n".join([rows[0] + ",group"] + [r + ",a" for r in rows[1:]]
                                  + [r + ",b" for r in extra]) + "\n")
    out = run_json(capsys, runs_csv, *FIT_COLS, "--where", "group==a", "--holdout", "params>3e9",
                   "--holdout", "tokens>2e11", "--bootstrap", "30")
    assert out["where"] == ["group==a"] and out["params"]["E"] == pytest.approx(TRUE.E, rel=1e-4)
    assert all(r["row"] < 40 for r in out["holdout"]["rows"])  # no group-b row predicted
    assert all(len(r["interval"]) == 2 for r in out["holdout"]["rows"])
    assert out["holdout"]["summary"]["level"] == 0.95


def test_predict_other_csv(runs_csv, tmp_path, capsys):
    new = tmp_path / "new.csv"
    N, D = np.array([3e10, 1e11]), np.array([1e12, 5e12])  # beyond every fitted run
    new.write_text("params,tokens,final_loss\n" + "".join(f"{n},{d},{TRUE.loss(n, d):.17g}\n"
                                                          for n, d in zip(N, D)))
    out = run_json(capsys, runs_csv, *FIT_COLS, "--predict", new)
    assert out["predict"]["source"] == str(new) and out["n_rows"] == 40
    assert [r["row"] for r in out["predict"]["rows"]] == [0, 1]
    assert out["predict"]["summary"]["max_abs_rel_error"] < 1e-6


def test_holdout_human_output_is_a_table(runs_csv, capsys):
    assert main(["fit", str(runs_csv), *FIT_COLS, "--holdout", "tokens>1e11", "--bootstrap", "20"]) == 0
    out = capsys.readouterr().out
    assert "runs held out (tokens>1e11); the law was fitted on" in out
    assert "|rel err|: mean" in out and "95% interval" in out


@pytest.mark.parametrize("argv, message", [
    (["--holdout", "tokens"], "'tokens': expected COL OP VALUE"),
    (["--holdout", "tokns>1e11"], "no column 'tokns'"),
    (["--holdout", "tokens>many"], "'many' is not a number"),
    (["--holdout", "tokens>1e20"], "holds out none of the 40 selected rows"),
    (["--holdout", "tokens>0"], "leaving none to fit"),
    (["--where", "params<0", "--holdout", "tokens>1e11"], "matches none of the 40 rows"),
    (["--where", "params<0"], "matches none of the 40 rows"),
    (["--where", "params=>1"], "no column 'params='"),  # '=>' is not an operator
])
def test_bad_conditions_exit_2_with_one_line(runs_csv, capsys, argv, message):
    assert main(["fit", str(runs_csv), *FIT_COLS, *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and str(runs_csv) in err


def test_predict_names_the_other_file(runs_csv, tmp_path, capsys):
    bad = tmp_path / "new.csv"
    bad.write_text("params,tokens\n1e9,1e11\n")
    assert main(["fit", str(runs_csv), *FIT_COLS, "--predict", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}: no column 'final_loss'" in err and err.count("\n") == 1


def test_holdout_start_imports_no_heavy_modules(runs_csv):
    argv = ["fit", str(runs_csv), *FIT_COLS, "--where", "params>0", "--holdout", "tokens>1e11"]
    assert heavy_modules_after(argv) == "[]"


def test_gadre_holdout_from_the_registry(mirror, capsys):
    out = run_json(capsys, "--dataset", "gadre2024-final-losses", "--where", "dataset==rpj",
                   "--where", "val_data~c4_val", "--holdout", "chinchilla_multiplier>1", "--holdout", "params>1e9")
    # 4 sizes × M 0.25, 0.5, 1 fitted; 19 over-trained small runs and the 1.4B (M 1, 32) and 6.9B held out.
    assert out["n_rows"] == 12 and out["holdout"]["summary"]["n"] == 23
    assert out["holdout"]["summary"]["mean_rel_error"] < 0  # the fit promises too low a loss: see test_holdout


def test_compute_says_what_to_train_at_a_budget(runs_csv, capsys):
    out = run_json(capsys, runs_csv, "--n-col", "params", "--d-col", "tokens", "--loss-col", "final_loss",
                   "--compute", "1e22", "--compute", "1e24", "--bootstrap", "40")
    rows = out["compute_optimal"]
    assert [r["C"] for r in rows] == [1e22, 1e24]
    for r in rows:
        # Noiseless runs: the fitted law is the true one (to the solver's 1e-4 above), so is its allocation.
        assert r["n_opt"] == pytest.approx(TRUE.n_opt(r["C"]), rel=1e-3)
        assert r["d_opt"] * r["n_opt"] * 6 == pytest.approx(r["C"], rel=1e-9)  # on the budget by construction
        assert r["loss"] == pytest.approx(TRUE.loss(TRUE.n_opt(r["C"]), TRUE.d_opt(r["C"])), rel=1e-4)
        for k in ("n_opt", "d_opt", "tokens_per_param", "loss"):
            lo, hi = r["ci"][k]
            assert lo <= r[k] * (1 + 1e-6) and r[k] <= hi * (1 + 1e-6)
    assert rows[1]["n_opt"] / rows[0]["n_opt"] == pytest.approx(100 ** TRUE.a, rel=1e-3)  # N_opt ∝ C^a
    assert main(["fit", str(runs_csv), "--n-col", "params", "--d-col", "tokens", "--loss-col", "final_loss",
                 "--compute", "1e22"]) == 0
    text = capsys.readouterr().out
    assert "compute-optimal allocation at C = 1e+22 FLOP" in text and "tokens/param" in text


@pytest.mark.parametrize("value", ["-5", "0", "nan"])
def test_a_bad_compute_budget_exits_2_with_one_line(runs_csv, capsys, value):
    assert main(["fit", str(runs_csv), "--n-col", "params", "--d-col", "tokens", "--loss-col", "final_loss",
                 f"--compute={value}"]) == 2
    err = capsys.readouterr().err
    assert "compute budgets must be positive numbers of FLOP" in err and err.count("\n") == 1


@pytest.mark.parametrize("argv", [["fit", "runs.csv", "--holdout", "N>1", "--predict", "x.csv"],
                                  ["fit", "--bootstrap", "many", "runs.csv"], ["fitt"], ["isoflop"]],
                         ids=["exclusive flags", "bad int", "unknown command", "missing source"])
def test_usage_mistakes_are_one_line_too(capsys, argv):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.count("\n") == 1 and "error:" in err and "--help" in err


# --- constraints (--fix, --tie-exponents) and --plot ---------------------------

TIED = ScalingLaw(E=1.8, A=480.0, B=2100.0, alpha=0.36, beta=0.36)


@pytest.fixture
def tied_csv(tmp_path):
    """8 noiseless runs of a law with alpha = beta: too few for the free fit, enough for a tied one."""
    N = np.array([1e8, 1e8, 3e8, 3e8, 1e9, 1e9, 3e9, 3e9])
    D = np.array([2e9, 2e10, 5e9, 5e10, 1e10, 1e11, 2e10, 2e11])
    path = tmp_path / "tied.csv"
    path.write_text("N,D,loss\n" + "".join(f"{n:.17g},{d:.17g},{TIED.loss(n, d):.17g}\n" for n, d in zip(N, D)))
    return path


def test_eight_runs_need_a_constraint(tied_csv, capsys):
    assert main(["fit", str(tied_csv)]) == 2
    assert "need at least 10 runs to fit E, A, B, alpha, beta; got 8" in capsys.readouterr().err
    out = run_json(capsys, tied_csv, "--tie-exponents", "--bootstrap", "30")
    assert out["tie_exponents"] is True and out["n_free"] == 4 and out["fixed"] == {}
    assert out["params"]["alpha"] == out["params"]["beta"] == pytest.approx(0.36, rel=1e-6) and out["a"] == 0.5
    # Noiseless: every resample that converges is the same law, so no spread in beta either.
    assert out["bootstrap"]["se"]["beta"] == out["bootstrap"]["se"]["alpha"] < 1e-6


def test_fix_is_case_insensitive_repeatable_and_in_the_json(runs_csv, capsys):
    out = run_json(capsys, runs_csv, *FIT_COLS, "--fix", "e=1.8", "--fix", "ALPHA=0.35", "--bootstrap", "20",
                   "--compute", "1e22")
    assert out["fixed"] == {"E": 1.8, "alpha": 0.35} and out["n_free"] == 3
    assert out["params"]["E"] == 1.8 and out["params"]["alpha"] == 0.35 and out["params"]["beta"] == pytest.approx(TRUE.beta, rel=1e-6)
    assert out["bootstrap"]["se"]["E"] == 0 and out["bootstrap"]["ci"]["alpha"] == [0.35, 0.35]
    assert out["compute_optimal"][0]["n_opt"] == pytest.approx(TRUE.n_opt(1e22), rel=1e-4)


def test_human_output_marks_fixed_and_tied_parameters(runs_csv, capsys):
    assert main(["fit", str(runs_csv), *FIT_COLS, "--fix", "E=1.8", "--tie-exponents", "--bootstrap", "20"]) == 0
    out = capsys.readouterr().out
    assert "constraints: E fixed at 1.8, beta tied to alpha; 3 free parameters (at least 6 runs needed)" in out
    table = out.split("\n\n")[1].splitlines()[1:]  # the parameter rows, between blank lines
    rows = {line.split()[0]: line for line in table}
    assert list(rows) == ["E", "A", "B", "alpha", "beta", "a", "b"]
    assert rows["E"].split()[1:] == ["1.8", "fixed"]
    assert "= alpha (tied)" in rows["beta"] and "[" not in rows["beta"]
    assert "[" in rows["alpha"] and "= 0.5" in rows["a"]


@pytest.mark.parametrize("argv, message", [
    (["--fix", "E"], "--fix 'E': expected NAME=VALUE"),
    (["--fix", "gamma=1"], "--fix gamma=1: law chinchilla has no parameter 'gamma'; its parameters are E, A, B, alpha, beta"),
    (["--fix", "E=high"], "--fix E=high: fixed E must be a number, not 'high'"),
    (["--fix", "A=-3"], "--fix A=-3: fixed A must be a positive number, not -3"),
    (["--fix", "alpha=0", "--fix", "beta=0"], "--fix alpha=0: fixed alpha must be positive, not 0"),
    (["--fix", "alpha=0.3", "--fix", "beta=0.4", "--tie-exponents"],
     "--fix alpha=0.3 --fix beta=0.4 --tie-exponents: tied exponents need alpha = beta"),
    (["--fix", "E=1", "--fix", "e=2"], "E is fixed twice (1 and 2)"),
    (["--fix", "E=1", "--fix", "A=1", "--fix", "B=1", "--fix", "beta=0.3", "--tie-exponents"], "nothing to fit"),
    (["--fix", "E=2.5"], "E = 2.5 puts the law at 2.5 or above"),
    (["--plot", "fit.jpg"], "--plot fit.jpg: the file must end in .png, .pdf, .svg"),
    (["--plot", "no/such/folder/fit.png"], "--plot no/such/folder/fit.png: no folder"),
])
def test_bad_constraints_and_plot_paths_exit_2_with_one_line(runs_csv, capsys, argv, message):
    assert main(["fit", str(runs_csv), *FIT_COLS, *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_plot_writes_a_png_with_held_out_runs(runs_csv, tmp_path, capsys):
    png = tmp_path / "fit.png"
    out = run_json(capsys, runs_csv, *FIT_COLS, "--holdout", "tokens>1e11", "--tie-exponents", "--plot", png)
    assert out["plot"] == str(png)
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000  # a figure, not an empty canvas
    from matplotlib import image

    h, w = image.imread(png).shape[:2]
    assert w > 600 and h > 600
    svg = tmp_path / "fit.svg"
    assert main(["fit", str(runs_csv), *FIT_COLS, "--plot", str(svg)]) == 0
    assert f"plot written to {svg}" in capsys.readouterr().out
    assert svg.read_text().lstrip().startswith("<?xml") and "<svg" in svg.read_text()


def test_a_bad_plot_path_fails_before_the_fit(runs_csv, tmp_path, capsys):
    # A bootstrap of 10⁵ resamples (the most allowed) would take minutes: the error must come first.
    assert main(["fit", str(runs_csv), *FIT_COLS, "--bootstrap", "100000", "--plot", str(tmp_path / "f.gif")]) == 2
    assert "--plot" in capsys.readouterr().err and not list(tmp_path.glob("f.*"))


def test_constraints_import_no_heavy_modules_and_plot_imports_only_matplotlib(runs_csv, tmp_path):
    argv = ["fit", str(runs_csv), *FIT_COLS, "--fix", "E=1.8", "--tie-exponents"]
    assert heavy_modules_after(argv) == "[]"
    assert heavy_modules_after(argv + ["--plot", str(tmp_path / "f.png")]) == "['matplotlib']"


@pytest.fixture
def models_csv(tmp_path):
    """12 models, 6 rows each (checkpoints of one run): each model's rows share one offset, as a model's
    seed and data order shift all its checkpoints together, plus a little per-row noise."""
    rng = np.random.default_rng(3)
    lines = ["model,params,tokens,loss"]
    for m, n in enumerate(np.geomspace(2e7, 5e9, 12)):
        offset = rng.normal(0, 0.02)
        for d in np.geomspace(2e9, 2e11, 6):
            loss = TRUE.loss(n, d) * np.exp(offset + rng.normal(0, 0.002))
            lines.append(f"m{m},{n:.17g},{d:.17g},{loss:.17g}")
    path = tmp_path / "models.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_bootstrap_by_model_resamples_models_and_widens_the_intervals(models_csv, capsys):
    common = (models_csv, "--n-col", "params", "--d-col", "tokens", "--bootstrap", "400", "--seed", "0")
    rows = run_json(capsys, *common)
    models = run_json(capsys, *common, "--bootstrap-by", "model")
    assert rows["bootstrap"]["unit"] == "runs" and rows["bootstrap"]["n_units"] == 72
    assert models["bootstrap"]["unit"] == "model" and models["bootstrap"]["n_units"] == 12
    assert models["params"]["alpha"] == rows["params"]["alpha"]  # the point fit does not depend on how it is resampled
    # The offsets are shared within a model, so 72 rows carry about 12 rows' worth of information on N's term:
    # resampling rows treats them as independent and the interval on alpha comes out several times too
    # narrow. A factor of 1.5 leaves room for the bootstrap's own noise at 400 resamples.
    width = {k: np.diff(out["bootstrap"]["ci"]["alpha"])[0] for k, out in (("rows", rows), ("models", models))}
    assert width["models"] > 1.5 * width["rows"], width
    # Human-readable output names what was resampled.
    assert main(["fit", *map(str, common), "--bootstrap-by", "model"]) == 0
    assert "resamples of model, 12 groups" in capsys.readouterr().out


def test_bootstrap_by_model_applies_to_the_selected_and_the_held_out_fits(models_csv, capsys):
    base = (models_csv, "--n-col", "params", "--d-col", "tokens", "--bootstrap", "100", "--bootstrap-by", "model")
    picked = run_json(capsys, *base, "--where", "params<1e9")
    assert picked["bootstrap"]["n_units"] == sum(n < 1e9 for n in np.geomspace(2e7, 5e9, 12))
    held = run_json(capsys, *base, "--holdout", "params>1e9")
    assert held["holdout"]["n_groups"] == picked["bootstrap"]["n_units"]


def test_held_out_sizes_get_curves_of_their_own():
    from scalinglab.fitting.plot import plotted_sizes

    fitted = np.geomspace(1e7, 1e9, 12)
    held = np.array([3e9, 7e9, 7e9])
    sizes = plotted_sizes(fitted, held)
    # Both held-out sizes are drawn (else the 1e9 curve would be stretched over their tokens), and the
    # total stays at the cap.
    assert {3e9, 7e9} <= set(sizes) and len(sizes) <= 6
    assert set(plotted_sizes(fitted)) <= set(fitted) and len(plotted_sizes(fitted)) == 6


def test_a_term_negligible_at_every_run_is_reported_not_identified(runs_csv, capsys):
    # alpha fixed at 10 makes A/N^alpha ~ 1e-70 of the loss: A has no gradient, stays at its start and would
    # otherwise print with a zero-width interval as if it were known.
    out = run_json(capsys, runs_csv, "--n-col", "params", "--d-col", "tokens", "--loss-col", "final_loss",
                   "--fix", "alpha=10", "--bootstrap", "20")
    assert out["status"] == "unidentified" and out["unidentified"] == ["A"]
    assert main(["fit", str(runs_csv), "--n-col", "params", "--d-col", "tokens", "--loss-col", "final_loss",
                 "--fix", "alpha=10", "--bootstrap", "20"]) == 0
    text = capsys.readouterr().out
    assert "A not identified" in text and "not identified" in next(r for r in text.splitlines() if r.startswith("A "))


def test_a_bootstrap_whose_replicates_all_fail_says_so(runs_csv, capsys):
    assert main(["fit", str(runs_csv), "--n-col", "params", "--d-col", "tokens", "--loss-col", "final_loss",
                 "--fix", "A=1e300", "--bootstrap", "10"]) == 0
    assert "all 10 replicates failed" in capsys.readouterr().out


def test_blank_group_labels_are_an_error_not_a_group(models_csv, tmp_path, capsys):
    lines = models_csv.read_text().splitlines()
    lines[5] = "," + lines[5].split(",", 1)[1]  # one row without a model id
    bad = tmp_path / "blank.csv"
    bad.write_text("\n".join(lines) + "\n")
    assert main(["fit", str(bad), "--n-col", "params", "--d-col", "tokens", "--bootstrap", "5",
                 "--bootstrap-by", "model"]) == 2
    err = capsys.readouterr().err
    assert "column 'model' is blank in 1 row(s) (first: line 6)" in err and err.count("\n") == 1


@pytest.mark.parametrize("law", [[], ["--law", "kaplan"]])
def test_predicting_a_header_only_table_is_one_line(runs_csv, tmp_path, capsys, law):
    """A --predict table with a header and no rows was a TypeError traceback (no --where to name)."""
    empty = tmp_path / "new_runs.csv"
    empty.write_text("params,tokens,flops,final_loss\n")
    cols = ["--n-col", "params", "--d-col", "tokens", "--loss-col", "final_loss"]
    assert main(["fit", str(runs_csv), *cols, *law, "--predict", str(empty)]) == 2
    err = capsys.readouterr().err
    assert f"{empty}: the table has no rows (a header only)" in err and err.count("\n") == 1
