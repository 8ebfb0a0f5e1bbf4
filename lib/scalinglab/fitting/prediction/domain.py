"""How far a prediction reaches beyond the runs a law was fitted on: decades outside the observed range of
log N, log D and log C (C = 6ND), and the Mahalanobis distance of (log N, log D) from the runs.

A fitted law is evidence about the region its runs cover. Outside it, a prediction rests on the law's form
holding there, which the fit cannot check (notebook 04 shows where it fails). So every prediction,
allocation and held-out row is given its distance from that region, and flagged ``outside`` when

- it lies beyond the observed range of log10 N, log10 D or log10 C (distance > 0 decades), or
- its Mahalanobis distance in (log N, log D) exceeds that of the farthest fitted run (the runs' own
  spread is the threshold: a point no farther than some run is not an extrapolation in this sense; this
  catches corners of the box, e.g. a large N with few tokens, that no run came near).

numpy only, so the CLI's start stays fast.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from scalinglab.serialization import to_jsonable

AXES = ("N", "D", "C")


@dataclass(frozen=True)
class Domain:
    """The fitted runs' region: min and max of log10 N, D, C, and the (log10 N, log10 D) mean and covariance."""

    lo: tuple[float, float, float]
    hi: tuple[float, float, float]
    mean: tuple[float, float]
    cov: tuple[tuple[float, float], tuple[float, float]]
    threshold: float  # the largest Mahalanobis distance of any fitted run

    @classmethod
    def from_runs(cls, N, D) -> Domain:
        x = _logs(N, D)
        mean = x[:, :2].mean(axis=0)
        cov = np.cov(x[:, :2], rowvar=False)
        dom = cls(lo=tuple(map(float, x.min(axis=0))), hi=tuple(map(float, x.max(axis=0))),
                  mean=tuple(map(float, mean)), cov=tuple(tuple(map(float, r)) for r in cov), threshold=0.0)
        return cls(**{**dom.__dict__, "threshold": float(dom.mahalanobis(N, D).max())})

    def mahalanobis(self, N, D) -> np.ndarray:
        x = _logs(N, D)[:, :2] - np.asarray(self.mean)
        inv = np.linalg.pinv(np.asarray(self.cov))  # pinv: one N or one D among the runs is still a region
        return np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", x, inv, x), 0.0))

    def distance(self, N, D) -> dict[str, np.ndarray]:
        """Per point: decades beyond the runs' range in N, D, C (signed: + above the largest, − below the
        smallest, 0 inside), the Mahalanobis distance, and ``outside`` (either test, see the module)."""
        x = _logs(N, D)
        lo, hi = np.asarray(self.lo), np.asarray(self.hi)
        beyond = np.where(x > hi, x - hi, np.where(x < lo, x - lo, 0.0))
        m = self.mahalanobis(N, D)
        # 1e-9: a fitted run itself is never outside through rounding.
        outside = (np.abs(beyond) > 1e-9).any(axis=1) | (m > self.threshold * (1 + 1e-9) + 1e-12)
        out = {f"decades_{a}": beyond[:, i] for i, a in enumerate(AXES)}
        return {**out, "mahalanobis": m, "outside": outside}

    def rows(self, N, D) -> list[dict[str, Any]]:
        """``distance`` as one JSON-ready dict per point (with the threshold)."""
        d = self.distance(N, D)
        return [{**{k: float(d[f"decades_{a}"][i]) for a in AXES for k in [f"decades_{a}"]},
                 "mahalanobis": float(d["mahalanobis"][i]), "mahalanobis_threshold": self.threshold,
                 "outside": bool(d["outside"][i])} for i in range(len(d["outside"]))]

    def to_dict(self) -> dict[str, Any]:
        return to_jsonable({"log10_min": dict(zip(AXES, self.lo)), "log10_max": dict(zip(AXES, self.hi)),
                "mahalanobis_threshold": self.threshold})


def _logs(N, D) -> np.ndarray:
    N, D = np.broadcast_arrays(np.asarray(N, float).ravel(), np.asarray(D, float).ravel())
    # log10 C as a sum of logs: 6·N·D overflows for N or D near 1e308 and would report the wrong axis.
    lN, lD = np.log10(N), np.log10(D)
    return np.column_stack([lN, lD, np.log10(6.0) + lN + lD])


def describe(row: dict[str, Any]) -> str:
    """One row of ``Domain.rows`` in words: 'inside the fitted runs' or what lies beyond them, e.g.
    'C 1.77 decades above the runs, N 1.2 above; Mahalanobis 6.1 (runs reach 2.9)'."""
    parts = [f"{a} {abs(row[f'decades_{a}']):.2f} decades {'above' if row[f'decades_{a}'] > 0 else 'below'}"
             for a in ("C", "N", "D") if abs(row[f"decades_{a}"]) > 1e-9]
    maha = f"Mahalanobis {row['mahalanobis']:.2f} (fitted runs reach {row['mahalanobis_threshold']:.2f})"
    if not row["outside"]:
        return f"inside the fitted runs; {maha}"
    return f"{', '.join(parts) or 'inside their ranges, but off their (log N, log D) cloud'} the fitted runs; {maha}"


def short(row: dict[str, Any]) -> str:
    """A table cell: the largest decades beyond the runs' range, e.g. '+1.77 C', or 'far' (only the
    Mahalanobis test), or '-' inside."""
    if not row["outside"]:
        return "-"
    axis = max(AXES, key=lambda a: abs(row[f"decades_{a}"]))
    v = row[f"decades_{axis}"]
    return f"{v:+.2f} {axis}" if abs(v) > 1e-9 else "off-cloud"


def legend(rows: list[dict[str, Any]]) -> str:
    """The line under a table with a ``short`` column: what it means, and how many rows are outside."""
    n_out = sum(r["outside"] for r in rows)
    return (f"beyond = decades outside the fitted runs' range of log N, D or C (+ above, - below; off-cloud: in "
            f"range but farther, Mahalanobis, than any fitted run); {n_out} of {len(rows)} outside")
