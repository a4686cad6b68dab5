"""`turbozero play GAME RUN_DIR`: a person plays a trained agent in the terminal.

The agent is the complete-move player (`turbozero.search.afterstate`) over the run's newest
checkpoint: it lists every complete move of its roll (`env.afterstates`), values each result
with the network (0 plies; 1 or 2 plies average over the chance outcomes) and plays the best.
The person types complete moves as text; the game says how (`MoveText`, found through the
game's `GameSpec.move_text`), so this loop names no game. It needs an env with complete moves
and chance events (`envs.afterstates.AfterstateEnv`), two players.

A typed move is checked against the legal complete moves of the position, listed exhaustively
(`HUMAN_MAX_AFTERSTATES` slots, above any roll's count): what the person types is either one
of them or answered with a one-line reason and a new prompt.
"""

from __future__ import annotations

import dataclasses
import functools
import secrets
from typing import Any, Callable, Optional, Protocol

import jax
import jax.numpy as jnp
import numpy as np

from turbozero.games import GAMES, game_hook
from turbozero.runs import evaluation_config
from turbozero.search.afterstate import (AfterstatePlayerConfig, AfterstateValuer, _lookahead_live,
                                         check_env, choose_afterstates)
from turbozero.search.api import NetworkEvaluator
from turbozero.training import Trainer
from turbozero.training.checkpoints import load_checkpoint, restore_network
from turbozero.training.run_config import with_overrides
from turbozero.validation import check_int

# Every complete move of a position is listed for the person, so any legal move typed is found:
# gnubg's move generator bounds a roll's distinct complete moves by 3060 (4 checkers moved
# from at most 15 points: C(18, 4)), below this.
HUMAN_MAX_AFTERSTATES = 4096

COMMANDS = ("commands: moves (the legal moves), hint (the agent's best moves for you with "
            "their equities, 0 plies; 'hint 1': re-valued at 1 ply), board, help, quit (or "
            "Ctrl-D)")
HINT_MOVES = 5  # the moves `hint` lists, best first
HINT_PLIES = (0, 1)  # 2 plies over the hint's moves need GBs of temporaries on a CPU


class MoveText(Protocol):
    """What a game gives `play` to show positions and read and write complete moves.

    `actions` are one complete move's micro-actions (`Afterstates.actions` row, padded)."""

    help: str  # what a person may type, a few lines

    def board(self, state: Any) -> str:
        """The position drawn as text, from the side of the player to move."""

    def roll(self, state: Any) -> str:
        """The chance outcome being played (e.g. the dice), short."""

    def describe(self, state: Any, actions: np.ndarray) -> str:
        """A complete move as text from the mover's side; "" when it moves nothing (a pass)."""

    def match(self, state: Any, text: str, legal: list) -> int:
        """Which of the `legal` complete moves (rows of micro-actions) `text` is; ValueError
        with a one-line reason ("not a move: ...", "illegal: ...") otherwise."""

    def result(self, points: float) -> str:
        """What a finished game's points are called (e.g. "gammon")."""

    def sort_key(self, move: str) -> Any:
        """Where a move's text goes in the list of legal moves shown to the person."""

    def mirror(self, move: str) -> str:
        """A move's text (from its mover's side) written from the other player's side."""


def move_text_for(game: str) -> MoveText:
    """The game's MoveText (`GameSpec.move_text`, "module:attribute"); ValueError if none."""
    return game_hook(game, "move_text", "turbozero play does not know how to write {game}'s "
                     "moves; games it plays: {games}")


def playable_games() -> list[str]:
    return sorted(g for g, s in GAMES.items() if s.move_text)


@dataclasses.dataclass
class Agent:
    """A run's network behind the complete-move player, and the jitted steps of a game."""

    env: Any
    variables: Any
    iteration: int
    plies: int
    list_moves: Callable  # state -> (Afterstates [M], chosen slot, value): 0 plies, every move
    choose: Callable  # state -> the same at the agent's plies (list_moves itself at 0 plies)
    roll: Callable  # (state, outcome) -> state
    rank: Callable  # (state, plies) -> (Afterstates [M], best slots [K], their values [K])
    outcome_probs: Callable  # state -> probabilities of the chance outcomes
    init: Callable  # key -> the first decision state


