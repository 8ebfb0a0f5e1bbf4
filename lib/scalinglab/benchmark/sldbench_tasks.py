"""SLDBench's learning-rate/batch-size task and its domain-mixture task, scored as ``benchmark.sldbench`` scores
the others: fit on the loader's training rows, R² on its test rows under both normalisers (``r2_scores``: the
test targets' variance, and the old one over test and training targets together), beside the published
human-law baselines. Several published forms are candidates for each task; the one scored is chosen on a
validation split of the training rows, never by test R².

- **lr_bsz** (StepFun's sweep; test: the largest N at the largest D). Candidates: Step Law's loss surface
  (Li et al. 2025, "Predictable Scale: Part I", arXiv:2503.04715): a Chinchilla floor in N and D plus quadratic
  penalties in log learning rate and log batch size about an optimum that is a power law in N and D, the
  optimum fitted (``step_surface``) or held at their published fit η* = 1.79 N^−0.713 D^0.307,
  B* = 0.58 D^0.571 tokens (``step_published_optimum``); and the hyperparameter-blind Chinchilla form
  (``chinchilla_blind``). Validation: the training rows of the largest N held out, as the test holds out the
  largest N and D.
- **domain_mixture** (five proportions to five domain losses, one fit per model size, the file's own
  train/eval lists). Candidates, each fitted per output domain and size: Ye et al. 2024's data-mixing law
  (arXiv:2403.16952) L_i = c_i + k_i exp(Σ_j t_ij r_j) (``mixing_law``; t_i5 fixed at 0, since the proportions
  sum to one and a common shift of the t_ij is k_i); its one-domain form L_i = c_i + k_i exp(t_i r_i)
  (``mixing_law_own``); and RegMix's linear regression L_i = Σ_j b_ij r_j (``linear``). Validation: 5-fold
  cross-validation over the training mixtures (the independent unit), the same folds at every size. The
  multi-output R² is SLDBench's: 1 − NMSE per output domain, averaged over the five.

The lr task's test rows sit at D = 1e13, which looks mis-entered (``data/registry/sldbench.toml``); a law with a
data term extrapolates there by two decades of D, so its R² says more about that entry than about the law.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from scalinglab.benchmark.sldbench import BASELINE_R2, r2_scores
from scalinglab.errors import UserError
from scalinglab.fitting.laws import Law, Param
from scalinglab.serialization import to_jsonable

BEST_DISCOVERED_R2 = {"lr_bsz": 0.983}   # the best published agent-discovered law (lr task only)
SEQ_LEN = 2048                           # the sweep's batch size is in sequences of 2,048 tokens
FOLDS = 5
# Step Law's published optimum (Li et al. 2025): η* = 1.79 N^−0.713 D^0.307; B* = 0.58 D^0.571 tokens.
STEP_LR = (np.log(1.79), -0.713, 0.307)
STEP_BS = (np.log(0.58 / SEQ_LEN), 0.571)   # in sequences


# --- the forms ----------------------------------------------------------------------------------------------

def _floor(x, p):
    return p["E"] + p["A"] / x["n"] ** p["alpha"] + p["B"] / x["d"] ** p["beta"]


def _surface(x, p, lr_opt, bs_opt):
    return (_floor(x, p) + p["c_lr"] * (np.log(x["lr"]) - lr_opt) ** 2
            + p["c_bs"] * (np.log(x["bs"]) - bs_opt) ** 2)


def _step_fitted(x, p):
    return _surface(x, p, p["l0"] + p["l1"] * np.log(x["n"]) + p["l2"] * np.log(x["d"]),
                    p["b0"] + p["b1"] * np.log(x["d"]))


def _step_published(x, p):
    return _surface(x, p, STEP_LR[0] + STEP_LR[1] * np.log(x["n"]) + STEP_LR[2] * np.log(x["d"]),
                    STEP_BS[0] + STEP_BS[1] * np.log(x["d"]))


_FLOOR = (Param("E", "the loss floor", 0.0, 10.0, (1.5,)),
          Param("A", "scale of the parameter term", 1e-3, 1e8, (1e2, 1e4), log=True),
          Param("alpha", "exponent of N", 0.0, 2.0, (0.3,)),
          Param("B", "scale of the data term", 1e-3, 1e8, (1e2, 1e4), log=True),
          Param("beta", "exponent of D", 0.0, 2.0, (0.3,)))
_PENALTY = (Param("c_lr", "curvature in log learning rate about its optimum", 0.0, 5.0, (0.02,)),
            Param("c_bs", "curvature in log batch size about its optimum", 0.0, 5.0, (0.02,)))
LR_INPUTS = ("lr", "bs", "n", "d")
STEP_SURFACE = Law(
    name="step_surface", title="loss surface about a power-law optimum in learning rate and batch size",
    formula="L = E + A/N^alpha + B/D^beta + c_lr (ln lr - ln lr*)^2 + c_bs (ln bs - ln bs*)^2, "
            "ln lr* = l0 + l1 ln N + l2 ln D, ln bs* = b0 + b1 ln D",
    citation="Li et al. 2025, Predictable Scale: Part I (Step Law, arXiv:2503.04715): the optimum's power laws; "
             "the surface about it is the quadratic in log hyperparameters their loss landscapes show",
    inputs=LR_INPUTS, target="loss",
    params=_FLOOR + _PENALTY + (
        Param("l0", "log optimal learning rate at N = D = 1", -30.0, 30.0, (STEP_LR[0],)),
        Param("l1", "exponent of N in the optimal learning rate", -3.0, 3.0, (STEP_LR[1],)),
        Param("l2", "exponent of D in the optimal learning rate", -3.0, 3.0, (STEP_LR[2],)),
        Param("b0", "log optimal batch size (sequences) at D = 1", -40.0, 40.0, (STEP_BS[0],)),
        Param("b1", "exponent of D in the optimal batch size", -3.0, 3.0, (STEP_BS[1],))),
    predict=_step_fitted, note="lr: peak learning rate; bs: batch size in sequences; n: non-embedding N")
STEP_PUBLISHED = Law(
    name="step_published_optimum", title="the same surface, the optimum held at Step Law's published fit",
    formula="as step_surface with lr* = 1.79 N^-0.713 D^0.307, bs* = 0.58 D^0.571 / 2048",
    citation=STEP_SURFACE.citation, inputs=LR_INPUTS, target="loss", params=_FLOOR + _PENALTY,
    predict=_step_published, note=STEP_SURFACE.note)
CHINCHILLA_BLIND = Law(
    name="chinchilla_blind", title="Chinchilla's form, blind to learning rate and batch size",
    formula="L = E + A/N^alpha + B/D^beta", citation="Hoffmann et al. 2022 (arXiv:2203.15556)",
    inputs=("n", "d"), target="loss", params=_FLOOR, predict=_floor)

MIX_INPUTS = tuple(f"r{j}" for j in range(1, 6))


def _c_starts(x, y):
    # a floor just under the smallest loss: 20 mixtures per size pin little more, and each start is a solve
    return (0.9 * float(np.min(y)),)


def _mixing(x, p):
    return p["c"] + p["k"] * np.exp(sum(p[f"t{j}"] * x[f"r{j}"] for j in range(1, 5)))


def mixing_law_own(domain: int) -> Law:
    """Ye et al.'s one-domain law for output domain ``domain`` (1-5): its own proportion alone."""
    def predict(x, p):
        return p["c"] + p["k"] * np.exp(p["t"] * x[f"r{domain}"])

    return Law(name="mixing_law_own", title="a domain's loss exponential in its own proportion",
               formula="L_i = c_i + k_i exp(t_i r_i)", citation=MIXING_LAW.citation, inputs=MIX_INPUTS,
               target="loss",
               params=(Param("c", "the loss floor", 0.0, 20.0, _c_starts),
                       Param("k", "scale of the mixture term", 1e-6, 1e3, (1.0,), log=True),
                       Param("t", "rate in the domain's own proportion (negative: more helps)", -30.0, 30.0,
                             (-3.0, -0.5))),
               predict=predict)


