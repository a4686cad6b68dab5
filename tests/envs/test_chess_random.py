"""Chess against python-chess on random games.

* test_random_positions_match: >= 10,000 positions of random games (batched env); at each, the
  legal move set, the FEN and the termination state must equal python-chess's.
* test_random_game_endings: random games played entirely inside `jit` (lax.scan over a vmapped
  env); each is replayed in python-chess, every chosen move must be legal there, and the game
  must end at the same ply for the same reason with the same rewards. The default suite plays
  300 games; `pytest -m slow` plays 1,000.
"""

from __future__ import annotations

import chess
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envs import chess as ec
from envs.chess import core


def ref_reason(board: chess.Board, ply: int, max_plies: int) -> str:
    """The environment's documented precedence, evaluated with python-chess predicates."""
    if board.is_checkmate():
        return "checkmate"
    if board.is_stalemate():
        return "stalemate"
    if board.is_insufficient_material():
        return "insufficient_material"
    if board.halfmove_clock >= 100:
        return "fifty_moves"
    if board.is_repetition(3):
        return "threefold_repetition"
    if ply >= max_plies:
        return "ply_cap"
    return "ongoing"


def _decode_on(board: chess.Board, a: int) -> str:
    """Decode an action with python-chess's board (independent of our piece lookup)."""
    frm, to, promo = int(core.ACT_FROM[a]), int(core.ACT_TO[a]), int(core.ACT_PROMO[a])
    assert to >= 0
    if board.turn == chess.BLACK:
        frm, to = frm ^ 56, to ^ 56
    letter = ("", "n", "b", "r")[promo]
    if not promo and board.piece_type_at(frm) == chess.PAWN and chess.square_rank(to) in (0, 7):
        letter = "q"
    return chess.square_name(frm) + chess.square_name(to) + letter


@pytest.fixture(scope="module")
def env():
    return ec.Chess()


def test_random_positions_match(env):
    batch, target = 48, 10_000
    vstep = jax.jit(jax.vmap(env.step))
    rng = np.random.default_rng(1234)
    checked = 0
    reasons = set()
    while checked < target:
        state = jax.vmap(env.init)(jax.random.split(jax.random.PRNGKey(checked), batch))
        boards = [chess.Board() for _ in range(batch)]
        done = np.zeros(batch, bool)
        for ply in range(env.max_plies + 1):
            host = jax.device_get(state)
            actions = np.zeros(batch, np.int32)
            for i in range(batch):
                if done[i]:
                    continue
                st = jax.tree.map(lambda x: x[i], host)
                b = boards[i]
                assert ec.to_fen(st) == b.fen(), (ply, b.fen())
                reason = ec.termination_reason(st)
                assert reason == ref_reason(b, ply, env.max_plies), b.fen()
                if reason != "ongoing":
                    done[i] = True
                    reasons.add(reason)
                    continue
                ours = ec.legal_moves_uci(st)
                assert len(ours) == len(set(ours))
                assert set(ours) == {m.uci() for m in b.legal_moves}, b.fen()
                checked += 1
                legal = np.flatnonzero(np.asarray(st.legal_action_mask))
                a = int(legal[rng.integers(len(legal))])
                actions[i] = a
                b.push_uci(ec.decode_action(st, a))
            if done.all():
                break
            state = vstep(state, jnp.asarray(actions))
    assert checked >= target
    assert {"insufficient_material", "fifty_moves"} <= reasons


def _random_legal(key, mask):
    # uniform over the legal actions: the r-th True of the mask
    n = jnp.sum(mask)
    r = jax.random.randint(key, (), 0, jnp.maximum(n, 1))
    return jnp.argmax(jnp.cumsum(mask) > r).astype(jnp.int32)


def _play_in_jit(env, n_games: int, seed: int):
    def body(state, key):
        keys = jax.random.split(key, n_games)
        a = jax.vmap(_random_legal)(keys, state.legal_action_mask)
        nxt = jax.vmap(env.step)(state, a)
        return nxt, (a, nxt.termination, nxt.rewards)

    @jax.jit
    def run(key):
        k0, k1 = jax.random.split(key)
        state = jax.vmap(env.init)(jax.random.split(k0, n_games))
        return jax.lax.scan(body, state, jax.random.split(k1, env.max_plies))[1]

    return jax.device_get(run(jax.random.PRNGKey(seed)))


def _check_endings(env, n_games: int, seed: int):
    actions, terms, rewards = _play_in_jit(env, n_games, seed)
    counts: dict[str, int] = {}
    for g in range(n_games):
        board = chess.Board()
        for ply in range(env.max_plies):
            uci = _decode_on(board, int(actions[ply, g]))
            move = chess.Move.from_uci(uci)
            assert move in board.legal_moves, (g, ply, board.fen(), uci)
            board.push(move)
            ours = core.REASONS[int(terms[ply, g])]
            ref = ref_reason(board, ply + 1, env.max_plies)
            assert ours == ref, (g, ply, board.fen())
            if ref != "ongoing":
                want = [0.0, 0.0]
                if ref == "checkmate":  # the side to move (python-chess turn) lost
                    loser = 0 if board.turn == chess.WHITE else 1
                    want = [-1.0, 1.0] if loser == 0 else [1.0, -1.0]
                np.testing.assert_array_equal(rewards[ply, g], want)
                counts[ref] = counts.get(ref, 0) + 1
                break
    assert sum(counts.values()) == n_games
    return counts


def test_random_game_endings(env):
    counts = _check_endings(env, 300, seed=7)
    assert counts.get("checkmate", 0) > 0 and counts.get("insufficient_material", 0) > 0


@pytest.mark.slow
def test_random_game_endings_1000(env):
    counts = _check_endings(env, 1000, seed=11)
    assert len(counts) >= 4
