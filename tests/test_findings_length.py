"""Findings a reader takes in within a minute: every notebook's bullets run to about 60 words at most, one answer
with its interval; hedges belong in the notebook's Caveats."""

import json
from pathlib import Path

import pytest
from scalinglab.harness import findings as F

FIXTURE = json.loads((Path(__file__).parent / "data" / "findings_summaries.json").read_text())
MAX_WORDS = 65   # "about 60": a bullet with one long interval or citation may run a few words over


@pytest.mark.parametrize("notebook", list(F.FINDINGS))
def test_every_bullet_is_short(notebook):
    long = [(len(f.text.split()), f.text[:80]) for f in F.FINDINGS[notebook](FIXTURE[notebook])
            if len(f.text.split()) > MAX_WORDS]
    assert long == []
