"""`envs.testing.api_test` on games written outside the library: a small Nim passes it (and a
version with chance does), and broken variants of it fail with the rule they break named.

Nim here: one heap of stones, a move takes 1, 2 or 3 of them (actions 0, 1, 2), whoever takes
the last stone wins. Every variant is a subclass that changes one method, so a failure points
at that one mistake. Each env is compiled by its own api_test call (a few seconds each).
"""

from __future__ import annotations

import pathlib
import re

import jax
import jax.numpy as jnp
import pytest
from flax import struct

from envs.core import Env, State
from envs.testing import EnvChecker, ProtocolError, api_test

ROOT = pathlib.Path(__file__).resolve().parents[2]


@struct.dataclass
class NimState(State):
    stones: jax.Array  # stones left on the heap


class Nim(Env):
    id = "nim"
    num_players = 2
    num_actions = 3  # take 1, 2 or 3 stones

    def __init__(self, stones: int = 7):
        self.stones = stones

    def _mask(self, stones):
        return jnp.arange(1, 4) <= stones

    def _init(self, key):
        return NimState(current_player=jnp.int32(0), observation=None,
                        rewards=jnp.zeros(2, jnp.float32), terminated=jnp.bool_(False),
                        truncated=jnp.bool_(False), legal_action_mask=self._mask(self.stones),
                        step_count=jnp.int32(0), stones=jnp.int32(self.stones))

    def _step(self, state, action, key):
        stones = state.stones - (action + 1)
        won = stones == 0
        mover = state.current_player
        rewards = jnp.where(jnp.arange(2) == mover, 1.0, -1.0) * won
        return state.replace(current_player=1 - mover, rewards=rewards.astype(jnp.float32),
                             terminated=won, legal_action_mask=self._mask(stones),
                             stones=stones)

    def _observe(self, state, player_id):
        # the heap as a one-hot, and whether it is the viewer's turn: each player's own view
        heap = jax.nn.one_hot(state.stones, self.stones + 1)
        return jnp.append(heap, (player_id == state.current_player).astype(jnp.float32))


@struct.dataclass
class WindyNimState(NimState):
    is_chance: jax.Array  # the wind is about to blow


class WindyNim(Nim):
    """Nim with chance: after a move that leaves 2 or more stones, the wind blows one stone
    away with probability 1/2 (so the wind never takes the last stone)."""

    id = "windy_nim"
    is_stochastic = True
    num_chance_outcomes = 2  # the wind takes 0 or 1 stone

    def _init(self, key):
        return WindyNimState(**vars(super()._init(key)), is_chance=jnp.bool_(False))

    def _step_deterministic(self, state, action):
        state = Nim._step(self, state, action, None)
        return state.replace(is_chance=state.stones >= 2)

    def _step_chance(self, state, outcome):
        stones = state.stones - outcome
        return state.replace(stones=stones, legal_action_mask=self._mask(stones),
                             is_chance=jnp.bool_(False))

    def _chance_outcome_probs(self, state):
        return jnp.array([0.5, 0.5], jnp.float32)

    def _step(self, state, action, key):
        after = self._step_deterministic(state, action)
        wind = jax.random.bernoulli(key).astype(jnp.int32)
        resolved = self._step_chance(after, wind)
        return jax.tree_util.tree_map(lambda r, a: jnp.where(after.is_chance, r, a),
                                      resolved, after)


def test_nim_passes():
    api_test(Nim())


def test_nim_with_chance_passes():
    api_test(WindyNim(), num_steps=12)


def test_the_checks_see_finished_games():
    """The toy games end within the playout, so the after-the-end rules were exercised."""
    checker = EnvChecker(Nim(), num_steps=12)
    done = checker.check_playout(checker.playout(jax.random.PRNGKey(0)))
    assert done[:, -1].all()


