"""The inverse-scaling model ladder (preset optimal): its plan, and exporting its models to a committable folder."""

import json
import math

import numpy as np
import pytest
from scalinglab.errors import UserError


def test_optimal_plan_trains_each_shape_once_at_its_compute_optimal_length():
    from scalinglab.accounting.decoder import count_params
    from scalinglab.training.sweep import get_profile, plan

    prof = get_profile("cpu-inverse")
    runs = plan("optimal", prof, 8192)
    assert len(runs) == len(prof.shapes) >= 5
    for r in runs:
        n = count_params(r.width, r.depth, 8192, seq_len=prof.seq_len).standard
        assert r.n_standard == n
        tokens = r.train.total_tokens
        # whole optimizer steps: within one step's tokens of 20 per parameter
        assert abs(tokens - 20 * n) <= r.train.batch_size * prof.seq_len
        assert r.budgets == (r.budget,) and r.budget == pytest.approx(6 * n * math.ceil(20 * n))
        assert r.train.schedule == "cosine" and r.train.eval_at_tokens[-1] == tokens
        assert r.train.lr == pytest.approx(min(3e-3 * 64 / r.width, prof.max_lr))
    # the ladder spans 1.5 decades of N: the transformer blocks (Kaplan's N) give it, the 8k head does not
    n_ne = [r.n_non_embedding for r in runs]
    assert math.log10(max(n_ne) / min(n_ne)) >= 1.5
    # no text seen twice: ~4 bytes a token for an 8k BPE, so the largest model's tokens fit in train_bytes
    assert max(r.train.total_tokens for r in runs) * 4 < prof.train_bytes


def test_downstream_plan_trains_each_shape_at_several_lengths_each_its_own_cosine():
    from scalinglab.training.sweep import get_profile, plan

    prof, base = get_profile("cpu-downstream"), get_profile("cpu-inverse")
    runs = plan("optimal", prof, 8192)
    assert len(runs) == len(prof.shapes) * len(prof.optimal_multiples) == 12
    assert len({r.run_id for r in runs}) == 12
    # the same shapes, data and optimizer as the inverse-scaling family, whose 20-token models complete the ladder
    assert set(prof.shapes) < set(base.shapes) and prof.tokenizer == base.tokenizer
    assert prof.train_bytes == base.train_bytes
    inverse = {(r.width, r.depth): r for r in plan("optimal", base, 8192)}
    for r in runs:
        mult = r.train.total_tokens / (20 * r.n_standard)
        # whole optimizer steps: within one step's tokens of the multiple asked for
        assert min(abs(mult - m) for m in prof.optimal_multiples) * 20 * r.n_standard <= r.train.batch_size * 128
        assert r.train.schedule == "cosine" and r.train.eval_at_tokens[-1] == r.train.total_tokens
        twin = inverse[(r.width, r.depth)]
        assert (r.train.lr, r.train.beta2, r.train.batch_size) == (twin.train.lr, twin.train.beta2, twin.train.batch_size)
    by_shape = {}
    for r in runs:
        by_shape.setdefault((r.width, r.depth), []).append(r.train.total_tokens)
    assert all(len(v) == 3 and len(set(v)) == 3 for v in by_shape.values())


