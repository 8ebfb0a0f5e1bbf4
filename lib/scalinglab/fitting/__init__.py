"""Fitting scaling laws. The engine is this package's top level: a law's form (``form``), the registry and its one
fit (``laws``), the options (``options``), rows selected (``conditions``) and read (``columns``), the solver table
(``solvers``), results (``results``, ``protocol``) and saved fits (``saved``); ``workflow`` joins them for
`scalinglab fit` and ``sl.fit``. ``prediction`` holds the predictions of runs a fit never saw and their calibrated
intervals. ``chinchilla`` holds Chinchilla's law and its own solver (Approach 3),
plugged in through the registry and the solver table; ``frontier`` the estimators of the compute-optimal frontier
(isoFLOP, envelope, variable projection); ``studies`` the studies built on fits (held-out checks, comparisons,
subsets, design, the estimator audit). Never imports torch, training or the papers."""
