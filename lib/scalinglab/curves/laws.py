"""Laws of the whole loss curve L(t) under a learning-rate schedule: the multi-power law, the annealing law, a
schedule-blind power law. numpy only.

A curve is the sequence of rates η_1..η_T its steps applied and the losses logged after n_j steps (``at``).
Every law reads the schedule through a :class:`Prepared` curve: what a law needs, computed once per curve with
cumulative sums, so evaluating it costs O(m·K) numpy operations (m logged points, K coarse-grained LR changes),
never a Python loop over steps.

- **multipower** (Luo et al. 2025, arXiv:2503.12811, Eq. 3 of the ICLR paper):
  L(t) = L0 + A·S1(t)^(−α) − LD(t), LD(t) = B·Σ_{k≤t} (η_{k−1} − η_k)·G(η_k^(−γ)·S_k(t)),
  G(x) = 1 − (C·x + 1)^(−β), S_k(t) = Σ_{τ=k..t} η_τ, S1(t) the area under the whole schedule to t (warmup
  included: the paper's S1(t) + S_W). The paper's sum starts after warmup; ``warmup_in_sum=True`` also counts the
  warmup's increases, as the authors' released evaluation does (read in their repository,
  github.com/thu-yao-01-luo/MultiPowerLaw@8da9f19 ``src/evaluation.py`` lines 24-39, to check the index
  convention: S1 and S_k include the rate of step t itself); it is used only to evaluate their published
  parameters. Parameters: L0, A, α, B, C, β, γ.
- **tissue** (Tissue et al. 2024, arXiv:2408.11029, Eq. 1 and §3): L(s) = L0 + A·S1^(−α) − C·S2, S1 = Σ_{i≤s} η_i
  (the forward area, warmup included), S2 = Σ_{i≤s} m_i with the momentum m_i = λ·m_{i−1} + (η_{i−1} − η_i),
  λ = 0.999 (the paper's default decay factor; warmup's increases are not annealing and start m at 0 after the
  peak). Parameters: L0, A, α, C.
- **baseline**: L(t) = L0 + A·t^(−α) in steps, blind to the schedule's shape. Parameters: L0, A, α.

The multi-power law's sum over LR changes is coarse-grained where that is safe: the 4·``width`` steps before
each logged point are summed exactly (there G is steep), older changes in chunks of at most ``width`` steps that
never straddle a point's exact window, each chunk represented by its total decrease at its decrease-weighted
area and geometric-mean rate. ``tests/test_curves.py`` checks it against the exact sum
(:func:`multipower_naive`) to 1e-5 nats on Luo et al.'s curves, five times below the data's 4-decimal
rounding.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

TISSUE_DECAY = 0.999   # Tissue et al.'s λ
CHUNK_WIDTH = 64       # steps per coarse-grained LR-change chunk


@dataclass(frozen=True)
class Curve:
    """One run's curve: the rate of every step (``lrs[i]`` is step i+1's), the logged points ``at`` (steps done,
    1..T, increasing) and their losses (None for a schedule to predict)."""

    name: str
    lrs: np.ndarray
    at: np.ndarray
    loss: np.ndarray | None = None
    meta: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Prepared:
    """What the laws read from one curve: areas at the logged points and the LR changes before each, as
    (m, K) matrices of decreases (0 where a change lies after the point), log rates and areas S(t) − S(k−1)."""

    at: np.ndarray          # (m,) steps done
    s1: np.ndarray          # (m,) area under the schedule to each logged point
    s2: np.ndarray          # (m,) Tissue et al.'s momentum annealing area
    drops: tuple = ()       # ((m, K) decreases, (m or 1, K) log rates, (m, K) areas), coarse part then exact part


def _peak_index(lrs: np.ndarray) -> int:
    """The last warmup step: the first step at the schedule's peak."""
    return int(np.argmax(lrs))


