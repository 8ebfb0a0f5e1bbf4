"""The Inverse Scaling Prize tasks and the published results we analyse.

McKenzie et al. 2023 ("Inverse Scaling: When Bigger Isn't Better") released 11
final tasks as JSON Lines files. Each is registered in
``registry/inverse_scaling.toml`` with the release file's official sha256 (the
Git-LFS oid), so a copy found anywhere is checked byte for byte. Only NeQA and
Memo Trap are in the offline mirror; the other nine load when online or from a
mirror that has them, and are otherwise reported unavailable, never faked.

Rows are validated on read: a classification row needs ``prompt`` (str),
``classes`` (a list of at least two strings, or the release's string holding a
Python list literal) and an in-range integer ``answer_index``; a
sequence-probability row needs ``prompt`` and ``completion``. A malformed row
is a UserError naming the file and line.

Published results: the prize pipeline's per-example NeQA outputs for GPT-3
(``neqa_gpt3_outputs``), ObsScaling's model-family table (``obsscaling_long``)
and Pythia's lm-evaluation-harness outputs (``pythia_long``), all in one long
layout (model, x, accuracy, n) for ``scalinglab.inverse_scaling.trend``.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path

from scalinglab import data
from scalinglab.errors import DataError, UserError

CLASSIFICATION = "classification"
SEQUENCE_PROB = "sequence_prob"


@dataclass(frozen=True)
class InverseTask:
    """One prize task; ``dataset`` is its name in the data registry."""

    name: str
    release_file: str
    size: int  # bytes of the official release file
    round: int
    metric: str
    category: str  # McKenzie et al. 2023's taxonomy

    @property
    def dataset(self) -> str:
        return f"isp-{self.name}"

    @property
    def sha256(self) -> str:
        return data.get(self.dataset).sha256


# File names, sizes and rounds from the official release (shared/data/inverse_scaling/PROVENANCE.md);
# the sha256s live in the registry.
TASKS: dict[str, InverseTask] = {
    t.name: t
    for t in (
        InverseTask("neqa", "neqa_classification.jsonl", 84046, 1, CLASSIFICATION, "distractor task"),
        InverseTask("hindsight-neglect", "hindsight-neglect_classification.jsonl", 953341, 1, CLASSIFICATION, "spurious few-shot"),
        InverseTask("redefine", "redefine_classification.jsonl", 202277, 1, CLASSIFICATION, "strong prior"),
        InverseTask("resisting-correction", "resisting-correction_classification.jsonl", 3572356, 1, CLASSIFICATION, "strong prior"),
        InverseTask("memo-trap", "memo-trap_classification.jsonl", 165763, 2, CLASSIFICATION, "strong prior"),
        InverseTask("prompt-injection", "prompt-injection_sequence-probability.jsonl", 863354, 2, SEQUENCE_PROB, "strong prior"),
        InverseTask("modus-tollens", "modus-tollens_classification.jsonl", 426022, 2, CLASSIFICATION, "unwanted imitation"),
        InverseTask("pattern-matching-suppression", "pattern-matching-suppression_classification.jsonl", 338768, 2, CLASSIFICATION, "distractor task"),
        InverseTask("into-the-unknown", "into-the-unknown_classification.jsonl", 1012764, 2, CLASSIFICATION, "distractor task"),
        InverseTask("sig-figs", "sig-figs_classification.jsonl", 15047173, 2, CLASSIFICATION, "distractor task"),
        InverseTask("repetitive-algebra", "repetitive-algebra_classification.jsonl", 740039, 2, CLASSIFICATION, "spurious few-shot"),
    )
}


def get_task(name: str) -> InverseTask:
    if name not in TASKS:
        from difflib import get_close_matches

        close = get_close_matches(name, TASKS, n=2)
        hint = f"; did you mean {', '.join(close)}?" if close else f"; choose from {', '.join(TASKS)}"
        raise UserError(f"unknown inverse-scaling task {name!r}{hint}")
    return TASKS[name]


# -- rows ---------------------------------------------------------------------------------------


def _parse_classes(value, where: str) -> list[str]:
    if isinstance(value, str):
        try:
            value = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            raise UserError(f"{where}: 'classes' is not a Python list literal: {value[:60]!r}") from None
    if not isinstance(value, (list, tuple)) or len(value) < 2 or not all(isinstance(c, str) and c for c in value):
        raise UserError(f"{where}: 'classes' must be a list of at least two non-empty strings, got {value!r:.80}")
    return list(value)


def validate_row(row, where: str) -> dict:
    """A checked, normalised row (classes parsed into a list). ``where`` is 'file:line'."""
    if not isinstance(row, dict):
        raise UserError(f"{where}: expected a JSON object, got {type(row).__name__}")
    prompt = row.get("prompt")
    if not isinstance(prompt, str) or not prompt:
        raise UserError(f"{where}: 'prompt' must be a non-empty string")
    if "completion" in row and "classes" not in row:
        if not isinstance(row["completion"], str) or not row["completion"]:
            raise UserError(f"{where}: 'completion' must be a non-empty string")
        return {"prompt": prompt, "completion": row["completion"]}
    if "classes" not in row:
        raise UserError(f"{where}: row has neither 'classes' (classification) nor 'completion' (sequence probability)")
    classes = _parse_classes(row["classes"], where)
    answer = row.get("answer_index")
    if isinstance(answer, bool) or not isinstance(answer, int) or not 0 <= answer < len(classes):
        raise UserError(f"{where}: 'answer_index' must be an integer in [0, {len(classes)}), got {answer!r}")
    out = {"prompt": prompt, "classes": classes, "answer_index": answer}
    for key in ("round", "part"):
        if key in row:
            out[key] = row[key]
    return out


def jsonl_records(path: Path | str):
    """(where, record) for each non-blank line of a JSON-lines file; ``where`` is ``path:line`` (1-based),
    and a line that is not JSON is a one-line error naming it."""
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                yield where, json.loads(line)
            except json.JSONDecodeError as exc:
                raise UserError(f"{where}: not valid JSON ({exc.msg})") from None


def read_rows(path: Path | str) -> list[dict]:
    """Every row of a task file, validated; all rows must be of one kind."""
    path = Path(path)
    rows, kind = [], None
    for where, raw in jsonl_records(path):
        row = validate_row(raw, where)
        row_kind = SEQUENCE_PROB if "completion" in row else CLASSIFICATION
        if kind is None:
            kind = row_kind
        elif row_kind != kind:
            raise UserError(f"{where}: a {row_kind} row in a {kind} file")
        rows.append(row)
    if not rows:
        raise UserError(f"{path}: no rows")
    return rows


def read_task_file(path, dataset=None):
    """Registry loader: the validated rows as a DataFrame."""
    import pandas as pd

    return pd.DataFrame(read_rows(path))


def load_task(name: str, limit: int | None = None):
    """The task's rows (validated, sha256-checked), the first ``limit`` of them if given."""
    df = data.load(get_task(name).dataset)
    return df.head(limit) if limit else df


