"""SLDBench's data-constrained file: the registry reads it with the swapped columns put right, and keeps the
published reading."""

from scalinglab import data


def test_swapped_columns_are_corrected_and_the_published_reading_kept(mirror):
    fixed = data.load("sldbench-data-constrained").set_index("id")
    published = data.load("sldbench-data-constrained-as-published").set_index("id")
    # Muennighoff et al.'s naming: 146m14b400m is 146M parameters, 14B tokens, 400M unique tokens.
    row = fixed.loc["146m14b400m"]
    assert row["tokens"] == 1.4e10 and row["unique_tokens"] == 4e8
    assert published.loc["146m14b400m", "unique_tokens"] == 1.4e10
    # U <= D holds in every row only after the swap (153 rows break it as published).
    assert (fixed["unique_tokens"] <= fixed["tokens"]).all()
    assert int((published["unique_tokens"] > published["tokens"]).sum()) == 153
    assert (fixed["tokens_as_published"] == published["tokens"]).all()
