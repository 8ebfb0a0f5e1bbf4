"""Predictions of runs a fit never saw, with intervals that say their unit: held-out predictions of any law
(``held_out``: errors, RMSLE, parameter-only, new-run and calibrated intervals), intervals calibrated on units the
fit never saw (``calibration``; for `fit --holdout`, `--predict` and `predict`, ``run_calibration``), predictions
at new (N, D) and allocations (``forecast``), how far a point lies beyond the fitted runs (``domain``), and a saved
fit's predictions for a table (``from_saved``, `scalinglab predict`)."""
