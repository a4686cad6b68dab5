"""Bridge between the env's micro-actions and gnubg's complete moves (evaluation, tests).

gnubg is imported lazily: it is a test / evaluation dependency only.

* `complete_moves(state)`: every distinct position reachable by a complete legal move from a
  concrete decision state, each with one micro-action sequence that realises it, found by
  expanding the env's own legal masks and `step_deterministic`.
* `referee_moves(state)`: the same from the env's jitted `afterstates` (what the referee uses).
* `best_move_actions(state)`: gnubg's 0-ply best move, as the env's micro-actions.
"""

from __future__ import annotations

import functools
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np

from envs.backgammon import Backgammon, notation, rules

GnubgBoard = tuple[tuple[int, ...], tuple[int, ...]]


@functools.lru_cache(maxsize=1)  # no arguments: one compiled expander, built on first use
def _expand_fn():
    env = Backgammon()
    actions = jnp.arange(rules.NUM_ACTIONS, dtype=jnp.int32)

    @jax.jit
    def expand(state):
        kids = jax.vmap(env.step_deterministic, in_axes=(None, 0))(state, actions)
        return kids.board, kids.remaining, kids.legal_action_mask, kids.is_chance, kids.terminated

    return expand


def complete_moves(state) -> dict[GnubgBoard, list[int]]:
    """{resulting gnubg board pair (opponent, mover): micro-actions} for a decision state.

    The resulting board is seen from the mover (the player of `state`), as `gnubg_nn.moves`
    and gnubg's move generator give it. A player with no move gets its unchanged position
    with the pass action."""
    if bool(state.is_chance) or bool(state.terminated):
        raise ValueError("complete_moves needs a live decision state")
    expand = _expand_fn()
    results: dict[GnubgBoard, list[int]] = {}
    seen: set[bytes] = set()
    # Nodes are (board, remaining, mask, actions so far); children come from one vmapped call.
    stack = [(state, [])]
    while stack:
        node, path = stack.pop()
        mask = np.asarray(node.legal_action_mask)
        boards, rems, masks, chance, term = (np.asarray(x) for x in expand(node))
        for a in np.flatnonzero(mask):
            b, r = boards[a], rems[a]
            if chance[a] or term[a]:
                mover_board = rules_flip_np(b) if chance[a] else b
                results.setdefault(notation.board_to_gnubg(mover_board), path + [int(a)])
                continue
            key = b.tobytes() + r.tobytes()
            if key in seen:
                continue
            seen.add(key)
            # the env's own mask of the child (its step_deterministic computed it)
            child = node.replace(
                board=jnp.asarray(b), remaining=jnp.asarray(r), legal_action_mask=jnp.asarray(masks[a])
            )
            stack.append((child, path + [int(a)]))
    return results


def rules_flip_np(board: np.ndarray) -> np.ndarray:
    """numpy `rules.flip`."""
    return -np.asarray(board)[rules._FLIP]


# complete moves for the referee: M large enough for what play meets (gnubg 0-ply self-play's
# largest list: 783); an overflow falls back to the depth-first search. Random positions can
# hold more: the slow gnubg-nn sweep's sample has a 1-1 with 1,308, listed with M = 3060
REFEREE_MAX_AFTERSTATES = 1024


@functools.lru_cache(maxsize=1)
def _afterstates_fn():
    env = Backgammon()
    return jax.jit(lambda s: env.afterstates(s, REFEREE_MAX_AFTERSTATES))


def referee_moves(state) -> dict[GnubgBoard, list[int]]:
    """`complete_moves`, from the env's jitted `afterstates` (one call, ~100x faster than the
    depth-first search); the search is kept for the rare position that overflows it."""
    if bool(state.is_chance) or bool(state.terminated):
        raise ValueError("referee_moves needs a live decision state")
    out = _afterstates_fn()(state)
    if bool(out.overflow):
        return complete_moves(state)
    valid = np.asarray(out.valid)
    boards = np.asarray(out.states.board)
    chance = np.asarray(out.states.is_chance)
    actions = np.asarray(out.actions)
    moves: dict[GnubgBoard, list[int]] = {}
    for j in np.flatnonzero(valid):
        mover_board = rules_flip_np(boards[j]) if chance[j] else boards[j]
        moves[notation.board_to_gnubg(mover_board)] = [int(a) for a in actions[j] if a >= 0]
    return moves


def best_move_actions(state, plies: int = 0) -> list[int]:
    """gnubg's best move (cubeless money play at `plies`) as the env's micro-actions.

    Every distinct result of a complete legal move is evaluated by gnubg with the opponent on
    roll and the one with the best equity for the mover is chosen (what gnubg's own move
    choice does at the chosen depth); the micro-actions that realise it come from
    `referee_moves`."""
    import gnubg  # optional (the backgammon extra); only a referee move needs it

    moves = referee_moves(state)
    if len(moves) == 1:
        return next(iter(moves.values()))
    ctx = gnubg.evalcontext(0, plies, 1, 0, 0.0)
    best: Optional[tuple[float, list[int]]] = None
    for gb, actions in moves.items():
        opp, me = gb
        if sum(me) == 0:  # the move wins the game: nothing can beat it
            return actions
        # gnubg evaluates from the side on roll: after our move the opponent is on roll.
        eq = -float(gnubg.evaluate((me, opp), gnubg.cubeinfo(), ctx)[5])
        if best is None or eq > best[0]:
            best = (eq, actions)
    assert best is not None
    return best[1]
