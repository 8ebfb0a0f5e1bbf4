"""The corpus probes as a plain two-choice cloze, and our exported ladders scored on it (notebook 07, part 5).

A probe phrase ``w1 w2 w3 w4`` with its distractor ``x`` (``memo_probes``; ``data/probes/PROVENANCE.md``) becomes
the prompt ``w1 w2 w3`` with classes ``[" w4", " x"]``, answer ``w4``: next-word prediction, without the probes'
instruction (which asks for the distractor and makes an inverse-scaling task). Task loss is Bhagia et al.'s
(2024): the correct continuation's negative log-probability in bits per UTF-8 byte (its leading space counted),
averaged over items; accuracy is the share of items whose correct class has the higher summed log-probability
(the prize's argmax, ``scoring.classification_metrics``).

The models are the ``cpu-downstream`` sweep (four shapes at 2.5, 5 and 10 tokens per parameter) and the
``cpu-inverse`` sweep (six shapes at 20), both exported under ``data/models/``. ``python -m
scalinglab.inverse_scaling.probe_cloze`` scores all of them into one committed table, one row per model
(``data/models/downstream-ladder/scores.csv``; ``--check`` re-scores and compares). torch is imported only inside
the functions that load and score models; the table's reader and checks need pandas alone.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from scalinglab.errors import UserError

PROBES = "memo-probes-gutenberg"
LADDER_FOLDERS = ("downstream-ladder", "inverse-ladder")
SCORES = "downstream-ladder/scores.csv"
# the table's columns, in order (one row per model)
COLUMNS = ("run_id", "model", "folder", "role", "width", "depth", "n_standard", "n_non_embedding", "tokens",
           "tokens_per_param", "compute", "val_loss", "items", "task_loss", "task_loss_se", "accuracy",
           "accuracy_se")


def models_dir() -> Path:
    """``data/models`` of this checkout (where the exported ladders are committed)."""
    from scalinglab.data import REPO_DATA

    return REPO_DATA / "models"


# -- the task ---------------------------------------------------------------------------------------------------


def cloze_rows(probes: pd.DataFrame) -> pd.DataFrame:
    """The probes as a two-choice cloze: prompt = the phrase's first three words (``prefix``), classes =
    [" " + its ending, " " + the distractor], answer_index 0; ``id`` and ``bin`` kept."""
    missing = [c for c in ("id", "prefix", "ending", "distractor") if c not in probes.columns]
    if missing:
        raise UserError(f"probe table: no column {missing[0]!r}")
    return pd.DataFrame({"id": probes["id"].astype(str).to_numpy(),
                         "bin": probes["bin"].to_numpy() if "bin" in probes else None,
                         "prompt": probes["prefix"].astype(str).to_numpy(),
                         "classes": [[f" {e}", f" {x}"] for e, x in zip(probes["ending"], probes["distractor"])],
                         "answer_index": 0})


def bits_per_byte(logprob_nats, continuation: str) -> float:
    """Bhagia et al.'s task loss of one item: −log₂ P(continuation) divided by its UTF-8 bytes."""
    n = len(continuation.encode("utf-8"))
    if n == 0:
        raise UserError("an empty continuation has no bits per byte")
    return float(-logprob_nats / math.log(2) / n)


def item_scores(class_logprobs: Sequence, rows: pd.DataFrame) -> pd.DataFrame:
    """Per item, from its classes' summed log-probabilities (nats): the correct class's bits per byte, and
    whether the correct class wins the argmax (the prize's rule, ties to the first class)."""
    from scalinglab.inverse_scaling.scoring import classification_metrics

    classes, answers = list(rows["classes"]), list(rows["answer_index"])
    per = classification_metrics(class_logprobs, answers, classes)
    bpb = [bits_per_byte(lp[a], c[a]) for lp, a, c in zip(class_logprobs, answers, classes)]
    return pd.DataFrame({"id": rows["id"].to_numpy(), "bpb": bpb, "correct": per["correct"].to_numpy()})


def summarise_items(per: pd.DataFrame) -> dict[str, float]:
    """Task loss (mean bits per byte) and accuracy over the items, each with its standard error over items
    (the items' SD / √n; binomial for the accuracy)."""
    n = len(per)
    acc = float(per["correct"].mean())
    return dict(items=n, task_loss=float(per["bpb"].mean()), task_loss_se=float(per["bpb"].std(ddof=1) / np.sqrt(n)),
                accuracy=acc, accuracy_se=float(np.sqrt(acc * (1 - acc) / n)))


# -- scoring the models (torch) -----------------------------------------------------------------------------------


