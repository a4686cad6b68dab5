"""PyRat environment: generated mazes, rules on fixed mazes, agreement with the plain-Python
rules of the MCGS reference, outcomes, keys, maze files, bad input, greedy baseline."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from envs.pyrat.maze import load_maze, reachable
from envs.pyrat import (ACTION_SWAP, DOWN, LEFT, NUM_PLANES, PLAYER_PLANES, RIGHT, STAY, UP,
                        VIEW_CHANNELS, PyRat)

from mcgs_reference import MAZE_MUD, game_from_maze


def rotate(cost):
    return cost[::-1, ::-1][..., [2, 3, 0, 1]]


@pytest.fixture(scope="module")
def generated():
    out = {}
    for (w, h, c, kw) in [(21, 15, 41, {}), (7, 7, 10, {}), (6, 4, 6, {"mud_density": 0.5}),
                          (9, 5, 11, {"open_maze": True})]:
        env = PyRat(width=w, height=h, cheese_count=c, **kw)
        states = jax.jit(jax.vmap(env.init))(jax.random.split(jax.random.PRNGKey(w * h), 6))
        out[(w, h)] = (env, jax.tree_util.tree_map(np.asarray, states))
    return out


def test_generated_mazes_connected_symmetric_consistent(generated):
    for (w, h), (env, st) in generated.items():
        for i in range(st.maze.shape[0]):
            cost, cheese = st.maze[i], st.cheese[i]
            assert cost.shape == (h, w, 4)
            np.testing.assert_array_equal(cost, rotate(cost))  # 180-degree symmetry
            assert reachable(cost, (0, 0)).all()  # connected
            # passages agree from both sides; the board edge is closed
            np.testing.assert_array_equal(cost[:-1, :, UP], cost[1:, :, DOWN])
            np.testing.assert_array_equal(cost[:, :-1, RIGHT], cost[:, 1:, LEFT])
            assert (cost[-1, :, UP] == 0).all() and (cost[:, -1, RIGHT] == 0).all()
            assert cost.min() >= 0 and cost.max() <= env.mud_range
            assert cheese.sum() == env.cheese_count
            np.testing.assert_array_equal(cheese, cheese[::-1, ::-1])
            assert not cheese[0, 0] and not cheese[-1, -1]
            if env.cheese_count % 2:
                assert cheese[h // 2, w // 2]
            np.testing.assert_array_equal(st.positions[i], [[0, 0], [w - 1, h - 1]])
    # the default maze: about 0.7 of the inner passages are walls before the repair opens some
    env, st = generated[(21, 15)]
    inner = np.concatenate([st.maze[:, :, :-1, RIGHT].ravel(), st.maze[:, :-1, :, UP].ravel()])
    assert 0.35 < (inner == 0).mean() < 0.75
    assert (inner >= 2).any()  # some mud
    env, st = generated[(9, 5)]  # open maze: no inner wall
    assert (st.maze[:, :, :-1, RIGHT] > 0).all() and (st.maze[:, :-1, :, UP] > 0).all()
    assert generated[(21, 15)][0].max_episode_steps == 300


def test_components_agree_with_breadth_first_search():
    """The labelling used by the repair, on unrepaired random passages (many components)."""
    from envs.pyrat.maze import _passage_ends, components

    w, h = 13, 9
    a, b = _passage_ends(w, h)
    rng = np.random.default_rng(0)
    sets = [rng.random(a.shape[0]) < p_open for p_open in (0.2, 0.45, 0.7)]
    # the batched rule (one flat scatter per hooking for all games) labels each game alike
    batched = np.asarray(jax.jit(jax.vmap(lambda o: components(o, w, h)))(jnp.asarray(sets)))
    for is_open, from_batch in zip(sets, batched):
        label = np.asarray(jax.jit(components, static_argnums=(1, 2))(jnp.asarray(is_open), w, h))
        np.testing.assert_array_equal(from_batch, label)
        cost = np.zeros((h, w, 4), np.int32)
        for i in np.flatnonzero(is_open):
            (ya, xa), (yb, xb) = divmod(int(a[i]), w), divmod(int(b[i]), w)
            d = RIGHT if yb == ya else UP
            cost[ya, xa, d] = cost[yb, xb, (d + 2) % 4] = 1
        for cell in range(w * h):
            y, x = divmod(cell, w)
            same = reachable(cost, (x, y)).reshape(-1)
            assert label[cell] == np.flatnonzero(same).min()  # named by its smallest cell


def test_large_maze_generation_is_fast():
    """Measured (docs/pyrat.md): 101x101 took 10.6 s per maze with the wall-at-a-time repair,
    11 ms with the component repair; 201x201 did not finish in 6 minutes, now 75 ms."""
    import time

    env = PyRat(width=101, height=101)
    init = jax.jit(env.init)
    jax.block_until_ready(init(jax.random.PRNGKey(0)))  # compile
    t0 = time.perf_counter()
    state = jax.block_until_ready(init(jax.random.PRNGKey(1)))
    assert time.perf_counter() - t0 < 2.0
    cost = np.asarray(state.maze)
    assert reachable(cost, (0, 0)).all()
    np.testing.assert_array_equal(cost, rotate(cost))


def fixed(maze, **kw):
    env = PyRat(maze=maze, **kw)
    return env, env.init(jax.random.PRNGKey(0))


def play(env, s, *actions):
    step = jax.jit(env.step)
    for a in actions:
        s = step(s, jnp.array(a, jnp.int32))
    return s


def test_walls_board_edges_and_mud():
    env, s = fixed(MAZE_MUD)
    # (1,0)-(1,1) is a wall, (0,0)-(1,0) mud 2; player 2 at (4,4): (4,4)-(3,4) mud 2
    s1 = play(env, s, [LEFT, UP])  # both into the board edge: stay
    np.testing.assert_array_equal(s1.positions, [[0, 0], [4, 4]])
    s1 = play(env, s, [RIGHT, LEFT])  # both enter mud of weight 2: placed at once, 1 turn stuck
    np.testing.assert_array_equal(s1.positions, [[1, 0], [3, 4]])
    np.testing.assert_array_equal(s1.mud_turns, [1, 1])
    s2 = play(env, s1, [UP, DOWN])  # actions ignored while in mud (UP from (1,0) is a wall anyway)
    np.testing.assert_array_equal(s2.positions, [[1, 0], [3, 4]])
    np.testing.assert_array_equal(s2.mud_turns, [0, 0])
    s3 = play(env, s2, [RIGHT, STAY])  # (1,0)->(2,0)
    np.testing.assert_array_equal(s3.positions[0], [2, 0])
    # mud of weight 3 between (2,1) and (2,2): cheese at (2,2) collected only on arrival
    s4 = play(env, s3, [UP, STAY])  # (2,0)->(2,1)
    s5 = play(env, s4, [UP, STAY])  # enter mud 3
    np.testing.assert_array_equal(s5.positions[0], [2, 2])
    assert int(s5.mud_turns[0]) == 2 and float(s5.rewards[0]) == 0.0 and bool(s5.cheese[2, 2])
    s6 = play(env, s5, [DOWN, STAY])
    assert int(s6.mud_turns[0]) == 1 and float(s6.rewards[0]) == 0.0
    s7 = play(env, s6, [DOWN, STAY])
    assert int(s7.mud_turns[0]) == 0 and float(s7.rewards[0]) == 1.0 and not bool(s7.cheese[2, 2])
    np.testing.assert_array_equal(s7.positions[0], [2, 2])
    assert float(s7.scores[0]) == 1.0 and int(s7.step_count) == 7


def test_shared_cheese_and_end_rules():
    maze = {"width": 3, "height": 1, "walls": [], "mud": [], "cheese": [[1, 0], [2, 0]],
            "player1": [0, 0], "player2": [2, 0]}
    env, s = fixed(maze)
    # player 2 starts on a cheese: it is not collected at init (only after a turn, see below)
    s1 = play(env, s, [RIGHT, LEFT])  # both arrive on (1,0) together
    np.testing.assert_array_equal(s1.rewards, [0.5, 0.5])
    assert not bool(s1.terminated) and bool(s1.cheese[0, 2])
    s2 = play(env, s1, [RIGHT, LEFT])  # player 1 to (2,0): takes the last cheese, game over
    np.testing.assert_array_equal(s2.rewards, [1.0, 0.0])
    assert bool(s2.terminated)
    s3 = play(env, s2, [LEFT, LEFT])  # terminal absorbs
    np.testing.assert_array_equal(s3.rewards, [0.0, 0.0])
    np.testing.assert_array_equal(s3.positions, s2.positions)
    # a score above half of the starting cheese ends the game
    maze = {"width": 4, "height": 1, "cheese": [[1, 0], [2, 0], [3, 0]], "player1": [0, 0],
            "player2": [0, 0]}
    env, s = fixed(maze)
    s1 = play(env, s, [RIGHT, STAY], [RIGHT, STAY])
    assert float(s1.scores[0]) == 2.0 and bool(s1.terminated) and bool(s1.cheese[0, 3])
    # the turn limit cuts the game: truncated (the protocol's meaning), not terminated
    for env, s in (fixed(maze, max_episode_steps=3),):
        assert env.max_episode_steps == 3
        s1 = play(env, s, [STAY, STAY], [STAY, STAY])
        assert not bool(s1.terminated) and not bool(s1.truncated)
        s2 = play(env, s1, [STAY, STAY])
        assert bool(s2.truncated) and not bool(s2.terminated)
        assert np.asarray(s2.legal_action_mask).all()
        # the cap absorbs like an end: no reward after it
        s3 = play(env, s2, [RIGHT, LEFT])
        assert bool(s3.truncated) and not np.asarray(s3.rewards).any()


def test_random_play_agrees_with_plain_python_rules():
    env = PyRat(width=7, height=5, cheese_count=9, mud_density=0.4, max_episode_steps=60)
    keys = jax.random.split(jax.random.PRNGKey(7), 2)
    step = jax.jit(env.step)
    outcomes = jax.jit(env.effective_outcomes)
    rng = np.random.default_rng(0)
    for k in keys:
        s = env.init(k)
        game = game_from_maze(env.to_maze(s), env.max_episode_steps)
        while not game.is_over():
            n, outs, a2i = (np.asarray(x) for x in outcomes(s))
            for p in range(2):
                o, i = game.effective_outcomes(p)
                assert n[p] == len(o) and list(outs[p, : n[p]]) == o and list(a2i[p]) == i
            a = rng.integers(0, 5, size=2)
            _, rewards = game.make_move(int(a[0]), int(a[1]))
            s = step(s, jnp.asarray(a, jnp.int32))
            np.testing.assert_array_equal(s.rewards, rewards)
            np.testing.assert_array_equal(s.positions, game.pos)
            np.testing.assert_array_equal(s.mud_turns, game.mud)
            np.testing.assert_array_equal(s.scores, game.scores)
            ys, xs = np.nonzero(np.asarray(s.cheese))
            assert set(zip(xs.tolist(), ys.tolist())) == game.cheese
            assert bool(s.terminated | s.truncated) == game.is_over()
            # truncated only when the reference ended by the turn cap alone
            assert not bool(s.terminated & s.truncated)
            if bool(s.truncated):
                assert game.turn >= env.max_episode_steps and game.cheese
                assert max(game.scores) <= game.initial / 2


def test_state_key_transpositions():
    env, s = fixed(MAZE_MUD)
    key = jax.jit(env.state_key)
    # player 2 goes down-left or left-down... (4,4): LEFT is mud; use DOWN then LEFT vs ...
    a = play(env, s, [STAY, DOWN], [STAY, DOWN])
    b = play(env, s, [STAY, DOWN], [STAY, DOWN])
    np.testing.assert_array_equal(key(a), key(b))
    open_maze = {"width": 3, "height": 3, "cheese": [[2, 0]], "player1": [0, 0],
                 "player2": [2, 2]}
    env, s = fixed(open_maze)
    key = jax.jit(env.state_key)
    a = play(env, s, [UP, STAY], [RIGHT, STAY])
    b = play(env, s, [RIGHT, STAY], [UP, STAY])
    np.testing.assert_array_equal(a.positions, b.positions)
    np.testing.assert_array_equal(key(a), key(b))
    c = play(env, s, [UP, STAY], [STAY, STAY], [RIGHT, STAY])  # same cells, another turn
    assert not np.array_equal(key(a), key(c))
    assert key(a).dtype == jnp.uint32 and key(a).shape == (2,)
    d = play(env, s, [RIGHT, STAY], [RIGHT, STAY])  # takes the cheese: differs from the rest
    e = play(env, s, [RIGHT, STAY], [STAY, STAY])
    assert len({tuple(np.asarray(key(x))) for x in (a, c, d, e, s)}) == 5


def test_effective_outcomes_in_mud_and_walls():
    env, s = fixed(MAZE_MUD)
    n, outs, a2i = env.effective_outcomes(s)
    # player 1 at (0,0): UP open, RIGHT mud (a distinct outcome), DOWN/LEFT edges = stay
    np.testing.assert_array_equal(n, [3, 3])
    np.testing.assert_array_equal(outs[0, :3], [UP, RIGHT, STAY])
    np.testing.assert_array_equal(a2i[0], [0, 1, 2, 2, 2])
    s1 = play(env, s, [RIGHT, STAY])  # in mud: a single outcome
    n, outs, a2i = env.effective_outcomes(s1)
    assert int(n[0]) == 1 and int(outs[0, 0]) == STAY and (np.asarray(a2i[0]) == 0).all()


def test_observation_and_render(generated):
    env, st = generated[(7, 7)]
    s = jax.tree_util.tree_map(lambda x: x[0], st)
    o0 = np.asarray(env.observe(s, 0))
    assert o0.shape == (7, 7, NUM_PLANES) and o0.dtype == np.float32
    assert o0[0, 0, 9] == 1 and o0[6, 6, 10] == 1  # me / opponent planes
    assert PLAYER_PLANES == (9, 10)
    # nearness plane: 1 on cheese, 1 / (1 + mud-weighted turns) elsewhere
    dist = np.asarray(env.distance_to_cheese(s))
    np.testing.assert_allclose(o0[..., 16], 1.0 / (1.0 + dist), rtol=1e-6)
    assert (o0[..., 16][np.asarray(s.cheese)] == 1).all()
    # a symmetric start looks the same to both players (each sees itself bottom-left)
    np.testing.assert_allclose(np.asarray(env.observe(s, 1)), o0)
    s1 = env.step(s, jnp.array([STAY, STAY]))
    np.testing.assert_allclose(np.asarray(env.observe(s1, 1)), np.asarray(env.observe(s1, 0)))
    # off the symmetric start, player 2's view is player 1's turned round with channels swapped
    # (player 1 takes an open passage out of its corner while player 2 stays)
    first_open = int(np.flatnonzero(np.asarray(s.maze[0, 0]) > 0)[0])
    s2 = env.step(s, jnp.array([first_open, STAY]))
    o2 = np.asarray(env.observe(s2, 0))
    assert not np.array_equal(np.asarray(env.observe(s2, 1)), o2)
    np.testing.assert_array_equal(np.asarray(env.observe(s2, 1)),
                                  o2[::-1, ::-1][..., list(VIEW_CHANNELS)])
    assert env.opponent_view == (VIEW_CHANNELS, ACTION_SWAP)
    text = env.render_text(s)
    assert text.count("\n") == 2 * 7 + 1 and "1" in text and "2" in text and "c" in text
    assert env.observation_shape == (7, 7, NUM_PLANES) and NUM_PLANES == 17


def test_maze_file_round_trip(tmp_path, generated):
    env, st = generated[(7, 7)]
    s = jax.tree_util.tree_map(lambda x: x[2], st)
    path = tmp_path / "maze.json"
    env.to_maze(s).save(path)
    env2 = PyRat(maze=str(path))
    s2 = env2.init(jax.random.PRNGKey(5))
    np.testing.assert_array_equal(s2.maze, s.maze)
    np.testing.assert_array_equal(s2.cheese, s.cheese)
    np.testing.assert_array_equal(s2.positions, s.positions)
    data = json.loads(path.read_text())
    assert data["format"] == "turbozero-pyrat-maze/1" and data["width"] == 7
    assert envs.make("pyrat", maze=data).cheese_count == 10


@pytest.mark.parametrize("bad, match", [
    ("{not json", "malformed"),
    ({"width": 3, "height": 3, "cheese": [[1, 1]], "player1": [0, 0]}, "missing key"),
    ({"width": 3, "height": 3, "cheese": [[1, 1]], "player1": [0, 0], "player2": [2, 2],
      "walls": [[0, 0, 2, 0]]}, "not adjacent"),
    ({"width": 3, "height": 3, "cheese": [[3, 1]], "player1": [0, 0], "player2": [2, 2]},
     "outside"),
    ({"width": 3, "height": 3, "cheese": [[1, 1]], "player1": [0, 0], "player2": [2, 2],
      "walls": [[0, 2, 1, 2], [1, 2, 1, 1], [1, 1, 2, 1], [1, 0, 2, 0]]}, "not connected"),
    ({"width": 3, "height": 3, "cheese": [[1, 1]], "player1": [0, 0], "player2": [2, 2],
      "walls": [[0, 0, 1, 0], [0, 0, 0, 1]]}, "walled in"),
    ({"width": 3, "height": 3, "cheese": [[1, 1]], "player1": [0, 0], "player2": [5, 5]},
     "outside"),
    ({"width": 3, "height": 3, "cheese": [[1, 1]], "player1": [0, 0], "player2": [2, 2],
      "walls": [[0, 0, 1, 0]], "mud": [[0, 0, 1, 0, 2]]}, "on a wall"),
    ({"width": 3, "height": 3, "cheese": [], "player1": [0, 0], "player2": [2, 2]},
     "at least one cheese"),
    ({"width": 3, "height": 3, "cheese": [[1, 1]], "player1": [0, 0], "player2": [2, 2],
      "mud": [[0, 0, 1, 0, 1]]}, "mud weight"),
    ({"width": "3", "height": 3, "cheese": [[1, 1]], "player1": [0, 0], "player2": [2, 2]},
     "integer"),
    ({"width": 3, "height": 3, "cheese": [[1, 1]], "player1": [0, 0], "player2": [2, 2],
      "extra": 1}, "unknown keys"),
])
def test_bad_maze_files(bad, match):
    with pytest.raises(ValueError, match=match):
        load_maze(bad)
    with pytest.raises(ValueError, match=match):
        PyRat(maze=bad)


def test_bad_config():
    with pytest.raises(ValueError, match="cheese_count"):
        PyRat(width=7, height=7, cheese_count=-3)
    with pytest.raises(ValueError, match="do not fit"):
        PyRat(width=3, height=3, cheese_count=9)
    with pytest.raises(ValueError, match="centre cell"):
        PyRat(width=6, height=4, cheese_count=5)
    with pytest.raises(ValueError, match="disagrees"):
        PyRat(maze=MAZE_MUD, width=7)
    with pytest.raises(ValueError, match="max_episode_steps"):
        PyRat(max_episode_steps=0)
    with pytest.raises(ValueError, match="wall_density"):
        PyRat(wall_density=1.5)
    with pytest.raises(ValueError, match="cannot read"):
        PyRat(maze="/nonexistent/maze.json")
    env = PyRat(width=5, height=5, cheese_count=4)
    s = env.init(jax.random.PRNGKey(0))
    with pytest.raises(ValueError):
        env.check_action(s, [5, 0])


def test_greedy_baseline():
    # a short muddy way (1 step, weight 5) and a long dry way (3 steps) to the only cheese
    maze = {"width": 2, "height": 2, "walls": [], "mud": [[0, 0, 1, 0, 5]],
            "cheese": [[1, 0]], "player1": [0, 0], "player2": [0, 1]}
    env, s = fixed(maze)
    np.testing.assert_array_equal(env.distance_to_cheese(s), [[3, 0], [2, 1]])
    np.testing.assert_array_equal(env.greedy_actions(s), [UP, RIGHT])
    # greedy collects more than random on generated mazes (batched)
    env = PyRat(width=7, height=7, cheese_count=10, max_episode_steps=60)
    states = jax.vmap(env.init)(jax.random.split(jax.random.PRNGKey(3), 16))

    @jax.jit
    def run(states, key):
        def body(c, k):
            s = c
            g = jax.vmap(env.greedy_actions)(s)
            r = jax.random.randint(k, g.shape, 0, 5)
            a = jnp.stack([g[:, 0], r[:, 1]], 1)  # player 1 greedy, player 2 random
            return jax.vmap(env.step)(s, a), None

        return jax.lax.scan(body, states, jax.random.split(key, 60))[0]

    final = run(states, jax.random.PRNGKey(4))
    assert bool(final.terminated.all())
    assert float(final.scores[:, 0].mean()) > float(final.scores[:, 1].mean()) + 2


def _distances_numpy(cost, cheese):
    """Mud-weighted turns to the nearest cheese by plain Bellman-Ford (1 << 20 if none)."""
    h, w = cheese.shape
    big = 1 << 20
    d = np.where(cheese, 0, big).astype(np.int64)
    changed = True
    while changed:
        changed = False
        for y in range(h):
            for x in range(w):
                for k, (dx, dy) in enumerate(((0, 1), (1, 0), (0, -1), (-1, 0))):
                    c = int(cost[y, x, k])
                    if c > 0 and d[y + dy, x + dx] + c < d[y, x]:
                        d[y, x] = d[y + dy, x + dx] + c
                        changed = True
    return d


def test_batched_distance_rule_matches_each_game():
    """The batched rule of the distance field (one loop for the whole batch, int16 cells) gives
    each game's own distances: vmapped with the maze and cheese batched or shared, unbatched,
    and on the int32 path (mud weights up to 127); empty cheese gives 1 << 20 everywhere."""
    # 7x5 keeps every distance in int16; 21x15 with weights up to 127 may reach 314 * 127
    for kw in ({"width": 7, "height": 5}, {"width": 21, "height": 15, "mud_range": 127,
                                           "mud_density": 0.5}):
        env = PyRat(cheese_count=6, **kw)
        states = jax.vmap(env.init_state)(jax.random.split(jax.random.PRNGKey(5), 6))
        # thin the cheese at random (one game keeps none) so the fields differ from the start's
        keep = jax.random.bernoulli(jax.random.PRNGKey(6), 0.5, states.cheese.shape)
        cheese = (states.cheese & keep).at[0].set(False)
        states = states.replace(cheese=cheese)
        batched = np.asarray(jax.jit(jax.vmap(env.distance_to_cheese))(states))
        shared_maze = np.asarray(jax.vmap(env._distance, in_axes=(None, 0))(states.maze[1], cheese))
        for i in range(6):
            expect = _distances_numpy(np.asarray(states.maze[i]), np.asarray(cheese[i]))
            np.testing.assert_array_equal(batched[i], expect)
            one = jax.tree_util.tree_map(lambda x: x[i], states)
            np.testing.assert_array_equal(np.asarray(env.distance_to_cheese(one)), expect)
            np.testing.assert_array_equal(
                shared_maze[i], _distances_numpy(np.asarray(states.maze[1]), np.asarray(cheese[i])))
        assert (batched[0] == 1 << 20).all()


def _check_kept_field(env, state):
    """The state's kept distance field is the plain Bellman-Ford field of its cheese, and each
    cell's recorded cheese is the lowest-index cheese at that distance."""
    cost, cheese = np.asarray(state.maze), np.asarray(state.cheese)
    expect = _distances_numpy(cost, cheese)
    np.testing.assert_array_equal(np.asarray(env.distance_to_cheese(state)), expect)
    np.testing.assert_array_equal(np.asarray(env._nearest.finish(state.cheese_field)), expect)
    # one int32 array: packed (distance << 16 | index) on int16 boards, (distance, index) pairs
    # on the others; the accessors read it back; the maze is int8
    packed = env._nearest.packed
    assert state.cheese_field.dtype == jnp.int32 and state.maze.dtype == jnp.int8
    assert state.cheese_field.shape == cheese.shape + (() if packed else (2,))
    assert state.cheese_distance.dtype == (jnp.int16 if packed else jnp.int32)
    np.testing.assert_array_equal(np.asarray(state.cheese_distance),
                                  np.minimum(expect, env._nearest.cap))
    near = np.asarray(state.nearest_cheese).reshape(-1)
    reached = expect.reshape(-1) < 1 << 20
    cells = np.flatnonzero(cheese.reshape(-1))  # in index order: argmin takes the lowest
    to_each = []
    for cell in cells:
        one = np.zeros(cheese.size, bool)
        one[cell] = True
        to_each.append(_distances_numpy(cost, one.reshape(cheese.shape)).reshape(-1))
    if len(cells):
        lowest = cells[np.argmin(np.stack(to_each), axis=0)]
        np.testing.assert_array_equal(near[reached], lowest[reached])


