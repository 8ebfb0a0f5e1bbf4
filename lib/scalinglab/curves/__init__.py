"""Whole loss curves under learning-rate schedules: laws (multi-power, annealing, baseline), their fit, their
evaluation, and the curves they read. numpy and scipy only; no torch."""