def test_smoke_ladder_exports_float16_models_that_score_like_the_float32_ones(cache, tmp_path):
    import torch
    from scalinglab.inverse_scaling.adapters import load_checkpoint_lm
    from scalinglab.training import sweep
    from scalinglab.training.model import load_checkpoint
    from scalinglab.training.sweep.export import describe_family, export_models, read_manifest

    db = tmp_path / "models.db"
    sweep.run_sweep("optimal", "smoke", db, progress=False)
    manifest = export_models(db, tmp_path / "out")
    text = describe_family(db)
    assert text.startswith("models.db: 2 of 2 models finished") and "\n     8x1" in text and "\n    16x1" in text
    assert [m["width"] for m in manifest["models"]] == [8, 16]  # smallest first
    assert read_manifest(tmp_path / "out") == manifest
    for m in manifest["models"]:
        full, _ = load_checkpoint(sweep.checkpoint_path(db, m["run_id"]))
        half = load_checkpoint_lm(tmp_path / "out" / m["file"])
        assert half.tokenizer.vocab_size == full.config.vocab_size  # from the folder's tokenizer.json
        x = torch.randint(0, full.config.vocab_size, (2, 16))
        with torch.no_grad():
            a = torch.log_softmax(full(x), -1)
            b = torch.log_softmax(half.model(x), -1)
        # float16 keeps ~3 significant digits of each weight: log-probs move by ~1e-3 nats at these sizes
        assert float((a - b).abs().max()) < 0.05
        assert (tmp_path / "out" / m["file"]).stat().st_size < 0.5 * sweep.checkpoint_path(db, m["run_id"]).stat().st_size

    # the family scored per example, split by a label, tested against compute
    import pandas as pd
    from scalinglab.inverse_scaling import model_ladder

    family = model_ladder.load_family(tmp_path / "out")
    assert [lm.compute for lm in family] == sorted(m["compute"] for m in manifest["models"])
    rows = pd.DataFrame(dict(prompt=["The cat sat on the", "Once upon a", "He said that he", "It was the"] * 3,
                             classes=[[" mat", " dog"], [" time", " cat"], [" was", " the"], [" best", " of"]] * 3,
                             answer_index=[0, 0, 1, 0] * 3, variant=["a", "b"] * 6))
    per = model_ladder.score_family(family, dict(toy=rows))
    assert len(per) == 2 * 12 and set(per.variant) == {"a", "b"} and per.correct.isin([0, 1]).all()
    table = model_ladder.accuracy_by(per, ["task", "variant"])
    assert len(table) == 4 and (table.n == 6).all()
    by_hand = per[(per.model == family[0].name) & (per.variant == "a")].correct.mean()
    assert table[(table.model == family[0].name) & (table.variant == "a")].accuracy.item() == pytest.approx(by_hand)
    assert ((table.ci_low <= table.accuracy) & (table.accuracy <= table.ci_high)).all()
    calls = model_ladder.trends_by(table, ["task", "variant"])
    assert sorted(calls.group) == ["toy / a", "toy / b"]  # two models: too few points, each called so
    assert set(calls.trend) == {"insufficient"}

    # a changed file is refused by name, before anything is scored with it
    victim = tmp_path / "out" / manifest["models"][0]["file"]
    damaged = bytearray(victim.read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF  # one byte flipped (a zip's last byte may already be the one we'd write)
    victim.write_bytes(bytes(damaged))
    with pytest.raises(UserError, match="sha256 differs"):
        read_manifest(tmp_path / "out")
    (tmp_path / "out" / "manifest.json").write_text(json.dumps(dict(manifest, version=99)))
    with pytest.raises(UserError, match="version 99"):
        read_manifest(tmp_path / "out")
    assert np.isfinite([m["val_loss"] for m in manifest["models"]]).all()


def test_export_refuses_a_database_with_nothing_finished(tmp_path, mirror):  # planning reads the corpus
    from scalinglab.training import sweep
    from scalinglab.training.sweep.export import export_models

    db = tmp_path / "empty.db"
    sweep.run_sweep("optimal", "smoke", db, progress=False, max_runs=0)  # planned, nothing trained
    with pytest.raises(UserError, match="no finished runs"):
        export_models(db, tmp_path / "out")
    with pytest.raises(UserError, match="no such sweep database"):
        export_models(tmp_path / "missing.db", tmp_path / "out")


def test_paired_difference_pairs_by_question_and_its_interval_shrinks_with_agreement():
    import pandas as pd
    from scalinglab.inverse_scaling.model_ladder import paired_difference

    # 40 questions; model m answers the plain form of all and the negated form of the first 10: difference -0.75
    rows = [dict(model="m", compute=1.0, qid=q, variant=v, correct=int(v == "plain" or q < 10))
            for q in range(40) for v in ("plain", "negated")]
    # model k is right on the same 20 questions in both forms: difference exactly 0, and a zero-width interval,
    # which unpaired intervals (each accuracy 0.5 ± 0.15) would never give
    rows += [dict(model="k", compute=2.0, qid=q, variant=v, correct=int(q < 20)) for q in range(40)
             for v in ("plain", "negated")]
    out = paired_difference(pd.DataFrame(rows), "variant", "negated", "plain", "qid")
    assert list(out.model) == ["m", "k"] and list(out.pairs) == [40, 40]
    m, k = out.iloc[0], out.iloc[1]
    assert m.difference == pytest.approx(-0.75) and m.ci_low < -0.75 < m.ci_high
    sd = np.std([-1.0] * 30 + [0.0] * 10, ddof=1)
    assert m.ci_high - m.difference == pytest.approx(1.959964 * sd / np.sqrt(40), rel=1e-5)
    assert k.difference == 0 and k.ci_low == k.ci_high == 0
    with pytest.raises(UserError, match="no rows with variant"):
        paired_difference(pd.DataFrame(rows), "variant", "negated", "other", "qid")


def test_frequency_interaction_recovers_a_known_interaction():
    import pandas as pd
    from scalinglab.inverse_scaling.model_ladder import frequency_interaction

    rng = np.random.default_rng(0)
    items = pd.DataFrame(dict(id=np.arange(600), count=rng.choice([0, 2, 20, 200], 600),
                              bigram_ending=rng.integers(10, 100, 600), bigram_distractor=rng.integers(10, 100, 600)))
    rows = []
    for c in (1e11, 1e12, 1e13, 1e14):
        x = np.log10(c) - 12.5
        f = np.log10(items["count"] + 1) - np.log10(items["count"] + 1).mean()
        logit = 0.2 + 0.1 * x - 0.3 * f - 0.4 * x * f  # frequent phrases get worse with compute, rare ones better
        rows.append(items.assign(compute=c, correct=(rng.random(600) < 1 / (1 + np.exp(-logit))).astype(int)))
    out = frequency_interaction(pd.concat(rows))
    # 2,400 rows: the interaction's se is ~0.05, so -0.4 is recovered within a few se and the interval excludes 0
    assert out["interaction"]["ci"][0] < -0.4 < out["interaction"]["ci"][1] and out["interaction"]["ci"][1] < 0
    assert out["items"] == 600 and out["models"] == 4
    with pytest.raises(UserError, match="no column 'count'"):
        frequency_interaction(pd.concat(rows).drop(columns="count"))