def test_kept_distance_field_repaired_like_plain_bellman_ford():
    """The distance field kept in the state (repaired where eaten cheese was nearest) equals a
    plain Bellman-Ford of the cheese left, in random play (batched and one game at a time), and
    after forced eating in 0, 3, 10 or all of 40 games (each path of the batched rule: none,
    the gathered sizes 8 and 10, the whole batch); a fixed maze's field is made at construction."""
    env = PyRat(width=7, height=5, cheese_count=9, mud_density=0.4, mud_range=4)
    batch = 40
    states = jax.vmap(env.init_state)(jax.random.split(jax.random.PRNGKey(11), batch))
    step = jax.jit(jax.vmap(env.step))
    one_step = jax.jit(env.step)
    for t in range(24):
        actions = jax.random.randint(jax.random.PRNGKey(100 + t), (batch, 2), 0, 5)
        nxt = step(states, actions)
        for i in range(0, batch, 7):
            game = jax.tree_util.tree_map(lambda x: x[i], nxt)
            _check_kept_field(env, game)
            alone = one_step(jax.tree_util.tree_map(lambda x: x[i], states), actions[i])
            for a, b in zip(jax.tree_util.tree_leaves(alone), jax.tree_util.tree_leaves(game)):
                np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        states = nxt
    nc = env._nearest
    repair = jax.jit(jax.vmap(nc.repair))
    for eating in (0, 3, 10, batch):
        rng = np.random.default_rng(eating)
        cheese = np.asarray(states.cheese).reshape(batch, -1).copy()
        eaten = np.full((batch, 2), -1, np.int32)
        with_cheese = np.flatnonzero(cheese.any(axis=1))
        for i in rng.permutation(with_cheese)[:eating]:
            cells = np.flatnonzero(cheese[i])
            take = rng.choice(cells, size=min(2, len(cells)), replace=False)
            eaten[i, :len(take)] = take
            cheese[i, take] = False
        # the games that lose cells pick the path: none, 3 <= 8, 9..10, more than 10
        assert ((eaten >= 0).any(axis=1).sum() > 10) if eating == batch else (
            (eaten >= 0).any(axis=1).sum() == eating)
        field = repair(states.maze, states.cheese_field, jnp.asarray(eaten))
        after = states.replace(cheese=jnp.asarray(cheese.reshape(states.cheese.shape)),
                               cheese_field=field)
        for i in range(batch):
            _check_kept_field(env, jax.tree_util.tree_map(lambda x: x[i], after))
    fixed = PyRat(maze=MAZE_MUD)
    _check_kept_field(fixed, fixed.init(jax.random.PRNGKey(0)))


