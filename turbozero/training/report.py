"""Evaluation and training results as text people read: every rate next to its count.

Pure functions from the records the loop writes (`metrics.jsonl`) and the dicts
`evaluation.match_summary` returns; the CLI and `Trainer.run` print what these return.
"""

from __future__ import annotations

from typing import Any, Optional

from turbozero.games import GAMES

# The keys of one opponent's result (`evaluation.match_summary`), in table order.
RESULT_KEYS = ("games", "finished", "unfinished", "wins", "draws", "losses", "win_rate",
               "draw_rate", "loss_rate", "mean_return", "mean_return_se", "pairs", "steps")

NOT_TRAINED = "not trained yet: replay has no finished games"


# what the opponents every game has are (a game's registered opponents describe themselves)
GENERIC_OPPONENTS = {
    "random": "random = uniform over the legal moves",
    "greedy": "greedy = the same network at 1 ply, no search (the move whose result it values "
              "best): the agent's result against it is what its search adds to the network, "
              "and a win rate under 0.5 means the search plays worse than the value head alone",
}

# what each printed column and number means, said once on screen (`explain_evaluation`, the
# `turbozero eval` table's notes) and in `turbozero train --help` / `turbozero eval --help`
COLUMNS = {
    "games": "games played, the agent taking every seat in turn",
    "finished": "games that ended; unfinished = still running after max_eval_steps moves, "
                "counted but without a result",
    "won / drew / lost": "finished games, from the agent's side (a multi-player game: won = "
                         "first place)",
    "win rate": "won / finished ('-': no game finished)",
    "mean return": "the agent's reward per finished game, averaged, in the game's points "
                   "(+1 a win, -1 a loss; a game scoring by degree counts its points, e.g. 2 "
                   "for a gammon; simultaneous games: its score minus the opponent's)",
    "points per game": "the mean return with its standard error (± SE): over the games, or for "
                       "duplicate games (the default of an opponent that plays them, whose "
                       "line ends '(N duplicate pairs)': each chance sequence played twice, "
                       "seats swapped) over the pairs",
}

# the loss parts the loop records (metrics.jsonl, the progress bar, `turbozero train`'s summary)
LOSS_PARTS = {
    "policy_loss": "cross-entropy of the policy head to the search's policy target (its floor "
                   "is the target's entropy, not 0)",
    "value_loss": "the value head's error against the self-play outcomes (the value format's "
                  "loss: squared error, WDL or 4-way cross-entropy); its targets change as play "
                  "changes (more decisive games, fewer draws), so it can rise while play "
                  "improves",
    "reward_loss": "MuZero: squared error of the predicted rewards",
    "consistency_loss": "MuZero: 2 - 2 cos between the dynamics' hidden state and the "
                        "represented next position",
}


def describe_opponent(name: str, env: Any) -> str:
    """What an evaluation opponent is, in one line (the same words on every screen): the
    description the game registers for it (`turbozero.games`), else the generic one."""
    spec = GAMES.get(getattr(env, "id", ""))
    for opponent in (spec.opponents if spec is not None else ()):
        if opponent.name == name:
            return opponent.description
    return GENERIC_OPPONENTS.get(name, name)

# the order the summary of `turbozero train` prints them in
LOSS_PARTS_ORDER = ("loss",) + tuple(LOSS_PARTS)


def explain_losses(search: Any = None) -> str:
    """One line: what `loss` adds up (the weighted parts of a MuZero-style config that has
    `<part>_weight` fields; the value loss alone for afterstate TD, whose config has
    `td_lambda`; else policy + value) and what each part is."""
    if getattr(search, "td_lambda", None) is not None:  # afterstate TD: the value head alone
        return ("loss = value_loss (TD trains no policy head: policy_loss is 0); value_loss = "
                "the value head's error against the lambda-returns of the afterstates its own "
                "play chose (the value format's outcome loss, e.g. 4-way cross-entropy); its "
                "targets move with the network and the play, so it can rise while play improves")
    parts = [k for k in ("policy_loss", "value_loss", "reward_loss", "consistency_loss")]
    weights = {k: getattr(search, k.replace("_loss", "_weight"), None) for k in parts}
    if weights["reward_loss"] is None:  # AlphaZero: the plain sum
        parts = parts[:2]
        total = "loss = policy_loss + value_loss"
    else:
        total = "loss = " + " + ".join(
            (f"{float(weights[k]):g} * " if float(weights[k]) != 1 else "") + k for k in parts)
        total += " (MuZero's parts are summed over the unrolled steps, each later step weighted 1/K)"
    return total + "; " + "; ".join(f"{k} = {LOSS_PARTS[k]}" for k in parts)


def explain_evaluation(descriptions: list[str]) -> str:
    """Said once, before the first evaluation's numbers: the opponents and the columns."""
    return ("evaluation opponents: " + "; ".join(descriptions) + "\n"
            "results: " + "; ".join(f"{k} = {v}" for k, v in COLUMNS.items()))


def eval_progress(opponent: str, finished: int, games: int, steps: int) -> str:
    """The progress bar's description while a match is played: games over so far."""
    return f"evaluating vs {opponent}: {finished}/{games} games over, move {steps}"


