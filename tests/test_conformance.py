"""The environment protocol, checked the same way on every registered env and a pgx game
(in the style of pgx's `api_test`): random legal playouts under jit and vmap, then the rules
every game must keep (docs/envs.md).

One jitted playout (vmap over games of a lax.scan over steps) and one jitted unbatched step per
env, module-scoped, so the default suite pays each compile once; `-m slow` runs longer ones.
"""

from __future__ import annotations

import functools
from xml.etree import ElementTree

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from envs.core import GraphSearchEnv, require_protocol

# every env with a small configuration that reaches its step cap within a short playout
CONFIGS = {
    "backgammon": {},
    "chess": {"max_episode_steps": 24},
    "pacosako": {"max_episode_steps": 24},
    "pyrat": {"width": 5, "height": 5, "cheese_count": 5, "max_episode_steps": 12},
    "gomoku": {"size": 9, "win_length": 4, "view": 5, "max_episode_steps": 24},
    "pgx/tic_tac_toe": {},
}
BATCH, STEPS = 4, 32
SLOW_BATCH, SLOW_STEPS = 16, 300


def test_every_registered_env_is_covered():
    assert set(envs.available_envs()) <= set(CONFIGS)


def random_legal_action(env, state, key):
    """A uniformly random legal action (one per player for simultaneous games)."""
    logits = jnp.where(state.legal_action_mask, 0.0, -jnp.inf)
    return jax.random.categorical(key, logits, axis=-1).astype(jnp.int32)


def make_playout(env, steps):
    """jit(vmap(one game)) over keys [B, 2]: the states in the order they were played,
    [B, steps + 1, ...], the actions and the step keys [B, steps, ...]."""

    def one(key):
        k0, k = jax.random.split(key)

        def body(s, k):
            ka, ks = jax.random.split(k)
            a = random_legal_action(env, s, ka)
            return env.step(s, a, ks), (s, a, ks)

        final, (states, actions, keys) = jax.lax.scan(body, env.init(k0),
                                                      jax.random.split(k, steps))
        states = jax.tree_util.tree_map(lambda xs, x: jnp.concatenate([xs, x[None]]),
                                        states, final)
        return states, actions, keys

    return jax.jit(jax.vmap(one))


class Case:
    def __init__(self, name, steps, batch):
        self.name = name
        self.env = envs.make(name, **CONFIGS[name])
        self.batch = batch
        self._playout = make_playout(self.env, steps)
        self.step = jax.jit(self.env.step)
        self.observe = jax.jit(self.env.observe)

    def playout(self, key):
        return self._playout(jax.random.split(key, self.batch))


@functools.lru_cache(maxsize=None)  # one Case (its compiled functions) per env and length
def get_case(name, steps=STEPS, batch=BATCH):
    return Case(name, steps, batch)


@pytest.fixture(scope="module", params=sorted(CONFIGS))
def case(request):
    return get_case(request.param)


def at(tree, *idx):
    return jax.tree_util.tree_map(lambda x: x[idx], tree)


def assert_same(a, b):
    la, lb = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def _step(case, state, action, key):
    return case.step(state, jnp.asarray(action, jnp.int32), key)


