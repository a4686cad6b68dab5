"""Placements at the end of a gomoku game (docs/gomoku.md).

The winner (the player who made a line of at least W) is first. The others, or everyone when
the game ends without a line (full board, step cap), are ordered by their chain profile: the
longer longest chain first; at equal longest, more chains of that length; then the next
length down, and so on to chains of `MIN_CHAIN` stones. Players whose profiles are equal keep
turn order (seat 0 before seat 1 before seat 2). Lone stones are not chains: a profile that
counted them would rank a player higher for scattering its stones.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

Array = jax.Array

MIN_CHAIN = 2  # the shortest run of stones that counts in a profile
NO_WINNER = -1  # `winner` of a game that no line ended (yet)


def profile_keys(counts: Array, winner: Array) -> Array:
    """int32[P, W]: what places are sorted by, most significant first: [is the winner,
    chains of length >= W, chains of length W - 1, ..., chains of length MIN_CHAIN].

    counts: int32[P, W + 1] as in `lines.chain_counts` (index = length, W = W or more).
    """
    num_players = counts.shape[0]
    is_winner = (jnp.arange(num_players) == winner).astype(jnp.int32)
    descending = counts[:, :MIN_CHAIN - 1:-1]  # [P, W - 1]: lengths W, W - 1, ..., 2
    return jnp.concatenate([is_winner[:, None], descending], axis=1)


def places(counts: Array, winner: Array) -> Array:
    """int32[P]: each player's place, 0 = first (a permutation of 0..P-1)."""
    keys = profile_keys(counts, winner)  # [P, K]
    num_players = keys.shape[0]
    diff = keys[:, None, :] - keys[None, :, :]  # [P, P, K]: p's key minus q's
    first = jnp.argmax(diff != 0, axis=-1)  # [P, P] the first component that differs
    lead = jnp.take_along_axis(diff, first[..., None], axis=-1)[..., 0]  # 0 when equal
    seat = jnp.arange(num_players)
    # beats[p, q]: p is placed ahead of q (a larger key, or an equal key and an earlier seat)
    beats = (lead > 0) | ((lead == 0) & (seat[:, None] < seat[None, :]))
    return jnp.sum(beats, axis=0).astype(jnp.int32)


def place_rewards(player_places: Array, rewards_by_place: Array) -> Array:
    """float32[P]: each player's reward for its place (`rewards_by_place[place]`)."""
    return jnp.asarray(rewards_by_place, jnp.float32)[player_places]
