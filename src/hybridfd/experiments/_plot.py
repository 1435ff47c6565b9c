"""Matplotlib set-up the experiments' plots share (no display needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 - after choosing the backend


def figure(panels: int = 1, width: float = 6.0) -> tuple[Any, Any]:
    fig, axes = plt.subplots(1, panels, figsize=(width * panels if panels > 1 else width, 4))
    for ax in axes if panels > 1 else [axes]:
        ax.grid(True, which="both", alpha=0.3)
    return fig, axes


def save(fig: Any, path: Path) -> None:  # noqa: ANN401 - a matplotlib figure
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
