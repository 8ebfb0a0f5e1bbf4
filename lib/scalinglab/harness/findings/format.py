"""What every notebook's findings share: the key lookup that names what is missing, and number formatting
to what the methods resolve, not what the float holds."""


from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

MAX_FINDINGS = 6
NA = "n/a"


@dataclass(frozen=True)
class Finding:
    """One bullet: a number (with its interval, where there is one) and what it means."""

    text: str

    def markdown(self) -> str:
        return f"- {self.text}"


class MissingSummaryKey(KeyError):
    """A key a notebook's findings need is not in its summary.json."""

    def __init__(self, notebook: str, path: Sequence[Any]):
        self.notebook = notebook
        self.path = tuple(path)
        super().__init__(self.message)

    @property
    def message(self) -> str:
        keys = " → ".join(repr(k) for k in self.path)
        return (f"{self.notebook}: summary.json has no {keys} "
                f"(rerun the notebook, or update scalinglab.harness.findings if the key was renamed)")

    def __str__(self) -> str:
        return self.message


class _Summary:
    """Key lookup that names the notebook and the full key path when something is missing."""

    def __init__(self, notebook: str, data: Mapping[str, Any], path: tuple = ()):
        self.notebook, self.data, self.path = notebook, data, path

    def __call__(self, *keys: Any) -> Any:
        node: Any = self.data
        for i, key in enumerate(keys):
            try:
                node = node[key]
            except (KeyError, IndexError, TypeError):
                raise MissingSummaryKey(self.notebook, self.path + keys[: i + 1]) from None
        return node

    def sub(self, *keys: Any) -> _Summary:
        return _Summary(self.notebook, self(*keys), self.path + keys)

    def row(self, key: str, **match: Any) -> dict:
        """The first record of the list at ``key`` whose fields equal ``match``."""
        for rec in self(key):
            if all(rec.get(k) == v for k, v in match.items()):
                return rec
        where = ", ".join(f"{k}={v!r}" for k, v in match.items())
        raise MissingSummaryKey(self.notebook, self.path + (key, f"[{where}]"))


# --- number formatting: what the methods resolve, not what the float holds ---------------------------

def _missing(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def dec(x: float | None, places: int = 3, sign: bool = False) -> str:
    """Fixed decimals (exponents, differences): 0.514, +0.15; None -> 'n/a'."""
    if _missing(x):
        return NA
    if round(x, places) == 0:
        return f"{0:.{places}f}"
    s = f"{x:+.{places}f}" if sign else f"{x:.{places}f}"
    return s.replace("-", "−")


def sig(x: float | None, digits: int = 2) -> str:
    """Significant digits; large or tiny values as 7.4e10."""
    if _missing(x):
        return NA
    if x == 0:
        return "0"
    mag = math.floor(math.log10(abs(x)))
    if mag >= 5 or mag < -3:
        mant = f"{x / 10 ** mag:.{digits - 1}f}"
        return f"{mant}e{mag}".replace("-", "−")
    if mag >= digits:
        return f"{round(x, digits - 1 - mag):.0f}".replace("-", "−")
    return f"{x:.{max(digits - 1 - mag, 0)}f}".replace("-", "−")


def pct(x: float | None, places: int = 1, sign: bool = False) -> str:
    """A fraction as a percentage: 0.0661 -> '6.6%'."""
    return NA if _missing(x) else dec(100 * x, places, sign) + "%"


def pval(p: float | None) -> str:
    """p to one significant digit; below 0.001 only its order of magnitude (stable across machines)."""
    if _missing(p):
        return f"p {NA}"
    if p < 1e-3:
        return f"p < 1e{math.ceil(math.log10(p))}".replace("-", "−")
    return f"p = {sig(p, 1) if p < 0.01 else f'{p:.2f}'}"


def interval(ci: Sequence[float | None] | None, fmt: Callable[[Any], str] = dec, level: str = "95%") -> str:
    """'(95% 0.48–0.56)'; with a negative bound '(95% −0.09 to +0.65)'; None -> '(no interval)'."""
    if not ci or any(_missing(v) for v in ci):
        return "(no interval)"
    return f"({level} {_pair(fmt(ci[0]), fmt(ci[1]))})"


def _pair(lo: str, hi: str) -> str:
    """'0.48–0.56', '7.3–35%', or 'a to b' when a bound carries a sign."""
    if any(s[:1] in "+−-" for s in (lo, hi)):
        return f"{lo} to {hi}"
    if lo.endswith("%") and hi.endswith("%"):
        lo = lo[:-1]
    return f"{lo}–{hi}"


def diff(ours: float | None, theirs: float | None, places: int = 3) -> str:
    """Signed difference ours − theirs, e.g. '+0.062'."""
    if _missing(ours) or _missing(theirs):
        return NA
    return dec(ours - theirs, places, sign=True)


def diff_resolved(ours: float | None, theirs: float | None, places: int = 3) -> str:
    """``diff``, but a nonzero difference that rounds to zero says how small it is ('under 0.0001 in size')
    instead of printing 0.0000 for −0.00004."""
    if not (_missing(ours) or _missing(theirs)) and ours != theirs and round(ours - theirs, places) == 0:
        return f"under {10 ** -places:.{places}f} in size"
    return diff(ours, theirs, places)


def _span(values: Sequence[float | None], fmt: Callable[[Any], str]) -> str:
    """'a to b' over the values (or one value if they round the same)."""
    vals = [v for v in values if not _missing(v)]
    if not vals:
        return NA
    lo, hi = fmt(min(vals)), fmt(max(vals))
    return lo if lo == hi else _pair(lo, hi)


def _cap(findings: list[Finding]) -> list[Finding]:
    assert len(findings) <= MAX_FINDINGS, f"{len(findings)} findings; at most {MAX_FINDINGS}"
    return findings

