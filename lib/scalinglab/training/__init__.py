"""Training small GPTs: the model, its loop, the Gutenberg corpus and tokenizers, and isoFLOP
sweeps (plan, store, launch; their results are read by scalinglab.sweeps). torch is imported inside the
modules that need it."""
