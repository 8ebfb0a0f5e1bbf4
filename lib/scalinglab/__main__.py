"""``python -m scalinglab``: the command line, as the ``scalinglab`` script."""
import sys

from scalinglab.cli import main

sys.exit(main())
