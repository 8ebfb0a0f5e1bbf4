"""Parameter and FLOP accounting: our decoder's counts (Kaplan's non-embedding, standard, total) and
FLOPs per token (``decoder``), and the papers' own conventions as named functions (``conventions``)."""