def eval_results(record: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """{opponent: result} from a loop record's `eval_<opponent>_<key>` entries."""
    out: dict[str, dict[str, Any]] = {}
    for key, value in record.items():
        if not key.startswith("eval_"):
            continue
        for field in RESULT_KEYS:
            if key.endswith("_" + field):
                out.setdefault(key[len("eval_"):-len(field) - 1], {})[field] = value
                break
    return out


def tqdm_class():
    """The progress-bar class: tqdm.auto's notebook widget where ipywidgets is installed, else
    the text bar (tqdm.auto would fall back to it too, but with a TqdmWarning in notebooks)."""
    try:
        import ipywidgets  # noqa: F401
        from tqdm.auto import tqdm
    except ImportError:
        from tqdm.std import tqdm
    return tqdm


def _rate(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.3f}"


def format_match(opponent: str, result: dict[str, Any]) -> str:
    """'random: won 12 / drew 1 / lost 3 of 16 finished (0 unfinished), win rate 0.750'."""
    counts = (f"won {result['wins']} / drew {result['draws']} / lost {result['losses']} "
              f"of {result['finished']} finished ({result['unfinished']} unfinished)")
    if not result["finished"]:
        return f"{opponent}: {counts}, no win rate: no game finished"
    line = f"{opponent}: {counts}, win rate {_rate(result['win_rate'])}"
    points = format_points(result)
    return line + (f", points per game {points}" if points else "")


def format_points(result: dict[str, Any]) -> str:
    """'-0.650 ± 0.070' (over 200 duplicate pairs: '..., 200 pairs'), the mean return and its
    standard error; "" without both."""
    mean, se = result.get("mean_return"), result.get("mean_return_se")
    if mean is None or se is None:
        return ""
    pairs = result.get("pairs")
    return f"{mean:+.3f} ± {se:.3f}" + (f" ({pairs} duplicate pairs)" if pairs is not None else "")


def format_loss(record: dict[str, Any]) -> str:
    """'loss 1.2345 (policy 1.0000, value 0.2345)', or why there is no loss yet."""
    if "loss" not in record:
        return NOT_TRAINED
    parts = [f"{name} {record[key]:.4f}" for name, key in
             (("policy", "policy_loss"), ("value", "value_loss")) if key in record]
    return f"loss {record['loss']:.4f}" + (f" ({', '.join(parts)})" if parts else "")


def format_iteration(record: dict[str, Any]) -> str:
    """One line per evaluated iteration: the loss, then each opponent's result."""
    lines = [f"iteration {record['iteration']}: {format_loss(record)}"]
    lines += [f"  {format_match(opp, res)}" for opp, res in eval_results(record).items()]
    return "\n".join(lines)


def format_eval(results: dict[str, dict[str, Any]], iteration: int, run_dir: str,
                env: Any = None) -> str:
    """A table of evaluation results, one row per opponent, with the opponents' meanings."""
    header = ("opponent", "games", "finished", "unfinished", "won", "drew", "lost", "win rate",
              "mean return")
    rows = [header]
    for opp, r in results.items():
        mean = "-" if r["mean_return"] is None else f"{r['mean_return']:.3f}"
        if r["mean_return"] is not None and r.get("mean_return_se") is not None:
            mean += f" ± {r['mean_return_se']:.3f}"
        rows.append((opp, str(r["games"]), str(r["finished"]), str(r["unfinished"]),
                     str(r["wins"]), str(r["draws"]), str(r["losses"]), _rate(r["win_rate"]),
                     mean))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = [f"{run_dir}: checkpoint of iteration {iteration}", ""]
    for row in rows:
        cells = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:], widths[1:])]
        lines.append("  ".join(cells).rstrip())
    lines.append("")
    lines += [f"{opp}: {r['pairs']} duplicate pairs (each dice sequence played twice, seats "
              "swapped); ± is the standard error over the pairs"
              for opp, r in results.items() if r.get("pairs") is not None]
    lines += [f"{k}: {v}" for k, v in COLUMNS.items()]
    if env is not None:
        lines += [describe_opponent(opp, env) for opp in results]
    return "\n".join(lines)


def progress_postfix(record: dict[str, Any]) -> dict[str, str]:
    """The progress bar's postfix: the losses, and each win rate with its finished count."""
    post = {k: f"{record[k]:.3f}" for k in ("loss", "value_loss", "policy_loss") if k in record}
    for opp, r in eval_results(record).items():
        if "finished" in r:
            post[opp] = (f"won {_rate(r.get('win_rate'))} of {r['finished']}" if r["finished"]
                         else f"0 of {r.get('games', '?')} finished")
    return post


def _due(every: int, start: int, target: int) -> bool:
    """Whether some iteration in (start, target] is a multiple of `every` (> 0)."""
    return target // every > start // every


def schedule_warnings(eval_every: int, eval_opponents: tuple, checkpoint_every: int,
                      saves_checkpoints: bool, start: int, target: int) -> list[str]:
    """Settings under which iterations start+1..target never evaluate or never checkpoint.

    A run always checkpoints its last iteration when checkpoint_every > 0, so only 0 loses them.
    """
    if target <= start:
        return []
    out = []
    span = f"iterations {start + 1}..{target}"
    if eval_opponents and eval_every == 0:
        out.append(f"eval_every=0: this run never plays eval_opponents={tuple(eval_opponents)}; "
                   "set eval_every >= 1, or eval_opponents=() to turn evaluation off")
    elif eval_opponents and not _due(eval_every, start, target):
        # any eval_every up to the number of iterations run has a multiple among them; the
        # target alone is wrong advice for a resumed run (eval_every=20 already is <= 24 when
        # iterations 21..24 run)
        due = (start // eval_every + 1) * eval_every
        out.append(f"eval_every={eval_every} but this run does {span}, none a multiple of "
                   f"{eval_every}: no evaluation happens; set eval_every <= {target - start} "
                   f"or train on to iteration {due} (--iterations {due})")
    if saves_checkpoints and checkpoint_every == 0:
        out.append("checkpoint_every=0: this run saves no checkpoint, so `turbozero eval` and "
                   "resuming will find none")
    return out