def availability():
    """One row per task: where its file is, or why it is unavailable (no download attempted)."""
    import pandas as pd

    rows = []
    for task in TASKS.values():
        state, detail = data.status(task.dataset)
        rows.append(dict(task=task.name, round=task.round, metric=task.metric, category=task.category,
                         release_file=task.release_file, bytes=task.size, sha256=task.sha256[:12] + "…",
                         state=state, where=detail if state == "ok" else data.get(task.dataset).url))
    return pd.DataFrame(rows)


# -- NeQA decomposition (Zhang et al. 2023) ----------------------------------------------------

# The prize NeQA file's zero-shot template (every prompt of neqa_classification.jsonl has this form).
NEQA_TEMPLATE = ("The following are multiple choice questions (with answers) about common sense.\n\n"
                 "Question: {question}\nA. {a}\nB. {b}\nAnswer:")


def neqa_pair_rows(limit: int | None = None):
    """neqa_100 (negated) and neqa_100_nonnegated as classification rows in the prize format.

    Returns a DataFrame with a ``variant`` column ('negated' or 'plain') and a shared ``qid``.
    """
    import pandas as pd

    parts = []
    for variant, name in (("negated", "neqa-100"), ("plain", "neqa-100-nonnegated")):
        df = data.load(name)
        df = df.head(limit) if limit else df
        rows = []
        for qid, r in enumerate(df.itertuples(index=False)):
            rows.append(validate_row(dict(prompt=NEQA_TEMPLATE.format(question=r.question.strip(), a=r.choices[0], b=r.choices[1]),
                                          classes=[" A", " B"], answer_index=int(r.answer)),
                                     f"{data.get(name).path}:{qid + 1}") | {"qid": qid, "variant": variant})
        parts.append(pd.DataFrame(rows))
    return pd.concat(parts, ignore_index=True)


# -- published results -------------------------------------------------------------------------

# Commonly used parameter estimates for the GPT-3 API models (Gao 2021, EleutherAI blog); not official.
GPT3_PARAMS = {"ada": 3.5e8, "babbage": 1.3e9, "curie": 6.7e9, "davinci": 1.75e11}


def neqa_gpt3_outputs():
    """The prize pipeline's per-example NeQA outputs for the four GPT-3 models, long format."""
    import pandas as pd

    parts = []
    for model, params in GPT3_PARAMS.items():
        df = data.load(f"neqa-gpt3-{model}")
        parts.append(df.assign(model=model, params=params))
    return pd.concat(parts, ignore_index=True)