def test_set_cheese_remakes_the_kept_field():
    """`set_cheese` gives a state whose kept field is its new cheese's (batched and not)."""
    env = PyRat(width=7, height=5, cheese_count=9)
    states = jax.vmap(env.init_state)(jax.random.split(jax.random.PRNGKey(3), 4))
    keep = jax.random.bernoulli(jax.random.PRNGKey(4), 0.5, states.cheese.shape)
    moved = jax.jit(jax.vmap(env.set_cheese))(states, states.cheese & keep)
    for i in range(4):
        game = jax.tree_util.tree_map(lambda x: x[i], moved)
        _check_kept_field(env, game)
        _check_kept_field(env, env.set_cheese(jax.tree_util.tree_map(lambda x: x[i], states),
                                              game.cheese))


def test_kept_distance_field_on_int32_boards():
    """Boards whose distances may pass int16 (13x11, mud weights up to 127) keep the field in
    int32 with the cap 1 << 20; the repair agrees with plain Bellman-Ford there too."""
    env = PyRat(width=13, height=11, cheese_count=7, mud_density=0.5, mud_range=127)
    assert env._nearest.dtype == jnp.int32 and env._nearest.cap == 1 << 20
    batch = 6
    states = jax.vmap(env.init_state)(jax.random.split(jax.random.PRNGKey(21), batch))
    step = jax.jit(jax.vmap(env.step))
    for t in range(30):
        actions = jax.random.randint(jax.random.PRNGKey(200 + t), (batch, 2), 0, 5)
        states = step(states, actions)
        if t % 10 == 9:
            for i in range(batch):
                _check_kept_field(env, jax.tree_util.tree_map(lambda x: x[i], states))
