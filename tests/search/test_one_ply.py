"""The 1-ply search (`turbozero.search.one_ply`): a plain-Python reference on tic-tac-toe with a
random network, chess against the material-greedy player (itself checked against python-chess
in test_chess_referees.py), its place among the search configs, and the evaluation that plays
it as the agent."""

import dataclasses
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from envs.chess import material as mat
from envs.sampling import legal_candidates
from turbozero.networks import MLPNet, ScalarValue, WDLValue
from turbozero.presets import get_preset
from turbozero.search import (
    NetworkEvaluator,
    OnePlyConfig,
    MctxConfig,
    random_actions,
    search,
)
from turbozero.search.one_ply import one_ply_search
from turbozero.training import Trainer
from turbozero.training.algorithm_configs import AlphaZero
from turbozero.training.algorithms import evaluation_search
from turbozero.training.run_config import config_from_json, config_to_json

TTT = envs.make("pgx/tic_tac_toe")
NET = MLPNet(num_actions=TTT.num_actions, value_format=WDLValue(), hidden_sizes=(16,))
EVAL = NetworkEvaluator(NET.apply, WDLValue())


def _random_states(env, n, plies, seed):
    """n games after `plies` random moves, in one compiled loop."""

    @jax.jit
    def play(key):
        states = jax.vmap(env.init)(jax.random.split(key, n))

        def body(i, states):
            actions = random_actions(states, jax.random.fold_in(key, i))
            return jax.vmap(env.step)(states, actions)

        return jax.lax.fori_loop(0, plies, body, states)

    return play(jax.random.PRNGKey(seed))


def test_legal_candidates_pad_with_a_legal_action_and_zero_when_none():
    cand = legal_candidates(jnp.array([False, True, False, True, False]), 4)
    assert list(np.asarray(cand.actions)) == [1, 3, 1, 1]
    assert list(np.asarray(cand.valid)) == [True, True, False, False]
    none = legal_candidates(jnp.zeros((5,), bool), 3)
    assert list(np.asarray(none.actions)) == [0, 0, 0] and not np.asarray(none.valid).any()


def test_one_ply_follows_a_plain_python_reference_on_tic_tac_toe():
    variables = NET.init(jax.random.PRNGKey(3), jnp.zeros((1,) + TTT.observation_shape))
    states = _random_states(TTT, 16, 3, seed=0)
    out = jax.jit(lambda v, s: one_ply_search(TTT, EVAL, v, s))(variables, states)
    step, value_of = jax.jit(TTT.step), jax.jit(EVAL)
    for b in range(16):
        state = jax.tree_util.tree_map(lambda x: x[b], states)
        if bool(state.terminated):
            continue
        mover = int(state.current_player)
        best, best_value = None, -np.inf
        for a in np.flatnonzero(np.asarray(state.legal_action_mask)):  # ascending: ties -> lowest
            nxt = step(state, jnp.int32(a))
            if bool(nxt.terminated):
                value = float(nxt.rewards[mover])
            else:
                _, v = value_of(variables, nxt.observation[None])
                v = float(v[0])
                value = float(nxt.rewards[mover]) + (v if int(nxt.current_player) == mover else -v)
            if value > best_value + 1e-6:
                best, best_value = int(a), value
        assert int(out.action[b]) == best
        assert float(out.root_value[b]) == pytest.approx(best_value, abs=1e-5)
        np.testing.assert_array_equal(np.asarray(out.policy[b]), np.eye(TTT.num_actions)[best])