def load_agent(game: str, run_dir: str, plies: int = 0) -> Agent:
    """The newest intact checkpoint of `run_dir` (any run directory of `game`, read as
    `turbozero eval` reads it: the stored config, the network's variables only)."""
    config = evaluation_config(run_dir)
    if config.game != game:
        raise ValueError(f"{run_dir} is a run of {config.game}, not {game}")
    # one game at a time: the run's self-play batch and replay would only take memory here
    # (the restore reads the network alone, whatever their sizes in the checkpoint)
    n_dev = jax.device_count()
    config = with_overrides(config, {"num_envs": n_dev, "replay_capacity": 2,
                                     "batch_size": n_dev, "eval_games": n_dev})
    trainer = Trainer(config)  # no run directory: playing reads the run, never writes it
    state, _ = load_checkpoint(run_dir, trainer.state, restore_network)
    env = trainer.env
    check_env(env)  # a game without complete moves cannot be played this way
    evaluator = NetworkEvaluator(trainer.network.apply, trainer.spec.value_format)
    variables = Trainer.variables(state.train_state)

    def chooser(config):
        @jax.jit
        def run(variables, s):
            batch = jax.tree_util.tree_map(lambda x: x[None], s)
            moves, chosen, value = choose_afterstates(env, evaluator, variables, batch, config)
            return jax.tree_util.tree_map(lambda x: x[0], moves), chosen[0], value[0]

        return lambda s: run(variables, s)

    every = chooser(AfterstatePlayerConfig(plies=0, max_afterstates=HUMAN_MAX_AFTERSTATES))
    rankers = {p: jax.jit(functools.partial(rank_moves, env, evaluator, plies=p))
               for p in HINT_PLIES}
    # at 0 plies the agent uses the exhaustive list too (one compiled function); deeper, the
    # env's default M keeps the look-ahead's batches small, and the run's own player gives the
    # move filter (its presets' choice)
    player = config.algorithm.evaluation_player()
    if not isinstance(player, AfterstatePlayerConfig):  # a run of another algorithm
        player = AfterstatePlayerConfig()
    deep = dataclasses.replace(player, plies=plies, max_afterstates=None)
    choose = every if plies == 0 else chooser(deep)
    return Agent(env=env, variables=variables, iteration=int(state.iteration), plies=plies,
                 list_moves=every, choose=choose, roll=jax.jit(env.step_chance),
                 rank=lambda s, p=0: rankers[p](variables, s),
                 outcome_probs=jax.jit(env.chance_outcome_probs), init=jax.jit(env.init))


def rank_moves(env, evaluator: NetworkEvaluator, variables, state, plies: int = 0,
               top: int = HINT_MOVES):
    """(every complete move of a decision state [M], the slots of the `top` best for the mover
    int32[K], their values float32[K], best first; -inf past the legal ones). 0 plies: every
    move valued by the network; 1 ply: the `top` best of those re-valued by averaging over the
    opponent's rolls (its 0-ply replies), as the 1-ply player values its candidates."""
    config = AfterstatePlayerConfig(plies=0, max_afterstates=HUMAN_MAX_AFTERSTATES)
    valuer = AfterstateValuer(env, evaluator, variables, config)
    moves = env.afterstates(state, HUMAN_MAX_AFTERSTATES)
    mover = jnp.broadcast_to(state.current_player, moves.valid.shape)
    q = valuer.valid_values(moves.states, moves.valid, mover, mover)  # as the players value
    values, slots = jax.lax.top_k(q, min(top, q.shape[0]))
    if plies > 0:
        # the look-ahead lists the opponent's replies with the env's default M, as the
        # agent's own 1-ply player does
        deep = AfterstateValuer(env, evaluator, variables, AfterstatePlayerConfig(plies=plies))
        after = jax.tree_util.tree_map(lambda x: x[slots], moves.states)
        who = mover[: slots.shape[0]]
        values = _lookahead_live(deep, after, jnp.isfinite(values), who, plies, who)
        order = jnp.argsort(-values)
        values, slots = values[order], slots[order]
    return moves, slots, values


class _Quit(Exception):
    """The person ended the game (quit, end of input, Ctrl-C)."""


def _take(tree: Any, slot: int) -> Any:
    return jax.tree_util.tree_map(lambda x: x[slot], tree)


def _legal(moves) -> tuple[np.ndarray, np.ndarray, bool]:
    """(slots of the legal moves, their micro-actions, whether the list overflowed)."""
    slots = np.flatnonzero(np.asarray(moves.valid))
    return slots, np.asarray(moves.actions)[slots], bool(moves.overflow)


