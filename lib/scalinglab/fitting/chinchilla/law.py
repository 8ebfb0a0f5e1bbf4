"""The Chinchilla law L(N, D) = E + A/N^α + B/D^β as a parameter set, and its log coordinates.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

PARAMS = ("E", "A", "B", "alpha", "beta")
THETA = ("e", "a", "b", "alpha", "beta")  # the optimiser's coordinates: e, a, b are logs of E, A, B


@dataclass(frozen=True)
class ScalingLaw:
    """A parameter set of L(N, D) = E + A/N^α + B/D^β and what follows from it under C = 6ND."""

    E: float
    A: float
    B: float
    alpha: float
    beta: float

    @property
    def a(self) -> float:
        """N_opt ∝ C^a (NaN when both exponents are 0: a fit at its bound has no allocation)."""
        return _share(self.beta, self.alpha)

    @property
    def b(self) -> float:
        """D_opt ∝ C^b (NaN when both exponents are 0)."""
        return _share(self.alpha, self.beta)

    @property
    def theta(self) -> np.ndarray:
        return np.array([np.log(self.E), np.log(self.A), np.log(self.B), self.alpha, self.beta])

    @property
    def params(self) -> dict[str, float]:
        return {k: float(getattr(self, k)) for k in PARAMS}

    def loss(self, N, D):
        N, D = np.asarray(N, float), np.asarray(D, float)
        return self.E + self.A / N**self.alpha + self.B / D**self.beta

    def n_opt(self, C):
        """Loss-minimising N at compute C (FLOP), with D = C/(6N) (Hoffmann eq. 4)."""
        G = (self.alpha * self.A / (self.beta * self.B)) ** (1.0 / (self.alpha + self.beta))
        return G * (np.asarray(C, float) / 6.0) ** self.a

    def d_opt(self, C):
        return np.asarray(C, float) / (6.0 * self.n_opt(C))

    def tokens_per_param(self, C):
        return self.d_opt(C) / self.n_opt(C)



def to_theta(params: np.ndarray) -> np.ndarray:
    """(…, E, A, B, alpha, beta) → (…, e, a, b, alpha, beta)."""
    out = np.array(params, float, copy=True)
    out[..., :3] = np.log(out[..., :3])
    return out


def to_params(theta: np.ndarray) -> np.ndarray:
    out = np.array(theta, float, copy=True)
    out[..., :3] = np.exp(out[..., :3])
    return out


def _share(x, other):
    """x/(x + other): a float for floats, an array for arrays; NaN (no warning) where both are 0."""
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.divide(x, np.add(x, other))
    return float(r) if np.ndim(r) == 0 else r
