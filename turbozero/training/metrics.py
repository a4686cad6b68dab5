"""Run metrics: one JSON object per line, and a plot of a run's curves."""

from __future__ import annotations

import json
import math
import os
import struct
import warnings
from typing import Any, Iterable, Iterator, Optional

import numpy as np

from turbozero.training import report


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


TENSORBOARD_INSTALL = 'pip install -e ".[tensorboard]" (or: pip install "tensorboardX>=2.6")'


def require_tensorboardx():
    """The tensorboardX module, or a one-line ValueError with the command that installs it."""
    try:
        import tensorboardX
    except ImportError:
        raise ValueError(f"tensorboard output needs the tensorboardX package: "
                         f"{TENSORBOARD_INSTALL}") from None
    return tensorboardX


def tensorboard_tag(key: str) -> str:
    """A record key as a TensorBoard tag, grouped as the plots group them: `loss/...`,
    `eval/<opponent>/<result>`, `train/...` (the rest)."""
    for opponent, result in report.eval_results({key: 0}).items():
        return f"eval/{opponent}/{next(iter(result))}"
    if key == "loss" or key.endswith("_loss") or key in ("l2_reg", "grad_norm"):
        return f"loss/{key}"
    return f"train/{key}"


class TensorBoardWriter:
    """Writes each metrics record's numbers as TensorBoard scalars (tensorboardX, the optional
    `tensorboard` extra) into `log_dir`, at step = the record's iteration; flushed after every
    record, so `tensorboard --logdir RUN_DIR/tensorboard` follows a run as it trains. A resumed
    run appends a new event file; the iterations it writes again appear twice there (the
    metrics file keeps one record of each)."""

    def __init__(self, log_dir: str):
        self.log_dir = log_dir
        self._writer = require_tensorboardx().SummaryWriter(log_dir)

    def write(self, record: dict[str, Any]) -> None:
        step = record.get("iteration")
        for key, value in to_python(record).items():
            if key != "iteration" and _is_number(value):
                self._writer.add_scalar(tensorboard_tag(key), float(value), global_step=step)
        self._writer.flush()

    def close(self) -> None:
        self._writer.close()


def read_tensorboard(log_dir: str) -> dict[str, list[tuple[int, float]]]:
    """{tag: [(step, value), ...]} of the scalars in every event file of `log_dir`, in the
    order written (files by name): a reader that needs only tensorboardX, not TensorFlow."""
    require_tensorboardx()  # missing: the one-line ValueError naming the install
    from tensorboardX.proto import event_pb2  # optional (the tensorboard extra), checked above
    out: dict[str, list[tuple[int, float]]] = {}
    for name in sorted(os.listdir(log_dir)):
        if "tfevents" not in name:
            continue
        with open(os.path.join(log_dir, name), "rb") as f:
            data = f.read()
        i = 0
        while i + 12 <= len(data):  # uint64 length, uint32 crc, the event, uint32 crc
            (n,) = struct.unpack("<Q", data[i:i + 8])
            if i + 12 + n + 4 > len(data):
                break  # a record cut short: the writer was stopped mid-write
            event = event_pb2.Event()
            event.ParseFromString(data[i + 12:i + 12 + n])
            for value in event.summary.value:
                out.setdefault(value.tag, []).append((int(event.step), float(value.simple_value)))
            i += 12 + n + 4
    return out


class CutMetricsLineWarning(UserWarning):
    """The last line of a metrics file is cut short (a run killed while writing it) and is
    skipped."""


