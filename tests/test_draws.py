"""The bootstrap's one draw (``fitting.rows.unit_picks`` / ``unit_counts``): every resampling loop in the package
takes it, so these pin the stream identities its callers rely on to keep a seed's replicates unchanged."""

import numpy as np
import pytest
from scalinglab.fitting.rows import group_counts, resample_indices, unit_counts, unit_picks


def test_picks_are_the_stream_a_loop_of_single_draws_makes():
    k, n_boot = 7, 40
    rng = np.random.default_rng(11)
    loop = np.stack([rng.integers(0, k, k) for _ in range(n_boot)])
    assert np.array_equal(unit_picks(k, n_boot, 11), loop)
    # one row a pass from a shared generator continues the same stream (a loop that retries a failed draw)
    rng = np.random.default_rng(11)
    assert np.array_equal(np.stack([unit_picks(k, 1, rng)[0] for _ in range(n_boot)]), loop)


def test_counts_drawn_chunk_by_chunk_equal_one_draw():
    whole = unit_counts(9, 50, 3)
    rng = np.random.default_rng(3)
    chunks = np.concatenate([unit_counts(9, m, rng) for m in (7, 20, 23)])
    assert np.array_equal(whole, chunks)
    assert whole.dtype == float and np.all(whole.sum(axis=1) == 9)


@pytest.mark.parametrize("seed", [0, 5])
def test_a_cluster_resample_draws_whole_groups(seed):
    labels = np.array(["a", "a", "b", "c", "c", "c"])
    for idx in resample_indices(len(labels), 30, seed, groups=labels):
        drawn = labels[idx]
        for g in set(drawn):   # a group drawn m times brings all its rows m times
            size = int((labels == g).sum())
            assert (drawn == g).sum() % size == 0
    w = group_counts(labels, 200, seed)
    assert np.all(w[:, 0] == w[:, 1]) and np.all(w[:, 3] == w[:, 5])   # rows of one group share a weight
    assert np.allclose(w[:, [0, 2, 3]].sum(axis=1), 3)                 # three groups drawn per resample


def test_different_seeds_draw_differently():
    assert not np.array_equal(unit_picks(10, 5, 0), unit_picks(10, 5, 1))


def test_picks_are_the_stream_numpy_choice_draws():
    """Callers that once drew ``rng.choice(items, k)`` get the same items from ``unit_picks``."""
    items = np.array(list("abcdefghij"))
    a, b = np.random.default_rng(4), np.random.default_rng(4)
    for _ in range(20):
        assert np.array_equal(a.choice(items, items.size, replace=True), items[unit_picks(items.size, 1, b)[0]])
        assert a.normal() == b.normal()   # and a draw between passes stays in step