def play_game(agent: Agent, text: MoveText, *, seed: Optional[int] = None,
              first: Optional[str] = None, read: Callable[[str], str] = input,
              write: Callable[[str], None] = print) -> int:
    """One game, the person against `agent`; returns the exit code (0).

    first: None (the opening roll decides, the person is player 0), "human" or "agent".
    read(prompt) returns a typed line (EOFError at the end of input); write prints a line."""
    seed = secrets.randbits(31) if seed is None else seed
    # within int32: PRNGKey(2**40) was PRNGKey(0)'s key, a negative seed numpy's error
    check_int("seed", seed, minimum=0)
    rng = np.random.default_rng(seed)
    state = agent.init(jax.random.PRNGKey(seed))
    opener = int(state.current_player)
    if first not in (None, "human", "agent"):
        raise ValueError(f"first must be None, 'human' or 'agent', got {first!r}")
    human = {None: 0, "human": opener, "agent": 1 - opener}[first]
    write(f"turbozero play: you are player {human} against the run's network at iteration "
          f"{agent.iteration}, {agent.plies} plies (seed {seed})")
    write("the board is drawn from the side of the player to move; " + COMMANDS)
    write(f"opening roll {text.roll(state)}: "
          f"{'you move' if opener == human else 'the agent moves'} first")
    try:
        while not bool(state.terminated):
            if int(state.current_player) == human:
                after = _human_turn(agent, text, state, read, write)
            else:
                after = _agent_turn(agent, text, state, write)
            state = after
            if not bool(state.terminated):  # the next player rolls
                probs = np.asarray(agent.outcome_probs(state), dtype=np.float64)
                state = agent.roll(state, int(rng.choice(len(probs), p=probs / probs.sum())))
    except _Quit as why:
        write(f"{why}; game abandoned")
        return 0
    except KeyboardInterrupt:  # the line of the prompt it interrupted is ended first
        write("\ninterrupted; game abandoned")
        return 0
    points = float(np.asarray(state.rewards)[human])
    write("")
    write(text.board(state))
    who = "you win" if points > 0 else "the agent wins"
    write(f"game over: {who} a {text.result(points)}, {points:+g} points for you")
    return 0


def _human_turn(agent: Agent, text: MoveText, state, read, write):
    moves, _, _ = agent.list_moves(state)
    slots, actions, overflow = _legal(moves)
    write("")
    write(text.board(state))
    roll = text.roll(state)
    if len(slots) == 1 and not text.describe(state, actions[0]):
        write(f"you roll {roll}: no legal move, the turn passes")
        return _take(moves.states, int(slots[0]))
    if len(slots) == 1:
        write(f"you roll {roll}: your only legal move is {text.describe(state, actions[0])}, "
              "played for you")
        return _take(moves.states, int(slots[0]))
    listed = sorted((text.describe(state, a) for a in actions), key=text.sort_key)
    while True:
        try:
            line = read(f"your move ({roll})> ")
        except EOFError:  # Ctrl-D leaves the cursor after the prompt: end that line
            write("")
            raise _Quit("end of input") from None
        cmd = line.strip().lower()
        if not cmd:
            continue
        if cmd in ("quit", "exit", "q"):
            raise _Quit("quit")
        if cmd in ("moves", "m"):
            write(f"{len(listed)} legal moves: " + ", ".join(listed)
                  + (" (more exist: the list is cut)" if overflow else ""))
            continue
        if cmd.split()[0] == "hint":
            write(_hint(agent, text, state, cmd))
            continue
        if cmd == "board":
            write(text.board(state))
            continue
        if cmd in ("help", "?"):
            write(text.help)
            write(COMMANDS)
            continue
        try:
            k = text.match(state, line, list(actions))
        except ValueError as err:
            reason = str(err)
            if reason.startswith("illegal"):
                reason += (f"; legal moves include {', '.join(listed[:4])}"
                           + (f" ('moves' lists all {len(listed)})" if len(listed) > 4 else ""))
            write(reason)
            continue
        write(f"you play {text.describe(state, actions[k])}")
        return _take(moves.states, int(slots[k]))


def _hint(agent: Agent, text: MoveText, state, cmd: str) -> str:
    """`hint` / `hint 1`: the best few complete moves for the person with their equities."""
    words = cmd.split()
    if len(words) > 2 or (len(words) == 2 and words[1] not in {str(p) for p in HINT_PLIES}):
        return (f"not a hint: '{cmd}'; hint (0 plies) or hint 1 (the best moves re-valued "
                "at 1 ply)")
    plies = int(words[1]) if len(words) == 2 else 0
    moves, slots, values = agent.rank(state, plies)
    actions = np.asarray(moves.actions)
    listed = [f"{i + 1}. {text.describe(state, actions[int(k)])} {float(v):+.3f}"
              for i, (k, v) in enumerate(zip(np.asarray(slots), np.asarray(values)))
              if np.isfinite(v)]
    return f"hint ({plies} plies, equity for you): " + "; ".join(listed)


def _agent_turn(agent: Agent, text: MoveText, state, write):
    moves, chosen, value = agent.choose(state)
    chosen = int(chosen)
    move = text.describe(state, np.asarray(moves.actions)[chosen])
    roll = text.roll(state)
    if not move:
        write(f"agent rolls {roll}: no legal move")
    else:
        write(f"agent rolls {roll} and plays {text.mirror(move)} (from your side; {move} "
              f"from its own); its equity {float(value):+.3f} ({agent.plies} plies)")
    return _take(moves.states, chosen)


__all__ = ["Agent", "HUMAN_MAX_AFTERSTATES", "MoveText", "load_agent", "move_text_for",
           "play_game", "playable_games"]