# --------------------------------------------------------------------------- the rules
def check_playout(case, states):
    env = case.env
    n_players = env.num_players
    st = jax.tree_util.tree_map(np.asarray, states)
    B, T1 = st.step_count.shape
    # rewards: one per player; player ids in range; masks of the documented shape
    assert st.rewards.shape == (B, T1, n_players) and st.rewards.dtype == np.float32
    assert ((st.current_player >= 0) & (st.current_player < n_players)).all()
    mask_shape = (n_players, env.num_actions) if env.is_simultaneous else (env.num_actions,)
    assert st.legal_action_mask.shape == (B, T1) + mask_shape
    done = st.terminated | st.truncated
    # finished states: every action marked legal; they absorb (same state, zero rewards)
    assert st.legal_action_mask[done].all()
    nxt_done = done[:, 1:]
    assert (nxt_done | ~done[:, :-1]).all(), "a finished game came back to life"
    for b, t in zip(*np.nonzero(done[:, :-1])):
        before, after = at(st, b, t), at(st, b, t + 1)
        assert not after.rewards.any()
        assert_same(before.replace(rewards=after.rewards), after)
    # live states: a legal action exists, at most max_legal_actions of them; the step count
    # advances by one per action
    live = ~done
    legal_counts = st.legal_action_mask.sum(-1)[live]  # [N] or, simultaneous, [N, players]
    assert (legal_counts >= 1).all() and (legal_counts <= env.max_legal_actions).all()
    steps = np.diff(st.step_count, axis=1)
    assert (steps[live[:, :-1]] == 1).all() and (steps[done[:, :-1]] == 0).all()
    # truncated means "cut by the step cap", nothing else
    assert not (st.terminated & st.truncated).any()
    cap = env.max_episode_steps
    if cap is None:
        assert not st.truncated.any() or env.id.startswith("pgx/")
    else:
        assert (st.step_count[st.truncated] >= cap).all()
        assert (st.step_count[live] < cap).all()
    return done


def test_random_playouts_keep_the_rules(case):
    states, actions, _ = case.playout(jax.random.PRNGKey(0))
    done = check_playout(case, states)
    if case.env.max_episode_steps is not None and case.env.max_episode_steps < STEPS:
        assert done[:, -1].all(), "every capped game should be over by now"


def test_determinism_and_vmap_equals_one_game(case):
    """The same key gives the same games; a vmapped step is the unbatched jitted step."""
    states, actions, keys = case.playout(jax.random.PRNGKey(1))
    again = case.playout(jax.random.PRNGKey(1))
    assert_same((states, actions, keys), again)
    other = case.playout(jax.random.PRNGKey(2))
    assert not np.array_equal(np.asarray(actions), np.asarray(other[1])) or \
        not np.array_equal(np.asarray(states.step_count), np.asarray(other[0].step_count))
    for t in (0, 5, STEPS - 1):
        s, a, k = at(states, 1, t), at(actions, 1, t), at(keys, 1, t)
        assert_same(_step(case, s, a, k), at(states, 1, t + 1))


def _illegal_action(env, state):
    """An action the mask forbids (an out-of-range index where every action is legal)."""
    mask = np.asarray(state.legal_action_mask)
    if env.is_simultaneous:
        bad = np.zeros(env.num_players, np.int32)
        bad[0] = np.flatnonzero(~mask[0])[0] if (~mask[0]).any() else env.num_actions
        return bad
    return int(np.flatnonzero(~mask)[0]) if (~mask).any() else env.num_actions


def test_illegal_action_ends_the_game_where_it_stood(case):
    env = case.env
    states, _, _ = case.playout(jax.random.PRNGKey(3))
    s = at(states, 0, 3)
    assert not bool(s.terminated | s.truncated)
    bad = _illegal_action(env, s)
    with pytest.raises(ValueError):
        env.check_action(s, bad)
    out = _step(case, s, bad, jax.random.PRNGKey(0))
    assert bool(out.terminated) and not bool(out.truncated)
    mover = 0 if env.is_simultaneous else int(s.current_player)
    expect = np.ones(env.num_players, np.float32)
    expect[mover] = -1.0
    np.testing.assert_array_equal(np.asarray(out.rewards), expect)
    assert np.asarray(out.legal_action_mask).all()
    assert int(out.step_count) == int(s.step_count) + 1
    assert int(out.current_player) == int(s.current_player)
    legal = random_legal_action(env, s, jax.random.PRNGKey(0))
    env.check_action(s, legal)
    with pytest.raises(ValueError, match="game is over"):
        env.check_action(out, legal)  # at the Python boundary a finished game takes nothing
    # the position is unchanged: every game field but the protocol's is as it was
    game_fields = [f for f in type(s).__dataclass_fields__ if f not in envs.State.__dataclass_fields__]
    for f in game_fields:
        assert_same(getattr(out, f), getattr(s, f))
    # and the finished game absorbs whatever comes next
    again = _step(case, out, _illegal_action(env, s), jax.random.PRNGKey(1))
    assert not np.asarray(again.rewards).any()
    assert_same(again.replace(rewards=out.rewards), out)


