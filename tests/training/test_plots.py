"""plot_metrics draws a few readable panels without touching matplotlib's backend, and
`turbozero plot RUN_DIR` writes a PNG."""

import json

import matplotlib
import pytest

from turbozero import cli
from turbozero.training import plot_metrics


def _eval(opp, finished, wins, games=16):
    return {f"eval_{opp}_games": games, f"eval_{opp}_finished": finished,
            f"eval_{opp}_unfinished": games - finished, f"eval_{opp}_wins": wins,
            f"eval_{opp}_draws": 0, f"eval_{opp}_losses": finished - wins,
            f"eval_{opp}_win_rate": wins / finished if finished else None}


@pytest.fixture()
def run_dir(tmp_path):
    """A run of 6 iterations: trained from 2 on, evaluated at 3 and 6 (greedy: nothing finished
    at 3), and iteration 6 written twice, as a resumed run may."""
    records = []
    for it in range(1, 7):
        r = {"iteration": it, "selfplay_positions_per_s": 100.0 * it,
             "train_samples_per_s": 0.0 if it == 1 else 1000.0}
        if it >= 2:
            r.update(loss=3.0 - 0.1 * it, policy_loss=2.0 - 0.1 * it, value_loss=1.0)
        records.append(r)
    records[2].update(_eval("random", 16, 12), **_eval("greedy", 0, 0))
    records[5].update(_eval("random", 15, 9), **_eval("greedy", 14, 7))
    records.append(dict(records[5], loss=1.0))  # the rewrite of iteration 6
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return tmp_path


def test_default_panels_loss_win_rate_with_counts_throughput(run_dir):
    backend = matplotlib.get_backend()
    fig = plot_metrics(str(run_dir / "metrics.jsonl"))
    assert matplotlib.get_backend() == backend  # a notebook keeps its backend
    assert [ax.get_title() for ax in fig.axes] == [
        "training loss", "win rate (wins/finished games)", "throughput (per second)"]
    loss_ax, win_ax, speed_ax = fig.axes
    assert sorted(line.get_label() for line in loss_ax.lines) == ["loss", "policy_loss", "value_loss"]
    loss = next(line for line in loss_ax.lines if line.get_label() == "loss")
    assert list(loss.get_xdata()) == [2, 3, 4, 5, 6] and loss.get_ydata()[-1] == 1.0  # last write wins
    rates = {line.get_label(): (list(line.get_xdata()), list(line.get_ydata())) for line in win_ax.lines}
    assert rates["random"] == ([3, 6], [0.75, 0.6])
    assert rates["greedy"] == ([6], [0.5])  # no rate where no game finished...
    assert rates["greedy: no game finished"][0] == [3]  # ...a mark instead
    assert sorted(t.get_text() for t in win_ax.texts) == ["12/16", "7/14", "9/15"]
    speeds = {line.get_label(): list(line.get_xdata()) for line in speed_ax.lines}
    assert speeds["train_samples_per_s"] == [2, 3, 4, 5, 6]  # 0 = not trained, not a speed
    assert speed_ax.get_yscale() == "log"


def test_keys_draw_any_metric_and_save_to_writes_a_png(run_dir):
    out = run_dir / "some.png"
    fig = plot_metrics(str(run_dir / "metrics.jsonl"), keys=["loss", "eval_random_wins"],
                       save_to=str(out))
    assert [ax.get_title() for ax in fig.axes if ax.axison] == ["loss", "eval_random_wins"]
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError, match="keys is empty"):
        plot_metrics(str(run_dir / "metrics.jsonl"), keys=[])


def test_plot_command_writes_a_png(run_dir, tmp_path, capsys):
    assert cli.main(["plot", str(run_dir)]) == 0
    assert (run_dir / "metrics.png").read_bytes()[:4] == b"\x89PNG"
    out = tmp_path / "elsewhere.png"
    assert cli.main(["plot", str(run_dir), "-o", str(out)]) == 0
    assert out.exists() and f"wrote {out}" in capsys.readouterr().out
    assert cli.main(["plot", str(tmp_path / "missing")]) == 2
    assert "has no metrics.jsonl" in capsys.readouterr().err
