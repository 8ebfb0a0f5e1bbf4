"""The Huber objective on log residuals and the batched Newton/IRLS solver that minimises it
from many starts at once.

Every sum over rows is taken in blocks of at most ``block`` (starts × rows) elements, so memory
stays bounded whatever the number of rows or starts (a (K, n) array at the default ``BLOCK`` is
8 MB, the Jacobian 40 MB); with one block the arithmetic is exactly the unblocked one.
"""

from __future__ import annotations

import numpy as np

from scalinglab.fitting.chinchilla.settings import BLOCK, Parametrisation
from scalinglab.fitting.huber import HUBER_DELTA, huber


def row_blocks(K: int, n: int, block: int = BLOCK) -> list[slice]:
    """Slices of the n rows such that K starts × one slice hold at most ``block`` elements (one row at least)."""
    step = max(1, int(block) // max(int(K), 1))
    return [slice(i, min(i + step, n)) for i in range(0, n, step)] or [slice(0, 0)]


# --- the objective ---------------------------------------------------------


def law_terms(theta: np.ndarray, logN: np.ndarray, logD: np.ndarray):
    """log L̂ and the softmax weights of the three terms, for (K, 5) θ against n points: (K, n) each."""
    e, a, b, al, be = (theta[:, i, None] for i in range(5))
    tA = a - al * logN
    tB = b - be * logD
    tE = np.broadcast_to(e, tA.shape)
    m = np.maximum(np.maximum(tA, tB), tE)
    xA, xB, xE = np.exp(tA - m), np.exp(tB - m), np.exp(tE - m)
    s = xA + xB + xE
    return m + np.log(s), xE / s, xA / s, xB / s


def log_rss(theta: np.ndarray, logN: np.ndarray, logD: np.ndarray, logL: np.ndarray) -> float:
    """The sum of squared log residuals of one θ (5,): the fit's ``rss``, whatever solver found θ."""
    return float(np.sum((law_terms(theta[None, :], logN, logD)[0][0] - logL) ** 2))


def _jacobian(pE, pA, pB, logN, logD) -> np.ndarray:
    """∂ log L̂ / ∂θ, shape (K, n, 5)."""
    return np.stack([pE, pA, pB, -pA * logN, -pB * logD], axis=-1)


def objective(theta, logN, logD, logL, delta=HUBER_DELTA, weights=None, reduction="sum", block=BLOCK):
    """Huber objective for one θ (5,) or many (K, 5); ``weights`` (n,) or (K, n) are resample counts.
    Summed over rows in ``row_blocks``."""
    th = np.atleast_2d(theta)
    W = None if weights is None else np.asarray(weights, float)
    out = np.zeros(len(th))
    for s in row_blocks(len(th), len(logL), block):
        h = huber(law_terms(th, logN[s], logD[s])[0] - logL[s], delta)
        if W is not None:
            h = h * W[..., s]
        out += h.sum(axis=1)
    if reduction == "mean":
        out = out / (len(logL) if W is None else np.sum(W, axis=-1))
    return out if np.ndim(theta) == 2 else float(out[0])


def value_and_grad(theta, logN, logD, logL, delta, reduction="sum", weights=None):
    """Objective and gradient at one θ, for scipy; ``weights`` are resample counts."""
    pred, pE, pA, pB = law_terms(theta[None, :], logN, logD)
    r = pred[0] - logL
    w = np.ones_like(r) if weights is None else np.asarray(weights, float)
    J = _jacobian(pE[0], pA[0], pB[0], logN, logD)
    f, g = (huber(r, delta) * w).sum(), J.T @ (np.clip(r, -delta, delta) * w)
    if reduction == "mean":
        f, g = f / w.sum(), g / w.sum()
    return f, g


# --- the batched solver ----------------------------------------------------


def projected_grad(theta, g, lo, hi):
    """The gradient with components that push out of the box zeroed (KKT check)."""
    return np.where(((theta <= lo) & (g > 0)) | ((theta >= hi) & (g < 0)), 0.0, g)


def _weighted_gram(J: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Σ_n w_kn J_kn J_knᵀ, shape (K, 5, 5)."""
    return np.matmul(J.transpose(0, 2, 1) * w[:, None, :], J)


def _newton_and_irls(theta, W, logN, logD, logL, delta, block=BLOCK):
    """Gradient, exact Hessian and IRLS (Gauss-Newton majoriser) Hessian of the weighted objective,
    summed over ``row_blocks`` of the rows (``W`` is (K, n), a view is enough)."""
    K, m = theta.shape
    g, H, H_irls = np.zeros((K, m)), np.zeros((K, m, m)), np.zeros((K, m, m))
    for s in row_blocks(K, len(logL), block):
        gb, Hb, Hib = _newton_and_irls_rows(theta, W[:, s], logN[s], logD[s], logL[s], delta)
        g += gb
        H += Hb
        H_irls += Hib
    return g, H, H_irls


def _newton_and_irls_rows(theta, W, logN, logD, logL, delta):
    """``_newton_and_irls`` over the rows given, all at once."""
    pred, pE, pA, pB = law_terms(theta, logN, logD)
    r = pred - logL
    J = _jacobian(pE, pA, pB, logN, logD)
    psi = np.clip(r, -delta, delta) * W
    inside = (np.abs(r) <= delta) * W
    g = np.matmul(J.transpose(0, 2, 1), psi[..., None])[..., 0]
    H_irls = _weighted_gram(J, np.minimum(1.0, delta / np.maximum(np.abs(r), 1e-300)) * W)
    # Exact Hessian: quadratic-zone points, plus ψ times the curvature of the
    # log-sum-exp, Tᵀ(diag p − p pᵀ)T, whose diagonal part is assembled here.
    H = _weighted_gram(J, inside - psi)
    sE, sA, sB = (np.sum(psi * p, axis=1) for p in (pE, pA, pB))
    sAN, sBD = np.sum(psi * pA * logN, axis=1), np.sum(psi * pB * logD, axis=1)
    H[:, 0, 0] += sE
    H[:, 1, 1] += sA
    H[:, 2, 2] += sB
    H[:, 1, 3] -= sAN
    H[:, 3, 1] -= sAN
    H[:, 3, 3] += np.sum(psi * pA * logN**2, axis=1)
    H[:, 2, 4] -= sBD
    H[:, 4, 2] -= sBD
    H[:, 4, 4] += np.sum(psi * pB * logD**2, axis=1)
    return g, H, H_irls


def batched_solve(theta0, logN, logD, logL, *, weights=None, delta=HUBER_DELTA, lower=None, upper=None,
                  max_iter=100, tol=1e-8, gtol=1e-9, param: Parametrisation | None = None, block: int = BLOCK):
    """Minimise the summed (weighted) Huber objective from K starts at once.

    Each iteration takes a Newton step where the exact Hessian is positive
    definite, and otherwise a Gauss-Newton step on the IRLS majoriser of the
    Huber loss (curvature min(1, δ/|r|) per point); both are Levenberg-damped,
    followed by a backtracking line search on the true objective and
    projection onto the box. Returns (θ (K, 5), objective (K,), converged (K,)):
    converged means the projected gradient is below ``gtol`` (the summed
    objective's scale) or the last step moved every coordinate less than
    ``tol``.

    ``param`` (from ``parametrisation``) restricts the search to the free
    coordinates φ: steps, box and convergence tests are in φ, and θ (K, 5)
    comes back with fixed and tied coordinates exact. ``block`` bounds the elements (starts × rows)
    of each block of the row-wise sums (``row_blocks``).
    """
    P = param if param is not None and not param.identity else None
    lo = np.full(5, -np.inf) if lower is None else np.asarray(lower, float)
    hi = np.full(5, np.inf) if upper is None else np.asarray(upper, float)
    # Below, theta, lo and hi are the solver's coordinates: θ itself, or φ under constraints.
    if P is None:
        theta = np.array(theta0, float, copy=True)
    else:
        theta = P.phi(np.asarray(theta0, float))
        lo, hi = P.box(lo, hi)

    def full(x):  # the solver's coordinates -> θ
        return x if P is None else P.theta(x)

    K = len(theta)
    W = np.ones((1, len(logL))) if weights is None else np.asarray(weights, float)
    theta = np.clip(theta, lo, hi)
    lam = np.full(K, 1e-8)
    active = np.ones(K, bool)
    converged = np.zeros(K, bool)

    def obj(th, Wt):  # th is (K, m), so objective returns one value per start
        return objective(full(th), logN, logD, logL, delta, weights=Wt, block=block)

    f = obj(theta, W)
    eye = np.eye(theta.shape[1])
    for _ in range(max_iter):
        idx = np.flatnonzero(active)
        if idx.size == 0:
            break
        th = theta[idx]
        Wi = W if W.shape[0] == 1 else W[idx]
        Wi_full = np.broadcast_to(Wi, (idx.size, W.shape[1]))
        g, H_newton, H_irls = _newton_and_irls(full(th), Wi_full, logN, logD, logL, delta, block)
        if P is not None:  # chain rule through θ = c + T·φ
            g, H_newton, H_irls = P.grad(g), P.hessian(H_newton), P.hessian(H_irls)
        small = np.max(np.abs(projected_grad(th, g, lo, hi)), axis=1) < gtol
        eig = np.linalg.eigvalsh(H_newton)
        newton_ok = eig[:, 0] > 1e-10 * np.abs(eig[:, -1])
        H = np.where(newton_ok[:, None, None], H_newton, H_irls)
        diagH = np.einsum("kpp->kp", H)
        damp = lam[idx, None, None] * (diagH[:, :, None] * eye) + 1e-14 * eye
        step = -np.linalg.solve(H + damp, g[..., None])[..., 0]
        # Backtracking: halve until the true objective does not increase.
        t = np.ones(idx.size)
        f_old = f[idx]
        accepted = np.zeros(idx.size, bool)
        new_th, f_new = th.copy(), f_old.copy()
        for _ in range(40):
            todo = np.flatnonzero(~accepted & ~small)
            if todo.size == 0:
                break
            cand = np.clip(th[todo] + t[todo, None] * step[todo], lo, hi)
            fc = obj(cand, Wi if Wi.shape[0] == 1 else Wi[todo])
            ok = fc <= f_old[todo]
            new_th[todo[ok]], f_new[todo[ok]] = cand[ok], fc[ok]
            accepted[todo[ok]] = True
            t[todo[~ok]] *= 0.5
        moved = np.max(np.abs(new_th - th), axis=1)
        theta[idx], f[idx] = new_th, f_new
        # Trust the quadratic model more after a full step, less after a cut one.
        lam[idx] = np.where(t >= 1.0, np.maximum(lam[idx] * 0.1, 1e-12), np.minimum(lam[idx] * 10, 1e6))
        done = small | (accepted & (moved < tol)) | ~accepted
        converged[idx[done]] = small[done] | (accepted[done] & (moved[done] < tol))
        active[idx[done]] = False
    return full(theta), f, converged


