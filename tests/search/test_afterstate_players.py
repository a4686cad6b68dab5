"""Complete-move players (turbozero.search.afterstate) against plain-Python references: every
complete move listed by the env's own micro-steps (gnubg_bridge.complete_moves, a depth-first
search written separately), valued one by one with the same network."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from envs import backgammon as bg
from envs.backgammon import gnubg_bridge, notation, rules
from fixed_networks import small_game_network
from turbozero.search import search
from turbozero.search.afterstate import AfterstatePlayerConfig, afterstate_search

ENV = envs.make("backgammon")
POSITIONS = [  # (position id, roll): a race, contact with hits, the bar, a bear-off
    ("4HPwATDgc/ABMA", (3, 1)),
    ("4HPwATDgc/ABMA", (6, 6)),
    ("sGfwATDgc/ABMA", (5, 2)),
    ("4HPhASLgc/ABMA", (4, 3)),
    ("2+4OAADb7gAAAA", (6, 4)),
]


@pytest.fixture(scope="module")
def net():
    return small_game_network(ENV)


@pytest.fixture(scope="module")
def play0(net):
    """The 0-ply player, compiled once for single states."""
    evaluator, _ = net
    config = AfterstatePlayerConfig()
    return jax.jit(lambda v, s: afterstate_search(ENV, evaluator, v, s, config))


_step_det = jax.jit(ENV.step_deterministic)
_step_chance = jax.jit(ENV.step_chance)


def _after(state, actions):
    for a in actions:
        state = _step_det(state, jnp.int32(a))
    return state


_NET = {}


def _values_for(evaluator, variables, states, player):
    """The reference values of a list of states for `player`: exact if finished, else the
    network's value for the player to move there, negated for the other (one network call)."""
    if id(evaluator) not in _NET:
        _NET[id(evaluator)] = jax.jit(evaluator)
    _, v = _NET[id(evaluator)](variables, jnp.stack([s.observation for s in states]))
    out = []
    for s, vi in zip(states, np.asarray(v)):
        if bool(s.terminated):
            out.append(float(s.rewards[player]))
        else:
            out.append(float(vi) if int(s.current_player) == player else -float(vi))
    return out


def _ref_zero_ply(evaluator, variables, state):
    """{result board bytes: (value for the mover, state)} over the complete moves (Python DFS)."""
    mover = int(state.current_player)
    afters = [_after(state, actions) for actions in gnubg_bridge.complete_moves(state).values()]
    values = _values_for(evaluator, variables, afters, mover)
    return {np.asarray(a.board).tobytes(): (v, a) for a, v in zip(afters, values)}


def _ref_one_ply(evaluator, variables, state, candidates, threshold):
    """(best move's board bytes, its 1-ply value): the `candidates` best at 0 plies within
    `threshold` of the best (gnubg's move filter) averaged over the opponent's rolls."""
    zero = _ref_zero_ply(evaluator, variables, state)
    mover = int(state.current_player)
    top = sorted(zero.items(), key=lambda kv: -kv[1][0])[:candidates]
    top = [kv for kv in top if kv[1][0] >= top[0][1][0] - threshold]
    best = None
    for key, (_, after) in top:
        if bool(after.terminated):
            q = float(after.rewards[mover])
        else:
            probs = np.asarray(ENV.chance_outcome_probs(after))
            q = 0.0
            for o in range(rules.NUM_ROLLS):
                rolled = _step_chance(after, jnp.int32(o))
                opp = int(rolled.current_player)
                replies = _ref_zero_ply(evaluator, variables, rolled)
                v_opp = max(v for v, _ in replies.values())
                q += probs[o] * (-v_opp if opp != mover else v_opp)
        if best is None or q > best[1]:
            best = (key, q)
    return best


@pytest.mark.parametrize("pid,roll", POSITIONS)
def test_zero_ply_plays_the_best_complete_move(net, play0, pid, roll):
    evaluator, variables = net
    state = bg.from_position_id(pid, roll)
    ref = _ref_zero_ply(evaluator, variables, state)
    best_key, (best_v, _) = max(ref.items(), key=lambda kv: kv[1][0])
    moves = ENV.afterstates(state)
    batch = jax.tree_util.tree_map(lambda x: x[None], state)
    out = play0(variables, batch)
    np.testing.assert_allclose(float(out.root_value[0]), best_v, rtol=1e-5, atol=1e-5)
    # the whole move, micro-step by micro-step as a game plays it
    s = state
    while not bool(s.is_chance) and not bool(s.terminated):
        a = int(play0(variables, jax.tree_util.tree_map(lambda x: x[None], s)).action[0])
        ENV.check_action(s, a)
        s = _step_det(s, jnp.int32(a))
    assert np.asarray(s.board).tobytes() == best_key
    assert int(moves.valid.sum()) == len(ref)


@pytest.mark.slow  # the reference lists 63 move sets by depth-first search: minutes on 2 cores
@pytest.mark.parametrize("pid,roll", POSITIONS[2:3])
def test_one_ply_averages_the_opponents_best_replies(net, pid, roll):
    evaluator, variables = net
    state = bg.from_position_id(pid, roll)
    zero = sorted(v for v, _ in _ref_zero_ply(evaluator, variables, state).values())[::-1]
    threshold = (zero[0] - zero[1]) * 1.01  # the filter keeps 2 of the 3 candidates
    assert zero[0] - zero[2] > 1.01 * threshold
    best_key, best_q = _ref_one_ply(evaluator, variables, state, 3, threshold)
    config = AfterstatePlayerConfig(plies=1, candidates=3, threshold=threshold)
    batch = jax.tree_util.tree_map(lambda x: x[None], state)
    play1 = jax.jit(lambda v, s: afterstate_search(ENV, evaluator, v, s, config))
    out = play1(variables, batch)
    np.testing.assert_allclose(float(out.root_value[0]), best_q, rtol=1e-4, atol=1e-4)
    # played micro-step by micro-step to the end of the move: legal throughout
    s = state
    while not bool(s.is_chance) and not bool(s.terminated):
        b = jax.tree_util.tree_map(lambda x: x[None], s)
        a = int(play1(variables, b).action[0])
        ENV.check_action(s, a)
        s = _step_det(s, jnp.int32(a))
    del best_key