def load_models(root: Path | str | None = None, folders: Sequence[str] = LADDER_FOLDERS) -> list:
    """Every model of the folders, each a ``GPTCheckpointLM`` (``model_ladder.load_family``) with ``run_id``,
    ``folder``, ``width``, ``depth`` set and ``name`` = shape @ tokens per parameter."""
    from scalinglab.inverse_scaling.model_ladder import load_family
    from scalinglab.training.sweep.export import read_manifest

    root = Path(root) if root is not None else models_dir()
    out = []
    for folder in folders:
        family = load_family(root / folder)
        entries = sorted(read_manifest(root / folder)["models"], key=lambda m: m["compute"])  # load_family's order
        for lm, m in zip(family, entries):
            lm.run_id, lm.folder, lm.width, lm.depth = m["run_id"], folder, m["width"], m["depth"]
            lm.name = f"{m['width']}x{m['depth']} @{m['tokens'] / m['n_standard']:.2g}"
            out.append(lm)
    return out


def score_models(models: Sequence, rows: pd.DataFrame, opts=None) -> pd.DataFrame:
    """One row per model (``COLUMNS``), roles assigned by ``assign_roles``."""
    from scalinglab.inverse_scaling.scoring import ScoreOptions, continuation_logprobs

    opts = opts or ScoreOptions(batch_size=250)
    out = []
    for lm in models:
        lps = continuation_logprobs(lm, list(rows["prompt"]), list(rows["classes"]), opts)
        out.append(dict(run_id=lm.run_id, model=lm.name, folder=lm.folder, width=lm.width, depth=lm.depth,
                        n_standard=lm.n_standard, n_non_embedding=lm.n_non_embedding, tokens=lm.tokens,
                        tokens_per_param=lm.tokens / lm.n_standard, compute=lm.compute, val_loss=lm.val_loss,
                        **summarise_items(item_scores(lps, rows))))
    return assign_roles(pd.DataFrame(out))


def assign_roles(table: pd.DataFrame) -> pd.DataFrame:
    """``role``: "ladder" for every model of a shape trained at more than one length, "target" for the rest."""
    shape = table["width"].astype(str) + "x" + table["depth"].astype(str)
    lengths = table.groupby(shape)["tokens_per_param"].transform("nunique")
    table = table.assign(role=np.where(lengths > 1, "ladder", "target"))
    return table[list(COLUMNS)].sort_values(["role", "compute"], kind="stable").reset_index(drop=True)


def read_scores(path: Path | str | None = None) -> pd.DataFrame:
    """The committed per-model table (one row per model, ``COLUMNS``)."""
    path = Path(path) if path is not None else models_dir() / SCORES
    if not path.is_file():
        raise UserError(f"{path}: no scores table (make it with python -m scalinglab.inverse_scaling.probe_cloze)")
    table = pd.read_csv(path)
    missing = [c for c in COLUMNS if c not in table.columns]
    if missing:
        raise UserError(f"{path}: no column {missing[0]!r}")
    return table


def scores_differ(a: pd.DataFrame, b: pd.DataFrame, loss_tol: float = 1e-4, acc_tol: float = 0.0025) -> list[str]:
    """One line per model whose task loss or accuracy differs between two tables beyond the tolerances (a few
    1e-6 bits per byte separate CPUs' float arithmetic; an accuracy within an item or two of a tie may flip)."""
    a, b = a.set_index("run_id"), b.set_index("run_id")
    lines = [f"{r}: in one table only" for r in sorted(set(a.index) ^ set(b.index))]
    for r in sorted(set(a.index) & set(b.index)):
        dl, da = a.at[r, "task_loss"] - b.at[r, "task_loss"], a.at[r, "accuracy"] - b.at[r, "accuracy"]
        if abs(dl) > loss_tol or abs(da) > acc_tol:
            lines.append(f"{r}: task loss differs by {dl:+.2g} bits per byte, accuracy by {da:+.4f}")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """Score every model of the two ladders on the probe cloze and write (or ``--check``) the table."""
    import argparse
    import time

    from scalinglab import data

    ap = argparse.ArgumentParser(prog="python -m scalinglab.inverse_scaling.probe_cloze", description=main.__doc__)
    ap.add_argument("--out", type=Path, default=None, help=f"the table to write (default data/models/{SCORES})")
    ap.add_argument("--check", action="store_true", help="re-score and compare with the table instead of writing")
    args = ap.parse_args(argv)
    out = args.out or models_dir() / SCORES
    start = time.perf_counter()
    table = score_models(load_models(), cloze_rows(data.load(PROBES)))
    print(f"scored {len(table)} models on {int(table['items'].iloc[0])} items in {time.perf_counter() - start:.1f} s")
    if args.check:
        diff = scores_differ(table, read_scores(out))
        print("\n".join(diff) if diff else f"{out}: every model matches")
        return 1 if diff else 0
    table.to_csv(out, index=False, float_format="%.10g")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
