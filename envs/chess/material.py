"""A 1-ply material-greedy chess player: a baseline stronger than random, weaker than search.

Every legal move is made (`env.transition`, no observation), and the move whose resulting
position has the best material balance for the mover is played: a move that mates scores
above any material, a move that ends the game in a draw (stalemate, repetition, 50 moves,
insufficient material, the ply cap) scores 0, the balance of an even position. Ties between
equal scores are broken uniformly at random with the key, so the player is not a fixed
opening book and its games against another random-tie player differ.

Values: pawn 1, knight 3, bishop 3, rook 5, queen 9 (the king is not counted).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from envs.sampling import Candidates, legal_candidates

Array = jax.Array

# pawn, knight, bishop, rook, queen, king: the standard values; the king is always on the board
PIECE_VALUES = np.array([1, 3, 3, 5, 9, 0], np.int32)
# above any material balance (at most 9 * 9 + 2 * (5 + 3 + 3) = 103 for a side)
MATE_SCORE = 1000
# a candidate slot past the last legal move
NO_MOVE_SCORE = jnp.iinfo(jnp.int32).min


def material(board: Array) -> Array:
    """int32[2] material of White and Black on a board uint32[12, 2] (White P..K, Black P..K)."""
    counts = jax.lax.population_count(board).astype(jnp.int32).sum(-1)  # [12] pieces per type
    per_side = counts.reshape(2, 6) * jnp.asarray(PIECE_VALUES)[None, :]  # [2, 6]
    return per_side.sum(-1)


def observation_lead(observation: Array) -> Array:
    """float32[M] the material lead of the player to move, read off observations
    float32[M, 8, 8, planes] (docs/chess.md: the mover's P..K planes 0-5, the opponent's 6-11)."""
    values = jnp.asarray(PIECE_VALUES, jnp.float32)
    counts = observation.sum((1, 2))  # [M, planes] pieces per plane
    return (counts[:, 0:6] * values).sum(-1) - (counts[:, 6:12] * values).sum(-1)


def move_scores(env, state, candidates: Candidates) -> Array:
    """int32[K] the mover's score after each candidate move (module docstring)."""
    mover = state.current_player
    nxt = jax.vmap(env.transition, in_axes=(None, 0))(state, candidates.actions)
    balance = jax.vmap(material)(nxt.board)  # [K, 2]
    mine, theirs = balance[:, mover], balance[:, 1 - mover]  # [K] each
    over = nxt.terminated | nxt.truncated  # [K]
    won = nxt.rewards[:, mover] > 0  # [K]
    score = jnp.where(over, jnp.where(won, MATE_SCORE, 0), mine - theirs)
    return jnp.where(candidates.valid, score, NO_MOVE_SCORE)


class GreedyChoice(NamedTuple):
    """The material-greedy decision in one position, with what it was based on."""

    candidates: Candidates  # [K] the legal moves
    scores: Array  # int32[K] the mover's score after each (NO_MOVE_SCORE for padding)
    action: Array  # int32 the move chosen


def material_greedy_choice(env, state, key: Array) -> GreedyChoice:
    """The material-greedy move of one unbatched state (any action if the game is over)."""
    cand = legal_candidates(state.legal_action_mask, env.max_legal_actions)
    score = move_scores(env, state, cand)  # [K]
    best = score == score.max()
    # uniform among the best: the argmax of independent uniforms restricted to them
    pick = jnp.argmax(jnp.where(best, jax.random.uniform(key, best.shape), -1.0))
    return GreedyChoice(cand, score, cand.actions[pick])


def material_greedy_action(env, state, key: Array) -> Array:
    """int32 the material-greedy move of one unbatched state."""
    return material_greedy_choice(env, state, key).action


def material_greedy_actions(env, states, key: Array) -> Array:
    """int32[B] material-greedy moves for a batch of states, one key split per game."""
    keys = jax.random.split(key, states.current_player.shape[0])
    return jax.vmap(lambda s, k: material_greedy_action(env, s, k))(states, keys)


def material_policy(env):
    """The jittable `(variables, states, key) -> actions` of the material-greedy player."""

    def policy(variables, states, key):
        del variables
        return material_greedy_actions(env, states, key)

    return policy


__all__ = ["MATE_SCORE", "NO_MOVE_SCORE", "PIECE_VALUES", "Candidates", "GreedyChoice",
           "legal_candidates", "material", "material_greedy_action", "material_greedy_actions",
           "material_greedy_choice", "material_policy", "move_scores", "observation_lead"]
