"""The estimators of the compute-optimal frontier from runs, besides Approach 3's law: Approach 2's isoFLOP optima
(``isoflop``, with its exponent's interval in ``isoflop_exponent`` and the weighted line in ``wls``), Approach 1's
envelope of training curves (``envelope``), Approach 3's law by variable projection, least squares with E, A and B
solved exactly (``varpro``), a block bootstrap for runs that give points at several budgets
(``block_bootstrap``), and the reports `scalinglab isoflop` and `envelope` print (``analysis``)."""
