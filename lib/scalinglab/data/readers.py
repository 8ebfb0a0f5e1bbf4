"""Registry loaders for formats that need more than pandas: each is ``f(path, dataset) -> DataFrame``,
named by a registry TOML's ``loader``, and run after the file's sha256 is checked. Loaders never import
training code or torch (tests/test_architecture.py checks it)."""

from __future__ import annotations


def read_manifest(path, dataset=None):
    """manifest.tsv as a DataFrame (registry loader): one row per source blob."""
    import pandas as pd

    return pd.read_csv(path, sep="\t", dtype={"ebook": "string", "git_blob": "string"}, keep_default_na=False,
                       na_values={"words": [""], "gpt2_tokens": [""]})
