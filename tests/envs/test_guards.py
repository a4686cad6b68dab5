"""Helpers that read one game refuse a batch with the same clear ValueError (envs.core)."""

import jax
import jax.numpy as jnp
import pytest

import envs
from envs import backgammon, chess, pacosako
from envs.core import require_unbatched

BATCH_MESSAGE = r"takes one unbatched state, got a batch of shape \(2,\)"


def _batch_of_two(state):
    return jax.tree_util.tree_map(lambda x: jnp.stack([x, x]), state)


@pytest.fixture(scope="module")
def states(pacosako_env, pacosako_start):
    """{game: (env, one state)} for every game with unbatched helpers (jitted inits: faster
    than op-by-op and kept in the persistent compilation cache)."""
    key = jax.random.PRNGKey(0)
    bg, rat = envs.make("backgammon"), envs.make("pyrat", width=5, height=5, cheese_count=3)
    return {
        "backgammon": (bg, jax.jit(bg.init)(key)),
        "pyrat": (rat, jax.jit(rat.init)(key)),
        "chess": (envs.make("chess"), chess.from_fen(chess.START_FEN)),
        "pacosako": (pacosako_env, pacosako_start),
    }


def _helpers(states):
    """(name, callable taking a state) for every unbatched helper of every game."""
    bg, rat, ch, paco = (states[g][0] for g in ("backgammon", "pyrat", "chess", "pacosako"))
    return [
        ("backgammon: check_action", lambda s: bg.check_action(s, 0)),
        ("backgammon: to_position_id", backgammon.to_position_id),
        ("backgammon: to_gnubg_board", backgammon.to_gnubg_board),
        ("backgammon: render", backgammon.render),
        ("pyrat: check_action", lambda s: rat.check_action(s, jnp.zeros(2, jnp.int32))),
        ("pyrat: render_text", rat.render_text),
        ("pyrat: to_maze", rat.to_maze),
        ("chess: check_action", lambda s: ch.check_action(s, 0)),
        ("chess: to_fen", chess.to_fen),
        ("chess: encode_move", lambda s: chess.encode_move(s, "e2e4")),
        ("chess: decode_action", lambda s: chess.decode_action(s, 0)),
        ("chess: legal_moves_uci", chess.legal_moves_uci),
        ("chess: termination_reason", chess.termination_reason),
        ("chess: render_text", chess.render_text),
        ("chess: render_svg", chess.render_svg),
        ("pacosako: check_action", lambda s: paco.check_action(s, 0)),
        ("pacosako: to_notation", pacosako.to_notation),
        ("pacosako: render_text", pacosako.render_text),
        ("pacosako: action_to_string", lambda s: pacosako.action_to_string(s, 0)),
        ("pacosako: action_from_string", lambda s: pacosako.action_from_string(s, "lift e2")),
        ("pacosako: legal_actions", pacosako.legal_actions),
    ]


def test_every_unbatched_helper_rejects_a_batch_with_one_message(states):
    for name, helper in _helpers(states):
        game = name.split(":")[0]
        batched = _batch_of_two(states[game][1])
        with pytest.raises(ValueError, match=BATCH_MESSAGE) as err:
            helper(batched)
        assert str(err.value).startswith(name), (name, str(err.value))


def test_the_same_helpers_accept_one_state(states):
    """The guard lets a single state through (only the refusal above is new)."""
    for name, helper in _helpers(states):
        if name.endswith("check_action"):
            continue  # action 0 need not be legal everywhere; the helper ran past the guard
        helper(states[name.split(":")[0]][1])


def test_require_unbatched_names_the_caller_and_the_batch_shape(states):
    state = states["pyrat"][1]
    require_unbatched(state, "mine")
    batched = jax.tree_util.tree_map(lambda x: jnp.stack([jnp.stack([x, x])] * 3), state)
    with pytest.raises(ValueError, match=r"^mine takes one unbatched state, got a batch of shape \(3, 2\)"):
        require_unbatched(batched, "mine")


def test_wide_and_float_actions_and_outcomes_are_named_not_overflowed(states):
    """Issue 45 item 1: an action or chance outcome jit would overflow (a Python int beyond
    int32) or truncate (a float outcome; float actions were already refused) is one ValueError
    naming the value, not jax's OverflowError or a silently different outcome."""
    import numpy as np

    bg, state = states["backgammon"]
    key = jax.random.PRNGKey(1)
    for action in (2**40, -2**40, np.int64(2**33)):
        with pytest.raises(ValueError, match="outside int32"):
            bg.step(state, action, key)
    with pytest.raises(ValueError, match="a float outcome is not truncated"):
        bg.step_chance(state, 1.7)
    with pytest.raises(ValueError, match="outside int32"):
        bg.step_chance(state, 2**40)
    rat, rat_state = states["pyrat"]
    with pytest.raises(ValueError, match="outside int32"):
        rat.step(rat_state, [0, 2**40])
    # what int32 holds still steps: an out-of-range action is the protocol's illegal move
    assert bool(bg.step(state, np.int64(10**6), key).terminated)