def _linear(x, p):
    return sum(p[f"b{j}"] * x[f"r{j}"] for j in range(1, 6))


MIXING_LAW = Law(
    name="mixing_law", title="a domain's loss exponential in a linear combination of the proportions",
    formula="L_i = c_i + k_i exp(sum_j t_ij r_j), t_i5 = 0",
    citation="Ye et al. 2024, Data Mixing Laws (arXiv:2403.16952), their multi-domain law",
    inputs=MIX_INPUTS, target="loss",
    params=(Param("c", "the loss floor", 0.0, 20.0, _c_starts),
            Param("k", "scale of the mixture term (the mixture all of domain 5)", 1e-6, 1e3, (0.5, 2.0), log=True),
            *(Param(f"t{j}", f"rate in proportion {j} relative to proportion 5", -30.0, 30.0, (-1.0, 0.0))
              for j in range(1, 5))),
    predict=_mixing)
LINEAR = Law(
    name="linear", title="a domain's loss linear in the proportions",
    formula="L_i = sum_j b_ij r_j (an intercept is the sum of the b_ij: the proportions sum to one)",
    citation="Liu et al. 2024, RegMix (arXiv:2407.01492), their linear regression", inputs=MIX_INPUTS,
    target="loss", space="linear", objective="squares",
    params=tuple(Param(f"b{j}", f"the loss of the mixture all of domain {j}", -50.0, 50.0, (2.0, 4.0))
                 for j in range(1, 6)),
    predict=_linear)
