"""A match against an outside program (`evaluation.play_outside_match`) calls the agent only for
the games whose move it must choose, and plays a complete-move player's plan through: the same
games as an agent called at every checker step, for a fraction of the searching."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from fixed_networks import small_game_network
from turbozero.search.afterstate import AfterstatePlayerConfig, afterstate_search
from turbozero.training.evaluation import play_outside_match

ENV = envs.make("backgammon")
GAMES, STEPS = 4, 80


@pytest.fixture(scope="module")
def player():
    evaluator, variables = small_game_network(ENV)
    config = AfterstatePlayerConfig(max_afterstates=64)
    return jax.jit(lambda v, s, k: afterstate_search(ENV, evaluator, v, s, config)), variables


class _Counted:
    """The agent, counting the rows it is asked to search."""

    def __init__(self, fn):
        self.fn, self.rows, self.calls = fn, 0, 0

    def __call__(self, variables, states, key):
        self.rows += int(states.current_player.shape[0])
        self.calls += 1
        return self.fn(variables, states, key)


class _FirstLegal:
    """An outside opponent playing its first legal micro-action; records every action played."""

    def __init__(self):
        self.played = {}

    def choose(self, game, states):
        return int(np.flatnonzero(states.legal_action_mask[game])[0])

    def after_move(self, game, action, agent_output):
        self.played.setdefault(game, []).append((action, agent_output is not None))

    def after_step(self, was_done, states):
        pass


def _match(agent, variables):
    opp = _FirstLegal()
    match = play_outside_match(ENV, agent, variables, jax.random.PRNGKey(3), GAMES, STEPS, opp,
                               duplicate=True)
    return match, opp


def _opponent_moves(opp):
    return {g: [a for a, by_agent in moves if not by_agent] for g, moves in opp.played.items()}


def test_a_plan_is_played_through_with_the_same_moves_as_searching_every_step(player):
    fn, variables = player
    with_plan = _Counted(fn)
    # the same player without its plan: searched again at every one of its checker steps
    every_step = _Counted(jax.jit(lambda v, s, k: fn(v, s, k).action))
    planned, opp_planned = _match(with_plan, variables)
    stepped, opp_stepped = _match(every_step, variables)
    # a 0-ply plan is the same complete move, its checker moves perhaps in another order: the
    # same positions, so the same opponent moves and the same final boards
    assert _opponent_moves(opp_planned) == _opponent_moves(opp_stepped)
    np.testing.assert_array_equal(np.asarray(planned.states.board),
                                  np.asarray(stepped.states.board))
    np.testing.assert_array_equal(planned.returns, stepped.returns)
    moves = [by_agent for g in opp_planned.played.values() for _, by_agent in g]
    agent_moves = sum(moves)
    turns = sum(1 for g in opp_planned.played.values()
                for i, (_, by_agent) in enumerate(g) if by_agent and (i == 0 or not g[i - 1][1]))
    assert agent_moves > 40 and turns < agent_moves  # enough play, turns of several moves
    # one game a call (a quarter of the 4-game batch): searched once a checker move without
    # the plan, once a turn with it
    assert with_plan.rows == with_plan.calls and every_step.rows == every_step.calls
    assert every_step.calls == agent_moves
    assert with_plan.calls == turns


def test_an_illegal_planned_action_is_refused(player):
    fn, variables = player

    def bad(v, s, k):
        out = fn(v, s, k)
        # the second micro-action moves by a die the roll does not have: never legal
        dice = s.dice
        missing = jnp.argmax((jnp.arange(1, 7)[None, :, None] != dice[:, None, :]).all(-1),
                             axis=1) + 1
        second = (out.action // 6) * 6 + missing - 1
        plan = out.plan.at[:, 1].set(jnp.where(out.action // 6 > 0, second, -1))
        return out.replace(plan=plan)

    with pytest.raises(ValueError, match="plan plays action"):
        _match(jax.jit(bad), variables)
