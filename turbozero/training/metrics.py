"""Run metrics: one JSON object per line, and a plot of a run's curves."""

from __future__ import annotations

import json
import math
import os
from typing import Any, Iterable, Optional

import numpy as np


def to_python(metrics: dict[str, Any]) -> dict[str, Any]:
    """Arrays and numpy scalars to plain floats/ints/lists (JSON-ready)."""
    out = {}
    for k, v in metrics.items():
        a = np.asarray(v)
        if a.ndim == 0:
            out[k] = a.item()
        else:
            out[k] = a.tolist()
    return out


class MetricsWriter:
    """Appends metric records to `<run_dir>/metrics.jsonl`."""

    def __init__(self, path: str):
        self.path = path
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)

    def write(self, record: dict[str, Any]) -> None:
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(to_python(record)) + "\n")


def read_metrics(path: str) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def plot_metrics(
    path: str,
    keys: Optional[Iterable[str]] = None,
    x_key: str = "iteration",
    save_to: Optional[str] = None,
):
    """Plot the numeric curves of a metrics.jsonl file, one panel per key; returns the Figure."""
    import matplotlib

    if save_to is not None:
        matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    records = read_metrics(path)
    if keys is None:
        keys = sorted(
            {k for r in records for k, v in r.items() if isinstance(v, (int, float)) and k != x_key}
        )
    keys = list(keys)
    cols = min(3, max(1, len(keys)))
    rows = max(1, math.ceil(len(keys) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(4.5 * cols, 3 * rows), squeeze=False)
    for ax, k in zip(axes.flat, keys):
        pts = [(r[x_key], r[k]) for r in records if k in r and x_key in r]
        if pts:
            xs, ys = zip(*pts)
            ax.plot(xs, ys, marker=".")
        ax.set_title(k)
        ax.set_xlabel(x_key)
    for ax in list(axes.flat)[len(keys):]:
        ax.axis("off")
    fig.tight_layout()
    if save_to is not None:
        fig.savefig(save_to)
    return fig