# Evaluation-set sizes of the Open LLM Leaderboard v1 benchmarks ObsScaling reports (the binomial n of each
# accuracy): MMLU test (Hendrycks et al. 2021), ARC-Challenge test (Clark et al. 2018), HellaSwag validation
# (Zellers et al. 2019), WinoGrande validation (Sakaguchi et al. 2020), TruthfulQA MC (Lin et al. 2022),
# GSM8K test (Cobbe et al. 2021), HumanEval (Chen et al. 2021).
OBSSCALING_N = {"MMLU": 14042, "ARC-C": 1172, "HellaSwag": 10042, "Winograd": 1267,
                "TruthfulQA": 817, "GSM8K": 1319, "HumanEval": 164}
# Benchmarks of the table that obsscaling_long leaves out, and why: the trend test needs each accuracy's n.
OBSSCALING_UNUSED = {
    "XWinograd": "six language subsets of very different sizes (English 2,325 examples, French 83); the table "
                 "does not say which subsets its one number covers or how they are combined, so its n is unknown",
}


# Benchmarks whose ObsScaling value is a bounded score, not a fraction of n items answered right. TruthfulQA is
# the Open LLM Leaderboard v1's MC2: per question, the probability mass on the true answers, normalised over
# all answers, then averaged. Its value times 817 is not a whole number (``whole_count_share`` in aggregate).
OBSSCALING_SCORES = {
    "TruthfulQA": "MC2 score (mean probability mass on the true answers, 817 questions)",
}


def obsscaling_long(dataset: str = "obsscaling-benchmark-eval"):
    """ObsScaling's table as rows (family, model, params, flops, benchmark, accuracy, n).

    ``accuracy`` is the table's value: a fraction correct, except on ``OBSSCALING_SCORES`` (a bounded
    score). Only the benchmarks of ``OBSSCALING_N`` (see ``OBSSCALING_UNUSED``); models without a
    training-compute figure are dropped, since the trend is tested against compute.
    """
    df = data.load(dataset)
    long = df.melt(id_vars=["Model", "Model Family", "Model Size (B)", "FLOPs (1E21)"],
                   value_vars=list(OBSSCALING_N), var_name="benchmark", value_name="accuracy")
    long = long.rename(columns={"Model": "model", "Model Family": "family"})
    long["params"] = long.pop("Model Size (B)") * 1e9
    long["flops"] = long.pop("FLOPs (1E21)") * 1e21
    long["n"] = long["benchmark"].map(OBSSCALING_N)
    return long.dropna(subset=["accuracy", "flops"]).reset_index(drop=True)


_PYTHIA = re.compile(r"^pythia-(?P<size>[\d.]+[mb])(?P<dedup>-deduped)?-(?P<shots>\d)shot$")
# Pythia's total parameter counts (Biderman et al. 2023, Table 1), keyed by the size in the model's name.
PYTHIA_PARAMS = {"70m": 70_426_624, "160m": 162_322_944, "410m": 405_334_016, "1b": 1_011_781_632,
                 "1.4b": 1_414_647_808, "2.8b": 2_775_208_960, "6.9b": 6_857_302_016, "12b": 11_846_072_320}
PYTHIA_TOKENS = 299_892_736_000  # 143000 steps x 2,097,152 tokens (Biderman et al. 2023)


def pythia_long(shots: int = 0):
    """Pythia's final-checkpoint lm-eval results as rows (suite, model, params, flops, benchmark, accuracy, n).

    n is recovered from each accuracy and its stderr (the harness reports sqrt(p(1-p)/(n-1))).
    """
    import pandas as pd

    rows = []
    for name in data.registry():
        m = _PYTHIA.match(name)
        if not m or int(m["shots"]) != shots:
            continue
        path = data.locate(name)
        try:
            results = json.loads(Path(path).read_text())["results"]
        except (ValueError, KeyError) as exc:
            raise DataError(f"dataset {name}: {path} is not lm-eval output ({exc})") from None
        params = PYTHIA_PARAMS[m["size"]]
        for bench, metrics in results.items():
            if "acc" not in metrics or not metrics.get("acc_stderr"):
                continue
            p, se = metrics["acc"], metrics["acc_stderr"]
            rows.append(dict(suite="pythia-deduped" if m["dedup"] else "pythia", model=name, params=params,
                             flops=6.0 * params * PYTHIA_TOKENS, benchmark=bench, accuracy=p,
                             acc_norm=metrics.get("acc_norm"), n=round(p * (1 - p) / se**2 + 1)))
    return pd.DataFrame(rows)
