"""JSON-ready values: what every result's ``to_dict()`` and the notebooks' summary.json go through.

numpy scalars and arrays become Python numbers and lists, tuples become lists, dict keys become
strings, and NaN and ±inf become None (bare NaN is not JSON). Imports only the standard library.
"""

from __future__ import annotations

import math
from typing import Any


def to_jsonable(obj: Any) -> Any:
    """``obj`` with numpy values, tuples, NaN and inf made safe for ``json.dumps(..., allow_nan=False)``."""
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if hasattr(obj, "tolist"):  # numpy scalar or array
        return to_jsonable(obj.tolist())
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def dumps(obj: Any) -> str:
    """The CLI's JSON: ``to_jsonable(obj)`` indented by 2, NaN refused (it is None by then)."""
    import json

    return json.dumps(to_jsonable(obj), indent=2, allow_nan=False)