def test_search_runs_one_ply_for_its_config_and_refuses_what_it_lacks():
    variables = NET.init(jax.random.PRNGKey(3), jnp.zeros((1,) + TTT.observation_shape))
    states = _random_states(TTT, 4, 2, seed=1)
    direct = jax.jit(lambda v, s: one_ply_search(TTT, EVAL, v, s))(variables, states)
    via = jax.jit(lambda v, s: search(TTT, EVAL, v, s, jax.random.PRNGKey(0), OnePlyConfig()))(
        variables, states)
    np.testing.assert_array_equal(np.asarray(direct.action), np.asarray(via.action))
    with pytest.raises(ValueError, match="risk betas need a family with a risk term"):
        search(TTT, EVAL, variables, states, jax.random.PRNGKey(0), OnePlyConfig(),
               risk_beta=jnp.zeros((4, 2)))
    with pytest.raises(ValueError, match="below pgx/tic_tac_toe's max_legal_actions 9"):
        one_ply_search(TTT, EVAL, variables, states, width=3)
    pyrat = envs.make("pyrat", width=5, height=5, cheese_count=3)
    with pytest.raises(ValueError, match="simultaneous-move game"):
        one_ply_search(pyrat, EVAL, variables, jax.jit(jax.vmap(pyrat.init))(
            jax.random.split(jax.random.PRNGKey(0), 2)))


def test_one_ply_is_an_alphazero_evaluation_and_survives_the_run_config():
    assert AlphaZero.trains_with(OnePlyConfig())  # an evaluation player of AlphaZero's
    assert evaluation_search(OnePlyConfig()) == OnePlyConfig()
    base = get_preset("pgx/tic_tac_toe", "tiny", eval_games=8)
    config = dataclasses.replace(base, algorithm=dataclasses.replace(
        base.algorithm, eval_search=OnePlyConfig()))
    assert config_from_json(json.loads(json.dumps(config_to_json(config)))) == config
    trainer = Trainer(dataclasses.replace(config, algorithm=dataclasses.replace(
        config.algorithm, search=MctxConfig(num_simulations=4))))
    result = trainer.evaluate("random")
    assert result["finished"] == 8 and result["wins"] + result["draws"] + result["losses"] == 8
    # the agent plays the built-in greedy opponent's moves: same network, same rule, no ties
    # broken differently, so every game is decided by the seats alone
    mirror = trainer.evaluate("greedy")
    assert mirror["finished"] == 8


def _material_evaluator(num_actions):
    """Value = the material lead of the player to move / 200 (|value| < 0.52 < a mate's 1)."""

    def evaluate(variables, observation):
        lead = mat.observation_lead(observation)
        return jnp.zeros((observation.shape[0], num_actions)), lead / 200.0

    return NetworkEvaluator(evaluate, ScalarValue())


MATE_FENS = ["6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1", "r5k1/5ppp/8/8/8/8/5PPP/6K1 b - - 0 1"]


def test_chess_one_ply_with_a_material_value_plays_a_material_greedy_best_move():
    """With a value that is material, 1 ply is the material-greedy player up to ties: its move
    scores the best material-greedy score (mates first, draws 0), in random positions and in
    mates in one for both colours."""
    env = envs.make("chess")
    random_part = _random_states(env, 6, 30, seed=4)
    mates = jax.tree_util.tree_map(lambda *x: jnp.stack(x), *[env.from_fen(f) for f in MATE_FENS])
    states = jax.tree_util.tree_map(lambda a, b: jnp.concatenate([a, b]), random_part, mates)
    evaluator = _material_evaluator(env.num_actions)

    @jax.jit
    def run(states):
        out = one_ply_search(env, evaluator, None, states)
        choice = jax.vmap(lambda s, k: mat.material_greedy_choice(env, s, k))(
            states, jax.random.split(jax.random.PRNGKey(0), states.current_player.shape[0]))
        return out, choice

    out, choice = run(states)
    live = ~np.asarray(states.terminated | states.truncated)
    assert live.sum() >= 6
    for b in np.flatnonzero(live):
        actions = np.asarray(choice.candidates.actions[b])
        scores = np.asarray(choice.scores[b])
        picked = scores[np.flatnonzero(actions == int(out.action[b]))[0]]
        assert picked == scores.max()
    assert (np.asarray(choice.scores[-2:]).max(-1) == mat.MATE_SCORE).all()  # both are mates
    assert (np.asarray(out.root_value[-2:]) == 1.0).all()
