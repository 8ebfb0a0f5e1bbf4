"""Fitting scaling laws. The engine is this package's top level: a law's form (``form``, Chinchilla's parameters in
``law``), the registry and its one fit (``laws``), the options (``options``), rows selected (``conditions``) and read
(``columns``), the solvers (``approach3`` with ``solver``, ``varpro``), results (``results``, ``protocol``,
``predictions``), calibration and saved fits; ``workflow`` joins them for `scalinglab fit` and ``sl.fit``.
``frontier`` holds the estimators of the compute-optimal frontier (isoFLOP, envelope), ``studies`` the studies built
on fits (held-out checks, comparisons, subsets, design, the estimator audit). Never imports torch, training or the
papers."""
