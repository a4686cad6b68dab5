"""The C++ CPU search against the library's JAX tree kernel on a real game, and self-play through
the threaded coordinator with a jitted JAX evaluator (issue 21, items 4-5; docs/cpu_search.md).

The evaluator is a fixed random linear network (deterministic), root noise is off and the
temperature 0: with one leaf per step the two searches must visit the root's children exactly
alike."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from turbozero.search.cpu import NEW_GAME, NO_ACTION, CPUSearchConfig, SearchTree
from turbozero.search.cpu.selfplay import CPUSelfPlayConfig, cpu_self_play, make_pool_evaluator

GAME = "pgx/tic_tac_toe"


@pytest.fixture(scope="module")
def game():
    env = envs.make(GAME)
    rng = np.random.default_rng(0)
    d = int(np.prod(env.init(jax.random.PRNGKey(0)).observation.shape))
    w = jnp.asarray(rng.normal(size=(d, env.num_actions)), jnp.float32)
    v = jnp.asarray(rng.normal(size=(d,)) * 0.5, jnp.float32)

    def net(params, obs):
        del params
        f = obs.reshape(obs.shape[0], -1).astype(jnp.float32)
        return f @ w, jnp.tanh(f @ v)

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
    env, _, step, _, evaluate_one = game
    slots = {}

    def evaluate(parent, action, dest):
        b, a_n = len(parent), env.num_actions
        acts = np.full((b, a_n), NO_ACTION, np.int32)
        pri = np.zeros((b, a_n), np.float32)
        val, ply, term = np.zeros(b, np.float32), np.zeros(b, np.int32), np.zeros(b, bool)
        for i in range(b):
            s = state if parent[i] == NEW_GAME else step(slots[int(parent[i])],
                                                          jnp.int32(action[i]))
            slots[int(dest[i])] = s
            p, v, pl, t, legal = jax.device_get(evaluate_one(s))
            la = np.zeros(0, int) if t else np.flatnonzero(legal)
            acts[i, :len(la)], pri[i, :len(la)] = la, p[la]
            val[i], ply[i], term[i] = v, pl, t
        return acts, pri, val, ply, term

    tree = SearchTree(CPUSearchConfig(c_puct=selection.c_puct, fpu_base=selection.fpu_base,
                                      risk_beta=selection.risk_beta, dirichlet_fraction=0.0),
                      nodes_per_block=64, max_blocks=64, num_slots=1024)
    tree.start(evaluate)
    tree.simulate(evaluate, sims)
    root = tree.root()
    visits = np.zeros(env.num_actions, np.int64)
    visits[root.actions] = root.visits
    return visits


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
                                      root=PUCTRoot(dirichlet_fraction=0.0), temperature=0.0)
        search = jax.jit(lambda b, k, cfg=cfg: kernel.search_env(env, net, None, b, k, cfg))
        want = np.asarray(search(batch, jax.random.PRNGKey(1)).root_visits)  # [4, A]
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


@pytest.fixture(scope="module")
def pool_evaluator(game):
    env, net, *_ = game
    return make_pool_evaluator(env, net, jax.random.PRNGKey(3))


# slots_per_game=30 < kept subtree + 24 simulations: moves start afresh from the child's state
@pytest.mark.parametrize("workers,slots", [(1, None), (2, 30)], ids=["reuse", "no-reuse"])
def test_self_play_games_replay_to_their_recorded_outcomes(game, pool_evaluator, workers, slots):
    env, net, step, observe, _ = game
    cfg = CPUSelfPlayConfig(search=CPUSearchConfig(), num_workers=workers, num_games=4,
                            num_simulations=24, leaves_per_step=2, temperature_moves=4,
                            slots_per_game=slots, batch_tiers=(4, 8), seed=workers)
    out = cpu_self_play(env, net, None, cfg, jax.random.PRNGKey(3),
                        pool_evaluator=pool_evaluator)
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
    with pytest.raises(ValueError, match="not finite"):
        cpu_self_play(env, nan_net, None, cfg, jax.random.PRNGKey(0))
