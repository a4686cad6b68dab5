"""The C++ CPU search against the library's JAX tree kernel on a real game, and self-play through
the threaded coordinator with a jitted JAX evaluator (issue 21, items 4-5; docs/cpu_search.md).

The evaluator is a fixed random linear network (deterministic) and root noise is off: with one leaf per step the two searches must visit the root's children exactly
alike."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from fixed_networks import fixed_linear_network
from turbozero.search.acting import TemperatureSchedule
from turbozero.search.cpu import NEW_GAME, NO_ACTION, CPUSearchConfig, SearchTree
from turbozero.search.cpu.selfplay import CPUSelfPlayConfig, cpu_self_play, make_pool_evaluator
from turbozero.training import replay

GAME = "pgx/tic_tac_toe"


@pytest.fixture(scope="module")
def game():
    env = envs.make(GAME)
    net = fixed_linear_network(env)

    step = jax.jit(env.transition)
    observe = jax.jit(env.observe)

    @jax.jit
    def evaluate_one(state):
        logits, value = net(None, observe(state)[None])
        legal = state.legal_action_mask
        prior = jax.nn.softmax(jnp.where(legal, logits[0], -jnp.inf))
        player = state.current_player.astype(jnp.int32)
        terminal = state.terminated | state.truncated
        return prior, jnp.where(terminal, state.rewards[player], value[0]), player, terminal, legal

    return env, net, step, observe, evaluate_one


def _cpp_root_visits(game, state, selection, sims):
    tree = _cpp_tree(game, game[4], state, selection, sims)
    root = tree.root()
    visits = np.zeros(game[0].num_actions, np.int64)
    visits[root.actions] = root.visits
    return visits


def _cpp_tree(game, evaluate_one, state, selection, sims, seat_betas=None):
    """The C++ tree after `sims` simulations from `state`; `evaluate_one(state)` gives (prior,
    value, player, terminal, legal[, wdl])."""
    env, _, step, _, _ = game
    slots = {}

    def evaluate(parent, action, dest):
        b, a_n = len(parent), env.num_actions
        acts = np.full((b, a_n), NO_ACTION, np.int32)
        pri = np.zeros((b, a_n), np.float32)
        val, ply, term = np.zeros(b, np.float32), np.zeros(b, np.int32), np.zeros(b, bool)
        wdl = np.zeros((b, 3), np.float32)
        with_wdl = False
        for i in range(b):
            s = state if parent[i] == NEW_GAME else step(slots[int(parent[i])],
                                                          jnp.int32(action[i]))
            slots[int(dest[i])] = s
            out = jax.device_get(evaluate_one(s))
            p, v, pl, t, legal = out[:5]
            if len(out) == 6:
                wdl[i], with_wdl = out[5], True
            la = np.zeros(0, int) if t else np.flatnonzero(legal)
            acts[i, :len(la)], pri[i, :len(la)] = la, p[la]
            val[i], ply[i], term[i] = v, pl, t
        return (acts, pri, val, ply, term) + ((wdl,) if with_wdl else ())

    tree = SearchTree(CPUSearchConfig(c_puct=selection.c_puct, fpu_base=selection.fpu_base,
                                      risk_beta=selection.risk_beta, dirichlet_fraction=0.0),
                      nodes_per_block=64, max_blocks=64, num_slots=1024)
    if seat_betas is not None:
        tree.set_seat_betas(*seat_betas)
    tree.start(evaluate)
    tree.simulate(evaluate, sims)
    return tree


def _compare_with_kernel(game, selections):
    kernel = pytest.importorskip("turbozero.search.kernel")
    from turbozero.search.roots import PUCTRoot

    env, net, step, observe, _ = game
    states = [env.init(jax.random.PRNGKey(0))]
    for a in (4, 0, 8):
        states.append(step(states[-1], jnp.int32(a)))
    batch = jax.tree_util.tree_map(lambda *x: jnp.stack(x),
                                   *[s.replace(observation=observe(s)) for s in states])
    for selection in selections:
        cfg = kernel.TreeSearchConfig(num_simulations=48, selection=selection,
                                      root=PUCTRoot(dirichlet_fraction=0.0))
        search = jax.jit(lambda b, k, cfg=cfg: kernel.search_env(env, net, None, b, k, cfg))
        want = np.asarray(search(batch, jax.random.PRNGKey(1)).stats["root_visits"])  # [4, A]
        for i, s in enumerate(states):
            got = _cpp_root_visits(game, s, selection, 48)
            np.testing.assert_array_equal(got, want[i], err_msg=f"{selection} at ply {i}")


def test_visits_equal_the_jax_tree_kernel(game):
    from turbozero.search.selection import SpecPUCT

    # one compile of the kernel (~20 s here): the non-default exploration and FPU
    _compare_with_kernel(game, [SpecPUCT(c_puct=1.0, fpu_base=0.3)])


@pytest.mark.slow
def test_visits_equal_the_jax_tree_kernel_default_and_risk(game):
    from turbozero.search.selection import SpecPUCT

    _compare_with_kernel(game, [SpecPUCT(), SpecPUCT(c_puct=1.2, risk_beta=1.0),
                                SpecPUCT(c_puct=1.2, fpu_base=0.1, risk_beta=-1.5)])


def test_per_seat_risk_equals_the_jax_tree_kernel(game):
    """Per-game asymmetric risk: each node selects with its mover's beta, in C++ as in the
    kernel given `risk_beta[B, P]` (a risk-seeking X, a risk-averse O)."""
    from turbozero.search.kernel import TreeSearchConfig, search_env
    from turbozero.search.roots import PUCTRoot
    from turbozero.search.selection import SpecPUCT

    env, net, step, observe, evaluate_one = game
    states = [env.init(jax.random.PRNGKey(0))]
    for a in (4, 0, 8):
        states.append(step(states[-1], jnp.int32(a)))
    batch = jax.tree_util.tree_map(lambda *x: jnp.stack(x),
                                   *[s.replace(observation=observe(s)) for s in states])
    selection = SpecPUCT(c_puct=1.2, fpu_base=0.1)
    betas = (1.5, -1.0)  # seats 0 and 1
    cfg = TreeSearchConfig(num_simulations=48, selection=selection,
                           root=PUCTRoot(dirichlet_fraction=0.0))
    risk = jnp.tile(jnp.asarray([betas], jnp.float32), (len(states), 1))
    want = np.asarray(search_env(env, net, None, batch, jax.random.PRNGKey(1), cfg,
                                 risk_beta=risk).stats["root_visits"])
    plain = np.asarray(
        search_env(env, net, None, batch, jax.random.PRNGKey(1), cfg).stats["root_visits"])
    assert not np.array_equal(want, plain)  # the betas change the search
    for i, s in enumerate(states):
        tree = _cpp_tree(game, evaluate_one, s, selection, 48, seat_betas=betas)
        root = tree.root()
        got = np.zeros(env.num_actions, np.int64)
        got[root.actions] = root.visits
        np.testing.assert_array_equal(got, want[i], err_msg=f"ply {i}")
    with pytest.raises(ValueError, match="finite"):
        tree.set_seat_betas(np.nan, 0.0)


@pytest.fixture(scope="module")
def wdl_net(game):
    """The fixed network with a WDL head instead of a scalar value: [win, draw, loss] logits
    that are another fixed linear function of the board."""
    env, net, *_ = game
    d = int(np.prod(env.init(jax.random.PRNGKey(0)).observation.shape))
    u = jnp.asarray(np.random.default_rng(1).normal(size=(d, 3)) * 0.7, jnp.float32)

    def apply(params, obs):
        logits, _ = net(params, obs)
        return logits, obs.reshape(obs.shape[0], -1).astype(jnp.float32) @ u

    return apply


def test_root_wdl_and_soft_value_equal_the_jax_tree_kernel(game, wdl_net):
    """With a WDL head the C++ tree averages the [win, draw, loss] of every evaluation backed up
    through the root (terminal states: their outcome), for the root's mover, and its LogSumExp
    soft value at beta is the kernel's `risk_value`: both equal the JAX kernel's on the same
    positions (alphazero-chess.md §5.8, §5.10)."""
    from turbozero.networks.value_formats import WDLValue
    from turbozero.search.kernel import TreeSearchConfig, search_env
    from turbozero.search.api import NetworkEvaluator
    from turbozero.search.roots import PUCTRoot
    from turbozero.search.selection import SpecPUCT

    env, _, step, observe, _ = game

    @jax.jit
    def evaluate_one(state):
        logits, wdl_logits = wdl_net(None, observe(state)[None])
        legal = state.legal_action_mask
        prior = jax.nn.softmax(jnp.where(legal, logits[0], -jnp.inf))
        wdl = jax.nn.softmax(wdl_logits[0])
        player = state.current_player.astype(jnp.int32)
        terminal = state.terminated | state.truncated
        r = state.rewards[player]
        outcome = jnp.stack([r > 0, r == 0, r < 0]).astype(jnp.float32)
        return (prior, jnp.where(terminal, r, wdl[0] - wdl[2]), player, terminal, legal,
                jnp.where(terminal, outcome, wdl))

    selection = SpecPUCT(c_puct=1.2, fpu_base=0.2, risk_beta=0.5)
    states = [env.init(jax.random.PRNGKey(0))]
    for a in (4, 0, 8, 2):
        states.append(step(states[-1], jnp.int32(a)))
    batch = jax.tree_util.tree_map(lambda *x: jnp.stack(x),
                                   *[s.replace(observation=observe(s)) for s in states])
    cfg = TreeSearchConfig(num_simulations=40, selection=selection,
                           root=PUCTRoot(dirichlet_fraction=0.0))
    want = jax.device_get(search_env(env, NetworkEvaluator(wdl_net, WDLValue()), None, batch,
                                     jax.random.PRNGKey(1), cfg))
    for i, s in enumerate(states):
        tree = _cpp_tree(game, evaluate_one, s, selection, 40)
        root = tree.root()
        visits = np.zeros(env.num_actions, np.int64)
        visits[root.actions] = root.visits
        np.testing.assert_array_equal(visits, want.stats["root_visits"][i], err_msg=f"ply {i}")
        np.testing.assert_allclose(root.wdl, want.root_wdl[i], atol=1e-5, err_msg=f"ply {i}")
        # the C++ sums are fixed point (1e-4 per visit)
        assert tree.soft_value(0.5) == pytest.approx(float(want.stats["risk_value"][i]), abs=2e-3)
        assert tree.soft_value(0.0) == 0.0
    assert np.abs(want.stats["risk_value"]).max() > 0.05  # a real value was compared, not zeros


@pytest.fixture(scope="module")
def pool_evaluator(game):
    env, net, *_ = game
    return make_pool_evaluator(env, net, jax.random.PRNGKey(3))


# slots_per_game=30 < kept subtree + 24 simulations: moves start afresh from the child's state
@pytest.mark.parametrize("workers,slots", [(1, None), (2, 30)], ids=["reuse", "no-reuse"])
def test_self_play_games_replay_to_their_recorded_outcomes(game, pool_evaluator, workers, slots):
    env, net, step, observe, _ = game
    cfg = CPUSelfPlayConfig(search=CPUSearchConfig(), num_workers=workers, num_games=4,
                            num_simulations=24, leaves_per_step=2,
                            slots_per_game=slots, batch_tiers=(4, 8), seed=workers)
    out = cpu_self_play(env, net, None, cfg, jax.random.PRNGKey(3),
                        pool_evaluator=pool_evaluator, acting=TemperatureSchedule(moves=4))
    assert out.terminated.all()  # tic-tac-toe ends within 9 moves
    assert out.stats["moves"] == len(out.action)
    assert out.stats["simulations"] == 24 * len(out.action)
    np.testing.assert_allclose(out.policy.sum(-1), 1.0, rtol=1e-6)
    # replay every game with the env: the played actions are legal, the recorded observation is
    # the env's at that root, and each move's value is the final reward of its player
    for g in range(4):
        rows = np.flatnonzero(out.game == g)
        state = env.init_state(jax.random.fold_in(jax.random.PRNGKey(3), g))
        for r in rows:
            assert bool(state.legal_action_mask[out.action[r]])
            assert out.policy[r][~np.asarray(state.legal_action_mask)].sum() == 0
            np.testing.assert_array_equal(out.observation[r], np.asarray(observe(state)))
            assert out.player[r] == int(state.current_player)
            state = step(state, jnp.int32(out.action[r]))
        assert bool(state.terminated)
        for r in rows:
            assert out.value[r] == pytest.approx(float(state.rewards[out.player[r]]))


def test_self_play_bad_settings_and_evaluator_errors(game, pool_evaluator):
    env, net, *_ = game
    with pytest.raises(ValueError, match="num_workers"):
        CPUSelfPlayConfig(num_workers=0)
    with pytest.raises(ValueError, match="batch_tiers"):
        CPUSelfPlayConfig(batch_tiers=(8, 4))

    def nan_net(params, obs):
        logits, value = net(params, obs)
        return logits, value * jnp.nan

    cfg = CPUSelfPlayConfig(num_games=2, num_simulations=8, batch_tiers=(4,), timeout_s=30)
    with pytest.raises(ValueError, match=r"seat_betas must be \[num_games=2, 2\]"):
        cpu_self_play(env, net, None, cfg, jax.random.PRNGKey(0), pool_evaluator,
                      seat_betas=np.zeros((3, 2)))
    with pytest.raises(ValueError, match="not finite"):
        cpu_self_play(env, nan_net, None, cfg, jax.random.PRNGKey(0))


def test_self_play_records_root_wdl_and_soft_value_into_the_replay(game, wdl_net):
    """Self-play with a WDL head: every move records the root's WDL average (sums to 1; with a
    fresh tree per move, W - L is the searched root value of this game that pays at the end)
    and the LogSumExp soft value at the search's beta, and `write_games` puts both into the
    replay's search record next to the move."""
    from turbozero.networks.value_formats import WDLValue
    from turbozero.search.kernel import TreeSearchConfig
    from turbozero.search.api import NetworkEvaluator
    from turbozero.training.algorithms import AlphaZeroAlgorithm
    from turbozero.training.cpu_alphazero import write_games

    env = game[0]
    evaluator = NetworkEvaluator(wdl_net, WDLValue())
    # slots_per_game 26 = 24 simulations + the root + 1: no kept subtree fits, so every move
    # starts a fresh tree from the child's state (with reuse the root value also averages the
    # kept subtree's earlier visits, the WDL only this move's evaluations: docs/cpu_search.md)
    cfg = CPUSelfPlayConfig(search=CPUSearchConfig(), num_workers=2, num_games=4,
                            num_simulations=24, slots_per_game=26,
                            batch_tiers=(4, 8), seed=5)
    key = jax.random.PRNGKey(3)
    # per-seat risk: seat 0 at beta 0.5, seat 1 at 0 (its soft value is then 0)
    out = cpu_self_play(env, evaluator, None, cfg, key,
                        pool_evaluator=make_pool_evaluator(env, evaluator, key),
                        seat_betas=np.tile([[0.5, 0.0]], (4, 1)),
                        acting=TemperatureSchedule(moves=4))
    np.testing.assert_allclose(out.root_wdl.sum(-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(out.root_wdl[:, 0] - out.root_wdl[:, 2], out.root_value,
                               atol=2e-3)
    # LogSumExp lies between the best child's Q and that + log(children) / beta
    risky = out.player == 0
    assert np.all(np.isfinite(out.soft_value)) and np.all(out.soft_value[risky] != 0)
    assert np.all(out.soft_value <= 1.0 + np.log(9) / 0.5 + 1e-4)
    np.testing.assert_array_equal(out.soft_value[~risky], 0.0)

    algo = AlphaZeroAlgorithm(env, wdl_net, WDLValue(), TreeSearchConfig(num_simulations=2))
    states = jax.vmap(env.init)(jax.random.split(key, 4))
    assert set(algo.init_replay(4, 16, states).search_record) == {"root_wdl", "soft_value"}
    # AlphaZero's replay with the trajectory fields too (MuZero's), to check everything the
    # CPU path hands the one writer
    buffer = replay.init_buffer(4, 16, states.observation[0], (9,), 2,
                                dict(algo.replay_fields, **replay.trajectory_fields(2)))
    buffer, _ = write_games(buffer, out, env.num_players)
    rec = jax.device_get(buffer.search_record)
    for g in range(4):  # game g goes into row g, its moves in order from column 0
        rows = np.flatnonzero(out.game == g)
        np.testing.assert_array_equal(rec["root_wdl"][g, :len(rows)], out.root_wdl[rows])
        np.testing.assert_array_equal(rec["soft_value"][g, :len(rows)], out.soft_value[rows])
        seat_values = jax.device_get(buffer.search_values)[g, :len(rows)]
        mover = out.player[rows]
        np.testing.assert_allclose(seat_values[np.arange(len(rows)), mover], out.root_value[rows])
        np.testing.assert_array_equal(np.asarray(buffer.action)[g, :len(rows)], out.action[rows])
        np.testing.assert_array_equal(np.asarray(buffer.written_at)[g, :len(rows)],
                                      np.arange(len(rows)))


def test_a_stalled_root_wait_is_retried_and_plays_the_same_games(game, pool_evaluator):
    """alphazero-chess.md §6.6, root evaluation with retry: the evaluating thread sleeps past
    `root_wait_s` once, on the batch of every game's first state. The worker flushes the late
    results and submits its requests again instead of raising, and the games are the ones a
    run without the stall plays (1 worker: the same search, visit for visit)."""
    import time

    env, net, *_ = game
    cfg = CPUSelfPlayConfig(search=CPUSearchConfig(), num_workers=1, num_games=4,
                            num_simulations=16, batch_tiers=(4, 8),
                            seed=11, timeout_s=60, root_wait_s=0.2, root_eval_retries=3)
    key = jax.random.PRNGKey(3)
    two = TemperatureSchedule(moves=2)
    want = cpu_self_play(env, net, None, cfg, key, pool_evaluator=pool_evaluator, acting=two)
    stalls = []

    def stalled(pool, params, parent, action, dest):
        out = pool_evaluator(pool, params, parent, action, dest)
        if not stalls:
            jax.block_until_ready(out)
            time.sleep(0.5)
            stalls.append(len(parent))
        return out

    got = cpu_self_play(env, net, None, cfg, key, pool_evaluator=stalled, acting=two)
    assert stalls
    assert got.stats["root_retries"] >= 1
    np.testing.assert_array_equal(got.game, want.game)
    np.testing.assert_array_equal(got.action, want.action)
    np.testing.assert_array_equal(got.policy, want.policy)
    np.testing.assert_array_equal(got.root_value, want.root_value)
    # with no retry left the stalled wait raises, as it did before (after timeout_s)
    with pytest.raises(TimeoutError, match="within the timeout"):
        stalls.clear()
        cpu_self_play(env, net, None, dataclasses.replace(cfg, timeout_s=0.2,
                                                          root_eval_retries=0),
                      key, pool_evaluator=stalled, acting=two)


def test_overlapping_groups_play_the_games_of_one_worker(game, pool_evaluator):
    """overlap=True (docs/cpu_search.md, "Overlapping groups of games"): each batch holds one
    worker's games and the other worker's batch is dispatched before the first one's results
    are fetched; the search of each game is unchanged, so 2 overlapped workers play the games
    of 1 worker without overlap, visit for visit (a game's seed does not depend on its
    worker)."""
    env, net, *_ = game
    cfg = CPUSelfPlayConfig(search=CPUSearchConfig(), num_workers=1, num_games=4,
                            num_simulations=24, leaves_per_step=2,
                            batch_tiers=(4, 8), seed=5)
    key = jax.random.PRNGKey(3)
    four = TemperatureSchedule(moves=4)
    want = cpu_self_play(env, net, None, cfg, key, pool_evaluator=pool_evaluator, acting=four)
    got = cpu_self_play(env, net, None, dataclasses.replace(cfg, num_workers=2, overlap=True),
                        key, pool_evaluator=pool_evaluator, acting=four)
    assert got.stats["batches"] > want.stats["batches"]  # one worker's games per batch
    for field in ("game", "action", "policy", "root_value", "value"):
        np.testing.assert_array_equal(getattr(got, field), getattr(want, field))


@pytest.mark.parametrize("kwargs,field", [
    (dict(num_games=2.5), "num_games must be an integer >= 1"),
    (dict(num_simulations="8"), "num_simulations must be an integer"),
    (dict(num_workers=True), "num_workers must be an integer"),
    (dict(timeout_s=float("inf")), "timeout_s must be a finite number > 0"),
    (dict(root_wait_s=0.0), "root_wait_s must be a finite number > 0"),
    (dict(root_eval_retries=-1), "root_eval_retries must be an integer >= 0"),
    (dict(batch_tiers=(4, 8.5)), "batch_tiers entry must be an integer"),
    (dict(slots_per_game=2**40), "slots_per_game must be an integer >= 2 and <= 2147483647"),
    (dict(overlap=1), "overlap must be a bool"),
])
def test_self_play_config_fields_are_checked_in_one_line(kwargs, field):
    # num_games=2.5 was a multi-line TypeError from the binding, at the first iteration
    with pytest.raises(ValueError, match=f"^{field}") as err:
        CPUSelfPlayConfig(**kwargs)
    assert "\n" not in str(err.value)