def prepare(curve: Curve, width: int = CHUNK_WIDTH, warmup_in_sum: bool = False,
            decay: float = TISSUE_DECAY, near: int | None = None) -> Prepared:
    """Precompute a curve for the laws. The ``near`` (default 4·width) steps before each logged point enter the
    multi-power sum exactly; older changes in chunks of at most ``width`` steps."""
    near = 4 * width if near is None else near
    lrs = np.asarray(curve.lrs, float)
    at = np.asarray(curve.at, int)
    t = at - 1                                           # 0-based index of the last step done
    S = np.cumsum(lrs)
    s1 = S[t]
    diffs = np.zeros_like(lrs)
    diffs[1:] = lrs[:-1] - lrs[1:]                       # η_{k−1} − η_k: a decrease is positive
    p = _peak_index(lrs)
    d_after = diffs.copy()
    d_after[: p + 1] = 0.0
    s2 = _momentum_area(d_after, decay)[t]
    start = 1 if warmup_in_sum else p + 1
    log_lr = np.log(np.maximum(lrs, 1e-300))
    Sprev = np.concatenate([[0.0], S[:-1]])              # S(k−1)
    lo = np.maximum(t - near + 1, start)                 # the exact part: steps lo..t of each point
    # exact part: (m, near) gathers
    idx = lo[:, None] + np.arange(near)[None, :]
    valid = idx <= t[:, None]
    idx = np.minimum(idx, len(lrs) - 1)
    exact = (np.where(valid, diffs[idx], 0.0), log_lr[idx], np.where(valid, s1[:, None] - Sprev[idx], 0.0))
    # coarse part: every change before some point's exact window, chunked so that no chunk straddles a window
    k = np.nonzero(diffs[start:])[0] + start
    k = k[k < lo.max()]
    if not exact[0].any():
        exact = None
    if k.size == 0:
        return Prepared(at, s1, s2, (exact,) if exact else ())
    bounds = np.unique(lo)
    seg = np.searchsorted(bounds, k, side="right")
    _, cid = np.unique(seg * (len(lrs) // width + 2) + k // width, return_inverse=True)
    K = cid.max() + 1
    w = diffs[k]
    absw = np.abs(w)
    norm = np.bincount(cid, absw, K)
    Sc = np.bincount(cid, absw * Sprev[k], K) / norm
    log_eta = np.bincount(cid, absw * log_lr[k], K) / norm
    last_k = np.zeros(K, int)
    np.maximum.at(last_k, cid, k)
    inside = last_k[None, :] < lo[:, None]
    coarse = (np.where(inside, np.bincount(cid, w, K)[None, :], 0.0), log_eta[None, :],
              np.where(inside, s1[:, None] - Sc[None, :], 0.0))
    return Prepared(at, s1, s2, (coarse, exact) if exact else (coarse,))


def _momentum_area(d: np.ndarray, decay: float) -> np.ndarray:
    """Σ_{i≤s} m_i with m_i = λ·m_{i−1} + d_i, by cumulative sums: within a segment starting at a,
    m_{a+j} = λ^j·(λ·m_{a−1} + Σ_{i≤j} λ^(−i)·d_{a+i}); segments of 500 steps keep λ^(−i) finite."""
    n = len(d)
    m = np.empty(n)
    prev, seg = 0.0, 500
    for a in range(0, n, seg):          # a loop over segments, not over steps
        b = min(a + seg, n)
        pw = decay ** np.arange(b - a)
        m[a:b] = pw * (decay * prev + np.cumsum(d[a:b] / pw))
        prev = m[b - 1]
    return np.cumsum(m)


@dataclass(frozen=True)
class CurveLaw:
    name: str
    params: tuple[str, ...]
    citation: str
    lower: tuple[float, ...]
    upper: tuple[float, ...]

    def predict(self, theta, prep: Prepared) -> np.ndarray:
        return _PREDICT[self.name](np.asarray(theta, float), prep)[0]

    def predict_jac(self, theta, prep: Prepared) -> tuple[np.ndarray, np.ndarray]:
        return _PREDICT[self.name](np.asarray(theta, float), prep)


def _multipower(theta, p: Prepared):
    L0, A, alpha, B, C, beta, gamma = theta
    s1a = p.s1 ** (-alpha)
    ld = np.zeros((len(p.s1), 4))                        # Σ d·G and its derivatives in C, β, γ
    for d, log_eta, dist in p.drops:
        x = np.exp(-gamma * log_eta) * dist              # η^(−γ)·S_k(t)
        u = 1.0 + C * x
        lu = np.log(u)
        upb = np.exp(-beta * lu)                         # u^(−β)
        dG_du = beta * upb / u
        ld[:, 0] += (d * (1.0 - upb)).sum(1)
        ld[:, 1] += (d * dG_du * x).sum(1)
        ld[:, 2] += (d * upb * lu).sum(1)
        ld[:, 3] += (d * dG_du * C * x * -log_eta).sum(1)
    jac = np.column_stack([np.ones_like(p.s1), s1a, -A * s1a * np.log(p.s1), -ld[:, 0], -B * ld[:, 1],
                           -B * ld[:, 2], -B * ld[:, 3]])
    return L0 + A * s1a - B * ld[:, 0], jac


def _tissue(theta, p: Prepared):
    L0, A, alpha, C = theta
    s1a = p.s1 ** (-alpha)
    jac = np.stack([np.ones_like(p.s1), s1a, -A * s1a * np.log(p.s1), -p.s2], 1)
    return L0 + A * s1a - C * p.s2, jac


def _baseline(theta, p: Prepared):
    L0, A, alpha = theta
    t = p.at.astype(float)
    ta = t ** (-alpha)
    return L0 + A * ta, np.stack([np.ones_like(t), ta, -A * ta * np.log(t)], 1)


_PREDICT = {"multipower": _multipower, "tissue": _tissue, "baseline": _baseline}
_INF = np.inf
LAWS = {
    "multipower": CurveLaw("multipower", ("L0", "A", "alpha", "B", "C", "beta", "gamma"),
                           "Luo et al. 2025, arXiv:2503.12811", (0, 0, 0, 0, 0, 0, 0),
                           (_INF, _INF, 3, _INF, _INF, 5, 3)),
    "tissue": CurveLaw("tissue", ("L0", "A", "alpha", "C"), "Tissue et al. 2024, arXiv:2408.11029",
                       (0, 0, 0, -_INF), (_INF, _INF, 3, _INF)),
    "baseline": CurveLaw("baseline", ("L0", "A", "alpha"), "a power law in steps (schedule-blind)",
                         (0, 0, 0), (_INF, _INF, 3)),
}


def get(name: str) -> CurveLaw:
    from scalinglab.errors import UserError

    if name not in LAWS:
        raise UserError(f"curve law must be one of {', '.join(LAWS)}, not {name!r}")
    return LAWS[name]


def multipower_naive(theta, curve: Curve, warmup_in_sum: bool = False) -> np.ndarray:
    """The multi-power law by its definition, one logged point at a time (the exact sum over every step): the
    reference the coarse-grained evaluation is tested and benchmarked against."""
    L0, A, alpha, B, C, beta, gamma = theta
    lrs = np.asarray(curve.lrs, float)
    S = np.cumsum(lrs)
    start = 1 if warmup_in_sum else _peak_index(lrs) + 1
    out = []
    for n in np.asarray(curve.at, int):
        t = n - 1
        k = np.arange(start, t + 1)
        d = lrs[k - 1] - lrs[k]
        Sk = S[t] - S[k - 1]
        G = 1.0 - (1.0 + C * lrs[k] ** (-gamma) * Sk) ** (-beta)
        out.append(L0 + A * S[t] ** (-alpha) - B * np.sum(d * G))
    return np.array(out)
