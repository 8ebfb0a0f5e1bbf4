"""The extrapolation benchmark: every public scaling dataset held out by scale, every applicable law × estimator
scored on the runs it never saw, and SLDBench against its published baselines."""
