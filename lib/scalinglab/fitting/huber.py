"""The Huber loss on log residuals, and Hoffmann et al.'s threshold: the one definition every fit uses.

Quadratic within ``delta`` of zero and linear beyond it, so a few runs far off the law pull the fit less than
under least squares. On log residuals, δ = 1e-3 (Hoffmann et al. 2022, Appendix D.2) makes nearly every run of a
good fit lie on the linear branch: a robust fit close to least absolute deviations.
"""

from __future__ import annotations

import numpy as np

HUBER_DELTA = 1e-3   # Hoffmann et al.'s δ on log residuals; `scalinglab fit --delta` changes it


def huber(r: np.ndarray, delta: float = HUBER_DELTA) -> np.ndarray:
    """Elementwise Huber loss of residuals ``r``."""
    ar = np.abs(r)
    return np.where(ar <= delta, 0.5 * r * r, delta * (ar - 0.5 * delta))
