"""Networks: shapes of every value head, and a 4-way head that learns synthetic outcome rates."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from equity import reward_to_value_targets
from turbozero.networks import FourWayValue, MLPNet, ResNet, ScalarValue, WDLValue
from turbozero.training.loss_fns import four_way_value_loss


@pytest.mark.parametrize("fmt", [ScalarValue(), WDLValue(), FourWayValue()])
def test_mlp_value_head_shapes(fmt):
    size = fmt.out_size
    net = MLPNet(num_actions=7, value_format=fmt, hidden_sizes=(8,))
    x = jnp.ones((3, 5))
    variables = net.init(jax.random.PRNGKey(0), x)
    logits, value = net.apply(variables, x)
    assert logits.shape == (3, 7)
    assert value.shape == ((3,) if size == 1 else (3, size))
    v = fmt.to_scalar(value)
    assert v.shape == (3,)
    bound = 3.0 if size == 4 else 1.0
    assert np.all(np.abs(np.asarray(v)) <= bound + 1e-6)


def test_resnet_shapes_and_batch_stats():
    net = ResNet(num_actions=11, value_format=WDLValue(), num_filters=8, num_blocks=1, value_hidden=16)
    x = jnp.ones((2, 8, 8, 5))
    variables = net.init(jax.random.PRNGKey(0), x)
    assert "batch_stats" in variables
    (logits, value), updates = net.apply(variables, x, train=True, mutable=["batch_stats"])
    assert logits.shape == (2, 11) and value.shape == (2, 3)
    assert "batch_stats" in updates
    with pytest.raises(ValueError, match="batch, height, width, channels"):
        net.apply(variables, jnp.ones((2, 64)))


def test_an_integer_value_kind_is_refused():
    net = MLPNet(num_actions=3, value_format=2)
    with pytest.raises(ValueError, match="value_format must be a ValueFormat"):
        net.init(jax.random.PRNGKey(0), jnp.ones((1, 4)))


def test_four_way_head_learns_synthetic_outcome_rates():
    """Two kinds of positions with known outcome rates; the head must recover the conditionals."""
    # kind 0: P(win)=0.7, P(gammon|win)=0.3, P(gammon|loss)=0.1, P(bg|gammon)=0.2
    # kind 1: P(win)=0.3, P(gammon|win)=0.1, P(gammon|loss)=0.4, P(bg|gammon)=0.5
    truth = np.array([[0.7, 0.3, 0.1, 0.2], [0.3, 0.1, 0.4, 0.5]])
    rng = np.random.default_rng(0)
    n = 20000
    kind = rng.integers(0, 2, n)
    t = truth[kind]
    win = rng.random(n) < t[:, 0]
    gammon = np.where(win, rng.random(n) < t[:, 1], rng.random(n) < t[:, 2])
    bg = gammon & (rng.random(n) < t[:, 3])
    points = 1 + gammon + bg
    reward = np.where(win, points, -points).astype(np.float32)
    x = np.eye(2, dtype=np.float32)[kind]
    net = MLPNet(num_actions=2, value_format=FourWayValue(), hidden_sizes=(16,))
    params = net.init(jax.random.PRNGKey(0), jnp.asarray(x[:1]))
    tx = optax.adam(3e-2)
    opt = tx.init(params)

    def loss_fn(p, xb, rb):
        _, logits = net.apply(p, xb)
        targets, masks = reward_to_value_targets(rb)
        return four_way_value_loss(logits, targets, masks)

    @jax.jit
    def step(p, o, xb, rb):
        loss, g = jax.value_and_grad(loss_fn)(p, xb, rb)
        upd, o = tx.update(g, o)
        return optax.apply_updates(p, upd), o, loss

    losses = []
    for i in range(300):
        idx = rng.integers(0, n, 512)
        params, opt, loss = step(params, opt, jnp.asarray(x[idx]), jnp.asarray(reward[idx]))
        losses.append(float(loss))
    assert np.mean(losses[-20:]) < np.mean(losses[:5]) - 0.02
    _, logits = net.apply(params, jnp.eye(2))
    pred = np.asarray(jax.nn.sigmoid(logits))
    np.testing.assert_allclose(pred, truth, atol=0.05)


def test_two_player_net_is_one_player_net_seen_from_both_sides():
    """With opponent_view, the board as player 2 sees it gives player 2's outputs as player 1's
    (actions mapped back) and vice versa: both players share one set of weights."""
    import envs
    from envs.pyrat import ACTION_SWAP
    from turbozero.games import build_network, game_spec

    env = envs.make("pyrat", width=7, height=5, cheese_count=5, max_episode_steps=60)
    s = env.init(jax.random.PRNGKey(3))
    for a in ([1, 4], [0, 4], [1, 4], [0, 4]):  # player 1 walks, player 2 stays
        s = env.step(s, jnp.array(a))
    views = jnp.stack([env.observe(s, 0), env.observe(s, 1)])
    assert not np.array_equal(views[0], views[1])
    net = build_network(game_spec("pyrat"), env, {"num_filters": 8, "num_layers": 2, "hidden": 16})
    params = net.init(jax.random.PRNGKey(0), views[:1])
    assert "policy_1" not in params["params"] and "value_1" not in params["params"]
    params = jax.tree_util.tree_map(lambda p: p + 0.1, params)  # no dead units
    logits, values = (np.asarray(x) for x in net.apply(params, views))
    swap = list(ACTION_SWAP)
    np.testing.assert_allclose(logits[1, 0], logits[0, 1][swap], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(logits[1, 1], logits[0, 0][swap], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(values[1], values[0][::-1], rtol=1e-5, atol=1e-6)
    assert not np.allclose(values[0, 0], values[0, 1])  # the players' positions differ


def test_two_player_net_learns_greedy_pyrat_policy_on_unseen_mazes():
    """With its heads read at each rat's cell (gather_planes) the PyRat network learns the
    greedy baseline's moves from random positions and gets them right on mazes it never saw."""
    import optax

    import envs
    from turbozero.games import build_network, game_spec

    env = envs.make("pyrat", width=7, height=7, cheese_count=10, max_episode_steps=60)
    net = build_network(game_spec("pyrat"), env, {"num_filters": 16, "num_layers": 2, "hidden": 64})
    assert net.gather_planes == env.player_planes

    def positions(key):
        def body(s, k):
            return env.step(s, jax.random.randint(k, (2,), 0, 5)), s
        return jax.lax.scan(body, env.init(key), jax.random.split(key, 30))[1]

    def data(seed, n):
        ss = jax.vmap(positions)(jax.random.split(jax.random.PRNGKey(seed), n))
        ss = jax.tree_util.tree_map(lambda x: x.reshape((-1,) + x.shape[2:]), ss)
        return ss.observation, jax.vmap(env.greedy_actions)(ss), jax.vmap(shortest_moves)(ss)

    def shortest_moves(s):
        """bool[2, 5]: the moves that start a shortest path to the nearest cheese (ties all
        count; the greedy player breaks them by action index)."""
        dist = env.distance_to_cheese(s)
        x, y = s.positions[:, 0], s.positions[:, 1]
        cost = s.maze[y, x]
        nxt = jnp.stack([dist[jnp.clip(y + dy, 0, 6), jnp.clip(x + dx, 0, 6)]
                         for dx, dy in ((0, 1), (1, 0), (0, -1), (-1, 0))], 1)
        total = jnp.where(cost > 0, cost + nxt, 1 << 20)
        best = (total == total.min(1, keepdims=True)) & (s.mud_turns == 0)[:, None]
        return jnp.concatenate([best, jnp.zeros((2, 1), bool)], 1)

    obs, target, _ = jax.jit(data, static_argnums=1)(0, 512)
    test_obs, _, shortest = jax.jit(data, static_argnums=1)(1, 32)
    free = shortest.any(-1)  # not in mud, some cheese left
    params = net.init(jax.random.PRNGKey(1), obs[:1])
    tx = optax.adam(3e-3)

    # one jitted update per step from Python, as the Trainer does on CPU: the same 400 updates
    # in one lax.scan took 80-90 s here, 7x the per-step calls (docs/training.md, "How the
    # updates run")
    @jax.jit
    def step(p, opt, key, obs, target):
        i = jax.random.randint(key, (128,), 0, obs.shape[0])
        loss = lambda p: optax.softmax_cross_entropy_with_integer_labels(  # noqa: E731
            net.apply(p, obs[i])[0], target[i]).mean()
        u, opt = tx.update(jax.grad(loss)(p), opt)
        return optax.apply_updates(p, u), opt

    opt = tx.init(params)
    for key in jax.random.split(jax.random.PRNGKey(2), 400):
        params, opt = step(params, opt, key, obs, target)
    pred = jnp.argmax(net.apply(params, test_obs)[0], -1)
    on_path = jnp.take_along_axis(shortest, pred[..., None], -1)[..., 0]
    accuracy = float((on_path & free).sum() / free.sum())
    assert accuracy > 0.85, accuracy  # 0.90 measured; a move picked at random: about 0.3


