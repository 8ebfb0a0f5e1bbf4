"""Registry loaders for formats that need more than pandas: each is ``f(path, dataset) -> DataFrame``,
named by a registry TOML's ``loader``, and run after the file's sha256 is checked. Loaders never import
training code or torch (tests/test_architecture.py checks it)."""

from __future__ import annotations


def read_manifest(path, dataset=None):
    """manifest.tsv as a DataFrame (registry loader): one row per source blob."""
    import pandas as pd

    return pd.read_csv(path, sep="\t", dtype={"ebook": "string", "git_blob": "string"}, keep_default_na=False,
                       na_values={"words": [""], "gpt2_tokens": [""]})


def sldbench_data_constrained(path, dataset=None):
    """SLDBench's data-constrained file with its swapped columns put right (registry loader): the published
    ``unique_tokens`` holds the total tokens D and ``tokens`` the unique tokens U (the run ids follow Muennighoff
    et al.'s {params}{tokens}{unique} naming, and U <= D in every row only after the swap). The published values
    stay as ``unique_tokens_as_published`` and ``tokens_as_published``."""
    import pandas as pd

    df = pd.read_csv(path)
    out = df.rename(columns={"unique_tokens": "tokens", "tokens": "unique_tokens"})
    out["unique_tokens_as_published"] = df["unique_tokens"]
    out["tokens_as_published"] = df["tokens"]
    return out[["id", "params", "unique_tokens", "tokens", "loss", "unique_tokens_as_published",
                "tokens_as_published"]]


# Step Law's sequences are 2,048 tokens (not a column: bs x ti x 2048 / D is within 0.2% of 1 in every row).
STEP_LAW_SEQ_LEN = 2048


def step_law_dense(path, dataset=None):
    """Step Law's dense runs (registry loader) with two columns added and nothing changed: ``lr_grid``, the grid
    point each rounded ``lr`` stands for (2^(round(2 log2 lr)/2); the file writes one point at 3 or 4 significant
    figures, so grouping by ``lr`` would split it), and ``batch_tokens`` = bs x 2,048, the unit of the law."""
    import numpy as np
    import pandas as pd

    df = pd.read_csv(path)
    df["lr_grid"] = 2.0 ** (np.round(2 * np.log2(df["lr"].to_numpy(float))) / 2)
    df["batch_tokens"] = df["bs"].to_numpy(float) * STEP_LAW_SEQ_LEN
    return df
