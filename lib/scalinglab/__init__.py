"""scalinglab: a reproducible scaling-law workbook.

The package is deliberately light at import: fitting, data and the CLI's start
never import torch. Modules that need torch (model, train, sweep workers,
model adapters) import it themselves.
"""

__version__ = "0.1.0"