@pytest.mark.slow  # compiling two plies takes minutes on 2 cores
def test_two_ply_runs_and_is_dispatched_by_search(net):
    evaluator, variables = net
    states = jax.vmap(ENV.init)(jax.random.split(jax.random.PRNGKey(5), 2))
    out = search(ENV, evaluator, variables, states, jax.random.PRNGKey(0),
                 AfterstatePlayerConfig(plies=2, candidates=2, max_afterstates=64))
    assert out.action.shape == (2,) and bool(jnp.all(jnp.isfinite(out.root_value)))
    assert bool(jnp.all(states.legal_action_mask[jnp.arange(2), out.action]))


def test_bad_configs_and_envs_are_refused():
    with pytest.raises(ValueError, match="plies"):
        AfterstatePlayerConfig(plies=3)
    with pytest.raises(ValueError, match="candidates"):
        AfterstatePlayerConfig(candidates=0)
    with pytest.raises(ValueError, match="objective"):
        AfterstatePlayerConfig(objective=1.0)
    ttt = envs.make("pgx/tic_tac_toe")
    s = jax.vmap(ttt.init)(jax.random.split(jax.random.PRNGKey(0), 1))
    with pytest.raises(ValueError, match="afterstates"):
        afterstate_search(ttt, None, None, s, AfterstatePlayerConfig())


def test_match_objective_changes_the_choice_where_the_score_matters(net, play0):
    """With a match score the player values moves by match winning chances (equity's MET):
    at 0-0 to 1 point gammons do not count, so the values differ from money play."""
    from equity import MatchObjective

    evaluator, variables = net
    state = bg.from_position_id(*POSITIONS[0])
    batch = jax.tree_util.tree_map(lambda x: x[None], state)
    money = play0(variables, batch)
    config = AfterstatePlayerConfig(objective=MatchObjective((0, 0, 1)))
    dmp = jax.jit(lambda v, s: afterstate_search(ENV, evaluator, v, s, config))(variables, batch)
    assert -1.0 <= float(dmp.root_value[0]) <= 1.0
    assert float(dmp.root_value[0]) != pytest.approx(float(money.root_value[0]))
    _ = notation


def test_exact_bear_off_values_replace_the_network(net, play0):
    """With `exact=BearoffExact()` a bear-off position's moves are valued from gnubg's
    databases: the player's value is the best database equity among the moves."""
    from equity import BearoffExact, bearoff_value, load_bearoff_table, value_outputs_to_equity

    evaluator, variables = net
    g = ((2, 3, 3, 3, 2, 2) + (0,) * 19, (3, 3, 2, 2, 2, 3) + (0,) * 19)
    state = bg.from_gnubg_board(g, (6, 4))
    table = load_bearoff_table()
    best = -np.inf
    for actions in gnubg_bridge.complete_moves(state).values():
        after = _after(state, actions)
        known, probs = bearoff_value(table, after.board)
        assert bool(known)
        best = max(best, -float(value_outputs_to_equity(probs)))
    batch = jax.tree_util.tree_map(lambda x: x[None], state)
    config = AfterstatePlayerConfig(exact=BearoffExact())
    out = jax.jit(lambda v, s: afterstate_search(ENV, evaluator, v, s, config))(variables, batch)
    np.testing.assert_allclose(float(out.root_value[0]), best, rtol=1e-4, atol=1e-4)
    plain = play0(variables, batch)
    assert abs(float(plain.root_value[0]) - best) > 1e-3  # the untrained network differs


@pytest.mark.parametrize("pack_divs", [(1,), (32, 16, 8, 4, 2, 1), (4, 1), (10_000, 1)])
def test_valid_slots_valued_packed_equal_every_slot_valued(net, pack_divs, monkeypatch):
    """`valid_values` runs the network on the valid slots only, packed into the smallest share
    of the slots in `PACK_DIVS` that holds them: the values equal those of every slot valued
    ((1,): no packing; the default ladder; 1/4; 1/10,000: they do not fit, every slot through
    the `lax.switch`)."""
    from turbozero.search import afterstate

    evaluator, variables = net
    monkeypatch.setattr(afterstate, "PACK_DIVS", pack_divs)
    states = jax.tree_util.tree_map(lambda *x: jnp.stack(x), *[
        bg.from_position_id(pid, roll) for pid, roll in POSITIONS])
    config = AfterstatePlayerConfig(max_afterstates=64)
    valuer = afterstate.AfterstateValuer(ENV, evaluator, variables, config)
    moves = jax.vmap(lambda s: ENV.afterstates(s, 64))(states)
    mover = states.current_player[:, None]
    got = jax.jit(valuer.valid_values)(moves.states, moves.valid, mover, mover)
    want = jnp.where(moves.valid, valuer.afterstate_values(moves.states, mover, mover), -jnp.inf)
    assert int(moves.valid.sum()) <= moves.valid.size // 4  # the packed case is packed
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-6)
