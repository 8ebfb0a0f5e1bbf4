"""Notebook 07's check of the two-step chain on our own ladder: the probe cloze, bits per byte, the committed
scores table against the models' manifests, and the chain fitted on it."""

import json
import math

import numpy as np
import pandas as pd
import pytest
from scalinglab.downstream import own_ladder as OL
from scalinglab.errors import UserError
from scalinglab.inverse_scaling import probe_cloze as O


def probe_frame():
    return pd.DataFrame({"id": ["a-1", "b-2"], "bin": ["never", "common"], "prefix": ["a man with", "out of the"],
                         "ending": ["experience", "café"], "distractor": ["whole", "house"],
                         "prompt": ["Write a phrase …", "Write …"]})


def test_cloze_drops_the_instruction_and_asks_for_the_phrase_s_own_ending():
    rows = O.cloze_rows(probe_frame())
    assert rows["prompt"].tolist() == ["a man with", "out of the"]
    assert rows["classes"].tolist() == [[" experience", " whole"], [" café", " house"]]
    assert rows["answer_index"].tolist() == [0, 0]
    assert rows["id"].tolist() == ["a-1", "b-2"] and rows["bin"].tolist() == ["never", "common"]
    with pytest.raises(UserError, match="distractor"):
        O.cloze_rows(probe_frame().drop(columns="distractor"))


def test_bits_per_byte_counts_utf8_bytes_with_the_leading_space():
    # 8 bits over " ab" (3 bytes); " é" is 3 bytes in UTF-8 (space + 2), so 6 bits give 2 bits per byte
    assert O.bits_per_byte(-8 * math.log(2), " ab") == pytest.approx(8 / 3)
    assert O.bits_per_byte(-6 * math.log(2), " é") == pytest.approx(2.0)
    with pytest.raises(UserError):
        O.bits_per_byte(-1.0, "")


def test_item_scores_from_known_log_probabilities():
    rows = O.cloze_rows(probe_frame())
    # item 1: the ending wins; item 2: the distractor wins
    lps = [np.array([-2.0, -3.0]), np.array([-9.0, -1.0])]
    per = O.item_scores(lps, rows)
    assert per["correct"].tolist() == [1, 0]
    assert per["bpb"].tolist() == pytest.approx([2.0 / math.log(2) / 11, 9.0 / math.log(2) / 6])
    s = O.summarise_items(per)
    assert s["accuracy"] == 0.5 and s["accuracy_se"] == pytest.approx(math.sqrt(0.25 / 2))
    assert s["task_loss"] == pytest.approx(per["bpb"].mean())


def test_roles_follow_the_shapes_trained_at_several_lengths():
    t = pd.DataFrame({"width": [8, 8, 16], "depth": [1, 1, 1], "tokens_per_param": [2.5, 20.0, 20.0],
                      **{c: 0.0 for c in O.COLUMNS if c not in ("width", "depth", "tokens_per_param")}})
    t["compute"] = [1.0, 2.0, 3.0]
    assert O.assign_roles(t)["role"].tolist() == ["ladder", "ladder", "target"]


@pytest.fixture(scope="module")
def scores():
    return O.read_scores()


def test_committed_scores_cover_every_model_of_both_manifests(scores):
    manifests = {f: json.loads((O.models_dir() / f / "manifest.json").read_text())["models"] for f in O.LADDER_FOLDERS}
    ids = {m["run_id"]: (f, m) for f, ms in manifests.items() for m in ms}
    assert len(scores) == 18 and set(scores["run_id"]) == set(ids)
    for r in scores.itertuples():
        folder, m = ids[r.run_id]
        assert r.folder == folder and r.tokens == m["tokens"] and r.n_standard == m["n_standard"]
    ladder = scores[scores["role"] == "ladder"]
    # 4 shapes x 4 lengths (2.5, 5, 10, 20 tokens per standard-count parameter); the targets are 32x1 and 48x2
    assert ladder.groupby("width")["tokens_per_param"].apply(lambda x: sorted(np.round(x, 1))).tolist() == \
        [[2.5, 5.0, 10.0, 20.0]] * 4
    assert sorted(scores.loc[scores["role"] == "target", "model"]) == ["32x1 @20", "48x2 @20"]
    assert (scores["items"] == 1000).all()


def test_scores_differ_names_the_model_that_moved(scores):
    assert O.scores_differ(scores, scores.copy()) == []
    moved = scores.copy()
    moved.loc[3, "task_loss"] += 1e-3
    lines = O.scores_differ(scores, moved)
    assert len(lines) == 1 and lines[0].startswith(scores.loc[3, "run_id"])


def test_the_smallest_model_rescores_to_the_committed_table(scores):
    # one model (the cheapest) through torch: the table is what the committed weights and probes give
    from scalinglab import data

    lm = [m for m in O.load_models(folders=("downstream-ladder",)) if m.run_id == scores["run_id"].iloc[0]]
    fresh = O.score_models(lm, O.cloze_rows(data.load(O.PROBES)))
    # 1e-4 bits per byte: a few 1e-6 separate CPUs' float arithmetic; accuracy to a quarter point (an item or two
    # within rounding of a tie may flip)
    assert O.scores_differ(fresh, scores[scores["run_id"] == lm[0].run_id]) == []


def test_the_chain_on_the_committed_ladder(scores):
    check = OL.check_chain(scores, n_boot=10, seed=0)
    t = check.table.set_index("model")
    assert check.n_ladder == 16 and list(t.index) == ["32x1 @20", "48x2 @20"]
    # Could be false: the chain's point predictions land within 0.03 bits per byte (about one target's SE over
    # items) and 1.5 accuracy points (one SE) of the actuals; the fits are deterministic to far better than that.
    assert (t["loss_miss"].abs() < 0.03).all() and (t["acc_miss"].abs() < 0.015).all()
    # the targets' predicted losses lie below every ladder run's: step 2 is read beyond the ladder
    assert (t["loss_below_ladder"] > 0).all()
    assert (t["loss_lower"] < t["loss_pred"]).all() and (t["loss_pred"] < t["loss_upper"]).all()
    assert (t["acc_noise_sd"] == scores.set_index("model").loc[t.index, "accuracy_se"]).all()
    d = check.to_dict()
    assert d["n_ladder"] == 16 and len(d["targets"]) == 2 and "ladder run" in d["unit"]


def test_the_chain_s_calibrated_interval_and_the_straight_line_rival(scores):
    check = OL.check_chain(scores, n_boot=10, seed=0)
    t = check.table.set_index("model")
    cal = check.calibration
    assert cal["unit"] == "ladder run" and cal["n_units"] == 16 and cal["ok"]
    # the calibrated interval holds the point shifted by the left-out runs' mean miss, and adds the items' noise
    mid = (t["acc_cal_lower"] + t["acc_cal_upper"]) / 2
    assert np.allclose(mid, t["acc_pred"] + cal["bias"])
    assert ((t["acc_cal_upper"] - t["acc_cal_lower"]) / 2 > cal["half_width"]).all()
    line = OL.line_baseline(scores)
    lt = line.table.set_index("model")
    assert line.n_points == 4 and line.tokens_per_param == 20
    # Could be false: the line through the four 20-tokens-per-parameter runs lands within 0.5 points of both
    # targets (70.9 and 72.9 against 70.8 and 72.7), and its 2-df intervals are wider than the accuracy span of
    # all 16 ladder runs (60.9 to 69.4).
    assert (lt["miss"].abs() < 0.005).all()
    lo, hi = line.ladder_span
    assert ((lt["upper"] - lt["lower"]) > hi - lo).all()
    assert "t on n − 2 df" in line.to_dict()["unit"]
