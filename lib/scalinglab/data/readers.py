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
