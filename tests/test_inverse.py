"""The prize-task registry, row validation and the published NeQA outputs."""

import json

import numpy as np
import pytest
from scalinglab import data
from scalinglab.errors import UserError
from scalinglab.inverse_scaling import scoring
from scalinglab.inverse_scaling import tasks as inverse


def test_registry_holds_the_eleven_final_tasks_with_official_hashes():
    assert len(inverse.TASKS) == 11
    assert len({t.release_file for t in inverse.TASKS.values()}) == 11
    for task in inverse.TASKS.values():
        ds = data.get(task.dataset)
        assert len(task.sha256) == 64 and int(task.sha256, 16) >= 0
        assert ds.path.endswith(task.release_file) and task.release_file in ds.url
        assert ds.loader == "scalinglab.inverse_scaling.tasks:read_task_file"
    kinds = {t.name: t.metric for t in inverse.TASKS.values()}
    assert [n for n, k in kinds.items() if k == inverse.SEQUENCE_PROB] == ["prompt-injection"]


def test_unknown_task_is_a_user_error_with_a_suggestion():
    with pytest.raises(UserError, match="memo-trap"):
        inverse.get_task("memo-trapp")


def _write(tmp_path, rows, name="task.jsonl"):
    path = tmp_path / name
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


GOOD = {"prompt": "Q: x?\nA:", "classes": "[' yes', ' no']", "answer_index": 1}


@pytest.mark.parametrize("bad, message", [
    ({"prompt": "p", "classes": "[' a', ' b'", "answer_index": 0}, "not a Python list literal"),
    ({"prompt": "p", "classes": "[' a']", "answer_index": 0}, "at least two"),
    ({"prompt": "p", "classes": [" a", " b"], "answer_index": 2}, "answer_index"),
    ({"prompt": "p", "classes": [" a", " b"], "answer_index": True}, "answer_index"),
    ({"classes": [" a", " b"], "answer_index": 0}, "'prompt'"),
    ({"prompt": "p"}, "neither 'classes'"),
    ('{"prompt": "p", ', "not valid JSON"),
    ({"prompt": "p", "completion": " c"}, "sequence_prob row in a classification file"),
])
def test_a_malformed_row_is_an_error_naming_file_and_line(tmp_path, bad, message):
    path = _write(tmp_path, [GOOD, GOOD, bad])
    with pytest.raises(UserError, match=message) as exc:
        inverse.read_rows(path)
    assert f"{path}:3:" in str(exc.value)


def test_rows_are_normalised_and_sequence_probability_rows_accepted(tmp_path):
    rows = inverse.read_rows(_write(tmp_path, [GOOD, dict(GOOD, answer_index=0)]))
    assert rows[0]["classes"] == [" yes", " no"] and rows[1]["answer_index"] == 0
    seq = inverse.read_rows(_write(tmp_path, [{"prompt": "p", "completion": " c"}], "seq.jsonl"))
    assert seq == [{"prompt": "p", "completion": " c"}]


def test_mirrored_tasks_load_and_the_others_are_reported_unavailable(mirror):
    neqa = inverse.load_task("neqa")
    assert len(neqa) == 300 and all(c[0].startswith(" ") for c in neqa["classes"])
    assert len(inverse.load_task("memo-trap", limit=5)) == 5
    table = inverse.availability().set_index("task")
    assert table.loc["neqa", "state"] == "ok" and table.loc["memo-trap", "state"] == "ok"
    for name in set(inverse.TASKS) - {"neqa", "memo-trap"}:
        if not (mirror / data.get(f"isp-{name}").path).exists():
            assert table.loc[name, "state"] == "absent"  # not expected offline: reported, not an error


def test_neqa_pairs_put_the_same_questions_in_the_prize_template(mirror):
    pairs = inverse.neqa_pair_rows(limit=10)
    neg, plain = (pairs[pairs.variant == v].set_index("qid") for v in ("negated", "plain"))
    assert len(neg) == len(plain) == 10
    assert all(" not " in q or "n't" in q for q in neg["prompt"].str.split("Question: ").str[1].str.split("\n").str[0])
    assert neg["prompt"].str.startswith("The following are multiple choice questions").all()


def test_published_neqa_outputs_are_consistent_with_the_prize_metric(mirror):
    out = inverse.neqa_gpt3_outputs()
    rows = inverse.load_task("neqa")
    ans = np.tile(rows["answer_index"].to_numpy(), 4)
    per = scoring.classification_metrics(scoring.prize_class_logprobs(out["loss"], out["total_logprob"], ans),
                                         ans, [[" A", " B"]] * len(out))
    # The rebuilt class log-probabilities must reproduce the pipeline's own argmax on every row.
    assert (per["predicted"].to_numpy() == out["predicted"].to_numpy()).all()
    assert (per["correct"].to_numpy() == out["correct"].to_numpy()).all()
    # float64 round trip of log/exp: 1e-9 is far below the printed precision.
    assert np.allclose(per["loss"], out["loss"], atol=1e-9)


def test_every_obsscaling_benchmark_is_used_or_its_omission_explained(mirror):
    table = data.load("obsscaling-benchmark-eval")
    info = {"Model", "Model Family", "Model Size (B)", "Pretraining Data Size (T)", "FLOPs (1E21)"}
    benchmarks = set(table.columns) - info
    # A benchmark added to the table must get an n (used) or a stated reason (unused), never vanish silently.
    assert benchmarks == set(inverse.OBSSCALING_N) | set(inverse.OBSSCALING_UNUSED)
    assert not set(inverse.OBSSCALING_N) & set(inverse.OBSSCALING_UNUSED)
    long = inverse.obsscaling_long()
    assert set(long.benchmark) == set(inverse.OBSSCALING_N)
    assert long.flops.notna().all() and set(long.model) <= set(table.Model[table["FLOPs (1E21)"].notna()])
