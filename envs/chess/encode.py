"""Many FENs at once to states and network inputs (`encode_batch`, docs/chess.md).

Parsing and validating a FEN is host work (strings); everything after it is one jitted,
batched call: the FENs are parsed to the state's arrays on the host, stacked, and one
`vmap` of the env's position builder makes the states and their observations.

A FEN has no past, so the 8 history steps of the observation (channels 18..121) are zero and
the repetition planes say "first occurrence": the same as `envs.chess.from_fen` one at a time.
"""

from __future__ import annotations

from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from envs import chess as env_chess

Array = jax.Array


def _bucket(n: int) -> int:
    """The batch size actually compiled for n FENs: the next power of two, so that a stream of
    calls with varying counts compiles at most log2(max n) + 1 times (one compilation of the
    position builder costs seconds, a padded row microseconds)."""
    return 1 << max(0, (n - 1).bit_length())


def _parse_all(fens: Sequence[str]) -> tuple[np.ndarray, ...]:
    """Stacked host arrays (board, color, castling, ep, halfmove, fullmove) of the FENs,
    padded to `_bucket(len(fens))` rows by repeating the first position."""
    if isinstance(fens, str):
        raise ValueError("encode_batch takes a sequence of FEN strings, got a single string; "
                         "wrap it in a list")
    fens = list(fens)
    if not fens:
        raise ValueError("encode_batch needs at least one FEN")
    parsed = []
    for i, fen in enumerate(fens):
        try:
            parsed.append(env_chess._parse_fen(fen))
        except ValueError as err:
            raise ValueError(f"FEN {i} ({fen!r}): {err}") from None
    parsed += [parsed[0]] * (_bucket(len(fens)) - len(fens))
    return tuple(np.stack(field) for field in zip(*parsed))


def _build_states(board, color, castling, ep, halfmove, fullmove, max_plies):
    return jax.vmap(
        lambda *x: env_chess._fresh(*x, max_plies=max_plies)
    )(board, color, castling, ep, halfmove, fullmove)


_build_states_jit = jax.jit(_build_states, static_argnames=("max_plies",))
# only the observations leave the device: slicing every field of a padded batch of states cost
# about as much as building it (72-100 ms at 1024 FENs, one dispatch per field)
_observations_jit = jax.jit(lambda *a: _build_states(*a, max_plies=512).observation)


def _first(x, n: int):
    return x if x.shape[0] == n else x[:n]


def states_from_fens(fens: Sequence[str], max_plies: int = 512):
    """A batch of `ChessState`s [N] (with observations), one per FEN, in one jitted call.

    ValueError naming the first bad FEN (by index) and what is wrong with it.
    """
    arrays = _parse_all(fens)
    states = _build_states_jit(*(jnp.asarray(a) for a in arrays), max_plies=int(max_plies))
    return jax.tree_util.tree_map(lambda x: _first(x, len(fens)), states)


def encode_batch(fens: Sequence[str]) -> Array:
    """float32[N, 8, 8, 122] the network input of each FEN, from the side to move (docs/chess.md).

    The FENs are parsed and validated on the host (about 0.3 ms each, which dominates at large
    N: docs/benchmarks.md), then one jitted batched call builds the observations.
    """
    arrays = _parse_all(fens)
    return _first(_observations_jit(*(jnp.asarray(a) for a in arrays)), len(fens))


__all__ = ["encode_batch", "states_from_fens"]