def test_resnet_in_bfloat16_computes_close_to_float32_with_float32_parameters_and_outputs():
    """`compute_dtype="bfloat16"` (mixed precision): the same parameters give outputs within
    bfloat16's precision of the float32 network; parameters, outputs and gradients stay
    float32 and finite."""
    x = jax.random.normal(jax.random.PRNGKey(0), (8, 8, 8, 12))
    kw = dict(num_actions=50, value_format=WDLValue(), num_filters=16, num_blocks=2,
              value_hidden=16)
    f32, bf16 = ResNet(**kw), ResNet(**kw, compute_dtype="bfloat16")
    variables = f32.init(jax.random.PRNGKey(1), x)
    assert jax.tree_util.tree_structure(variables) == jax.tree_util.tree_structure(
        bf16.init(jax.random.PRNGKey(1), x))
    (p32, v32), (p16, v16) = f32.apply(variables, x), bf16.apply(variables, x)
    assert p16.dtype == jnp.float32 and v16.dtype == jnp.float32
    scale = float(jnp.abs(p32).max())
    # bfloat16 keeps 8 significant bits (~0.4%); a tower of 5 convolutions compounds it
    assert float(jnp.abs(p16 - p32).max()) < 0.03 * scale
    assert float(jnp.abs(v16 - v32).max()) < 0.03 * max(float(jnp.abs(v32).max()), 1.0)
    assert not np.allclose(np.asarray(p16), np.asarray(p32), rtol=0, atol=1e-7)  # really bf16

    def loss(params):
        (logits, value), _ = bf16.apply({**variables, "params": params}, x, train=True,
                                        mutable=["batch_stats"])
        return jnp.mean(logits ** 2) + jnp.mean(value ** 2)

    grads = jax.grad(loss)(variables["params"])
    for g in jax.tree_util.tree_leaves(grads):
        assert g.dtype == jnp.float32 and bool(jnp.all(jnp.isfinite(g)))
    with pytest.raises(ValueError, match="compute_dtype"):
        ResNet(**kw, compute_dtype="float16").init(jax.random.PRNGKey(1), x)