# --------------------------------------------------------------------------- broken variants
class OffByOneMask(Nim):
    """The mask lets a player take one stone more than the heap holds."""

    def _mask(self, stones):
        return jnp.arange(1, 4) <= stones + 1


class ScalarReward(Nim):
    """A reward for the mover only, not one per player."""

    def _init(self, key):
        return super()._init(key).replace(rewards=jnp.float32(0))

    def _step(self, state, action, key):
        out = super()._step(state, action, key)
        return out.replace(rewards=out.rewards[state.current_player])


class MaskedAtTheEnd(Nim):
    """Finished states keep their (all-False) mask instead of marking every action legal."""

    def _terminal_mask(self, state):
        return state


class SameViewForAll(Nim):
    """The observation forgets whose view it is."""

    def _observe(self, state, player_id):
        return jax.nn.one_hot(state.stones, self.stones + 1)


class TruncatedToo(Nim):
    """A won game is flagged truncated as well as terminated (and there is no step cap)."""

    def _step(self, state, action, key):
        out = super()._step(state, action, key)
        return out.replace(truncated=out.terminated)


class IgnoresItsCap(Nim):
    """Declares a step cap of 2 but never truncates."""

    max_episode_steps = 2


class WrongNotation(Nim):
    """Actions are written as the stones taken but read back as indices."""

    def _player_action_to_string(self, state, player, action):
        return str(action + 1)


class GustyNim(WindyNim):
    """The chance distribution does not sum to 1."""

    def _chance_outcome_probs(self, state):
        return jnp.array([0.5, 0.6], jnp.float32)


class MissingMethods:
    """Not an Env at all: only the attributes."""

    id = "bare"
    num_players = 2
    num_actions = 3


@pytest.mark.parametrize("env, rule", [
    (OffByOneMask(), "a live state has a legal action"),
    (ScalarReward(), "state.rewards"),
    (MaskedAtTheEnd(), "finished states mark every action legal"),
    (SameViewForAll(), "observe(state, player) honours the player"),
    (TruncatedToo(), "never both terminated and truncated"),
    (IgnoresItsCap(), "truncated only at the step cap"),
    (WrongNotation(), "action_to_string / string_to_action round trip"),
    (GustyNim(), "chance_outcome_probs is a distribution"),
    (MissingMethods(), "protocol members"),
], ids=["off_by_one_mask", "scalar_reward", "masked_at_the_end", "same_view_for_all",
        "truncated_too", "ignores_its_cap", "wrong_notation", "gusty_nim", "missing_methods"])
def test_a_broken_env_fails_naming_the_rule(env, rule):
    with pytest.raises(ProtocolError) as info:
        api_test(env, num_steps=12)
    message = str(info.value)
    assert message.startswith(f"{env.id}: {rule}: "), message
    assert isinstance(info.value, AssertionError)


def test_the_message_says_what_was_found():
    with pytest.raises(ProtocolError, match=r"expected float32\[2\] per state, got float32\[\]"):
        api_test(ScalarReward(), name="my game")
    with pytest.raises(ProtocolError, match=r"^my game: "):
        api_test(ScalarReward(), name="my game")


def test_docs_example_runs():
    """The block of docs/envs.md, "Testing your own env", runs as written, standalone."""
    doc = (ROOT / "docs" / "envs.md").read_text(encoding="utf-8")
    section = doc.split("## Testing your own env", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^```python\n(.*?)^```", section, re.S | re.M)
    assert blocks, "no python block in the section"
    namespace = {"__name__": "docs_example"}
    exec(compile(blocks[0], "docs/envs.md", "exec"), namespace)
    assert any(isinstance(v, type) and issubclass(v, Env) for v in namespace.values())


def test_no_pytest_needed():
    """envs.testing is for anyone's test runner: it does not import pytest."""
    source = (ROOT / "envs" / "testing.py").read_text(encoding="utf-8")
    assert not re.search(r"^\s*(import|from)\s+pytest", source, re.M)