LR_LAWS = {law.name: law for law in (STEP_SURFACE, STEP_PUBLISHED, CHINCHILLA_BLIND)}
MIX_LAWS = ("mixing_law", "mixing_law_own", "linear")


def mix_law(name: str, domain: int) -> Law:
    if name == "mixing_law_own":
        return mixing_law_own(domain)
    return {"mixing_law": MIXING_LAW, "linear": LINEAR}[name]


# --- the tasks ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class MultiTask:
    """Rows with inputs by role and a target matrix (one column per output); ``groups``: one fit per group."""

    name: str
    x_train: dict[str, np.ndarray]
    y_train: np.ndarray            # (rows, outputs)
    x_test: dict[str, np.ndarray]
    y_test: np.ndarray
    g_train: np.ndarray
    g_test: np.ndarray


def lr_task() -> MultiTask:
    """The loader's rows: ``smooth loss`` ≤ 4; test: D at its largest and N at its largest (117 rows)."""
    from scalinglab import data

    df = data.load("sldbench-lr")
    df = df[df["smooth loss"] <= 4.0]
    test = ((df["D"] == df["D"].max()) & (df["N"] == df["N"].max())).to_numpy()
    cols = {"lr": "lr", "bs": "bs", "n": "N", "d": "D"}
    x = {r: df[c].to_numpy(float) for r, c in cols.items()}
    y = df[["smooth loss"]].to_numpy(float)
    one = np.zeros(len(df), dtype=object)
    return MultiTask("lr_bsz", {k: v[~test] for k, v in x.items()}, y[~test], {k: v[test] for k, v in x.items()},
                     y[test], one[~test], one[test])


def mixture_task() -> MultiTask:
    """The JSON's own train/eval lists per model size (the empty 1B group skipped, as the loader does)."""
    from scalinglab import data

    path = data.locate("sldbench-domain-mixture")
    raw = json.loads(path.read_text())
    parts: dict[str, list] = {"train": [], "eval": []}
    for size, groups in raw.items():
        if size == "1B":
            continue
        for split in parts:
            for i, point in enumerate(groups.get(split, [])):
                r, loss = np.asarray(point["proportions"], float), np.asarray(point["loss"], float)
                if r.shape != (5,) or loss.shape != (5,) or not (np.isfinite(r).all() and np.isfinite(loss).all()):
                    raise UserError(f"{path}: {size} {split}[{i}] needs five finite proportions and five losses")
                parts[split].append((size, r, loss))
    (tr, te) = parts["train"], parts["eval"]

    def x_of(rows):
        r = np.array([p[1] for p in rows])
        return {f"r{j + 1}": r[:, j] for j in range(5)}

    return MultiTask("domain_mixture", x_of(tr), np.array([p[2] for p in tr]), x_of(te), np.array([p[2] for p in te]),
                     np.array([p[0] for p in tr], dtype=object), np.array([p[0] for p in te], dtype=object))


# --- fitting, scoring, choosing -----------------------------------------------------------------------------

def r2_multi(y_test, pred, y_train) -> tuple[float, float]:
    """SLDBench's R² of a multi-output prediction: ``r2_scores`` per output column, averaged (1 − mean NMSE)."""
    y_test, pred, y_train = (np.asarray(a, float).reshape(len(a), -1) for a in (y_test, pred, y_train))
    if pred.shape != y_test.shape or y_train.shape[1] != y_test.shape[1]:
        raise UserError(f"R²: predictions {pred.shape}, test targets {y_test.shape} and training targets "
                        f"{y_train.shape} do not match")
    scores = np.array([r2_scores(y_test[:, k], pred[:, k], y_train[:, k]) for k in range(y_test.shape[1])])
    return float(scores[:, 0].mean()), float(scores[:, 1].mean())


