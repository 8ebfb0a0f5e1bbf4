"""What every notebook shares: its profile, its results folder, its summary.

A notebook starts with one cell tagged ``parameters`` (``profile = "full"``),
then::

    wb = Workbook("01_chinchilla_fit", profile)
    settings = wb.pick(full=dict(n_boot=4000), smoke=dict(n_boot=200))
    ...
    wb.savefig(fig, "contours", caption=f"The fit's contours; a = {a:.3f}.")
                                         # shown inline, saved as results/01_chinchilla_fit/contours.png
    wb.summary["fit"] = {...}
    wb.write_summary()                   # results/01_chinchilla_fit/summary.json

``$SCALINGLAB_PROFILE`` overrides the profile (the test suite uses it so that
nbval can execute the committed notebooks quickly), and ``$SCALINGLAB_RESULTS``
moves the results folder.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scalinglab.errors import UserError
from scalinglab.serialization import to_jsonable

PROFILES = ("full", "smoke")
# 100 dpi keeps a committed notebook with a dozen figures near 1-2 MB (base64 PNG in the JSON) while the
# saved PNGs stay legible at a page's width.
FIGURE_DPI = 100
PROFILE_ENV = "SCALINGLAB_PROFILE"
RESULTS_ENV = "SCALINGLAB_RESULTS"


def resolve_profile(profile: str) -> str:
    profile = os.environ.get(PROFILE_ENV) or profile
    if profile not in PROFILES:
        raise UserError(f"profile must be one of {', '.join(PROFILES)}, not {profile!r}")
    return profile


def project_root(start: Path | None = None) -> Path:
    """The checkout's root: the nearest parent holding notebooks/ and lib/."""
    here = (start or Path.cwd()).resolve()
    for cand in (here, *here.parents):
        if (cand / "notebooks").is_dir() and (cand / "lib" / "scalinglab").is_dir():
            return cand
    return here


def results_root() -> Path:
    env = os.environ.get(RESULTS_ENV)
    return Path(env).expanduser() if env else project_root() / "results"


def _in_kernel() -> bool:
    """True inside a Jupyter kernel (papermill, nbval, JupyterLab), where display() reaches the notebook."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def pick_device() -> str:
    """'cuda' when torch sees a GPU, else 'cpu' (torch is imported only here)."""
    try:
        import torch
    except ImportError:
        return "cpu"
    return "cuda" if torch.cuda.is_available() else "cpu"


@dataclass
class Workbook:
    name: str
    profile: str = "full"
    summary: dict[str, Any] = field(default_factory=dict)
    figures: list[str] = field(default_factory=list)   # stems saved (and shown) so far, in order

    def __post_init__(self) -> None:
        self.profile = resolve_profile(self.profile)
        self.summary.setdefault("profile", self.profile)

    @property
    def smoke(self) -> bool:
        return self.profile == "smoke"

    @property
    def out_dir(self) -> Path:
        path = results_root() / self.name
        path.mkdir(parents=True, exist_ok=True)
        return path

    def pick(self, **by_profile: Any) -> Any:
        """The value for the current profile: wb.pick(full=4000, smoke=200)."""
        return by_profile[self.profile]

    def savefig(self, fig, stem: str, caption: str | None = None, dpi: int = FIGURE_DPI) -> Path:
        """Save ``fig`` as results/<notebook>/<stem>.png and show that same PNG as the cell's output.

        The PNG is displayed explicitly rather than left to matplotlib's inline backend, which ipykernel
        installs only when ``MPLBACKEND`` is unset: a figure then shows in papermill, JupyterLab and a plain
        kernel alike, whatever the backend. The figure is closed so the inline backend does not draw it a
        second time. ``caption`` (Markdown, numbers formatted from computed values by the caller) is shown
        under the figure as "Figure k. ...", numbered in the order the notebook shows them.
        """
        path = self.out_dir / f"{stem}.png"
        fig.savefig(path, dpi=dpi, bbox_inches="tight")
        self.figures.append(stem)
        if _in_kernel():
            from IPython.display import Image, Markdown, display

            display(Image(data=path.read_bytes(), format="png"), metadata={"scalinglab_figure": stem})
            if caption:
                display(Markdown(f"*Figure {len(self.figures)}.* {caption.strip()}"))
        import matplotlib.pyplot as plt

        plt.close(fig)
        return path

    def write_summary(self) -> Path:
        path = self.out_dir / "summary.json"
        path.write_text(json.dumps(to_jsonable(self.summary), indent=2, sort_keys=True) + "\n")
        return path