def test_observe_honours_the_player(case):
    env = case.env
    states, _, _ = case.playout(jax.random.PRNGKey(4))
    differs = False
    for t in range(0, STEPS, 4):
        s = at(states, 0, t)
        mine = case.observe(s, s.current_player)
        # equal up to float rounding (XLA may fuse a division differently in another program)
        np.testing.assert_allclose(np.asarray(mine), np.asarray(s.observation), rtol=1e-6)
        np.testing.assert_allclose(np.asarray(mine), np.asarray(env.observe(s)), rtol=1e-6)
        views = [np.asarray(case.observe(s, jnp.int32(p))) for p in range(env.num_players)]
        assert all(v.shape == views[0].shape for v in views)
        differs |= any(not np.array_equal(views[0], v) for v in views[1:])
    assert differs, "observe(state, player) gave every player the same view in every state"


def test_api_shape_round_trips(case):
    """action_to_string / string_to_action round-trip on every legal action, bad text is a
    ValueError, and the pictures exist (text, SVG, Jupyter's _repr_html_)."""
    env = case.env
    states, _, _ = case.playout(jax.random.PRNGKey(5))
    for t in (0, 1, 7):
        s = at(states, 0, t)
        if bool(s.terminated | s.truncated):
            continue
        mask = np.asarray(s.legal_action_mask)
        if env.is_simultaneous:
            joint = [np.array([a, b], np.int32) for a in np.flatnonzero(mask[0])
                     for b in np.flatnonzero(mask[1])]
            for a in joint:
                text = env.action_to_string(s, a)
                np.testing.assert_array_equal(env.string_to_action(s, text), a)
        else:
            for a in np.flatnonzero(mask):
                text = env.action_to_string(s, int(a))
                assert isinstance(text, str) and text
                assert env.string_to_action(s, text) == a, (text, a)
        for bad in ("", "no such move", "999 999 999"):
            with pytest.raises(ValueError):
                env.string_to_action(s, bad)
        with pytest.raises(ValueError):
            env.action_to_string(s, np.full(7, 0) if not env.is_simultaneous else 0)
        assert isinstance(env.render_text(s), str) and env.render_text(s)
        svg = env.render_svg(s)
        assert svg.lstrip().startswith("<svg") and svg.rstrip().endswith("</svg>")
        assert ElementTree.fromstring(svg).tag.endswith("svg")  # well-formed XML
        assert s._repr_html_() == svg
    batch_html = at(states, slice(None), 0)._repr_html_()
    assert f"a batch of shape ({BATCH},)" in batch_html and "<svg" in batch_html
    with pytest.raises(ValueError, match="unbatched"):
        env.render_svg(at(states, slice(None), 0))


def test_max_episode_steps_and_old_names():
    assert envs.make("chess", max_plies=30).max_episode_steps == 30
    assert envs.make("chess", max_episode_steps=30).max_plies == 30
    assert envs.make("pyrat", max_turns=30).max_episode_steps == 30
    assert envs.make("pacosako", max_steps=30).max_episode_steps == 30
    assert envs.make("pacosako").max_episode_steps is None
    assert envs.make("backgammon").max_episode_steps is None
    for name, bad in (("pyrat", {"max_episode_steps": 0}), ("chess", {"max_episode_steps": 0}),
                      ("pacosako", {"max_episode_steps": -3}),
                      ("pyrat", {"max_turns": 5, "max_episode_steps": 5})):
        with pytest.raises(ValueError, match="max_episode_steps"):
            envs.make(name, **bad)