def fit_predict(task_name: str, law_name: str, x_fit, y_fit, g_fit, x_pred, g_pred) -> np.ndarray:
    """Fit ``law_name`` on the fit rows (per group, per output) and predict the other rows."""
    from scalinglab.fitting.laws import fit_law

    y_fit = np.asarray(y_fit, float).reshape(len(y_fit), -1)
    out = np.full((len(g_pred), y_fit.shape[1]), np.nan)
    for g in np.unique(g_pred):
        a, b = g_fit == g, g_pred == g
        for k in range(y_fit.shape[1]):
            law = LR_LAWS[law_name] if task_name == "lr_bsz" else mix_law(law_name, k + 1)
            fit = fit_law(law, {r: v[a] for r, v in x_fit.items() if r in law.inputs}, y_fit[a, k])
            out[b, k] = fit.predict({r: v[b] for r, v in x_pred.items() if r in law.inputs})
    return out


def select_by_validation(candidates: Sequence[str], fit_and_predict: Callable, y_train: np.ndarray,
                         splits: Sequence[tuple[np.ndarray, np.ndarray]]) -> tuple[str, dict[str, float]]:
    """The candidate with the highest validation R² (held-out rows pooled over ``splits``), and each candidate's
    score. It sees training rows only: ``fit_and_predict(name, fit_idx, val_idx)`` predicts rows ``val_idx`` of
    the training set from a fit on rows ``fit_idx``. A candidate whose fit fails scores −inf."""
    y_train = np.asarray(y_train, float).reshape(len(y_train), -1)
    held = np.concatenate([v for _, v in splits])
    scores = {}
    for name in candidates:
        pred = np.full_like(y_train, np.nan)
        for fit_idx, val_idx in splits:
            pred[val_idx] = np.asarray(fit_and_predict(name, fit_idx, val_idx), float).reshape(len(val_idx), -1)
        ok = np.isfinite(pred[held]).all()
        scores[name] = r2_multi(y_train[held], pred[held], y_train[held])[0] if ok else -np.inf
    return max(scores, key=lambda k: scores[k]), scores


