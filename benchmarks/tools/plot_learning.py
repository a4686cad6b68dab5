"""Learning curves of several runs (seeds) of one preset, side by side, for docs/learning.md.

    python benchmarks/tools/plot_learning.py RUN.jsonl [RUN.jsonl ...] -o docs/learning/NAME.png

One column per evaluation opponent found in the files: win rate over finished games (top) and
the agent's mean return per finished game (bottom: points for backgammon, cheese margin for
PyRat), each seed a line, and a summary line per run and opponent printed to stdout.

Draws the figures of docs/learning.md, "Learning curves".
"""

from __future__ import annotations

import argparse
import os
import re

from matplotlib.figure import Figure

from turbozero.training.metrics import latest_per_iteration, read_metrics

_RATE = re.compile(r"^eval_(.+)_win_rate$")


def opponents(runs: list[list[dict]]) -> list[str]:
    found = {m.group(1) for recs in runs for r in recs for k in r if (m := _RATE.match(k))}
    order = ("random", "greedy", "gnubg")
    return sorted(found, key=lambda o: (order.index(o) if o in order else len(order), o))


def series(records: list[dict], opp: str, what: str) -> tuple[list[int], list[float]]:
    pts = [(r["iteration"], r[f"eval_{opp}_{what}"]) for r in records
           if r.get(f"eval_{opp}_{what}") is not None]
    return [p[0] for p in pts], [p[1] for p in pts]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("metrics", nargs="+", help="metrics.jsonl files, one per run")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--title", default=None)
    args = ap.parse_args()
    runs = [latest_per_iteration(read_metrics(p)) for p in args.metrics]
    names = [os.path.splitext(os.path.basename(p))[0] for p in args.metrics]
    opps = opponents(runs)
    if not opps:
        raise SystemExit("no evaluation records in the given files")
    fig = Figure(figsize=(4.2 * len(opps), 6.4))
    axes = fig.subplots(2, len(opps), squeeze=False)
    for j, opp in enumerate(opps):
        for name, recs in zip(names, runs):
            x, y = series(recs, opp, "win_rate")
            axes[0, j].plot(x, y, marker="o", label=name)
            x2, y2 = series(recs, opp, "mean_return")
            axes[1, j].plot(x2, y2, marker="o", label=name)
            finished = series(recs, opp, "finished")[1]
            if y:
                print(f"{name} vs {opp}: win rate " + " ".join(f"{v:.2f}" for v in y)
                      + f" (finished per evaluation: {', '.join(str(int(f)) for f in finished)})"
                      + "; mean return " + " ".join(f"{v:+.2f}" for v in y2))
        axes[0, j].set_title(f"vs {opp}: win rate")
        axes[0, j].set_ylim(-0.02, 1.02)
        axes[0, j].axhline(0.5, color="grey", lw=0.6, ls=":")
        axes[1, j].set_title(f"vs {opp}: mean return per game")
        axes[1, j].axhline(0.0, color="grey", lw=0.6, ls=":")
        axes[1, j].set_xlabel("iteration")
    axes[0, 0].legend(fontsize=8)
    if args.title:
        fig.suptitle(args.title)
    fig.tight_layout()
    fig.savefig(args.output, dpi=90)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
