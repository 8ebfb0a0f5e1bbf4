"""Chinchilla's law as a plug-in of the engine: the law and what follows from it under C = 6ND (``law``), its
registry entry and Approach 3's solver, Hoffmann's grid with its bootstrap (``approach3``), the batched Newton/IRLS
that solves every start at once (``newton``), and Hoffmann's procedure as written, per-start L-BFGS-B, as a
reference, the solver "lbfgs-hoffmann" (``lbfgs_reference``). The engine's core reaches it only through the registry
of forms and the solver table (tests/test_architecture.py); saved fits (``fitting.saved``), which hold Chinchilla's
law alone, import it."""
