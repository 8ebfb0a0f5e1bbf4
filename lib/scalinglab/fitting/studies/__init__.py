"""Studies built on the fits: held-out checks of Chinchilla's form (``holdout``), two systems compared by the same
law (``systems``), how many runs a fit needs (``subsets``), which runs to train next (``design``), the audit of
estimators on simulated isoFLOP grids (``estimator_audit``, its truths in ``audit_truths``), and their tables
(``tables``)."""
