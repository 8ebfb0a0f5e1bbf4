"""Hyperparameter scaling laws: eta_opt(N, D) and B_opt(N, D) fitted through the near-optimal runs of
learning-rate x batch grids (``optima``), the loss surface around each grid's optimum (``surface``), and the
advice ``scalinglab hparams`` prints for a new (N, D) (``advice``)."""

from scalinglab.hparams.optima import AUTHORS_THRESHOLD, HparamLaw, HparamRuns, fit_hparam_law, near_optimal  # noqa: F401
from scalinglab.hparams.surface import Surface, fit_surface, penalty, pooled_curvature  # noqa: F401
