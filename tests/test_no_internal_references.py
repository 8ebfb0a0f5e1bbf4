"""What a reader meets (notebooks, README, docs, provenance notes, findings) never mentions the tracker, the
workbook's own history or the machine it was built on: an outside reader cannot follow any of those."""

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Each pattern names a kind of internal reference; a match prints the file and the line around it.
PATTERNS = {
    "an issue or ticket": re.compile(r"\b(issues?|tickets?)\b\s*#?\d*|(?<![\w/&#])#\d+\b", re.I),
    "a work session": re.compile(r"\bsessions?\b", re.I),
    "the tool's own history": re.compile(r"\bnow (warns|refuses|says|prints)\b|\bused to (say|print|warn)\b", re.I),
    "the machine it was built on": re.compile(r"\b(CPU cores|two cores|2 cores) allow\b|\bthis machine\b", re.I),
}


def reader_files() -> list[Path]:
    files = [ROOT / "README.md", ROOT / "examples" / "README.md", *sorted((ROOT / "docs").glob("*.md")),
             *sorted((ROOT / "data").rglob("PROVENANCE.md"))]
    return [f for f in files if f.is_file()]


def notebook_text(path: Path) -> str:
    """Every cell's source and every text output (stream, text/plain, text/markdown) of a notebook."""
    nb = json.loads(path.read_text())
    parts = []
    for cell in nb["cells"]:
        parts.append("".join(cell["source"]))
        for out in cell.get("outputs", []):
            parts.append("".join(out.get("text", "")))
            for mime in ("text/plain", "text/markdown"):
                parts.append("".join(out.get("data", {}).get(mime, "")))
    return "\n".join(parts)


def hits(text: str) -> list[str]:
    found = []
    for kind, pat in PATTERNS.items():
        for m in pat.finditer(text):
            found.append(f"{kind}: …{text[max(m.start() - 50, 0):m.end() + 50]!r}…")
    return found


@pytest.mark.parametrize("path", reader_files() + sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_no_internal_references(path):
    text = notebook_text(path) if path.suffix == ".ipynb" else path.read_text()
    assert hits(text) == []


def test_findings_text_has_none():
    from scalinglab.harness.findings import FINDINGS, render_markdown

    summaries = json.loads((ROOT / "tests" / "data" / "findings_summaries.json").read_text())
    for name in FINDINGS:
        assert hits(render_markdown(name, summaries[name])) == [], name


def test_the_scan_catches_each_kind():
    for text in ("Issue #15: a parabola", "see #13", "over four sessions", "`scalinglab isoflop` now warns",
                 "Two CPU cores allow three seeds"):
        assert hits(text), text
    for text in ("issubclass", "the tissue", "colour #fff", "## Findings", "step 13", "a&#8209;b"):
        assert hits(text) == [], text