def validation_splits(task: MultiTask, *, folds: int = FOLDS, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """lr_bsz: one split, the largest N's training rows held out; domain_mixture: ``folds`` folds of mixtures,
    assigned within each model size so every fold holds some of every size."""
    if task.name == "lr_bsz":
        val = task.x_train["n"] == task.x_train["n"].max()
        return [(np.flatnonzero(~val), np.flatnonzero(val))]
    rng = np.random.default_rng(seed)
    fold = np.empty(len(task.g_train), int)
    for g in np.unique(task.g_train):
        rows = np.flatnonzero(task.g_train == g)
        fold[rows] = rng.permutation(np.arange(len(rows)) % folds)
    return [(np.flatnonzero(fold != f), np.flatnonzero(fold == f)) for f in range(folds)]


def score(task: MultiTask, candidates: Sequence[str], splits=None) -> dict[str, Any]:
    """The law chosen on the validation splits, then fitted on all training rows and scored on the test rows;
    every candidate's test R² is listed too (``rows``), but only the chosen one is the task's score."""
    splits = validation_splits(task) if splits is None else splits

    def on_train(name, fit_idx, val_idx):
        return fit_predict(task.name, name, {r: v[fit_idx] for r, v in task.x_train.items()}, task.y_train[fit_idx],
                           task.g_train[fit_idx], {r: v[val_idx] for r, v in task.x_train.items()},
                           task.g_train[val_idx])

    chosen, val = select_by_validation(candidates, on_train, task.y_train, splits)
    rows = []
    for name in candidates:
        pred = fit_predict(task.name, name, task.x_train, task.y_train, task.g_train, task.x_test, task.g_test)
        r2, r2_v0 = r2_multi(task.y_test, pred, task.y_train) if np.isfinite(pred).all() else (np.nan, np.nan)
        rows.append({"task": task.name, "variant": "", "law": name, "r2": r2, "r2_v0": r2_v0,
                     "n_train": len(task.y_train), "n_test": len(task.y_test), "validation_r2": val[name],
                     "chosen": name == chosen})
    pick = next(r for r in rows if r["chosen"])
    return {"chosen": chosen, "r2": pick["r2"], "r2_v0": pick["r2_v0"], "validation_r2": val, "rows": rows,
            "baseline_r2": BASELINE_R2[task.name], "best_discovered_r2": BEST_DISCOVERED_R2.get(task.name),
            "validation": ("the largest N's training rows held out" if task.name == "lr_bsz"
                           else f"{len(splits)}-fold cross-validation over training mixtures, within each size")}


def lr_test_d_what_if(task: MultiTask, law_name: str, d: float = 1e11) -> dict[str, Any]:
    """The chosen lr law's R² with the test rows' D read as ``d`` instead of the file's 1e13: a sensitivity to
    the suspected mis-entry (the current task description's data range tops at 1e11), not a score."""
    x = dict(task.x_test)
    x["d"] = np.full_like(x["d"], d)
    pred = fit_predict(task.name, law_name, task.x_train, task.y_train, task.g_train, x, task.g_test)
    r2, r2_v0 = r2_multi(task.y_test, pred, task.y_train)
    return {"law": law_name, "test_d": d, "r2": r2, "r2_v0": r2_v0}


PROFILES = {"full": {"lr": tuple(LR_LAWS), "mix": MIX_LAWS},
            "smoke": {"lr": ("step_published_optimum", "chinchilla_blind"), "mix": ("mixing_law_own", "linear")}}


def score_tasks(profile: str = "full") -> dict[str, Any]:
    """Both tasks: {"lr_bsz": ..., "domain_mixture": ...}, each with the chosen law, its R² under both
    normalisers, every candidate's validation R², the candidates' rows and the baselines; lr_bsz also the
    chosen law's R² were the test D 1e11 (``what_if_test_d_1e11``). ``smoke``: two candidates a task (the
    cheaper ones; the choice may then differ from full's), the same keys."""
    if profile not in PROFILES:
        raise UserError(f"profile {profile!r}: expected one of {', '.join(PROFILES)}")
    cfg = PROFILES[profile]
    lr = lr_task()
    lr_scores = score(lr, cfg["lr"])
    lr_scores["what_if_test_d_1e11"] = lr_test_d_what_if(lr, lr_scores["chosen"])
    return to_jsonable({"profile": profile, "lr_bsz": lr_scores,
                        "domain_mixture": score(mixture_task(), cfg["mix"]),
                        "normalisers": {"r2": "1 - MSE/Var(y_test)", "r2_v0": "1 - MSE/Var(y_test and y_train)"}})


def headline(scores: dict[str, Any]) -> dict[str, Any]:
    """What a notebook's summary.json keeps of ``score_tasks``: per task the chosen law, its R² under both
    normalisers beside the baselines, every candidate's validation and test R²; lr_bsz's D sensitivity."""
    out = {}
    for t in ("lr_bsz", "domain_mixture"):
        s = scores[t]
        out[t] = {"chosen": s["chosen"], "r2": s["r2"], "r2_v0": s["r2_v0"], "human_r2": s["baseline_r2"],
                  "best_discovered_r2": s["best_discovered_r2"], "validation_r2": s["validation_r2"],
                  "test_r2_by_law": {r["law"]: r["r2"] for r in s["rows"]}, "validation": s["validation"]}
    w = scores["lr_bsz"].get("what_if_test_d_1e11")
    if w:
        out["lr_bsz"]["what_if_test_d_1e11"] = {"r2": w["r2"], "r2_v0": w["r2_v0"]}
    return to_jsonable(out)


def summary(scores: dict[str, Any]) -> str:
    """The two tasks as lines: chosen law, R² (both normalisers), baseline, and the candidates' validation R²."""
    lines = [f"{'task':<16}{'chosen law':<24}{'R2':>8}{'R2 (v0)':>9}{'human':>8}{'best found':>11}"]
    for t in ("lr_bsz", "domain_mixture"):
        s = scores[t]
        best = s["best_discovered_r2"]
        lines.append(f"{t:<16}{s['chosen']:<24}{s['r2']:>8.3f}{s['r2_v0']:>9.3f}{s['baseline_r2']:>8.3f}"
                     f"{'' if best is None else f'{best:.3f}':>11}")
        lines.append("  validation R²: " + ", ".join(f"{k} {v:.3f}" for k, v in s["validation_r2"].items()))
    w = scores["lr_bsz"].get("what_if_test_d_1e11")
    if w:
        lines.append(f"  lr_bsz with the test rows' D read as {w['test_d']:.0e} (a sensitivity, not a score): "
                     f"R2 {w['r2']:.3f}, R2 (v0) {w['r2_v0']:.3f}")
    return "\n".join(lines)
