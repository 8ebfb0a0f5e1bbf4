"""From a ladder's losses to what people measure: task accuracy predicted in two steps, and loss-to-loss laws.

``chain``: (N, D) → task loss → accuracy (Bhagia et al. 2024), each step fitted by the law registry's engine;
``intervals``: the chained accuracy's interval over ladder runs; ``ladder``: the OLMo ladder's runs as tables;
``loss_to_loss``: shifted power laws between losses (Brandfonbrener et al. 2024) and translating a law through one.
"""

from scalinglab.downstream.chain import SIGMOID, ChainFit, fit_chain
from scalinglab.downstream.intervals import ChainInterval, chain_interval

__all__ = ["SIGMOID", "ChainFit", "ChainInterval", "chain_interval", "fit_chain"]