def test_chess_max_legal_actions_is_the_known_maximum():
    """218 legal moves: Petrovic's 1964 position, counted by python-chess and by our mask."""
    chess = pytest.importorskip("chess")
    fen = "R6R/3Q4/1Q4Q1/4Q3/2Q4Q/Q4Q2/pp1Q4/kBNN1KB1 w - - 0 1"
    assert chess.Board(fen).legal_moves.count() == 218
    env = envs.make("chess")
    assert int(np.asarray(env.from_fen(fen).legal_action_mask).sum()) == env.max_legal_actions


def test_graph_search_protocol():
    require_protocol(envs.make("pyrat"), GraphSearchEnv, "MCGS")
    assert isinstance(envs.make("pyrat"), GraphSearchEnv)
    with pytest.raises(ValueError, match="MCGS needs effective_outcomes, state_key"):
        require_protocol(envs.make("pgx/tic_tac_toe"), GraphSearchEnv, "MCGS")


# --------------------------------------------------------------------------- chance API
@pytest.fixture(scope="module")
def chance_case():
    case = get_case("backgammon")
    env = case.env
    case.step_det = jax.jit(env.step_deterministic)
    case.step_chance = jax.jit(env.step_chance)
    case.probs = jax.jit(env.chance_outcome_probs)
    return case


def test_chance_api_in_the_core(chance_case):
    """step_deterministic keeps the protocol's rules (written once in envs.core): an illegal
    action ends the game where it stood, a finished state absorbs; the chance steps are no-ops
    on decision and finished states; step = step_deterministic + a sampled step_chance."""
    c, env = chance_case, chance_case.env
    assert env.num_chance_outcomes == 21
    states, actions, keys = c.playout(jax.random.PRNGKey(6))
    s = at(states, 0, 2)
    assert not bool(s.is_chance)
    bad = _illegal_action(env, s)
    out = c.step_det(s, bad)
    assert bool(out.terminated) and not bool(out.is_chance)
    assert int(out.current_player) == int(s.current_player)
    legal = random_legal_action(env, s, jax.random.PRNGKey(0))
    env.check_action(s, legal)
    with pytest.raises(ValueError, match="game is over"):
        env.check_action(out, legal)  # at the Python boundary a finished game takes nothing
    again = c.step_det(out, 0)
    assert not np.asarray(again.rewards).any()
    assert_same(again.replace(rewards=out.rewards), out)
    np.testing.assert_array_equal(np.asarray(c.probs(out)), np.eye(21, dtype=np.float32)[0])
    assert_same(c.step_chance(out, 5), out)  # no roll after the end
    assert_same(c.step_chance(s, 5), s)  # no roll at a decision state
    # along the playout: stepping = deciding, then (if the turn ended) rolling what step rolled
    for t in range(STEPS):
        s, a, k, nxt = at(states, 0, t), at(actions, 0, t), at(keys, 0, t), at(states, 0, t + 1)
        mid = c.step_det(s, a)
        if bool(mid.is_chance):
            p = np.asarray(c.probs(mid))
            assert abs(p.sum() - 1) < 1e-6 and p.shape == (21,)
            rolled = [o for o in range(21) if np.array_equal(
                np.asarray(c.step_chance(mid, o).dice), np.asarray(nxt.dice))]
            assert rolled, "step's roll is one of the chance outcomes"
            mid = c.step_chance(mid, rolled[0])
        assert_same(mid, nxt)


def test_deterministic_games_have_no_chance_api():
    env = envs.make("pgx/tic_tac_toe")
    s = env.init(jax.random.PRNGKey(0))
    for call in (lambda: env.step_deterministic(s, 0), lambda: env.step_chance(s, 0),
                 lambda: env.chance_outcome_probs(s)):
        with pytest.raises(ValueError, match="no chance events"):
            call()


# --------------------------------------------------------------------------- longer runs
@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_long_random_playouts_keep_the_rules(name):
    case = get_case(name, SLOW_STEPS, SLOW_BATCH)
    for seed in range(2):
        states, actions, _ = case.playout(jax.random.PRNGKey(100 + seed))
        check_playout(case, states)