def metric_lines(path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """(line as written, record) for every record of a metrics file, in order: what every
    reader of metrics.jsonl reads. A run killed while appending a record leaves its last line
    cut short: that line is skipped with one `CutMetricsLineWarning` naming the file and the
    line number. Any other line that is not a JSON object is damage a kill cannot leave: a
    ValueError naming the file and the line."""
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.readlines()
    last = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            problem = None if isinstance(record, dict) else f"a JSON {type(record).__name__}"
        except json.JSONDecodeError as err:
            problem = f"{err.msg}, column {err.colno}"
        if problem is None:
            yield line, record
        elif i == last:
            warnings.warn(f"{path}, line {i + 1}: cut short ({problem}), as a run killed while "
                          "writing it leaves it; skipped", CutMetricsLineWarning, stacklevel=3)
        else:
            raise ValueError(f"{path}, line {i + 1}: not a metrics record ({problem}); only the "
                             "last line can be cut by a killed run: repair or remove this one")


def read_metrics(path: str) -> list[dict[str, Any]]:
    """The records of a metrics.jsonl file (a cut last line skipped, see `metric_lines`)."""
    return [record for _, record in metric_lines(path)]


def latest_per_iteration(records: list[dict[str, Any]], x_key: str = "iteration") -> list[dict[str, Any]]:
    """One record per `x_key` value, the last written, in order: a resumed run may have written
    some iterations twice, and a curve must not loop back on itself."""
    by_x = {r[x_key]: r for r in records if x_key in r}
    return [by_x[x] for x in sorted(by_x)]


LOSS_KEYS = ("loss", "policy_loss", "value_loss")
THROUGHPUT_KEYS = ("selfplay_positions_per_s", "train_samples_per_s")


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _curve(ax, records, x_key: str, key: str, positive: bool = False, **style) -> bool:
    """Plot `key` against `x_key` where it is a finite number (and > 0 if `positive`); whether
    anything was drawn."""
    pts = [(r[x_key], r[key]) for r in records
           if _is_number(r.get(key)) and (r[key] > 0 or not positive)]
    if pts:
        xs, ys = zip(*pts)
        ax.plot(xs, ys, label=key, **style)
    return bool(pts)


def _loss_panel(ax, records, x_key: str) -> None:
    drawn = [_curve(ax, records, x_key, k, marker=".") for k in LOSS_KEYS]
    if any(drawn):
        ax.legend(fontsize="small")
    else:
        ax.text(0.5, 0.5, "not trained yet:\nreplay has no finished games", ha="center",
                va="center", transform=ax.transAxes)
    ax.set_title("training loss")
    ax.set_xlabel(x_key)


def _win_rate_panel(ax, records, x_key: str) -> None:
    """Win rate per opponent with each point's count (wins/finished); iterations where no game
    finished are marked below the axis instead of drawn as a rate."""
    opponents = sorted({opp for r in records for opp in report.eval_results(r)})
    for opp in opponents:
        rows = [(r[x_key], report.eval_results(r)[opp]) for r in records
                if opp in report.eval_results(r)]
        rated = [(x, res) for x, res in rows if res.get("win_rate") is not None]
        (line,) = ax.plot([x for x, _ in rated], [res["win_rate"] for _, res in rated],
                          marker="o", label=opp)
        for x, res in rated:
            ax.annotate(f"{res.get('wins', '?')}/{res.get('finished', '?')}",
                        (x, res["win_rate"]), textcoords="offset points", xytext=(0, 6),
                        ha="center", fontsize="x-small", color=line.get_color())
        empty = [x for x, res in rows if res.get("win_rate") is None]
        if empty:
            ax.plot(empty, [-0.05] * len(empty), "x", color=line.get_color(),
                    label=f"{opp}: no game finished")
    if opponents:
        ax.legend(fontsize="small")
    else:
        ax.text(0.5, 0.5, "no evaluation yet", ha="center", va="center", transform=ax.transAxes)
    ax.set_ylim(-0.1, 1.1)
    ax.set_title("win rate (wins/finished games)")
    ax.set_xlabel(x_key)


def _throughput_panel(ax, records, x_key: str) -> None:
    # 0 means "nothing trained this iteration", not a speed: left out (and a log scale needs > 0)
    drawn = [_curve(ax, records, x_key, k, positive=True, marker=".") for k in THROUGHPUT_KEYS]
    if any(drawn):
        # the first iteration includes compilation: a log scale keeps the rest readable
        ax.set_yscale("log")
        ax.legend(fontsize="small")
    ax.set_title("throughput (per second)")
    ax.set_xlabel(x_key)


def plot_metrics(
    path: str,
    keys: Optional[Iterable[str]] = None,
    x_key: str = "iteration",
    save_to: Optional[str] = None,
):
    """Plot a run's metrics.jsonl; returns the matplotlib Figure.

    By default three panels: the loss parts, the win rate per evaluation opponent (each point
    labelled wins/finished) and the throughput. `keys=[...]` draws one panel per key instead.
    The Figure is made without pyplot, so no GUI backend is chosen or switched: a notebook
    shows the returned Figure, and `save_to="curves.png"` writes it to a file (in a script, save
    it; `turbozero plot RUN_DIR` does). A file with no complete record, or none with `x_key`,
    is a ValueError naming it (a damaged line: naming the line, `metric_lines`).
    """
    # matplotlib (0.5 s to import) only when curves are drawn
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    read = read_metrics(path)
    records = latest_per_iteration(read, x_key)
    # an empty or unreadable file drew blank panels ("not trained yet") and a PNG: refused
    if not read:
        raise ValueError(f"{path} holds no complete metrics record (empty, or its one line "
                         "cut short): nothing to plot until an iteration has finished")
    if not records:
        raise ValueError(f"{path}: none of its {len(read)} records has the field {x_key!r} "
                         "(not the metrics file of a turbozero run?)")
    if keys is None:
        fig = Figure(figsize=(15, 4), layout="constrained")
        loss_ax, win_ax, speed_ax = fig.subplots(1, 3)
        _loss_panel(loss_ax, records, x_key)
        _win_rate_panel(win_ax, records, x_key)
        _throughput_panel(speed_ax, records, x_key)
    else:
        keys = list(keys)
        if not keys:
            raise ValueError("plot_metrics: keys is empty; leave it out for the default panels")
        cols = min(3, len(keys))
        rows = math.ceil(len(keys) / cols)
        fig = Figure(figsize=(5 * cols, 3.5 * rows), layout="constrained")
        axes = list(fig.subplots(rows, cols, squeeze=False).flat)
        for ax, k in zip(axes, keys):
            _curve(ax, records, x_key, k, marker=".")
            ax.set_title(k)
            ax.set_xlabel(x_key)
        for ax in axes[len(keys):]:
            ax.axis("off")
    for ax in fig.axes:  # iterations are whole numbers
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    if save_to is not None:
        fig.savefig(save_to, dpi=100)
    return fig
