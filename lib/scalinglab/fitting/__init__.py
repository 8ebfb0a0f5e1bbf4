"""Fitting scaling laws: Approach 3 (the parametric law, its solver, bootstrap and constraints),
Approach 2 (isoFLOP optima), Approach 1 (the envelope of training curves), held-out checks,
subset studies and the fit plot. Never imports torch, training or the papers."""
